// lane, one frame exchange: the request leaves, the response (and a READ's
// payload) comes back, and finish() decides the outcome, including whether
// a failed WRITE is ambiguous. See client.hpp and docs/protocol.md.
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <array>

#include "client.hpp"
#include "faultlane/core/failpoint.hpp"
#include "send_now.hpp"
#include "tsan_order.hpp"

namespace faultlane::detail {

using namespace std::chrono;

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
  asio::async_write(
      socket_, rest_of(out, sent), progress_condition(),
      guarded([this, sent](std::error_code e, std::size_t n) { on_request_sent(e, sent + n); }));
}

void lane::on_request_sent(const std::error_code& ec, std::size_t sent) {
  io_pending_ = false;
  FL_ASSERT(state_ == state::busy);
  if (sent > 0) request_bytes_sent_ = true;
  if (ec) return finish(io_failure(), 0, false);
  if (auto injected =
          FAULTLANE_FAILPOINT_KEY("client.after_request_sent", current_->remote_registration)) {
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
  FL_ASSERT(state_ == state::busy && current_);
  FL_ASSERT(current_->op == wire::opcode::read);
  auto& op = *current_;
  std::array<asio::mutable_buffer, 2> in{asio::buffer(response_),
                                         asio::buffer(op.local, op.length)};
  io_pending_ = true;
  socket_.async_read_some(
      in, guarded([this](std::error_code ec, std::size_t n) {
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
  // A header rejection names no request; with an id it is not an answer a
  // target sends, so it says nothing about what ran.
  if (reply.request_id != op.request_id || wire::is_header_rejection(reply.status)) {
    return finish(status::protocol_error, 0, false);
  }
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
    return limits::io_chunk_bytes_max;
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
  FL_ASSERT(abort_status_ != status::ok);
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
    // A planted bug, for the harness's own tests only (docs/testing.md):
    // sends the WRITE again on the next connection, the defect the no-replay
    // checker exists to catch. Compiled out with failpoints.
    if (FAULTLANE_FAILPOINT("planted.replay_ambiguous_write") && state_ != state::closed &&
        !abort_status_) {
      close_socket(code);
      queue_.push_front(std::move(op));
      if (state_ == state::disconnected) pump();
      return;
    }
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
    FAULTLANE_PERTURB("lane.retire");
    retire(std::move(op), code, bytes);
  }
  if (state_ == state::idle) {
    if (!queue_.empty()) return start_next();
    deadline_kind_ = deadline_kind::idle;
    deadline_.set(milliseconds(rt_.config.idle_connection_timeout_ms), shared_from_this());
    return;
  }
  if (state_ == state::disconnected) pump();
  else if (state_ == state::closed) fail_queue(abort_status_.value_or(status::shutting_down));
}

void lane::cancel_siblings(const transfer_op& failed) {
  auto* task = failed.task;
  FL_ASSERT(task != nullptr);
  if (task->slice_lanes.empty()) return;
  // A planted bug, for the harness's own tests only (docs/architecture.md):
  // the siblings of a failed slice run on. rail_test's
  // failed_slice_cancels_its_siblings_and_settles_once catches this defect;
  // no end-to-end checker does yet (docs/properties.md, "Limits").
  if (FAULTLANE_FAILPOINT("planted.no_sibling_cancel")) return;
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
