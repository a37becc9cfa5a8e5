// The simulated network's connections, socket ends and listeners: the
// shared state behind socket.hpp, for network.cpp and socket.cpp only.
#pragma once

#include <asio/any_io_executor.hpp>
#include <asio/execution_context.hpp>

#include <deque>
#include <memory>
#include <vector>

#include "faultlane/dsim/socket.hpp"

namespace faultlane::dsim::detail {

// Bytes from one end of a connection to the other.
struct direction {
  std::deque<std::vector<std::byte>> arrived;  // at the reader, not read
  std::size_t front_read = 0;                  // of arrived.front()
  std::size_t unread = 0;
  std::size_t in_flight = 0;  // written, not arrived
  std::size_t capacity = 0;   // send buffer and receive window together
  clock::time_point last_arrival{};
  bool fin_written = false;
  bool fin_arrived = false;

  std::size_t room() const noexcept {
    const std::size_t used = unread + in_flight;
    return used >= capacity ? 0 : capacity - used;
  }
};

struct connection {
  std::uint64_t id = 0;
  clock::duration latency{};
  endpoint ends[2];   // [0] the connecting end, [1] the accepted end
  direction from[2];  // from[i]: written by end i, read by end 1 - i
  std::weak_ptr<socket_state> sockets[2];
  bool reset_at[2] = {};  // a reset reached end i: its reads and writes fail
  bool closed[2] = {};    // end i was closed (bytes arriving there are answered by a reset)
};

struct socket_state {
  network* net = nullptr;
  asio::execution_context* context = nullptr;
  // False once `context` shut down: what is pending is dropped, as Asio
  // destroys the operations of a context it shuts down (context_alive.hpp).
  std::shared_ptr<bool> context_alive;
  bool open = false;
  bool bound = false;
  endpoint local;
  endpoint remote;
  std::shared_ptr<connection> conn;
  int side = 0;
  bool linger_zero = false;
  bool shut_send = false;
  std::size_t low_watermark = 1;
  std::vector<asio::mutable_buffer> read_buffers;
  io_handler read_done;
  // The pending read is an edge read (start_edge_read): an arrival
  // reports it, and a step on `edge_executor` then performs it and runs its
  // handler at once, as the reactor's dispatch does (edge_reported: that
  // step is posted). read_left_nothing: what the read performed there
  // says; read_inline: its handler runs now, not posted.
  bool read_on_edge = false;
  bool edge_reported = false;
  bool read_left_nothing = false;
  bool read_inline = false;
  asio::any_io_executor edge_executor;
  std::vector<asio::const_buffer> write_buffers;
  io_handler write_done;
  done_handler connect_done;
  done_handler readable_done;  // async_wait(wait_read)
  done_handler writable_done;  // async_wait(wait_write)
};

struct waiting_connect {
  std::shared_ptr<socket_state> client;
};

struct listener {
  network* net = nullptr;
  endpoint at;
  std::size_t backlog = 0;
  bool open = true;
  std::deque<std::shared_ptr<connection>> queue;  // established, not accepted
  std::deque<waiting_connect> waiting;            // connects held by a full backlog
  struct pending_accept {
    asio::io_context* context;
    unique_function<void(std::error_code, socket)> done;
  };
  std::deque<pending_accept> accepts;
};

// The network's operations on that state (connection.cpp).
// Whether a read or write of `s` can complete now (`ec` and `n` then say
// how); false when it must wait.
bool read_outcome(network& net, socket_state& s, const std::vector<asio::mutable_buffer>& buffers,
                  std::error_code& ec, std::size_t& n);
bool write_outcome(network& net, socket_state& s, const std::vector<asio::const_buffer>& buffers,
                   std::error_code& ec, std::size_t& n);
// Completes the pending read or write of `s` if it can now; a read on an
// edge only when `arrival` (something arrived at this end just now).
void try_read(network& net, const std::shared_ptr<socket_state>& s, bool arrival = false);
void try_write(network& net, const std::shared_ptr<socket_state>& s);
// Something changed for end `side` of `c`: its pending operations look
// again; `arrival`: bytes, a FIN or a reset arrived there (an edge).
void wake(network& net, const std::shared_ptr<connection>& c, int side, bool arrival = false);
// Destroys every pending operation of the socket_state at `state`, run
// none (its context shut down: context_alive::on_shutdown).
void drop_pending(void* state);
// Fails every pending operation of `s` with `ec`.
void abort_pending(socket_state& s, std::error_code ec);
// Completes the readiness waits of `s` that are met now.
void try_ready(socket_state& s);
// A FIN from `side`, behind the bytes it wrote.
void send_fin(network& net, const std::shared_ptr<connection>& c, int side);
void establish(network& net, const std::shared_ptr<listener>& l, waiting_connect w);
void reset_from(network& net, const std::shared_ptr<connection>& c, int side);
// End `side` dies with its node: its peer is reset, its own operations fail.
void crash_end(network& net, const std::shared_ptr<connection>& c, int side);
void close_listener(network& net, const std::shared_ptr<listener>& l);
void serve_accepts(network& net, const std::shared_ptr<listener>& l);

}  // namespace faultlane::dsim::detail
