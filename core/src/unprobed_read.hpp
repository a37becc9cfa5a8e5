// unprobed_read: a socket read that waits for the reactor without trying
// the socket first.
//
// Asio 1.22 starts every read with a speculative recv (the "probe"), which
// on a request/response connection almost always finds nothing: one
// EAGAIN system call per exchange on each side. Its alternative, a
// readiness wait, re-arms the descriptor with epoll_ctl instead. This read
// goes straight into the reactor's queue, costing no system call until
// epoll reports the socket readable.
//
// That is correct only when the caller knows nothing waits unread. Asio
// registers a socket edge-triggered, once: bytes that arrive while no read
// is queued raise an edge that a reactor turn consumes, and a read queued
// after it, without a probe, would wait for an edge that never comes. So
// start() may be used only when the socket's receive queue was seen empty
// (a poll that found nothing, a read that stopped short of its buffers)
// and no reactor turn has run on the socket's io_context since: in the
// same handler, before it returns. Every byte that arrives after that
// moment raises an edge the next turn reports, and that turn performs
// this read. With one thread per io_context, as faultlane's io pool runs
// them, nothing else can run a turn in between. docs/architecture.md,
// "The hot path", says where faultlane uses it.
//
// One read at a time per object; the object is reused, so reading
// allocates nothing. It must outlive the read: `done` should hold its
// owner (it is dropped after it ran, or unrun if the io_context is
// destroyed first).
#pragma once

#include <asio/detail/reactor_op.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/version.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <sys/uio.h>
#include <system_error>

#include "faultlane/core/unique_function.hpp"

namespace asio::detail {
class epoll_reactor;
}  // namespace asio::detail

namespace faultlane::detail {

// Whether this Asio's reactor is the one start() is written against:
// 1.22, Debian 12's (later versions changed epoll_reactor::start_op).
// With any other, start() is async_read_some, probe included.
inline constexpr bool reads_skip_the_probe = ASIO_VERSION / 100 == 1022;

class unprobed_read final : asio::detail::reactor_op {
 public:
  static constexpr std::size_t buffers_max = 64;
  using handler = unique_function<void(std::error_code, std::size_t)>;

  unprobed_read() noexcept;
  unprobed_read(const unprobed_read&) = delete;
  unprobed_read& operator=(const unprobed_read&) = delete;
  ~unprobed_read();

  // Queues a read of up to the bytes of `buffers` (at most buffers_max of
  // them). `done` runs on the socket's io_context with the bytes read, or
  // an error (end of file as asio::error::eof, a closed or cancelled
  // socket as operation_aborted), as for async_read_some.
  void start(asio::ip::tcp::socket& socket, std::span<const asio::mutable_buffer> buffers,
             handler done);
  bool pending() const noexcept { return static_cast<bool>(done_); }

 private:
  static status perform(reactor_op* base);
  static void complete(void* owner, asio::detail::scheduler_operation* base,
                       const std::error_code& ec, std::size_t bytes);

  asio::execution_context* context_ = nullptr;  // whose reactor reactor_ is
  asio::detail::epoll_reactor* reactor_ = nullptr;
  int fd_ = -1;
  std::array<iovec, buffers_max> iov_{};
  std::size_t iov_count_ = 0;
  std::size_t asked_ = 0;
  handler done_;
};

// Says, for one synchronous stretch (the rest of a handler), whether the
// socket's receive queue was seen empty at its start: the condition for
// unprobed_read::start. The flag is restored when the stretch ends, so it
// never outlives the turn it was true in.
class seen_empty_mark {
 public:
  seen_empty_mark(bool& flag, bool seen) noexcept : flag_(flag), saved_(flag) { flag_ = seen; }
  seen_empty_mark(const seen_empty_mark&) = delete;
  seen_empty_mark& operator=(const seen_empty_mark&) = delete;
  ~seen_empty_mark() { flag_ = saved_; }

 private:
  bool& flag_;
  bool saved_;
};

}  // namespace faultlane::detail
