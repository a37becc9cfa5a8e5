// read_within, accept_within: a read from a blocking test socket, and an
// accept on a blocking test listener, that cannot wait forever (and
// poll_until, the bounded wait under both, for any descriptor). asio::read
// on a blocking socket is no bound even with SO_RCVTIMEO: when recv(2)
// gives up it polls again with no timeout; and accept(2) waits for a
// connection that may never come. (To end such a wait from another thread
// early, shutdown(2) the listener: close(2) wakes neither call.)
#pragma once

#include <poll.h>
#include <sys/socket.h>

#include <asio/error.hpp>
#include <asio/ip/tcp.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <system_error>

namespace faultlane::testing {

// Waits until `fd` reports one of `events` or `deadline` passes, across
// EINTR: 1 when ready, 0 when the deadline passed, -1 on an error (errno).
inline int poll_until(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, events, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
    if (ready >= 0 || errno != EINTR) return std::min(ready, 1);
  }
}

inline int poll_within(int fd, short events, std::chrono::milliseconds timeout) {
  return poll_until(fd, events, std::chrono::steady_clock::now() + timeout);
}

// Reads exactly `into`'s size, waiting at most `timeout` for each piece;
// timed_out, eof or the socket's error otherwise, in Asio's categories (so
// `ec == asio::error::connection_reset` holds for a reset).
inline std::error_code read_within(asio::ip::tcp::socket& s, asio::mutable_buffer into,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  auto* at = static_cast<char*>(into.data());
  std::size_t left = into.size();
  while (left > 0) {
    const int ready = poll_within(s.native_handle(), POLLIN, timeout);
    if (ready == 0) return asio::error::timed_out;
    if (ready < 0) return {errno, asio::error::get_system_category()};
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

// Accepts one connection into `into`, waiting at most `timeout` for it;
// timed_out or the listener's error otherwise.
inline std::error_code accept_within(asio::ip::tcp::acceptor& a, asio::ip::tcp::socket& into,
                                     std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const int ready = poll_within(a.native_handle(), POLLIN, timeout);
  if (ready == 0) return asio::error::timed_out;
  if (ready < 0) return {errno, asio::error::get_system_category()};
  // A connection is queued, or the listener was shut down or failed:
  // either way accept(2) returns at once.
  std::error_code ec;
  a.accept(into, ec);
  return ec;
}

}  // namespace faultlane::testing
