// lane and peer_group; see client.hpp and docs/protocol.md.
#include "client.hpp"

#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <poll.h>

#include <array>

#include "faultlane/core/failpoint.hpp"
#include "server.hpp"
#include "send_now.hpp"
#include "tsan_order.hpp"

namespace faultlane::detail {

using asio::ip::tcp;
using namespace std::chrono;

namespace {
constexpr std::size_t io_chunk_bytes_max = 4u << 20;
}

// --- lane ----------------------------------------------------------------------

lane::lane(runtime& rt, peer_group& group, std::size_t index, std::size_t shard)
    : rt_(rt),
      group_(group),
      index_(index),
      rail_(index % group.rail_count()),
      shard_(shard),
      socket_(rt.pool->context(shard)),
      deadline_(
          rt.pool->context(shard),
          [this] { run_guarded(rt_, [this] { on_deadline(); }, [this] { on_handler_exception(); }); },
          [this] {
            bump(rt_.stats.stale_handlers_dropped);
            if (rt_.observer) rt_.observer->stale_handler_dropped(event());
          }) {}

lane_event lane::event() const { return {group_.id(), index_, rail_, epoch_}; }

// Wraps a handler: an exception escaping it marks the runtime failed, drops
// this lane's connection and fails its work; nothing is left half-done.
template <typename Fn>
auto lane::guarded(Fn fn) {
  return [self = shared_from_this(), fn = std::move(fn)](auto&&... args) mutable {
    run_guarded(
        self->rt_, [&] { fn(std::forward<decltype(args)>(args)...); },
        [&] { self->on_handler_exception(); });
  };
}

// Runs inside the guard's recovery: must not throw.
void lane::on_handler_exception() noexcept {
  abort_status_ = status::runtime_failed;
  if (io_pending_) {
    // The handler had already started its next socket operation: closing
    // the socket makes that operation's handler finish the op.
    std::error_code ignored;
    socket_.close(ignored);
  } else if (current_) {
    finish(status::runtime_failed, 0, false);
  } else {
    close_socket(status::runtime_failed);
  }
  fail_queue(status::runtime_failed);
}

auto lane::progress_condition() {
  return [this](const std::error_code& ec, std::size_t) -> std::size_t {
    if (ec) return 0;
    deadline_.push(milliseconds(rt_.config.progress_timeout_ms));
    return io_chunk_bytes_max;
  };
}

void lane::enqueue(std::unique_ptr<transfer_op> op) {
  FL_ASSERT(op && !op->retired);
  if (state_ == state::closed) return retire(std::move(op), status::shutting_down, 0);
  queue_.push_back(std::move(op));
  // Starting the next exchange may send and settle synchronously; a handler
  // exception there is handled as in any other handler.
  run_guarded(
      rt_,
      [this] {
        (void)FAULTLANE_FAILPOINT("lane.enqueue");
        pump();
      },
      [this] { on_handler_exception(); });
}

// An idle connection should have nothing to read: readability or a hang-up
// means the peer closed or reset it (it restarted, or timed us out), so a
// request sent on it would be lost in flight. Checked without blocking.
bool lane::peer_went_away() {
  FL_ASSERT(state_ == state::idle);
  pollfd p{socket_.native_handle(), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0;
}

void lane::pump() {
  if (queue_.empty()) return;
  if (state_ == state::idle && peer_went_away()) {
    // Reconnect first: a WRITE then never leaves on a dead connection, so
    // its outcome stays definite.
    bump(rt_.stats.lanes_found_closed);
    close_socket(status::connection_failed);
    FL_ASSERT(state_ == state::disconnected);
  }
  switch (state_) {
    case state::disconnected: {
      // Work that reaches a lane after shutdown began never starts a connect.
      if (rt_.closing.load(std::memory_order_acquire)) return fail_queue(status::shutting_down);
      auto decision = group_.request_connect(shared_from_this());
      if (decision == peer_group::connect_decision::go) return start_connect();
      if (decision == peer_group::connect_decision::wait) {
        state_ = state::waiting_for_probe;
        return;
      }
      return fail_queue(status::connection_failed);  // in reconnect cooldown
    }
    case state::idle: return start_next();
    default: return;  // connecting or busy: continues when that ends
  }
}

void lane::probe_finished() {
  (void)FAULTLANE_FAILPOINT("lane.probe_finished");
  if (state_ != state::waiting_for_probe) {
    bump(rt_.stats.stale_handlers_dropped);
    return;
  }
  state_ = state::disconnected;
  pump();
}

void lane::start_connect() {
  FL_ASSERT(state_ == state::disconnected);
  const auto& remote = group_.descriptor().endpoints[rail_];
  std::error_code ec;
  tcp::endpoint peer(asio::ip::make_address(remote.address, ec), remote.port);
  FL_ASSERT(!ec);  // descriptors are validated at open_segment
  state_ = state::connecting;
  timed_out_ = false;
  connect_dropped_ = false;
  abort_status_.reset();
  ++epoch_;
  bump(rt_.stats.lanes_connecting);
  socket_.open(tcp::v4(), ec);
  if (!ec && !rt_.config.rail_addresses.empty()) {
    // Bind the source address to this lane's rail so its bytes use it.
    auto local = asio::ip::make_address(rt_.config.rail_addresses[rail_]);
    socket_.bind(tcp::endpoint(local, 0), ec);
  }
  if (ec) {
    io_pending_ = false;
    return on_connected(ec);
  }
  deadline_kind_ = deadline_kind::connect;
  deadline_.set(milliseconds(rt_.config.connect_timeout_ms), shared_from_this());
  io_pending_ = true;
  socket_.async_connect(peer, guarded([this](std::error_code e) { on_connected(e); }));
}

void lane::on_connected(const std::error_code& ec) {
  io_pending_ = false;
  FL_ASSERT(state_ == state::connecting);
  rt_.stats.lanes_connecting.fetch_sub(1, std::memory_order_relaxed);
  deadline_.clear();
  std::error_code blocking;
  // send_now must never block the io thread: a connection that cannot be
  // made non-blocking is a failed connect.
  if (!ec && !abort_status_ && !connect_dropped_) socket_.non_blocking(true, blocking);
  if (auto injected = FAULTLANE_FAILPOINT("lane.set_non_blocking"); injected && !ec) {
    blocking = std::make_error_code(std::errc::invalid_argument);
  }
  if (ec || abort_status_ || connect_dropped_ || blocking) return on_connect_failed();
  std::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  bump(rt_.stats.connects);
  bump(rt_.stats.lanes_connected);
  if (connections_++ > 0) bump(rt_.stats.reconnects);
  if (rt_.observer) {
    auto e = event();
    auto local = socket_.local_endpoint(ignored);
    auto remote = socket_.remote_endpoint(ignored);
    e.local = {local.address().to_string(), local.port()};
    e.remote = {remote.address().to_string(), remote.port()};
    rt_.observer->lane_connected(e);
  }
  state_ = state::idle;
  group_.connect_finished(peer_group::connect_outcome::connected);
  if (queue_.empty()) {
    deadline_kind_ = deadline_kind::idle;
    deadline_.set(milliseconds(rt_.config.idle_connection_timeout_ms), shared_from_this());
    return;
  }
  start_next();
}

// A connect that failed, or that we cancelled ourselves. Only the first is
// the peer's failure: it counts, and it starts the group's reconnect
// cooldown. Work queued behind a cancelled connect (drop_connections) just
// connects again; behind a shutdown it fails as shutting_down.
void lane::on_connect_failed() {
  FL_ASSERT(state_ == state::connecting);
  std::error_code ignored;
  socket_.close(ignored);
  const bool closing = abort_status_ == status::shutting_down;
  state_ = closing ? state::closed : state::disconnected;
  if (closing || connect_dropped_) {
    bump(rt_.stats.connects_cancelled);
    group_.connect_finished(peer_group::connect_outcome::cancelled);
    connect_dropped_ = false;
    return closing ? fail_queue(status::shutting_down) : pump();
  }
  auto why = io_failure();
  if (timed_out_) bump(rt_.stats.timeouts);
  bump(rt_.stats.connect_failures);
  group_.connect_finished(peer_group::connect_outcome::failed);
  fail_queue(why);
}

void lane::start_next() {
  FL_ASSERT(state_ == state::idle);
  FL_ASSERT(!current_);
  // Slices of a task that already failed are not started.
  while (!queue_.empty() && queue_.front()->task->cancelled.load(std::memory_order_acquire)) {
    auto skipped = std::move(queue_.front());
    queue_.pop_front();
    retire(std::move(skipped), status::cancelled, 0);
  }
  if (queue_.empty()) {
    deadline_kind_ = deadline_kind::idle;
    deadline_.set(milliseconds(rt_.config.idle_connection_timeout_ms), shared_from_this());
    return;
  }
  current_ = std::move(queue_.front());
  queue_.pop_front();
  state_ = state::busy;
  timed_out_ = false;
  request_bytes_sent_ = false;
  auto& op = *current_;
  wire::encode(wire::request_frame{op.op, 0, op.request_id, op.remote_registration,
                                   op.remote_offset, op.length},
               request_);
  if (rt_.observer) {
    rt_.observer->slice_dispatched({op.task->info.task_id, op.request_id, group_.id(), index_,
                                    rail_, op.slice_offset, op.length});
  }
  deadline_kind_ = deadline_kind::progress;
  deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
  // Header and body (a WRITE's) leave in one gather write, straight from the
  // caller's buffer; usually all at once, without a trip through the loop.
  send_buffers out{asio::buffer(request_), op.op == wire::opcode::write
                                               ? asio::const_buffer(op.local, op.length)
                                               : asio::const_buffer()};
  if (op.op == wire::opcode::write) note_send_reads(op.local, op.length);
  std::error_code ec;
  const std::size_t sent = send_now(socket_, out, ec);
  if (ec || sent == asio::buffer_size(out)) return on_request_sent(ec, sent);
  io_pending_ = true;
  asio::async_write(socket_, rest_of(out, sent), progress_condition(),
                    guarded([this, sent](std::error_code e, std::size_t n) {
                      on_request_sent(e, sent + n);
                    }));
}

void lane::on_request_sent(const std::error_code& ec, std::size_t sent) {
  io_pending_ = false;
  FL_ASSERT(state_ == state::busy);
  if (sent > 0) request_bytes_sent_ = true;
  if (ec) return finish(io_failure(), 0, false);
  if (auto injected = FAULTLANE_FAILPOINT_KEY("client.after_request_sent", current_->remote_registration)) {
    abort_status_ = *injected;
    return finish(*injected, 0, false);
  }
  if (current_->op == wire::opcode::read) return read_response_and_payload();
  io_pending_ = true;
  asio::async_read(socket_, asio::buffer(response_), progress_condition(),
                   guarded([this](std::error_code e, std::size_t) { on_response(e, 0); }));
}

// A READ's response header and payload usually arrive together: one scatter
// read takes both. An error response has no payload, so the read never
// waits for payload bytes that will not come: it returns what is there.
// (A started read, not a readiness wait: Asio re-registers a descriptor with
// epoll_ctl for every wait, and skips the speculative read of a started one
// when the last read drained the socket.)
void lane::read_response_and_payload() {
  auto& op = *current_;
  std::array<asio::mutable_buffer, 2> in{asio::buffer(response_), asio::buffer(op.local, op.length)};
  io_pending_ = true;
  socket_.async_read_some(in, guarded([this](std::error_code ec, std::size_t n) {
    io_pending_ = false;
    if (ec) return finish(io_failure(), 0, false);
    deadline_.push(milliseconds(rt_.config.progress_timeout_ms));
    if (n >= response_.size()) return on_response(ec, n - response_.size());
    io_pending_ = true;
    asio::async_read(socket_, asio::buffer(response_.data() + n, response_.size() - n),
                     progress_condition(),
                     guarded([this](std::error_code e, std::size_t) { on_response(e, 0); }));
  }));
}

void lane::on_response(const std::error_code& ec, std::size_t payload_have) {
  io_pending_ = false;
  FL_ASSERT(state_ == state::busy);
  if (ec) return finish(io_failure(), 0, false);
  (void)FAULTLANE_FAILPOINT("client.on_response");
  auto& op = *current_;
  auto decoded = wire::decode_response(response_);
  if (!decoded.ok()) return finish(status::protocol_error, 0, false);
  const auto& reply = decoded.value();
  if (reply.request_id == 0 && wire::is_header_rejection(reply.status) && payload_have == 0) {
    // The target could not decode our header (it was damaged on the way):
    // it answers without an id, executes nothing, and closes. With one
    // exchange in flight the answer is ours, and definite.
    return finish(status::protocol_error, 0, false, fate::not_executed);
  }
  if (reply.request_id != op.request_id) return finish(status::protocol_error, 0, false);
  if (reply.status != wire::wire_status::ok) {
    // Bytes that arrived after an error header can only be garbage.
    if (payload_have > 0) return finish(status::protocol_error, 0, false);
    // A definite answer: the target did not execute. A READ rejection keeps
    // the connection; the target closes after a WRITE rejection.
    return finish(wire::status_for(reply.status), 0, op.op == wire::opcode::read,
                  fate::not_executed);
  }
  if (reply.committed_bytes != op.length) return finish(status::protocol_error, 0, false);
  if (op.op == wire::opcode::write) return finish(status::ok, op.length, true);
  if (payload_have == op.length) return finish(status::ok, op.length, true);
  io_pending_ = true;
  const std::size_t rest = op.length - payload_have;
  watermark_.begin(socket_, rest);
  auto condition = [this](const std::error_code& e, std::size_t n) -> std::size_t {
    if (e) return 0;
    deadline_.push(milliseconds(rt_.config.progress_timeout_ms));
    watermark_.progress(socket_, n);
    return io_chunk_bytes_max;
  };
  asio::async_read(socket_, asio::buffer(op.local + payload_have, rest), condition,
                   guarded([this](std::error_code e, std::size_t) {
                     watermark_.end(socket_);
                     on_payload(e);
                   }));
}

void lane::on_payload(const std::error_code& ec) {
  io_pending_ = false;
  FL_ASSERT(state_ == state::busy);
  if (ec) return finish(io_failure(), 0, false);
  finish(status::ok, current_->length, true);
}

status lane::io_failure() const {
  if (abort_status_) return *abort_status_;
  if (timed_out_) return status::timeout;
  return status::connection_failed;
}

// The one place an in-flight op ends. A dirty connection is closed before
// the status becomes visible, so no later request can reuse it.
void lane::finish(status code, std::uint64_t bytes, bool keep_connection, fate outcome) {
  FL_ASSERT(current_);
  FL_ASSERT(state_ == state::busy || state_ == state::closed);
  FL_ASSERT(code != status::ok || outcome == fate::unknown);
  auto op = std::move(current_);
  if (code == status::timeout) bump(rt_.stats.timeouts);
  // A WRITE that failed after any byte of its request left, with no answer
  // from the target saying it did not execute, has an unknown outcome:
  // terminal, never replayed (docs/architecture.md lists the cases).
  if (op->op == wire::opcode::write && code != status::ok && request_bytes_sent_ &&
      outcome == fate::unknown) {
    code = status::ambiguous_write;
  }
  const bool retry = code == status::stale_registration && !op->refreshed && group_.can_refresh();
  if (code != status::ok && !retry) cancel_siblings(*op);
  if (keep_connection && state_ == state::busy && !abort_status_) {
    state_ = state::idle;
  } else {
    close_socket(code);
  }
  if (retry) {
    group_.refresh_and_retry(std::move(op), shared_from_this());
  } else {
    retire(std::move(op), code, bytes);
  }
  if (state_ == state::idle) {
    if (!queue_.empty()) return start_next();
    deadline_kind_ = deadline_kind::idle;
    deadline_.set(milliseconds(rt_.config.idle_connection_timeout_ms), shared_from_this());
    return;
  }
  if (state_ == state::disconnected) pump();
  else if (state_ == state::closed) fail_queue(status::shutting_down);
}

void lane::cancel_siblings(const transfer_op& failed) {
  auto* task = failed.task;
  if (task->slice_lanes.empty()) return;
  if (task->cancelled.exchange(true, std::memory_order_acq_rel)) return;  // already done once
  for (const auto& sibling : task->slice_lanes) {
    if (sibling.get() == this) continue;
    // `keep` pins the batch, so `task` cannot be freed and reused by a new
    // task before the sibling lane has looked at it.
    post_guarded(rt_, sibling->shard(),
                 [sibling, task, keep = failed.batch] { sibling->cancel_task(task); });
  }
}

// A sibling slice failed: drop this task's queued slices, and cancel the
// one in flight by closing the connection (its handler ends it cancelled;
// the lane reconnects for its next work).
void lane::cancel_task(const task_state* task) {
  FL_ASSERT(task != nullptr);
  (void)FAULTLANE_FAILPOINT("lane.cancel_task");
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->task == task) {
      auto op = std::move(*it);
      it = queue_.erase(it);
      retire(std::move(op), status::cancelled, 0);
    } else {
      ++it;
    }
  }
  if (current_ && current_->task == task && io_pending_) {
    abort_status_ = status::cancelled;
    std::error_code ignored;
    socket_.close(ignored);
  }
}

