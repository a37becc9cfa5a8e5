// unprobed_read: a socket read that waits for the reactor without trying
// the socket first.
//
// Asio 1.22 starts every read with a speculative recv (the "probe"), which
// on a request/response connection almost always finds nothing: one
// EAGAIN system call per exchange. Its alternative, a readiness wait,
// re-arms the descriptor with epoll_ctl instead. This read goes straight
// into the reactor's queue and costs no system call until epoll reports
// the socket readable.
//
// That is correct only when the caller knows the socket holds nothing the
// reactor has already reported. Asio registers a socket edge-triggered,
// once: what arrives (bytes, a FIN, a reset) while no read is queued
// raises an edge that the reactor consumes when it next reports the
// socket, and a read queued after that without a probe waits for an edge
// that never comes. So start() may be used only when
//   - a level-triggered check (poll(2) for POLLIN | POLLRDHUP, with
//     POLLERR and POLLHUP) found the socket quiet, and
//   - the reactor has not reported this socket since: start() runs later
//     in the same handler, on an io_context run by one thread, with no
//     nested run() or poll().
// Then everything that arrives after the check raises an edge that is
// reported after the read is queued, and performs it. A read that stopped
// short of its buffers is no such check: the recv that took the last
// bytes may have taken a FIN behind them (the next recv would return 0),
// or left a reset pending, and their edge was the one just reported.
// faultlane uses it in one place: a lane's answer read after its idle
// check (docs/architecture.md, "The hot path").
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
// Where it is false, callers read with async_read_some, probe included,
// and start() must not be called.
#if ASIO_VERSION / 100 == 1022 && !defined(FAULTLANE_READS_ALWAYS_PROBE)
inline constexpr bool reads_skip_the_probe = true;
#else
inline constexpr bool reads_skip_the_probe = false;
#endif

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
  // an error, as for async_read_some: end of file as asio::error::eof, a
  // read cancelled or its socket closed while it waited as
  // operation_aborted, a socket already closed as bad_descriptor.
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
  handler done_;
};

}  // namespace faultlane::detail
