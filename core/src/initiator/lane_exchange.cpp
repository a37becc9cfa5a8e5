// lane, its frame exchanges: requests leave in order, up to
// lane_inflight_max of them before the oldest is answered; answers (and a
// READ's payload) come back in the same order (lane_answers.cpp reads
// them). complete_head() ends an exchange that got its answer;
// break_connection() ends every exchange in flight when the connection
// cannot be trusted, and decides which WRITEs are ambiguous. See
// lane.hpp, docs/architecture.md ("Pipelined lanes") and
// docs/protocol.md.
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <array>

#include "faultlane/core/failpoint.hpp"
#include "initiator/lane.hpp"
#include "initiator/peer_group.hpp"
#include "runtime/send_now.hpp"
#include "runtime/tsan_order.hpp"

namespace faultlane::detail {

using namespace std::chrono;

void lane::continue_exchanges() {
  FL_ASSERT(state_ == state::idle || state_ == state::busy);
  if (broken_) return;  // settles once its pending operations return
  if (!receiving_ && !inflight_.empty() && head_request_sent()) read_head();
  const auto connected = [this] { return state_ == state::idle || state_ == state::busy; };
  while (connected() && !broken_ && !sending_ && inflight_.size() < rt_.config.lane_inflight_max) {
    skip_cancelled();
    if (queue_.empty()) break;
    send_requests();
  }
  if (connected() && !broken_ && inflight_.empty()) {
    if (!carry_.empty()) {
      // Answer bytes nobody asked for: the target cannot be trusted.
      close_socket(status::protocol_error);
      return pump();
    }
    state_ = state::idle;
    deadline_kind_ = deadline_kind::idle;
    deadline_.set(milliseconds(rt_.config.idle_connection_timeout_ms), shared_from_this());
  }
}

// Slices of a task that already failed are not started.
void lane::skip_cancelled() {
  while (!queue_.empty() && queue_.front()->task->cancelled.load(std::memory_order_acquire)) {
    auto skipped = std::move(queue_.front());
    queue_.pop_front();
    retire(std::move(skipped), status::cancelled, 0);
  }
}

namespace {

// Bytes of an op's request on the wire: its header, and a WRITE's body.
std::size_t request_bytes(const transfer_op& op) {
  return wire::request_frame_bytes + (op.op == wire::opcode::write ? op.length : 0);
}

}  // namespace

// Every queued request the lane has room for leaves in one gather write:
// headers, and a WRITE's body straight from the caller's buffer; usually
// all at once, without a trip through the loop. One write of eight
// requests is one system call and one TCP segment where eight writes were
// eight of each (docs/architecture.md, "The hot path"). A request that
// would take the write past group_bytes_max starts the next one, so a
// large WRITE leaves alone, as it always did.
void lane::send_requests() {
  FL_ASSERT(!sending_ && !broken_ && leaving_ == 0 && !queue_.empty());
  const std::size_t room = rt_.config.lane_inflight_max - inflight_.size();
  std::size_t buffers = 0;
  std::size_t bytes = 0;
  while (leaving_ < room && buffers + 2 <= gather_.size()) {
    skip_cancelled();
    if (queue_.empty()) break;
    if (leaving_ > 0 && bytes + request_bytes(*queue_.front()) > group_bytes_max) break;
    inflight_.push_back(std::move(queue_.front()));
    queue_.pop_front();
    ++leaving_;
    auto& op = *inflight_.back();
    op.request_left = false;
    if (inflight_.size() > 1) bump(rt_.stats.requests_pipelined);
    if (inflight_.size() == 1) {
      // The oldest exchange's clock: see docs/architecture.md, "Pipelined lanes".
      state_ = state::busy;
      timed_out_ = false;
      deadline_kind_ = deadline_kind::progress;
      deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
    }
    wire::encode(wire::request_frame{op.op, 0, op.request_id, op.remote_registration,
                                     op.remote_offset, op.length},
                 op.header);
    if (rt_.observer) {
      rt_.observer->slice_dispatched({op.task->info.task_id, op.request_id, group_.id(), index_,
                                      rail_, op.slice_offset, op.length});
    }
    gather_[buffers++] = asio::buffer(op.header);
    if (op.op == wire::opcode::write) {
      note_send_reads(op.local, op.length);
      gather_[buffers++] = asio::const_buffer(op.local, op.length);
    }
    bytes += request_bytes(op);
  }
  if (leaving_ == 0) return;  // every queued op was a cancelled slice
  bump(rt_.stats.request_sends);
  group_bytes_ = bytes;
  group_out_ = 0;
  gather_rest_ = std::span(gather_.data(), buffers);
  write_requests(0);
}

// Writes what is left of the gather write, `sent` of its bytes being out.
// What does not fit now goes on asynchronously, one request at a time:
// each request's answer is read as soon as the request is out, while the
// ones behind it still leave. (Waiting for the whole write first could
// wait forever: a target answers a READ before it reads on, and with its
// answer unread it cannot, while our WRITE behind it cannot leave.)
void lane::write_requests(std::size_t sent) {
  FL_ASSERT(!sending_ && !broken_ && leaving_ > 0 && sent < group_bytes_);
  std::error_code ec;
  const std::size_t n = send_now(socket_, gather_rest_, ec);
  sent += n;
  if (ec) {
    requests_left(sent);
    return break_connection(io_failure());
  }
  if (!requests_out(sent)) return;
  if (sent < group_bytes_) {
    gather_rest_ = rest_of(gather_rest_, n);
    // The write stops where the request it is in ends.
    const auto& leaving = *inflight_[inflight_.size() - leaving_];
    const std::size_t stop = group_out_ + request_bytes(leaving) - sent;
    auto condition = [this, stop](const std::error_code& e, std::size_t done) -> std::size_t {
      if (e || done >= stop) return 0;
      deadline_.push(milliseconds(rt_.config.progress_timeout_ms));
      return std::min(limits::io_chunk_bytes_max, stop - done);
    };
    sending_ = true;
    answer_read_alone_ = false;
    asio::async_write(socket_, gather_rest_, condition,
                      guarded([this, sent](std::error_code e, std::size_t m) {
                        // The leaving ops stay in inflight_ until this handler
                        // returned: settle_broken waits for it.
                        sending_ = false;
                        const std::size_t total = sent + m;
                        // Done before the connection broke, or cut by it:
                        // either way the lane is settling.
                        if (e || broken_) {
                          requests_left(total);
                          return break_connection(io_failure());
                        }
                        if (!requests_out(total)) return;
                        if (total < group_bytes_) {
                          gather_rest_ = rest_of(gather_rest_, m);
                          write_requests(total);
                          // All out now: what waited behind the write goes.
                          if (!sending_ && !broken_ && state_ == state::busy) continue_exchanges();
                          return;
                        }
                        if (state_ == state::busy) continue_exchanges();
                      }));
  }
  // Requests that are out may be answered already, while the rest leave.
  if (!broken_ && state_ == state::busy && !receiving_ && !inflight_.empty() &&
      head_request_sent()) {
    read_head();
  }
}

// The leaving requests whose first byte is among the `sent` bytes of their
// gather write may have reached the target.
void lane::requests_left(std::size_t sent) {
  FL_ASSERT(leaving_ > 0 && leaving_ <= inflight_.size());
  std::size_t start = group_out_;
  for (std::size_t i = inflight_.size() - leaving_; i < inflight_.size() && start < sent; ++i) {
    auto& op = *inflight_[i];
    op.request_left = true;
    start += request_bytes(op);
  }
}

// The leaving requests whose every byte is among the `sent` bytes are out:
// each one's failpoint runs, oldest first, before its answer can be read,
// so no answer ends an exchange this loop still looks at. False when the
// lane broke instead.
bool lane::requests_out(std::size_t sent) {
  requests_left(sent);
  while (leaving_ > 0) {
    const auto& op = *inflight_[inflight_.size() - leaving_];
    const std::size_t end = group_out_ + request_bytes(op);
    if (end > sent) break;
    group_out_ = end;
    --leaving_;
    if (auto injected =
            FAULTLANE_FAILPOINT_KEY("client.after_request_sent", op.remote_registration)) {
      abort_status_ = *injected;
      break_connection(*injected);
      return false;
    }
  }
  return true;
}

status lane::io_failure() const {
  FL_ASSERT(abort_status_ != status::ok);
  if (abort_status_) return *abort_status_;
  if (timed_out_) return status::timeout;
  return status::connection_failed;
}

void lane::complete_head(status code, std::uint64_t bytes, fate outcome) {
  FL_ASSERT(state_ == state::busy && !inflight_.empty() && !receiving_);
  auto op = std::move(inflight_.front());
  inflight_.pop_front();
  // The next exchange's clock starts now (its request may have left long
  // ago, behind this one).
  if (!inflight_.empty())
    deadline_.set(milliseconds(rt_.config.progress_timeout_ms), shared_from_this());
  end_exchange(std::move(op), code, bytes, outcome);
  // Answers read together end together; the lane goes on after the last.
  if (state_ == state::busy && !answering_) continue_exchanges();
}

void lane::break_connection(status head, fate outcome) {
  FL_ASSERT(head != status::ok);
  FL_ASSERT(!inflight_.empty());
  if (!broken_) broken_ = breakage{head, outcome};
  // Pending operations end with an error and touch no buffer after this.
  std::error_code ignored;
  socket_.close(ignored);
  if (!sending_ && !receiving_) settle_broken();
}

// The connection is closed before any status becomes visible, so no later
// request can reuse it. The oldest exchange ends as its detector said; the
// ones behind it with the connection's status.
void lane::settle_broken() {
  FL_ASSERT(broken_ && !sending_ && !receiving_);
  const auto why = *broken_;
  broken_.reset();
  auto cut = std::move(inflight_);
  inflight_.clear();
  leaving_ = 0;  // requests cut before they all left: request_left says which
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
    code = status::ambiguous_write;
  }
  const bool retry = code == status::stale_registration && !op->refreshed && group_.can_refresh();
  if (code != status::ok && !retry) cancel_siblings(*op);
  if (retry) {
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
  for (const auto& sibling : task->slice_lanes) {
    if (sibling.get() == this) continue;
    // `keep` pins the batch, so `task` cannot be freed and reused by a new
    // task before the sibling lane has looked at it.
    post_guarded(rt_, sibling->shard(),
                 [sibling, task, keep = failed.batch] { sibling->cancel_task(task); });
  }
}

}  // namespace faultlane::detail
