// accept_loop: one listening socket's accepts, as the transfer core's
// listeners, the control plane's server and the relays all run them.
//
// It accepts one connection at a time and hands each to its owner's hooks.
// A failed accept (EMFILE, ENFILE, ENOBUFS, ENOMEM: a shortage something
// else may end, or any other error) leaves the connection queued in the
// backlog, and the listening socket stays readable, so trying again at once
// would spin the io thread. The loop tells its owner (who counts it), waits
// limits::accept_backoff_ms_min, twice as long after each failure in a row
// up to accept_backoff_ms_max, and tries again; an accept that succeeds
// resets the wait. The try after a wait is a non-blocking accept: an
// edge-triggered reactor will not report the queued connection again until
// another one arrives. close() ends the loop; no hook runs after it.
//
// Threads: the acceptor and its timer live on the context the loop was built
// on; start(), close() and every hook run on that context's thread (start()
// may also run before that thread does).
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <system_error>

#include "faultlane/core/net.hpp"

namespace faultlane {

// Where an accepted socket goes: the context it is bound to, and a number
// its owner gets back with it (the shard, in a pool; 0 when there is one).
struct accept_destination {
  asio::io_context& context;
  std::size_t shard = 0;
};

// What the owner does. None may throw: a throw would end the loop (the
// core's hooks run their bodies under run_guarded).
struct accept_hooks {
  // Called before each accept: where the next connection goes.
  std::function<accept_destination()> place;
  // An accept failed; the loop waits after this returns.
  std::function<void(const std::error_code&)> failed;
  // A connection, bound to the context place() gave; the loop accepts the
  // next after this returns.
  std::function<void(net::socket, std::size_t shard)> accepted;
};

class accept_loop {
 public:
  accept_loop(asio::io_context& context, accept_hooks hooks);
  accept_loop(const accept_loop&) = delete;
  accept_loop& operator=(const accept_loop&) = delete;

  // Opens, binds (reusing the address) and listens at `at`; the acceptor is
  // made non-blocking for the try after a wait.
  std::error_code listen(const asio::ip::tcp::endpoint& at);
  // Starts accepting. Every pending handler holds `owner`, so whatever
  // holds this loop (and the hooks use) lives until the last one ran.
  void start(std::shared_ptr<void> owner = nullptr);
  // Closes the acceptor and cancels a wait. Idempotent.
  void close() noexcept;

  bool is_open() const noexcept { return acceptor_.is_open(); }
  // The port listen() bound (0 before): set once, so any thread may read it.
  std::uint16_t port() const noexcept { return port_; }
  // On the loop's thread; an error once closed.
  asio::ip::tcp::endpoint local_endpoint(std::error_code& ec) const {
    return acceptor_.local_endpoint(ec);
  }
  // The current wait: 0 until an accept fails and after one succeeds.
  std::uint32_t backoff_ms() const noexcept { return backoff_ms_; }

 private:
  using keep_alive = std::shared_ptr<void>;
  void accept_next(const keep_alive& owner);
  void on_accept(const keep_alive& owner, const std::error_code& ec, net::socket socket,
                 std::size_t shard);
  void back_off(const keep_alive& owner);
  void accept_after_backoff(const keep_alive& owner);

  accept_hooks hooks_;
  net::acceptor acceptor_;
  net::timer backoff_;
  std::uint32_t backoff_ms_ = 0;
  std::uint16_t port_ = 0;  // also the failpoint's key
};

}  // namespace faultlane
