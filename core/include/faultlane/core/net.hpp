// net: the one place core/, control/ and relays/ name the socket, acceptor, timer,
// clock and thread types, and the system calls the hot path makes itself.
//
// Everything else in core/, control/ and relays/ says net::socket, net::clock,
// net::thread, net::condition_variable, net::send_now_raw() and so on
// (ci/tidy's `seam` check holds them to it), so one compile-time switch puts
// the real core on the deterministic simulation's network and clock
// (docs/dsim.md). The normal build gets Asio's TCP types, the steady clock,
// OS threads and Linux's calls, as aliases and inline functions, so no call
// costs more than before the seam. The dsim build (FAULTLANE_DSIM) gets the
// world's: dsim::socket, dsim::clock, waits that pump the world, a thread
// type whose start is an assertion failure (net::thread: a shard's, a
// relay's), and fibers for the threads of control that wait
// (net::worker_thread: the control plane's workers).
//
// Kept here, by name, are the calls that bypass Asio on the hot path:
//   send_now_raw         one non-blocking sendmsg that never raises SIGPIPE
//   peer_gone_or_ready   the idle lane's level-triggered check (poll(2))
//   recv_now_raw         the unprobed read's recvmsg, on the reactor's report
//   report_bytes_left    TCP_INQ, so a read says whether it left the socket empty
//   bytes_readable       what waits in the socket (the watermark's progress check)
//   set_receive_watermark  SO_RCVLOWAT
//   os_random_u64        getrandom(2), for namespaces and incarnations
#pragma once

#if defined(FAULTLANE_DSIM)

#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <future>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "faultlane/dsim/socket.hpp"
#include "faultlane/dsim/sync.hpp"
#include "faultlane/dsim/timer.hpp"

namespace faultlane::net {

inline constexpr bool simulated = true;
using clock = dsim::clock;
using socket = dsim::socket;
using acceptor = dsim::acceptor;
using timer = dsim::timer;
using shard_timer = dsim::basic_timer<asio::io_context::executor_type>;
using thread = dsim::no_thread;
using worker_thread = dsim::fiber_thread;
using condition_variable = dsim::condition_variable;
// The worker_thread running now: a fiber's id (0 on the driver's stack).
inline worker_thread::id this_worker_id() { return worker_thread::current(); }

// A non-blocking write of the message's bytes: what the connection takes now.
inline std::ptrdiff_t send_now_raw(socket& s, const msghdr& message) {
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(message.msg_iovlen);
  for (std::size_t i = 0; i < message.msg_iovlen; ++i) {
    buffers.emplace_back(message.msg_iov[i].iov_base, message.msg_iov[i].iov_len);
  }
  std::error_code ec;
  const auto n = s.write_some(buffers, ec);
  if (ec == asio::error::would_block) return -EAGAIN;
  if (ec) return -ec.value();
  return static_cast<std::ptrdiff_t>(n);
}

// The unprobed read performs on the world's edge reads instead
// (dsim::socket::start_edge_read): never called.
inline std::ptrdiff_t recv_now_raw(int, msghdr&) noexcept {
  ::faultlane::detail::assert_failed("no unprobed read in the dsim build", __FILE__, __LINE__);
}

inline int peer_gone_or_ready(socket& s) noexcept { return s.peer_gone_or_ready() ? 1 : 0; }
// The world's edge reads say whether they left the socket empty.
inline bool report_bytes_left(socket&) noexcept { return true; }
inline std::size_t bytes_readable(socket& s, std::error_code& ec) { return s.available(ec); }
inline bool set_receive_watermark(socket& s, std::size_t bytes) {
  s.set_option(asio::socket_base::receive_low_watermark(static_cast<int>(bytes)));
  return true;
}
// A sleep inside a handler (a failpoint's delay, a perturbation) holds the
// world's one thread: virtual time moves on by `d` (world::advance). Outside
// one (a fiber, the driver's stack) the world runs others meanwhile. A
// yield does nothing: no other thread could take the turn.
template <typename Rep, typename Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
  auto& w = dsim::world::current();
  const auto span = std::chrono::duration_cast<clock::duration>(d);
  if (w.in_step()) {
    w.advance(span);
    return;
  }
  const auto until = w.now() + span;
  (void)w.wait([&] { return w.now() >= until; }, until);
}
inline void yield() noexcept {}

// A shard's context is run by the world, not by a thread of its own.
inline void world_runs(asio::io_context& context, std::string name) {
  dsim::world::current().add_context(context, std::move(name));
}
inline void world_stops_running(asio::io_context& context) {
  dsim::world::current().remove_context(context);
}
// Its ready handlers run first (see world::drain_and_remove).
inline void world_drains(asio::io_context& context) {
  dsim::world::current().drain_and_remove(context);
}