void lane::fail_queue(status code) {
  auto failed = std::move(queue_);
  queue_.clear();
  for (auto& op : failed) retire(std::move(op), code, 0);
}

void lane::close_socket(status why) {
  if (state_ == state::idle || state_ == state::busy) {
    rt_.stats.lanes_connected.fetch_sub(1, std::memory_order_relaxed);
    if (rt_.observer) rt_.observer->lane_closed(event(), why);
  }
  std::error_code ignored;
  socket_.close(ignored);
  deadline_.cancel();
  if (state_ != state::closed && state_ != state::connecting) state_ = state::disconnected;
  if (abort_status_ == status::shutting_down) state_ = state::closed;
}

void lane::on_deadline() {
  (void)FAULTLANE_FAILPOINT("lane.on_deadline");
  switch (deadline_kind_) {
    case deadline_kind::idle:
      if (state_ != state::idle) return;
      bump(rt_.stats.lanes_idle_closed);
      close_socket(status::ok);
      return;
    case deadline_kind::progress:
      FL_ASSERT(state_ == state::busy);
      // A payload streaming in below the receive watermark wakes nobody;
      // bytes waiting in the socket are progress all the same.
      if (watermark_.queued_bytes_grew(socket_)) {
        bump(rt_.stats.deadline_checks_with_queued_bytes);
        deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
        return;
      }
      [[fallthrough]];
    case deadline_kind::connect:
      // Cancel the pending operation; its handler ends the op with timeout.
      timed_out_ = true;
      std::error_code ignored;
      socket_.close(ignored);
      return;
  }
}

