// lane: one TCP connection to a peer and its FIFO of frame exchanges; see
// lane.hpp and docs/architecture.md (deadlines, ambiguous WRITEs).
#include "initiator/lane.hpp"
#include "initiator/peer_group.hpp"

#include <algorithm>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::detail {

using namespace std::chrono;

// --- lane ----------------------------------------------------------------------

lane::lane(runtime& rt, peer_group& group, std::size_t index, std::size_t shard)
    : rt_(rt),
      group_(group),
      index_(index),
      rail_(index % group.rail_count()),
      shard_(shard),
      socket_(rt.pool->context(shard)),
      deadline_(
          rt.pool->context(shard), [this] { run_handler([this] { on_deadline(); }); },
          [this] {
            bump(rt_.stats.stale_handlers_dropped);
            if (rt_.observer) rt_.observer->stale_handler_dropped(event());
          }),
      start_timer_(rt.pool->context(shard)) {
  FL_ASSERT(rail_ < group.rail_count());
  FL_ASSERT(shard_ < rt.pool->size());
}

lane_event lane::event() const { return {group_.id(), index_, rail_, epoch()}; }

// Runs inside the guard's recovery: must not throw.
void lane::on_handler_exception() noexcept {
  abort_status_ = status::runtime_failed;
  FAULTLANE_PROBE(lane_handler_threw);
  if (connector_.pending()) {
    // Closing the socket makes the connect's handler end it.
    std::error_code ignored;
    socket_.close(ignored);
  } else if (state_ == state::connecting) {
    connector_.end_thrown();
  } else if (!inflight_.empty()) {
    // Settles now, or when the socket operations still pending return.
    break_connection(status::runtime_failed);
  } else {
    close_socket(status::runtime_failed);
  }
  fail_queue(status::runtime_failed);
  // What this lane's callbacks handed it came after its queue.
  while (!deferred_.empty()) retire(deferred_.pop_front(), status::runtime_failed, 0);
}

// Runs as one of the lane's handlers from its first line: settling an op
// (closed lane, cancelled task), queueing one and starting the next
// exchanges may each run callbacks or throw.
void lane::enqueue(op_chain ops) {
  run_handler([this, &ops] {
    auto start_by = net::clock::time_point{};
    bool queued = false;
    while (!ops.empty()) {
      auto op = ops.pop_front();
      FL_ASSERT(!op->retired);
      if (state_ == state::closed) {
        FAULTLANE_PROBE(op_reached_closed_lane);
        retire(std::move(op), status::shutting_down, 0);
        continue;
      }
      // A sibling slice failed before this one got here: its cancel_task ran
      // on this shard already (or will find nothing), so end it now rather
      // than queue it behind other work.
      if (op->task->cancelled.load(std::memory_order_acquire)) {
        FAULTLANE_PROBE(slice_cancelled_before_queued);
        retire(std::move(op), status::cancelled, 0);
        continue;
      }
      if (op->start_by != net::clock::time_point{} &&
          (start_by == net::clock::time_point{} || op->start_by < start_by)) {
        start_by = op->start_by;
      }
      queue_.push_back(std::move(op));
      queued = true;
    }
    if (!queued) return;
    (void)FAULTLANE_FAILPOINT("lane.enqueue");
    pump();
    if (start_by != net::clock::time_point{} && !queue_.empty()) arm_start_deadline(start_by);
  });
}

bool lane::take_from_own_handler(op_chain& ops) {
  // While a round of taken work is enqueued, what its callbacks hand back
  // is posted at once: the stack stays flat, other handlers on the thread
  // run in between, and the post happens under submit's lock, so a
  // close_segment cannot get between the submit and the hand-off.
  if (running_here_ != this || taking_deferred_ ||
      posted_pending_.load(std::memory_order_relaxed) != 0) {
    return false;
  }
  bump(rt_.stats.handoffs_inline);
  while (!ops.empty()) deferred_.push_back(ops.pop_front());
  return true;
}

void lane::take_deferred() noexcept {
  FL_ASSERT(!taking_deferred_ && !deferred_.empty());
  taking_deferred_ = true;
  enqueue(op_chain(std::move(deferred_)));  // a handler of its own, guarded
  taking_deferred_ = false;
  FL_ASSERT(deferred_.empty());  // nothing is taken while a round runs
}

// One timer for the earliest start deadline of the work still queued.
void lane::arm_start_deadline(net::clock::time_point when) {
  FL_ASSERT(when != net::clock::time_point{});
  if (start_timer_at_ != net::clock::time_point{} && start_timer_at_ <= when) return;
  start_timer_at_ = when;
  start_timer_.expires_at(when);
  start_timer_.async_wait(guarded([this](std::error_code ec) {
    if (ec) return;  // re-armed earlier, or the lane closed
    FL_ASSERT(state_ != state::closed || queue_.empty());
    start_timer_at_ = {};
    expire_queued_work();
  }));
}

