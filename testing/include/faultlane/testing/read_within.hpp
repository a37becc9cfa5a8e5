// read_within: a read from a blocking test socket that cannot wait
// forever. asio::read on a blocking socket is no bound even with
// SO_RCVTIMEO: when recv(2) gives up it polls again with no timeout.
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <asio/error.hpp>
#include <asio/ip/tcp.hpp>

#include <cerrno>
#include <chrono>
#include <system_error>

namespace faultlane::testing {

// Reads exactly `into`'s size, waiting at most `timeout` for each piece;
// timed_out, eof or the socket's error otherwise, in Asio's categories (so
// `ec == asio::error::connection_reset` holds for a reset).
inline std::error_code read_within(asio::ip::tcp::socket& s, asio::mutable_buffer into,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto* at = static_cast<char*>(into.data());
  std::size_t left = into.size();
  while (left > 0) {
    pollfd p{s.native_handle(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
    if (ready == 0) return asio::error::timed_out;
    if (ready < 0 && errno != EINTR) return {errno, asio::error::get_system_category()};
    if (ready < 0) continue;
    const auto n = ::recv(s.native_handle(), at, left, MSG_DONTWAIT);
    if (n == 0) return asio::error::eof;
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
      return {errno, asio::error::get_system_category()};  // compares equal to asio's errors
    }
    if (n < 0) continue;
    at += n;
    left -= static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace faultlane::testing
