// lane, its frame exchanges: requests leave in order, up to
// lane_inflight_max of them before the oldest is answered; answers (and a
// READ's payload) come back in the same order (answer_reader.cpp reads
// them). complete_head() ends an exchange that got its answer;
// break_connection() ends every exchange in flight when the connection
// cannot be trusted, and decides which WRITEs are ambiguous. See
// lane.hpp, docs/architecture.md ("Pipelined lanes") and
// docs/protocol.md.
#include <asio/post.hpp>

#include <algorithm>
#include <array>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "initiator/lane.hpp"
#include "initiator/peer_group.hpp"

namespace faultlane::detail {

using namespace std::chrono;

void lane::continue_exchanges() {
  FL_ASSERT(state_ == state::idle || state_ == state::busy);
  if (broken_) return;  // settles once its pending operations return
  if (!reader_.reading() && !inflight_.empty() && head_request_sent()) reader_.read_head();
  const auto connected = [this] { return state_ == state::idle || state_ == state::busy; };
  while (connected() && !broken_ && !writer_.writing() &&
         inflight_.size() < rt_.config.lane_inflight_max) {
    skip_cancelled();
    if (queue_.empty()) break;
    send_requests();
  }
  if (connected() && !broken_ && inflight_.empty()) {
    if (reader_.carrying()) {
      // Answer bytes nobody asked for: the target cannot be trusted.
      FAULTLANE_PROBE(answer_bytes_without_request);
      close_socket(status::protocol_error);
      return pump();
    }
    if (!carried_request_) {
      // The work this connection came up for was cancelled or expired
      // before it left. A target closes a connection that sends nothing
      // within its progress timeout, so one kept idle would close under
      // the next request, and a WRITE that meets that close is ambiguous.
      // Connects are on demand: the next work connects again.
      FAULTLANE_PROBE(connection_closed_unused);
      bump(rt_.stats.lanes_closed_unused);
      return close_socket(status::ok);
    }
    state_ = state::idle;
    deadline_kind_ = deadline_kind::idle;
    deadline_.set(milliseconds(rt_.config.idle_connection_timeout_ms), shared_from_this());
  }
}

// Slices of a task that already failed are not started.
void lane::skip_cancelled() {
  while (!queue_.empty() && queue_.front()->task->cancelled.load(std::memory_order_acquire)) {
    FAULTLANE_PROBE(cancelled_slice_skipped_at_send);
    auto skipped = std::move(queue_.front());
    queue_.pop_front();
    retire(std::move(skipped), status::cancelled, 0);
  }
}

// Every queued request the lane has room for leaves in one gather write
// (request_writer.hpp); its first starts the oldest exchange's clock.
void lane::send_requests() {
  FL_ASSERT(!writer_.writing() && !broken_ && writer_.leaving() == 0 && !queue_.empty());
  const std::size_t room = rt_.config.lane_inflight_max - inflight_.size();
  while (writer_.leaving() < room && writer_.has_room()) {
    skip_cancelled();
    if (queue_.empty() || !writer_.takes(*queue_.front())) break;
    inflight_.push_back(std::move(queue_.front()));
    queue_.pop_front();
    auto& op = *inflight_.back();
    // Leaving before anything that may throw: a throw settles it as one
    // whose request may have left only if a byte of it did.
    writer_.add(op);
    carried_request_ = true;
    if (inflight_.size() > 1) bump(rt_.stats.requests_pipelined);
    if (inflight_.size() == 1) {
      // The oldest exchange's clock: see docs/architecture.md, "Pipelined lanes".
      state_ = state::busy;
      timed_out_ = false;
      deadline_kind_ = deadline_kind::progress;
      deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
    }
    if (rt_.observer) {
      rt_.observer->slice_dispatched({op.task->info.task_id, op.request_id, group_.id(), index_,
                                      rail_, op.slice_offset, op.length});
    }
  }
  if (writer_.leaving() == 0) return;  // every queued op was a cancelled slice
  writer_.send();
}

status lane::io_failure() const {
  FL_ASSERT(abort_status_ != status::ok);
  if (abort_status_) return *abort_status_;
  if (timed_out_) return status::timeout;
  return status::connection_failed;
}

void lane::complete_head(status code, std::uint64_t bytes, fate outcome) {
  FL_ASSERT(state_ == state::busy && !inflight_.empty() && !reader_.reading());
  auto op = std::move(inflight_.front());
  inflight_.pop_front();
  // The next exchange's clock starts now (its request may have left long
  // ago, behind this one).
  if (!inflight_.empty())
    deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
  end_exchange(std::move(op), code, bytes, outcome);
  // Answers read together end together; the lane goes on after the last.
  if (state_ == state::busy && !reader_.answering()) continue_exchanges();
}

void lane::break_connection(status head, fate outcome) {
  FL_ASSERT(head != status::ok);
  FL_ASSERT(!inflight_.empty());
  if (!broken_) broken_ = breakage{head, outcome};
  // Pending operations end with an error and touch no buffer after this.
  std::error_code ignored;
  socket_.close(ignored);
  if (!writer_.writing() && !reader_.reading()) settle_broken();
}

// The connection is closed before any status becomes visible, so no later
// request can reuse it. The oldest exchange ends as its detector said; the
// ones behind it with the connection's status.
void lane::settle_broken() {
  FL_ASSERT(broken_ && !writer_.writing() && !reader_.reading());
  const auto why = *broken_;
  broken_.reset();
  auto cut = std::move(inflight_);
  inflight_.clear();
  FAULTLANE_PROBE_IF(cut.size() > 1, exchanges_cut_behind_head);
  writer_.cut();
  const auto behind = io_failure();
  close_socket(why.head);
  bool oldest = true;
  for (auto& op : cut) {
    end_exchange(std::move(op), oldest ? why.head : behind, 0,
                 oldest ? why.outcome : fate::unknown);
    oldest = false;
  }
  if (state_ == state::disconnected) pump();
  else if (state_ == state::closed) fail_queue(abort_status_.value_or(status::shutting_down));
}

// The one place an exchange that left ends.
void lane::end_exchange(op_ptr op, status code, std::uint64_t bytes, fate outcome) {
  FL_ASSERT(code != status::ok || outcome == fate::unknown);
  if (code == status::timeout) bump(rt_.stats.timeouts);
  // A WRITE that failed after any byte of its request left, with no answer
  // from the target saying it did not execute, has an unknown outcome:
  // terminal, never replayed (docs/architecture.md lists the cases).
  if (op->op == wire::opcode::write && code != status::ok && op->request_left &&
      outcome == fate::unknown) {
    FAULTLANE_PROBE(ambiguous_write);
    code = status::ambiguous_write;
  }
  const bool retry = code == status::stale_registration && !op->refreshed && group_.can_refresh();
  if (code != status::ok && !retry) cancel_siblings(*op);
  if (retry) {
    FAULTLANE_PROBE(stale_refresh_requested);
    group_.refresh_and_retry(std::move(op), shared_from_this());
  } else {
    FAULTLANE_PERTURB("lane.retire");
    retire(std::move(op), code, bytes);
  }
}

void lane::cancel_siblings(const transfer_op& failed) {
  auto* task = failed.task;
  FL_ASSERT(task != nullptr);
  if (task->slice_lanes.empty()) return;
  FAULTLANE_PERTURB("siblings.cancel");
  if (task->cancelled.exchange(true, std::memory_order_acq_rel)) return;  // already done once
  FAULTLANE_PROBE(siblings_cancelled);
  for (const auto& sibling : task->slice_lanes) {
    if (sibling.get() == this) continue;
    // `keep` pins the batch, so `task` cannot be freed and reused by a new
    // task before the sibling lane has looked at it.
    post_guarded(rt_, sibling->shard(),
                 [sibling, task, keep = failed.batch] { sibling->cancel_task(task); });
  }
}

}  // namespace faultlane::detail