void lane::shutdown() {
  abort_status_ = status::shutting_down;
  fail_queue(status::shutting_down);
  switch (state_) {
    case state::connecting:
    case state::busy: {
      // The pending handler settles the op and sees the lane closed.
      std::error_code ignored;
      socket_.close(ignored);
      deadline_.cancel();
      return;
    }
    case state::idle: close_socket(status::shutting_down); break;
    default: deadline_.cancel(); break;
  }
  state_ = state::closed;
}

void lane::drop_connection() {
  switch (state_) {
    case state::idle: close_socket(status::connection_failed); return;
    case state::connecting: {
      // Cancelled by us, not refused by the peer: the handler reconnects.
      connect_dropped_ = true;
      std::error_code ignored;
      socket_.close(ignored);
      return;
    }
    case state::busy: {
      std::error_code ignored;
      socket_.close(ignored);  // the pending handler fails the op
      return;
    }
    default: return;
  }
}

// --- peer_group ------------------------------------------------------------------

peer_group::peer_group(runtime& rt, segment_id id, segment_descriptor descriptor,
                       std::shared_ptr<descriptor_source> source)
    : rt_(rt), id_(id), descriptor_(std::move(descriptor)), source_(std::move(source)) {
  for (const auto& r : descriptor_.registrations) {
    if (!r.name.empty()) names_[r.id] = r.name;
  }
  FL_ASSERT(!descriptor_.endpoints.empty());
  FL_ASSERT(rt_.config.connections_per_peer >= descriptor_.endpoints.size());
  for (std::size_t i = 0; i < rt_.config.connections_per_peer; ++i) {
    lanes_.push_back(std::make_shared<lane>(rt_, *this, i, rt_.pool->next_shard()));
  }
  for (std::size_t r = 0; r < rail_count(); ++r) {
    rail_sequences_.push_back(std::make_unique<std::atomic<std::uint64_t>>(0));
  }
}

