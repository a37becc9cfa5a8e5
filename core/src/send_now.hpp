// send_now: write what a non-blocking socket takes at once, without going
// through the event loop.
//
// A small request or a READ answer usually fits in the socket buffer whole.
// Writing it directly saves posting a completion handler and one more turn
// of the event loop (and its epoll_wait) per exchange; whatever does not fit
// goes on with an ordinary async_write of the rest.
#pragma once

#include <asio/buffer.hpp>
#include <asio/ip/tcp.hpp>

#include <array>
#include <span>
#include <system_error>

#include "faultlane/core/assert.hpp"

namespace faultlane::detail {

using send_buffers = std::array<asio::const_buffer, 2>;

// Bytes sent; `ec` is set only for a real error (not for would_block).
template <typename ConstBuffers>
std::size_t send_now(asio::ip::tcp::socket& socket, const ConstBuffers& out, std::error_code& ec) {
  std::size_t sent = socket.write_some(out, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) {
    ec.clear();
    return 0;
  }
  FL_ASSERT(ec || sent <= asio::buffer_size(out));
  return ec ? 0 : sent;
}

// What is left of `out` after `sent` bytes.
inline send_buffers rest_of(const send_buffers& out, std::size_t sent) {
  FL_ASSERT(sent < asio::buffer_size(out));  // something must be left
  if (sent < out[0].size()) return {out[0] + sent, out[1]};
  return {asio::const_buffer(), out[1] + (sent - out[0].size())};
}

// What is left of a gather list after `sent` bytes: drops the buffers that
// left whole and trims the first one that left in part, in place.
inline std::span<asio::const_buffer> rest_of(std::span<asio::const_buffer> out, std::size_t sent) {
  while (!out.empty() && sent >= out.front().size()) {
    sent -= out.front().size();
    out = out.subspan(1);
  }
  FL_ASSERT(!out.empty());  // something must be left
  out.front() += sent;
  return out;
}

}  // namespace faultlane::detail
