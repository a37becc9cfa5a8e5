// unprobed_read: a socket read queued on the reactor directly, which can
// skip Asio's probe, and which says whether it left the socket empty.
//
// Asio 1.22 starts every read with a speculative recv (the "probe"), which
// on a request/response connection almost always finds nothing: one
// EAGAIN system call per exchange. Its alternative, a readiness wait,
// re-arms the descriptor with epoll_ctl instead. This read, started with
// probe::skip, goes straight into the reactor's queue and costs no system
// call until epoll reports the socket readable.
//
// That is correct only when the caller knows the socket holds nothing the
// reactor has already reported. Asio registers a socket edge-triggered,
// once: what arrives (bytes, a FIN, a reset) while no read is queued
// raises an edge that the reactor consumes when it next reports the
// socket, and a read queued after that without a probe waits for an edge
// that never comes. So probe::skip may be used only when, with the
// reactor not having reported this socket since (later in the same
// handler, on an io_context run by one thread, with no nested run() or
// poll()), either
//   - a level-triggered check (poll(2) for POLLIN | POLLRDHUP, with
//     POLLERR and POLLHUP) found the socket quiet, or
//   - the read that just completed says it left nothing (left_nothing()),
//     and a send since then succeeded (a reset that came with the bytes
//     is not in that answer: the send fails with it).
// Then everything that arrives later raises an edge that is reported
// after the read is queued, and performs it. That a read stopped short of
// its buffers says nothing: the recv that took the last bytes may have
// left a FIN behind them, and the edge that reported both was the last.
//
// left_nothing() is the kernel's word (TCP_INQ, enabled per socket with
// report_bytes_left): after the recv, no byte was left and no FIN had
// come. It holds only for a read performed on the reactor's report and
// completed from it. A read that completed in its probe is posted, so it
// never says so; and a caller that had another operation queued on the
// socket while the read waited must ignore it (the reactor completes the
// first finished operation of a report at once and posts the others, so a
// reactor run could come between this read's recv and its handler).
//
// faultlane uses it for a lane's answers and a target's requests
// (docs/architecture.md, "The hot path").
//
// One read at a time per object; the object is reused, so reading
// allocates nothing. It must outlive the read: `done` should hold its
// owner (it is dropped after it ran, or unrun if the io_context is
// destroyed first).
#pragma once

#include <asio/detail/reactor_op.hpp>
#include <asio/version.hpp>

#include <array>
#include <cstddef>
#include <span>
#include <sys/socket.h>
#include <sys/uio.h>
#include <system_error>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/core/net.hpp"

namespace asio::detail {
class epoll_reactor;
}  // namespace asio::detail

namespace faultlane::detail {

// Whether this Asio's reactor is the one start() is written against:
// 1.22, Debian 12's (later versions changed epoll_reactor::start_op), or
// the simulated world's edge-triggered model of it (dsim::socket::
// start_edge_read), so the rule above runs there too. Where it is false,
// callers read with async_read_some, probe included, and start() and
// report_bytes_left() must not be called.
#if (ASIO_VERSION / 100 == 1022 || defined(FAULTLANE_DSIM)) && \
    !defined(FAULTLANE_READS_ALWAYS_PROBE)
inline constexpr bool reads_skip_the_probe = true;
#else
inline constexpr bool reads_skip_the_probe = false;
#endif

class unprobed_read final : asio::detail::reactor_op {
 public:
  static constexpr std::size_t buffers_max = 64;
  using handler = unique_function<void(std::error_code, std::size_t)>;
  enum class probe { first, skip };

  // Asks the kernel to tell every read of `socket` how many bytes it left
  // (TCP_INQ, Linux 4.18 on). False where it refuses: left_nothing() then
  // stays false.
  static bool report_bytes_left(net::socket& socket) noexcept;

  unprobed_read() noexcept;
  unprobed_read(const unprobed_read&) = delete;
  unprobed_read& operator=(const unprobed_read&) = delete;
  ~unprobed_read();

  // Queues a read of up to the bytes of `buffers` (at most buffers_max of
  // them), trying the socket first unless `how` is probe::skip. `done` runs on the socket's
  // io_context with the bytes read, or an error, as for async_read_some: end of file as
  // asio::error::eof, a read cancelled or its socket closed while it waited as operation_aborted, a
  // socket already closed as bad_descriptor.
  void start(net::socket& socket, std::span<const asio::mutable_buffer> buffers, handler done,
             probe how);
  bool pending() const noexcept { return static_cast<bool>(done_); }
  // Whether the read that completed last, with bytes, took everything the
  // socket held, a FIN included (see above for when this can be trusted).
  bool left_nothing() const noexcept { return left_nothing_; }

 private:
  struct world_completion;  // the dsim build's (unprobed_read.cpp)
  static status perform(reactor_op* base);
  static void complete(void* owner, asio::detail::scheduler_operation* base,
                       const std::error_code& ec, std::size_t bytes);

  asio::execution_context* context_ = nullptr;  // whose reactor reactor_ is
  asio::detail::epoll_reactor* reactor_ = nullptr;
  int fd_ = -1;
  std::array<iovec, buffers_max> iov_{};
  std::size_t iov_count_ = 0;
  handler done_;
  bool skip_probe_ = false;
  bool left_nothing_ = false;
  alignas(cmsghdr) std::array<unsigned char, CMSG_SPACE(sizeof(int))> control_{};
};

}  // namespace faultlane::detail