// The hop to the lane's shard; enqueue() guards what it runs.
void peer_group::dispatch(runtime& rt, const std::shared_ptr<lane>& l,
                          std::unique_ptr<transfer_op> op) {
  FL_ASSERT(op);
  asio::post(rt.pool->context(l->shard()),
             [l, op = std::move(op)]() mutable { l->enqueue(std::move(op)); });
}

void peer_group::submit(std::unique_ptr<transfer_op> op) {
  dispatch(rt_, lanes_[sequence_.fetch_add(1, std::memory_order_relaxed) % lanes_.size()],
           std::move(op));
}

// Lane i serves rail i % rails, so rail r's lanes are r, r + rails, ...
std::shared_ptr<lane> peer_group::lane_for_rail(std::size_t rail) {
  FL_ASSERT(rail < rail_count());
  const std::size_t rails = rail_count();
  const std::size_t per_rail = (lanes_.size() - rail + rails - 1) / rails;
  auto turn = rail_sequences_[rail]->fetch_add(1, std::memory_order_relaxed) % per_rail;
  return lanes_[rail + turn * rails];
}

bool peer_group::can_refresh() const {
  std::lock_guard lock(names_mutex_);
  return source_ != nullptr;
}

void peer_group::adopt_source(std::shared_ptr<descriptor_source> source) {
  FL_ASSERT(source);
  std::lock_guard lock(names_mutex_);
  if (!source_) source_ = std::move(source);
}