void lane::expire_queued_work() {
  FL_ASSERT(start_timer_at_ == net::clock::time_point{});  // the timer that fired
  const auto now = net::clock::now();
  auto next = net::clock::time_point{};
  for (auto it = queue_.begin(); it != queue_.end();) {
    const auto start_by = (*it)->start_by;
    if (start_by == net::clock::time_point{} || start_by > now) {
      if (start_by != net::clock::time_point{} &&
          (next == net::clock::time_point{} || start_by < next)) {
        next = start_by;
      }
      ++it;
      continue;
    }
    auto op = std::move(*it);
    it = queue_.erase(it);
    FAULTLANE_PROBE(queued_op_missed_start_deadline);
    bump(rt_.stats.timeouts);
    retire(std::move(op), status::timeout, 0);  // never left: definite
  }
  if (next != net::clock::time_point{}) arm_start_deadline(next);
}

// An idle connection should have nothing to read: readability or a hang-up
// means the peer closed or reset it (it restarted, or timed us out), so a
// request sent on it would be lost in flight. Checked without blocking:
// poll(2)'s answer, > 0 when the peer went away, 0 when the connection is
// quiet (level-triggered: a FIN or reset an earlier read took in counts).
// READs a completion callback handed the lane skip the check when the
// answer read whose handler runs them left nothing on the socket, not
// even a FIN (the kernel's word: TCP_INQ). A READ that then finds the
// peer gone (a FIN or reset that came with the answer or during the
// callbacks) fails connection_failed, as one whose connection breaks in
// flight; a WRITE that finds the lane idle is always checked
// (docs/architecture.md, "The hot path").
int lane::check_idle_connection() {
  FL_ASSERT(state_ == state::idle);
  const auto only_reads = [this] {
    return std::none_of(queue_.begin(), queue_.end(),
                        [](const op_ptr& op) { return op->op == wire::opcode::write; });
  };
  if (reader_.drained(epoch()) && only_reads()) {
    bump(rt_.stats.idle_checks_skipped);
    return 0;
  }
  return net::peer_gone_or_ready(socket_);
}

void lane::pump() {
  FL_ASSERT(state_ != state::busy || !inflight_.empty());  // busy means exchanges in flight
  if (queue_.empty()) return;
  int idle_check = -1;  // not idle, not checked
  if (state_ == state::idle) idle_check = check_idle_connection();
  if (idle_check > 0) {
    // Reconnect first: a WRITE then never leaves on a dead connection, so
    // its outcome stays definite.
    FAULTLANE_PROBE(idle_lane_found_closed);
    bump(rt_.stats.lanes_found_closed);
    close_socket(status::connection_failed);
    FL_ASSERT(state_ == state::disconnected);
  }
  // On a connection the check found quiet (or the answer read before it
  // found drained), whatever arrives after it (the answer, a FIN, a reset)
  // is reported after the answer's read is queued, if that read starts
  // before this call returns: it needs no probe (unprobed_read.hpp).
  const answer_reader::quiet_scope quiet(reader_, idle_check == 0 ? epoch() : 0);
  switch (state_) {
    case state::disconnected: {
      // Work that reaches a lane after shutdown began never starts a connect.
      if (rt_.closing.load(std::memory_order_acquire)) return fail_queue(status::shutting_down);
      auto decision = group_.request_connect(shared_from_this());
      if (decision == peer_group::connect_decision::go) return connector_.start();
      if (decision == peer_group::connect_decision::wait) {
        state_ = state::waiting_for_probe;
        return;
      }
      return fail_queue(status::connection_failed);  // in reconnect cooldown
    }
    case state::idle:
    case state::busy: return continue_exchanges();
    default: return;  // connecting: continues when that ends
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

void lane::on_connected() {
  FL_ASSERT(state_ == state::idle);
  if (rt_.observer) {
    std::error_code ignored;
    auto e = event();
    auto local = socket_.local_endpoint(ignored);
    auto remote = socket_.remote_endpoint(ignored);
    e.local = {local.address().to_string(), local.port()};
    e.remote = {remote.address().to_string(), remote.port()};
    rt_.observer->lane_connected(e);
  }
  FAULTLANE_PERTURB("lane.connected");
  carried_request_ = false;
  continue_exchanges();
}

// A sibling slice failed: drop this task's queued slices. Its slices in
// flight are cancelled by closing the connection (their handlers end them
// cancelled; the lane reconnects for its next work), but only when nothing
// else is in flight there: other tasks' exchanges are never cut for it, and
// the slice then runs to its end, where the failed task ignores it.
void lane::cancel_task(const task_state* task) {
  FL_ASSERT(task != nullptr);
  (void)FAULTLANE_FAILPOINT("lane.cancel_task");
  FAULTLANE_PERTURB("lane.cancel_task");
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->task == task) {
      auto op = std::move(*it);
      it = queue_.erase(it);
      retire(std::move(op), status::cancelled, 0);
    } else {
      ++it;
    }
  }
  const bool only_this_task = std::all_of(inflight_.begin(), inflight_.end(),
                                          [task](const auto& op) { return op->task == task; });
  if (!inflight_.empty() && only_this_task && !broken_) {
    FAULTLANE_PROBE(inflight_slice_cut_for_sibling);
    abort_status_ = status::cancelled;
    break_connection(status::cancelled);
  }
}

