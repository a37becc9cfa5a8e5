// The connection rules of the simulated network: how bytes, FINs and
// resets move between the two ends, connects meet listeners and accepts
// take them (network.hpp says what they are; socket.cpp is the interface).
#include <asio/error.hpp>
#include <asio/post.hpp>

#include <algorithm>
#include <cstring>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/probe.hpp"

#include "state.hpp"

namespace faultlane::dsim {

namespace detail {
namespace {

world& w_of(network& net) { return net.owner(); }

std::size_t total_size(const auto& buffers) {
  std::size_t n = 0;
  for (const auto& b : buffers) n += b.size();
  return n;
}

// Moves up to `max` unread bytes of `d` into `buffers`.
std::size_t take_bytes(direction& d, const std::vector<asio::mutable_buffer>& buffers,
                       std::size_t max) {
  std::size_t copied = 0;
  for (const auto& b : buffers) {
    auto* out = static_cast<std::byte*>(b.data());
    std::size_t room = std::min(b.size(), max - copied);
    while (room > 0 && !d.arrived.empty()) {
      auto& front = d.arrived.front();
      const std::size_t n = std::min(room, front.size() - d.front_read);
      std::memcpy(out, front.data() + d.front_read, n);
      out += n;
      room -= n;
      copied += n;
      d.front_read += n;
      if (d.front_read == front.size()) {
        d.arrived.pop_front();
        d.front_read = 0;
      }
    }
    if (copied == max) break;
  }
  d.unread -= copied;
  return copied;
}

std::vector<std::byte> gather(const std::vector<asio::const_buffer>& buffers, std::size_t n) {
  std::vector<std::byte> out(n);
  std::size_t at = 0;
  for (const auto& b : buffers) {
    const std::size_t k = std::min(b.size(), n - at);
    std::memcpy(out.data() + at, b.data(), k);
    at += k;
    if (at == n) break;
  }
  return out;
}

}  // namespace

// What a read of `s` can complete with now: true (and `ec`, `n` set) when
// it completes.
bool read_outcome(network& net, socket_state& s, const std::vector<asio::mutable_buffer>& buffers,
                  std::error_code& ec, std::size_t& n) {
  n = 0;
  ec.clear();
  if (!s.conn) {
    ec = asio::error::not_connected;
    return true;
  }
  auto& c = *s.conn;
  auto& d = c.from[1 - s.side];
  const bool reset = c.reset_at[s.side];
  // After a reset, what had arrived is still read first (as Linux does),
  // then the reset is the answer.
  if (reset && d.unread == 0) {
    ec = asio::error::connection_reset;
    return true;
  }
  const std::size_t asked = total_size(buffers);
  if (asked == 0) return true;
  // Linux caps SO_RCVLOWAT at half the receive buffer (tcp_set_rcvlowat),
  // and so does this: a writer waits for room only once more than two
  // thirds of the buffer are taken, so half a buffer is always reached. A
  // cap at the whole buffer let a reader wait for the last bytes a writer
  // held back until a third was free, each waiting on the other for good
  // (torn_writes_under_load, seed 21: a lane's 256 KiB watermark on a
  // 36402-byte buffer with 38 bytes of room).
  const std::size_t ready =
      std::max<std::size_t>(1, std::min({s.low_watermark, asked, d.capacity / 2}));
  if (d.unread == 0 && d.fin_arrived) {
    ec = asio::error::eof;
    return true;
  }
  const bool ends = (d.fin_arrived || reset) && d.unread > 0;
  if (d.unread < ready && !ends) return false;
  std::size_t cut = std::min(d.unread, asked);
  auto& w = w_of(net);
  if (cut > ready && w.chance(net.options().partial_read)) cut = w.draw(ready, cut);
  n = take_bytes(d, buffers, cut);
  FAULTLANE_PROBE_IF(reset, world_bytes_read_before_reset);
  w.record("read", c.id, n);
  return true;
}

// What a write of `s` can complete with now.
bool write_outcome(network& net, socket_state& s, const std::vector<asio::const_buffer>& buffers,
                   std::error_code& ec, std::size_t& n) {
  n = 0;
  ec.clear();
  if (!s.conn) {
    ec = asio::error::not_connected;
    return true;
  }
  auto conn = s.conn;
  auto& c = *conn;
  if (c.reset_at[s.side]) {
    ec = asio::error::connection_reset;
    return true;
  }
  if (s.shut_send) {
    ec = asio::error::broken_pipe;
    return true;
  }
  const std::size_t offered = total_size(buffers);
  if (offered == 0) return true;
  auto& d = c.from[s.side];
  const std::size_t room = d.room();
  // Silly-window avoidance, as Linux wakes a writer: room for a third of
  // the buffer (or all that is offered) first, not byte by byte.
  if (room == 0 || room < std::min(offered, d.capacity / 3)) {
    FAULTLANE_PROBE(world_writer_waits_for_room);
    return false;
  }
  std::size_t take = std::min(room, offered);
  auto& w = w_of(net);
  if (take > 1 && w.chance(net.options().partial_write)) take = w.draw(1, take);
  auto bytes = gather(buffers, take);
  d.in_flight += take;
  // Strictly after the bytes before: events at one instant run in a
  // seeded order, and a stream's bytes must not.
  const auto arrive = std::max(w.now() + c.latency, d.last_arrival + clock::duration(1));
  d.last_arrival = arrive;
  const int from = s.side;
  w.record("write", c.id, take);
  w.at(arrive, [&net, conn, from, bytes = std::move(bytes)]() mutable {
    auto& d = conn->from[from];
    const std::size_t k = bytes.size();
    d.in_flight -= k;
    const int to = 1 - from;
    // Dropped with the connection: a receiver already reset, or a sender
    // reset while its end is open. A crashed end (closed and reset at
    // once, crash_end) still delivers what it wrote before the crash:
    // its reset follows those bytes (network.hpp).
    if (conn->reset_at[to] || (conn->reset_at[from] && !conn->closed[from])) return;
    FAULTLANE_PROBE_IF(conn->reset_at[from], world_crashed_end_bytes_delivered);
    w_of(net).record("deliver", conn->id, k);
    if (conn->closed[to]) {  // bytes for a closed socket: it answers with a reset
      FAULTLANE_PROBE(world_bytes_met_closed_socket);
      reset_from(net, conn, to);
      return;
    }
    d.arrived.push_back(std::move(bytes));
    d.unread += k;
    wake(net, conn, to, /*arrival=*/true);
  });
  n = take;
  return true;
}

// Ends the pending read with what read_outcome() said: its handler runs,
// and the writer at the other end looks for the room it made.
static void finish_read(network& net, const std::shared_ptr<socket_state>& s, std::error_code ec,
                        std::size_t n) {
  auto done = std::move(s->read_done);
  s->read_done = nullptr;
  s->read_buffers.clear();
  done(ec, n);
  if (n > 0 && s->conn) wake(net, s->conn, 1 - s->side);  // room for the writer
}

// An edge read is performed by a step on the socket's own context, not at
// the arrival: a context the load model holds busy performs it when it is
// free, with whatever arrived meanwhile, and runs its handler in the same
// step, so nothing can arrive between the read and what its handler does
// (the reactor's dispatch on a real io thread). Arrivals before that step
// are one report.
static void report_edge(network& net, const std::shared_ptr<socket_state>& s) {
  if (s->edge_reported) return;
  s->edge_reported = true;
  asio::post(s->edge_executor, [&net, weak = std::weak_ptr<socket_state>(s)] {
    auto s = weak.lock();
    if (!s) return;
    s->edge_reported = false;
    if (!s->read_done || !s->read_on_edge) return;  // aborted meanwhile
    std::error_code ec;
    std::size_t n = 0;
    if (!read_outcome(net, *s, s->read_buffers, ec, n)) return;  // spurious: the next arrival
    if (n > 0) {
      const auto& c = *s->conn;
      const auto& in = c.from[1 - s->side];
      s->read_left_nothing = in.unread == 0 && !in.fin_arrived && !c.reset_at[s->side];
    }
    s->read_on_edge = false;
    s->read_inline = true;  // for this call only: its handler runs now
    finish_read(net, s, ec, n);
    s->read_inline = false;
  });
}

void try_read(network& net, const std::shared_ptr<socket_state>& s, bool arrival) {
  if (!s->read_done) return;
  if (s->read_on_edge) {
    if (arrival) report_edge(net, s);
    return;
  }
  std::error_code ec;
  std::size_t n = 0;
  if (!read_outcome(net, *s, s->read_buffers, ec, n)) return;
  finish_read(net, s, ec, n);
}

void try_write(network& net, const std::shared_ptr<socket_state>& s) {
  if (!s->write_done) return;
  std::error_code ec;
  std::size_t n = 0;
  if (!write_outcome(net, *s, s->write_buffers, ec, n)) return;
  auto done = std::move(s->write_done);
  s->write_done = nullptr;
  s->write_buffers.clear();
  done(ec, n);
}

void try_ready(socket_state& s) {
  if (!s.conn) return;
  const auto& c = *s.conn;
  const auto& in = c.from[1 - s.side];
  const bool broken = c.reset_at[s.side];
  if (s.readable_done && (broken || in.unread > 0 || in.fin_arrived)) {
    auto done = std::move(s.readable_done);
    s.readable_done = nullptr;
    done(std::error_code());
  }
  const auto& out = c.from[s.side];
  if (s.writable_done && (broken || out.room() >= std::max<std::size_t>(1, out.capacity / 3))) {
    auto done = std::move(s.writable_done);
    s.writable_done = nullptr;
    done(std::error_code());
  }
}

void wake(network& net, const std::shared_ptr<connection>& c, int side, bool arrival) {
  auto s = c->sockets[side].lock();
  if (!s) return;
  if (!*s->context_alive) return;  // its context is gone: nothing pending runs
  try_read(net, s, arrival);
  try_write(net, s);
  try_ready(*s);
}

void drop_pending(void* state) {
  auto& s = *static_cast<socket_state*>(state);
  // Moved out first: destroying a handler may destroy the socket's owner.
  auto read = std::move(s.read_done);
  auto write = std::move(s.write_done);
  auto connect = std::move(s.connect_done);
  auto readable = std::move(s.readable_done);
  auto writable = std::move(s.writable_done);
  s.read_done = nullptr;
  s.read_on_edge = false;
  s.write_done = nullptr;
  s.connect_done = nullptr;
  s.readable_done = nullptr;
  s.writable_done = nullptr;
  s.read_buffers.clear();
  s.write_buffers.clear();
}

void abort_pending(socket_state& s, std::error_code ec) {
  if (s.read_done) {
    auto done = std::move(s.read_done);
    s.read_done = nullptr;
    s.read_on_edge = false;
    done(ec, 0);
  }
  if (s.write_done) {
    auto done = std::move(s.write_done);
    s.write_done = nullptr;
    done(ec, 0);
  }
  for (auto* pending : {&s.connect_done, &s.readable_done, &s.writable_done}) {
    if (!*pending) continue;
    auto done = std::move(*pending);
    *pending = nullptr;
    done(ec);
  }
}

// A FIN from `side`, behind the bytes it wrote.
void send_fin(network& net, const std::shared_ptr<connection>& c, int side) {
  auto& d = c->from[side];
  if (d.fin_written) return;
  d.fin_written = true;
  auto& w = w_of(net);
  const auto arrive = std::max(w.now() + c->latency, d.last_arrival + clock::duration(1));
  d.last_arrival = arrive;
  w.record("fin", c->id, static_cast<std::uint64_t>(side));
  w.at(arrive, [&net, c, side] {
    if (c->reset_at[1 - side]) return;
    c->from[side].fin_arrived = true;
    w_of(net).record("fin_arrived", c->id, static_cast<std::uint64_t>(side));
    wake(net, c, 1 - side, /*arrival=*/true);
  });
}

void reset_from(network& net, const std::shared_ptr<connection>& c, int side) {
  auto& w = w_of(net);
  w.record("rst", c->id, static_cast<std::uint64_t>(side));
  // Behind the bytes already written, as on Linux: what a socket took was
  // sent at once (a write takes only what the window has room for), and
  // the reset follows it on the same path. Only what was never written is
  // lost. (A reset that overtook them lost a target's rejection answer
  // written just before its close: corrupted_header, 6 of seeds 1-20.)
  auto& d = c->from[side];
  const auto arrive = std::max(w.now() + c->latency, d.last_arrival + clock::duration(1));
  d.last_arrival = arrive;
  w.at(arrive, [&net, c, side] {
    const int to = 1 - side;
    if (c->reset_at[to] || c->closed[to]) return;
    c->reset_at[to] = true;
    w_of(net).record("rst_arrived", c->id, static_cast<std::uint64_t>(to));
    // A pending read takes what had arrived, then the reset; a write fails.
    wake(net, c, to, /*arrival=*/true);
  });
}

void crash_end(network& net, const std::shared_ptr<connection>& c, int side) {
  if (!c->reset_at[side]) reset_from(net, c, side);
  c->closed[side] = true;
  c->reset_at[side] = true;
  if (auto s = c->sockets[side].lock()) abort_pending(*s, asio::error::connection_reset);
}

void establish(network& net, const std::shared_ptr<listener>& l, waiting_connect wc) {
  auto& w = w_of(net);
  auto c = std::make_shared<connection>();
  c->id = net.connection_id();
  const auto& o = net.options();
  c->latency = clock::duration(
      static_cast<clock::rep>(w.draw(static_cast<std::uint64_t>(o.latency_min.count()),
                                     static_cast<std::uint64_t>(o.latency_max.count()))));
  c->from[0].capacity = w.draw(o.buffer_min, o.buffer_max);
  c->from[1].capacity = w.draw(o.buffer_min, o.buffer_max);
  c->ends[0] = wc.client->local;
  c->ends[1] = l->at;
  c->sockets[0] = wc.client;
  wc.client->conn = c;
  wc.client->side = 0;
  wc.client->remote = l->at;
  net.opened(c);
  l->queue.push_back(c);
  w.record("connect", c->id, l->at.port());
  if (wc.client->connect_done) {
    auto done = std::move(wc.client->connect_done);
    wc.client->connect_done = nullptr;
    done(std::error_code());
  }
  serve_accepts(net, l);
}

void serve_accepts(network& net, const std::shared_ptr<listener>& l) {
  while (!l->accepts.empty() && !l->queue.empty()) {
    auto pending = std::move(l->accepts.front());
    l->accepts.pop_front();
    auto c = l->queue.front();
    l->queue.pop_front();
    socket s(*pending.context);
    auto state = std::make_shared<socket_state>();
    state->net = &net;
    state->context = pending.context;
    state->context_alive = alive_flag(pending.context->get_executor());
    context_alive_of(pending.context->get_executor()).on_shutdown(state, &drop_pending);
    state->open = true;
    net.object_opened();
    state->local = c->ends[1];
    state->remote = c->ends[0];
    state->conn = c;
    state->side = 1;
    c->sockets[1] = state;
    s.adopt(state);
    w_of(net).record("accept", c->id);
    pending.done(std::error_code(), std::move(s));
    // Data or a FIN may have come before the accept.
    FAULTLANE_PROBE_IF(c->from[0].unread > 0 || c->from[0].fin_arrived, world_data_before_accept);
  }
  while (!l->waiting.empty() && l->queue.size() < l->backlog && l->open) {
    auto wc = std::move(l->waiting.front());
    l->waiting.pop_front();
    // A connect given up meanwhile (closed, cancelled) never connects; one
    // from a node that crashed meanwhile is refused.
    if (!wc.client->open || !wc.client->connect_done) continue;
    if (net.is_down(wc.client->local.address())) {
      FAULTLANE_PROBE(world_connect_refused);
      auto done = std::move(wc.client->connect_done);
      wc.client->connect_done = nullptr;
      done(asio::error::connection_refused);
      continue;
    }
    establish(net, l, std::move(wc));
  }
}

void close_listener(network& net, const std::shared_ptr<listener>& l) {
  if (!l->open) return;
  l->open = false;
  net.unlisten(l->at);
  w_of(net).record("unlisten", l->at.port());
  FAULTLANE_PROBE_IF(!l->queue.empty() || !l->waiting.empty(), world_listener_closed_with_queue);
  for (auto& c : l->queue) {
    c->closed[1] = true;
    reset_from(net, c, 1);
  }
  l->queue.clear();
  for (auto& wc : l->waiting) {
    if (wc.client->connect_done) {
      auto done = std::move(wc.client->connect_done);
      wc.client->connect_done = nullptr;
      done(asio::error::connection_refused);
    }
  }
  l->waiting.clear();
  auto accepts = std::move(l->accepts);
  l->accepts.clear();
  for (auto& a : accepts) a.done(asio::error::operation_aborted, socket(*a.context));
}

}  // namespace detail

}  // namespace faultlane::dsim