// Waits for `f` until `deadline` (world::wait); true when it is ready.
template <typename T>
bool wait_ready(std::future<T>& f, clock::time_point deadline) {
  auto ready = [&] { return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready; };
  return dsim::world::current().wait(ready, deadline);
}

// From the world's seed: a run's namespaces and incarnations replay.
inline std::uint64_t os_random_u64() {
  return dsim::world::current().draw(1, std::numeric_limits<std::uint64_t>::max());
}

}  // namespace faultlane::net

#else

#include <asio/basic_waitable_timer.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <future>
#include <string>
#include <system_error>
#include <thread>

#include "faultlane/base/assert.hpp"

namespace faultlane::net {

inline constexpr bool simulated = false;
using clock = std::chrono::steady_clock;
using socket = asio::ip::tcp::socket;
using acceptor = asio::ip::tcp::acceptor;
// A timer whose executor is any (a handler through it may allocate).
using timer = asio::steady_timer;
// A timer on a shard whose executor is the io_context's own: its handler is
// called directly (see deadline.hpp for why that matters).
using shard_timer =
    asio::basic_waitable_timer<clock, asio::wait_traits<clock>, asio::io_context::executor_type>;
using thread = std::thread;
using worker_thread = std::thread;
using condition_variable = std::condition_variable;
inline std::thread::id this_worker_id() noexcept { return std::this_thread::get_id(); }

// One sendmsg(2) that never waits and never raises SIGPIPE: the bytes sent,
// or -errno (EINTR retried here; EAGAIN when the socket buffer is full).
inline std::ptrdiff_t send_now_raw(socket& s, const msghdr& message) noexcept {
  for (;;) {
    const ssize_t sent = ::sendmsg(s.native_handle(), &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) return sent;
    if (errno != EINTR) return -errno;
  }
}

// One recvmsg(2) that never waits, on a descriptor the reactor reported:
// the bytes read, 0 at end of file, or -errno (EINTR retried here).
inline std::ptrdiff_t recv_now_raw(int fd, msghdr& message) noexcept {
  for (;;) {
    const ssize_t n = ::recvmsg(fd, &message, MSG_DONTWAIT);
    if (n >= 0) return n;
    if (errno != EINTR) return -errno;
  }
}

// Level-triggered and without waiting: > 0 when bytes, a FIN, a reset or an
// error wait on the socket (an idle lane's peer went away), 0 when it is
// quiet, < 0 when the check itself failed.
inline int peer_gone_or_ready(socket& s) noexcept {
  pollfd p{s.native_handle(), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0);
}

// Asks the kernel to tell every read of `s` how many bytes it left (TCP_INQ,
// Linux 4.18 on). False where it refuses.
inline bool report_bytes_left(socket& s) noexcept {
  const int on = 1;
  return ::setsockopt(s.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
}

// The bytes waiting in the socket's receive queue (FIONREAD).
inline std::size_t bytes_readable(socket& s, std::error_code& ec) {
  asio::socket_base::bytes_readable queued;
  s.io_control(queued, ec);
  return ec ? 0 : queued.get();
}

// Wake the reader only when `bytes` wait (SO_RCVLOWAT); false if refused.
inline bool set_receive_watermark(socket& s, std::size_t bytes) {
  std::error_code ec;
  s.set_option(asio::socket_base::receive_low_watermark(static_cast<int>(bytes)), ec);
  return !ec;
}

// Waits for `f` until `deadline`; true when it is ready. (The seam's, so
// that the dsim build's wait pumps the world instead.)
template <typename T>
bool wait_ready(std::future<T>& f, clock::time_point deadline) {
  return f.wait_until(deadline) == std::future_status::ready;
}

template <typename Rep, typename Period>
void sleep_for(std::chrono::duration<Rep, Period> d) {
  std::this_thread::sleep_for(d);
}
inline void yield() noexcept { std::this_thread::yield(); }

// Threads run the shards here (see io_pool.cpp): nothing to tell a world.
inline void world_runs(asio::io_context&, std::string) {}
inline void world_stops_running(asio::io_context&) {}
inline void world_drains(asio::io_context&) {}

// 64 bits from the kernel's random source (registration namespaces, a
// transport's incarnation).
inline std::uint64_t os_random_u64() noexcept {
  std::uint64_t value = 0;
  auto* out = reinterpret_cast<unsigned char*>(&value);
  std::size_t filled = 0;
  while (filled < sizeof value) {
    const ssize_t n = ::getrandom(out + filled, sizeof value - filled, 0);
    if (n < 0 && errno == EINTR) continue;
    // Without GRND_NONBLOCK it fails only on a broken kernel.
    FL_ASSERT(n > 0);
    filled += static_cast<std::size_t>(n);
  }
  return value;
}

}  // namespace faultlane::net

#endif  // FAULTLANE_DSIM