void lane::fail_queue(status code) {
  FL_ASSERT(code != status::ok);
  auto failed = std::move(queue_);
  queue_.clear();
  FL_ASSERT(queue_.empty());
  for (auto& op : failed) retire(std::move(op), code, 0);
}

void lane::close_socket(status why) {
  if (state_ == state::idle || state_ == state::busy) {
    rt_.stats.lanes_connected.fetch_sub(1, std::memory_order_relaxed);
    if (rt_.observer) rt_.observer->lane_closed(event(), why);
  }
  FAULTLANE_PERTURB("lane.close");
  reader_.forget_connection();  // answer bytes of this connection only
  std::error_code ignored;
  socket_.close(ignored);
  deadline_.cancel();
  if (state_ != state::closed && state_ != state::connecting) state_ = state::disconnected;
  if (closing_) state_ = state::closed;
  FL_ASSERT(!socket_.is_open());
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
      if (reader_.payload_queued_grew()) {
        FAULTLANE_PROBE(progress_deadline_met_queued_bytes);
        bump(rt_.stats.deadline_checks_with_queued_bytes);
        deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
        return;
      }
      // Marked broken at once: an answer already queued behind the close
      // is not acted on; the pending handlers settle everything in flight.
      timed_out_ = true;
      FAULTLANE_PROBE(progress_timeout_broke_lane);
      return break_connection(status::timeout);
    case deadline_kind::connect:
      // Cancel the pending operation; its handler ends the op with timeout.
      timed_out_ = true;
      std::error_code ignored;
      socket_.close(ignored);
      return;
  }
}

void lane::shutdown(status why) {
  FL_ASSERT(why != status::ok);
  closing_ = true;
  abort_status_ = why;
  fail_queue(why);
  FL_ASSERT(queue_.empty());
  start_timer_.cancel();
  switch (state_) {
    case state::connecting: {
      // The pending handler sees the lane closed.
      std::error_code ignored;
      socket_.close(ignored);
      deadline_.cancel();
      return;
    }
    case state::busy:
      // Settles the exchanges in flight now, or when the pending socket
      // operations return; either way the lane ends closed.
      FAULTLANE_PROBE(shutdown_with_exchanges_in_flight);
      deadline_.cancel();
      return break_connection(why);
    case state::idle: close_socket(why); break;
    default: deadline_.cancel(); break;
  }
  state_ = state::closed;
}

// Work still held here when the io threads are gone can only end one way:
// its handlers will never run. A queued op never left (shutting_down); an
// op in flight may have reached the target if it is a WRITE, so it ends
// ambiguous_write, as any cut-off WRITE does, and shutting_down otherwise.
// Besides settling, this breaks a cycle: a sliced READ's task holds its
// lanes, and a lane holds the task's op.
void lane::release_work() noexcept {
  { op_chain unrun(std::move(deferred_)); }  // settles each as a dropped op
  fail_queue(status::shutting_down);
  auto cut = std::move(inflight_);
  inflight_.clear();
  writer_.release();
  for (auto& op : cut) {
    const auto code =
        op->op == wire::opcode::write ? status::ambiguous_write : status::shutting_down;
    FAULTLANE_PROBE_IF(code == status::ambiguous_write, write_cut_when_pool_stopped);
    retire(std::move(op), code, 0);
  }
}

void lane::drop_connection() {
  switch (state_) {
    case state::idle: close_socket(status::connection_failed); return;
    case state::connecting: return connector_.drop();  // the handler reconnects
    case state::busy:
      if (!broken_) break_connection(status::connection_failed);
      return;
    default: return;
  }
}

}  // namespace faultlane::detail