void peer_group::refresh_and_retry(std::unique_ptr<transfer_op> op,
                                   const std::shared_ptr<lane>& from) {
  FL_ASSERT(!op->refreshed);
  op->refreshed = true;
  bump(rt_.stats.stale_refresh_attempts);
  std::shared_ptr<descriptor_source> source;
  {
    std::lock_guard lock(names_mutex_);
    source = source_;
  }
  FL_ASSERT(source);
  auto fresh = source->fetch();
  // Only a refresh that names the same buffer at the same endpoints can be
  // retried here; anything else stays stale_registration.
  if (!fresh.ok() || fresh.value().endpoints != descriptor_.endpoints) {
    return retire(std::move(op), status::stale_registration, 0);
  }
  std::optional<registration_id> renamed;
  {
    std::lock_guard lock(names_mutex_);
    auto name = names_.find(op->remote_registration);
    for (const auto& r : fresh.value().registrations) {
      if (!r.name.empty()) names_[r.id] = r.name;
      if (name != names_.end() && r.name == name->second && r.id != op->remote_registration) {
        renamed = r.id;
      }
    }
  }
  if (!renamed) return retire(std::move(op), status::stale_registration, 0);
  bump(rt_.stats.stale_refreshes);
  op->remote_registration = *renamed;
  op->request_id = rt_.next_request_id.fetch_add(1, std::memory_order_relaxed);
  if (op->rail == transfer_op::any_rail) return submit(std::move(op));
  // A slice retries on its own lane: same rail, and still where a failing
  // sibling will look for it to cancel it.
  dispatch(rt_, from, std::move(op));
}

