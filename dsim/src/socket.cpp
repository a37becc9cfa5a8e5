// socket, acceptor: see socket.hpp; the rules behind them are in
// connection.cpp.
#include "faultlane/dsim/socket.hpp"

#include <asio/error.hpp>
#include <asio/execution/context.hpp>
#include <asio/post.hpp>
#include <asio/query.hpp>

#include <algorithm>
#include <utility>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/probe.hpp"
#include "state.hpp"

namespace faultlane::dsim {

std::error_code detail::connect_result(const std::weak_ptr<socket_state>& state,
                                       std::error_code ec) {
  if (ec) return ec;
  auto s = state.lock();
  if (!s || !s->open || !s->conn || !s->conn->reset_at[s->side]) return ec;
  s->net->owner().record("connect_reset", s->conn->id);
  return asio::error::connection_reset;
}

// --- socket ------------------------------------------------------------------

socket::socket(const executor_type& ex) : ex_(ex) {}

socket::socket(socket&& other) noexcept
    : ex_(other.ex_), state_(std::move(other.state_)), non_blocking_(other.non_blocking_) {}

socket& socket::operator=(socket&& other) noexcept {
  if (this != &other) {
    std::error_code ignored;
    close(ignored);
    ex_ = other.ex_;
    state_ = std::move(other.state_);
    non_blocking_ = other.non_blocking_;
  }
  return *this;
}

socket::~socket() {
  std::error_code ignored;
  close(ignored);
}

bool socket::is_open() const noexcept { return state_ && state_->open; }

void socket::open(const protocol_type&, std::error_code& ec) {
  ec.clear();
  if (is_open()) {
    ec = asio::error::already_open;
    return;
  }
  state_ = std::make_shared<detail::socket_state>();
  state_->net = &network::current();
  state_->context = &asio::query(ex_, asio::execution::context);
  state_->context_alive = detail::alive_flag(ex_);
  detail::context_alive_of(ex_).on_shutdown(state_, &detail::drop_pending);
  state_->open = true;
  state_->net->object_opened();
}

void socket::open(const protocol_type& p) {
  std::error_code ec;
  open(p, ec);
  asio::detail::throw_error(ec, "open");
}

void socket::adopt(std::shared_ptr<detail::socket_state> state) { state_ = std::move(state); }

void socket::bind(const endpoint& at, std::error_code& ec) {
  ec.clear();  // an open socket's bind says nothing of an earlier call's error
  if (!is_open()) open(asio::ip::tcp::v4(), ec);
  if (ec) return;
  auto& net = *state_->net;
  endpoint e = at;
  if (e.port() == 0) e.port(net.ephemeral_port(e.address()));
  if (net.port_in_use(e)) {
    ec = asio::error::address_in_use;
    return;
  }
  state_->local = e;
  state_->bound = true;
}

void socket::close(std::error_code& ec) {
  ec.clear();
  if (!state_ || !state_->open) return;
  auto s = std::move(state_);
  auto& net = *s->net;
  s->open = false;
  net.object_closed();
  if (auto c = s->conn) {
    const int side = s->side;
    if (!c->closed[side] && !c->reset_at[side]) {
      if (s->linger_zero || c->from[1 - side].unread > 0) {
        detail::reset_from(net, c, side);  // unread bytes: Linux resets, as linger 0 does
      } else {
        detail::send_fin(net, c, side);
      }
    }
    c->closed[side] = true;
    c->sockets[side].reset();
  }
  detail::abort_pending(*s, asio::error::operation_aborted);
}

void socket::close() {
  std::error_code ec;
  close(ec);
}

void socket::cancel(std::error_code& ec) {
  ec.clear();
  if (state_) detail::abort_pending(*state_, asio::error::operation_aborted);
}

void socket::cancel() {
  std::error_code ec;
  cancel(ec);
}

void socket::shutdown(shutdown_type what, std::error_code& ec) {
  ec.clear();
  if (!state_ || !state_->conn) {
    ec = asio::error::not_connected;
    return;
  }
  if (what == shutdown_send || what == shutdown_both) {
    state_->shut_send = true;
    detail::send_fin(*state_->net, state_->conn, state_->side);
  }
}

void socket::shutdown(shutdown_type what) {
  std::error_code ec;
  shutdown(what, ec);
  asio::detail::throw_error(ec, "shutdown");
}

endpoint socket::local_endpoint(std::error_code& ec) const {
  ec.clear();
  if (!is_open()) ec = asio::error::bad_descriptor;
  return is_open() ? state_->local : endpoint();
}

endpoint socket::local_endpoint() const {
  std::error_code ec;
  auto e = local_endpoint(ec);
  asio::detail::throw_error(ec, "local_endpoint");
  return e;
}

endpoint socket::remote_endpoint(std::error_code& ec) const {
  ec.clear();
  if (!is_open() || !state_->conn) ec = asio::error::not_connected;
  return ec ? endpoint() : state_->remote;
}

endpoint socket::remote_endpoint() const {
  std::error_code ec;
  auto e = remote_endpoint(ec);
  asio::detail::throw_error(ec, "remote_endpoint");
  return e;
}

void socket::set_linger(bool on, int seconds) {
  if (state_) state_->linger_zero = on && seconds == 0;
}

void socket::set_low_watermark(std::size_t bytes) {
  if (state_) state_->low_watermark = std::max<std::size_t>(bytes, 1);
}

void socket::io_control(asio::socket_base::bytes_readable& command, std::error_code& ec) {
  command = asio::socket_base::bytes_readable(available(ec));
}

std::size_t socket::available(std::error_code& ec) const {
  ec.clear();
  if (!is_open()) {
    ec = asio::error::bad_descriptor;
    return 0;
  }
  return queued();
}

std::size_t socket::queued() const noexcept {
  if (!state_ || !state_->conn) return 0;
  return state_->conn->from[1 - state_->side].unread;
}

bool socket::peer_gone_or_ready() const noexcept {
  if (!state_ || !state_->conn) return true;
  const auto& c = *state_->conn;
  const auto& d = c.from[1 - state_->side];
  return d.unread > 0 || d.fin_arrived || c.reset_at[state_->side];
}

std::size_t socket::read_now(std::vector<asio::mutable_buffer> buffers, std::error_code& ec) {
  if (!is_open()) {
    ec = asio::error::bad_descriptor;
    return 0;
  }
  std::size_t n = 0;
  if (!detail::read_outcome(*state_->net, *state_, buffers, ec, n)) {
    ec = asio::error::would_block;
    return 0;
  }
  if (n > 0) detail::wake(*state_->net, state_->conn, 1 - state_->side);
  return n;
}

std::size_t socket::write_now(std::vector<asio::const_buffer> buffers, std::error_code& ec) {
  if (!is_open()) {
    ec = asio::error::bad_descriptor;
    return 0;
  }
  std::size_t n = 0;
  if (!detail::write_outcome(*state_->net, *state_, buffers, ec, n)) {
    ec = asio::error::would_block;
    return 0;
  }
  return n;
}

void socket::start_read(std::vector<asio::mutable_buffer> buffers, detail::io_handler done) {
  if (!is_open()) {
    done(asio::error::bad_descriptor, 0);
    return;
  }
  FL_ASSERT(!state_->read_done);  // one read at a time, as on a real socket's stream
  state_->read_on_edge = false;
  state_->read_buffers = std::move(buffers);
  state_->read_done = std::move(done);
  detail::try_read(*state_->net, state_);
}

void socket::start_edge_read(std::vector<asio::mutable_buffer> buffers, bool probe,
                             edge_handler done) {
  // With what the read performed says of the socket, taken at once (the
  // state may see another read before a posted handler runs). Run at once
  // when performed on its own context after an arrival (an edge), posted
  // otherwise (a speculative read's result, an abort), as Asio does.
  auto alive = detail::alive_flag(ex_);
  auto* state = state_.get();
  detail::io_handler finish = [ex = ex_, alive, state, done = std::move(done)](
                                  std::error_code ec, std::size_t n) mutable {
    // (No state: the socket was closed before the read started.)
    const bool left_nothing = state != nullptr && std::exchange(state->read_left_nothing, false);
    if (state != nullptr && std::exchange(state->read_inline, false)) {
      std::move(done)(ec, n, left_nothing);
      return;
    }
    if (!*alive) return;
    asio::post(ex, [done = std::move(done), ec, n, left_nothing]() mutable {
      std::move(done)(ec, n, left_nothing);
    });
  };
  if (!is_open()) {
    finish(asio::error::bad_descriptor, 0);
    return;
  }
  FL_ASSERT(!state_->read_done);  // one read at a time
  state_->read_buffers = std::move(buffers);
  state_->read_done = std::move(finish);
  state_->edge_executor = ex_;
  state_->read_on_edge = !probe;
  if (probe) {
    detail::try_read(*state_->net, state_);              // the speculative read
    if (state_->read_done) state_->read_on_edge = true;  // found nothing: the next edge
  }
}

void socket::start_write(std::vector<asio::const_buffer> buffers, detail::io_handler done) {
  if (!is_open()) {
    done(asio::error::bad_descriptor, 0);
    return;
  }
  FL_ASSERT(!state_->write_done);
  state_->write_buffers = std::move(buffers);
  state_->write_done = std::move(done);
  detail::try_write(*state_->net, state_);
}

void socket::start_connect(const endpoint& to, detail::done_handler done) {
  std::error_code ec;
  if (!is_open()) open(asio::ip::tcp::v4(), ec);
  if (ec || state_->conn) {
    done(ec ? ec : asio::error::already_connected);
    return;
  }
  auto& net = *state_->net;
  if (!state_->bound) {
    auto node = net.node_of(static_cast<asio::io_context&>(*state_->context));
    state_->local = endpoint(node, net.ephemeral_port(node));
    state_->bound = true;
  }
  state_->connect_done = std::move(done);
  auto& w = net.owner();
  const auto& o = net.options();
  const auto syn = clock::duration(
      static_cast<clock::rep>(w.draw(static_cast<std::uint64_t>(o.latency_min.count()),
                                     static_cast<std::uint64_t>(o.latency_max.count()))));
  std::weak_ptr<detail::socket_state> weak = state_;
  w.at(w.now() + syn, [&net, weak, to] {
    auto s = weak.lock();
    if (!s || !s->open || !s->connect_done) return;  // closed or cancelled meanwhile
    auto l = net.listener_at(to);
    if (!l || !l->open || net.is_down(s->local.address())) {
      net.owner().record("refused", to.port());
      auto connect_done = std::move(s->connect_done);
      s->connect_done = nullptr;
      FAULTLANE_PROBE(world_connect_refused);
      connect_done(asio::error::connection_refused);
      return;
    }
    detail::waiting_connect wc{s};
    if (l->queue.size() >= l->backlog) {
      net.owner().record("backlog_full", to.port());
      l->waiting.push_back(std::move(wc));
      return;
    }
    detail::establish(net, l, std::move(wc));
  });
}

void socket::start_wait(wait_type what, detail::done_handler done) {
  if (!is_open()) {
    done(asio::error::bad_descriptor);
    return;
  }
  auto& slot = what == wait_read ? state_->readable_done : state_->writable_done;
  FL_ASSERT(!slot);  // one wait of a kind at a time
  slot = std::move(done);
  detail::try_ready(*state_);
}

// --- acceptor ----------------------------------------------------------------

acceptor::~acceptor() { close(); }

void acceptor::open(const protocol_type&, std::error_code& ec) {
  ec.clear();
  if (open_) {
    ec = asio::error::already_open;
    return;
  }
  open_ = true;
  net_ = &network::current();
  net_->object_opened();
}

void acceptor::bind(const endpoint& at, std::error_code& ec) {
  ec.clear();
  auto& net = network::current();
  endpoint e = at;
  if (e.port() == 0) e.port(net.ephemeral_port(e.address()));
  if (net.port_in_use(e)) {
    ec = asio::error::address_in_use;
    return;
  }
  bound_ = e;
}

void acceptor::listen(int backlog, std::error_code& ec) {
  ec.clear();
  if (!open_ || bound_.port() == 0) {
    ec = asio::error::invalid_argument;
    return;
  }
  auto& net = network::current();
  listener_ = std::make_shared<detail::listener>();
  listener_->net = &net;
  listener_->at = bound_;
  listener_->backlog = static_cast<std::size_t>(std::clamp(backlog, 1, 4096));
  net.listen(bound_, listener_);
}

void acceptor::close(std::error_code& ec) {
  ec.clear();
  if (open_) net_->object_closed();
  open_ = false;
  if (listener_) detail::close_listener(*listener_->net, listener_);
  listener_.reset();
}

void acceptor::cancel(std::error_code& ec) {
  ec.clear();
  if (!listener_) return;
  auto accepts = std::move(listener_->accepts);
  listener_->accepts.clear();
  for (auto& a : accepts) a.done(asio::error::operation_aborted, socket(*a.context));
}

endpoint acceptor::local_endpoint(std::error_code& ec) const {
  ec.clear();
  if (!open_) ec = asio::error::bad_descriptor;
  return open_ ? bound_ : endpoint();
}

void acceptor::accept(socket& into, std::error_code& ec) {
  ec.clear();
  if (!listener_ || !listener_->open) {
    ec = asio::error::bad_descriptor;
    return;
  }
  if (listener_->queue.empty()) {
    ec = asio::error::would_block;
    return;
  }
  auto& context =
      static_cast<asio::io_context&>(asio::query(into.get_executor(), asio::execution::context));
  listener_->accepts.push_front(
      {&context, [&into](std::error_code, socket s) { into = std::move(s); }});
  detail::serve_accepts(*listener_->net, listener_);
}

void acceptor::start_accept(asio::io_context& context,
                            unique_function<void(std::error_code, socket)> done) {
  if (!listener_ || !listener_->open) {
    done(asio::error::bad_descriptor, socket(context));
    return;
  }
  listener_->accepts.push_back({&context, std::move(done)});
  detail::serve_accepts(*listener_->net, listener_);
}

}  // namespace faultlane::dsim
