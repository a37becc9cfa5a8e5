// send_now: write what a non-blocking socket takes at once, up to one step,
// without going through the event loop.
//
// A small request or a READ answer usually fits in the socket buffer whole.
// Writing it directly saves posting a completion handler and one more turn
// of the event loop (and its epoll_wait) per exchange; whatever does not fit,
// or lies past the first step, goes on with an ordinary async_write.
//
// One call writes at most limits::io_chunk_bytes_max (512 KiB), as each
// later step does. Writing everything the socket buffer took (4 MiB and
// more on loopback) left 64 MiB transfers at 0.70-0.80x raw TCP; in 512 KiB
// steps they measure 1.02-1.18x (docs/benchmarks.md, "The hot path in
// numbers"): the bytes are still in the caches when the peer copies them.
#pragma once

#include <asio/buffer.hpp>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <span>
#include <system_error>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::detail {

using send_buffers = std::array<asio::const_buffer, 2>;

// The first buffers of `out`, holding at most `max` bytes (the last one
// cut short if need be) and at most `buffers_max` buffers, as the iovecs
// sendmsg takes. Only the entries used are written: a gather list is
// usually two buffers. Filling all 64, and Asio copying them into 64
// iovecs of its own, made a send cost 555 instructions where it now
// costs 131 (docs/benchmarks.md, "The hot path in numbers").
class buffers_prefix {
 public:
  static constexpr std::size_t buffers_max = 64;

  template <typename ConstBuffers>
  buffers_prefix(const ConstBuffers& out, std::size_t max) {
    const auto end = asio::buffer_sequence_end(out);
    for (auto it = asio::buffer_sequence_begin(out); it != end && max > 0 && used_ < buffers_max;
         ++it) {
      const asio::const_buffer b(*it);
      const std::size_t n = std::min(b.size(), max);
      // sendmsg does not write through iov_base; iovec has no const member.
      held_[used_++] = iovec{const_cast<void*>(b.data()), n};
      max -= n;
      bytes_ += n;
    }
  }
  std::size_t count() const { return used_; }
  std::size_t bytes() const { return bytes_; }
  asio::const_buffer operator[](std::size_t i) const {
    FL_ASSERT(i < used_);
    return {held_[i].iov_base, held_[i].iov_len};
  }
  // A message header over the buffers; it points into this object.
  msghdr message() {
    msghdr m{};
    m.msg_iov = held_.data();
    m.msg_iovlen = used_;
    return m;
  }

 private:
  std::array<iovec, buffers_max> held_;  // [0, used_) written
  std::size_t used_ = 0;
  std::size_t bytes_ = 0;
};

// Bytes sent, at most limits::io_chunk_bytes_max; `ec` is set only for a
// real error (not for would_block). One sendmsg(2) that never waits,
// made here rather than through Asio's write_some, which copies the
// buffers into an array of its own first.
template <typename ConstBuffers>
std::size_t send_now(net::socket& socket, const ConstBuffers& out, std::error_code& ec) {
  ec.clear();
  buffers_prefix step(out, limits::io_chunk_bytes_max);
  if (step.bytes() == 0) return 0;
  const msghdr message = step.message();
  const std::ptrdiff_t sent = net::send_now_raw(socket, message);
  if (sent >= 0) {
    FL_ASSERT(static_cast<std::size_t>(sent) <= step.bytes());
    return static_cast<std::size_t>(sent);
  }
  if (sent == -EAGAIN || sent == -EWOULDBLOCK) return 0;
  ec = std::error_code(static_cast<int>(-sent), asio::error::get_system_category());
  return 0;
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