void peer_group::shutdown_on(std::size_t shard) {
  for (auto& l : lanes_) {
    if (l->shard() == shard) l->shutdown();
  }
}

void peer_group::drop_connections_on(std::size_t shard) {
  for (auto& l : lanes_) {
    if (l->shard() == shard) l->drop_connection();
  }
}

peer_group::connect_decision peer_group::request_connect(const std::shared_ptr<lane>& l) {
  std::lock_guard lock(gate_mutex_);
  if (failure_streak_ == 0) return connect_decision::go;  // healthy: lanes connect in parallel
  auto cooldown = milliseconds(rt_.config.reconnect_cooldown_ms);
  if (steady_clock::now() < last_failure_ + cooldown) return connect_decision::refuse;
  if (probe_in_flight_) {
    waiting_.push_back(l);
    return connect_decision::wait;
  }
  probe_in_flight_ = true;
  return connect_decision::go;
}

void peer_group::connect_finished(connect_outcome outcome) {
  std::vector<std::weak_ptr<lane>> wake;
  {
    std::lock_guard lock(gate_mutex_);
    if (outcome == connect_outcome::connected) {
      failure_streak_ = 0;
    } else if (outcome == connect_outcome::failed) {
      ++failure_streak_;
      last_failure_ = steady_clock::now();
    }
    probe_in_flight_ = false;
    wake.swap(waiting_);
  }
  for (auto& weak : wake) {
    if (auto l = weak.lock()) {
      post_guarded(rt_, l->shard(), [l] { l->probe_finished(); });
    }
  }
}

}  // namespace faultlane::detail
