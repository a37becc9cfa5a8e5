// lane, its frame exchanges: requests leave in order, up to
// lane_inflight_max of them before the oldest is answered; answers (and a
// READ's payload) come back in the same order. complete_head() ends an
// exchange that got its answer; break_connection() ends every exchange in
// flight when the connection cannot be trusted, and decides which WRITEs
// are ambiguous. See client.hpp, docs/architecture.md ("Pipelined lanes")
// and docs/protocol.md.
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <array>

#include "client.hpp"
#include "faultlane/core/failpoint.hpp"
#include "send_now.hpp"
#include "tsan_order.hpp"

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

// Every queued request the lane has room for leaves in one gather write:
// headers, and a WRITE's body straight from the caller's buffer; usually
// all at once, without a trip through the loop. One write of eight
// requests is one system call and one TCP segment where eight writes were
// eight of each (docs/architecture.md, "The hot path"). A group stops at
// group_bytes_max, so a large WRITE leaves alone, as it always did.
void lane::send_requests() {
  FL_ASSERT(!sending_ && !broken_ && leaving_ == 0 && !queue_.empty());
  const std::size_t room = rt_.config.lane_inflight_max - inflight_.size();
  std::size_t buffers = 0;
  std::size_t bytes = 0;
  while (leaving_ < room && buffers + 2 <= gather_.size() && bytes < group_bytes_max) {
    skip_cancelled();
    if (queue_.empty()) break;
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
    bytes += op.header.size();
    if (op.op == wire::opcode::write) {
      note_send_reads(op.local, op.length);
      gather_[buffers++] = asio::const_buffer(op.local, op.length);
      bytes += op.length;
    }
  }
  if (leaving_ == 0) return;  // every queued op was a cancelled slice
  bump(rt_.stats.request_sends);
  const std::span<asio::const_buffer> out(gather_.data(), buffers);
  std::error_code ec;
  const std::size_t sent = send_now(socket_, out, ec);
  requests_left(sent);
  if (ec) return break_connection(io_failure());
  if (sent == bytes) {
    (void)requests_sent();
    return;
  }
  sending_ = true;
  asio::async_write(socket_, rest_of(out, sent), progress_condition(),
                    guarded([this, before = sent](std::error_code e, std::size_t n) {
                      // The leaving ops stay in inflight_ until this handler
                      // returned: settle_broken waits for it.
                      sending_ = false;
                      requests_left(before + n);
                      // Done before the connection broke, or cut by it:
                      // either way the lane is settling.
                      if (e || broken_) return break_connection(io_failure());
                      // requests_sent may have read a carried answer that broke and settled
                      // the lane: go on only while it is still connected and busy.
                      if (requests_sent() && state_ == state::busy) continue_exchanges();
                    }));
}

// The leaving requests whose first byte is among the `sent` bytes of their
// gather write may have reached the target.
void lane::requests_left(std::size_t sent) {
  FL_ASSERT(leaving_ > 0 && leaving_ <= inflight_.size());
  std::size_t start = 0;
  for (std::size_t i = inflight_.size() - leaving_; i < inflight_.size() && start < sent; ++i) {
    auto& op = *inflight_[i];
    op.request_left = true;
    start += op.header.size() + (op.op == wire::opcode::write ? op.length : 0);
  }
}

// The leaving requests are all out. Each one's failpoint runs before any
// answer is read, so no answer can end an exchange this loop still looks
// at. False when the lane broke instead.
bool lane::requests_sent() {
  FL_ASSERT(!sending_ && leaving_ > 0 && leaving_ <= inflight_.size());
  const std::size_t first = inflight_.size() - leaving_;
  for (std::size_t i = first; i < inflight_.size(); ++i) {
    if (auto injected = FAULTLANE_FAILPOINT_KEY("client.after_request_sent",
                                                inflight_[i]->remote_registration)) {
      leaving_ = 0;
      abort_status_ = *injected;
      break_connection(*injected);
      return false;
    }
  }
  leaving_ = 0;
  if (!receiving_) read_head();
  return true;
}

void lane::read_head() {
  FL_ASSERT(!receiving_ && !broken_ && !inflight_.empty() && head_request_sent());
  if (!carry_.empty()) return read_head_from_carry();
  read_answers();
}

// Bytes already received past the previous answer (see on_response) are
// the start of this one: its header, then a READ's payload, then perhaps
// the answers after it, which stay carried.
void lane::read_head_from_carry() {
  auto& op = *inflight_.front();
  const std::size_t header = std::min(carry_.size(), response_.size());
  std::copy_n(carry_.begin(), header, response_.begin());
  std::size_t used = header;
  std::size_t payload = 0;
  if (header == response_.size() && op.op == wire::opcode::read) {
    payload = std::min<std::size_t>(carry_.size() - used, op.length);
    std::copy_n(carry_.begin() + static_cast<std::ptrdiff_t>(used), payload, op.local);
    used += payload;
  }
  carry_.erase(carry_.begin(), carry_.begin() + static_cast<std::ptrdiff_t>(used));
  if (header == response_.size()) return on_response({}, payload);
  FL_ASSERT(carry_.empty());
  receiving_ = true;
  asio::async_read(socket_, asio::buffer(response_.data() + header, response_.size() - header),
                   progress_condition(),
                   guarded([this](std::error_code e, std::size_t) { on_response(e, 0); }));
}

// The answers of every exchange whose request left, with one scatter read
// into their headers and READ payloads (straight into the callers'
// buffers): a lane's eight answers that arrived together cost one system
// call, not eight, and their exchanges end together, so the requests
// behind them leave together too. An ok answer is exactly its header and
// payload, so each byte lands where it belongs; an error answer has no
// payload, so the bytes after it landed one answer too early, and
// on_answers carries them over to the answers they belong to (a copy, as
// rare as refusals: docs/architecture.md, "The hot path"). (A started
// read, not a readiness wait: Asio 1.22 re-arms the descriptor with
// epoll_ctl for every wait, while a started read costs one speculative
// recv, which finds the answers whenever they are already there.)
void lane::read_answers() {
  FL_ASSERT(!receiving_ && carry_.empty() && head_request_sent());
  const std::size_t ready = std::min(inflight_.size() - leaving_, answer_headers_.size());
  std::size_t buffers = 0;
  for (std::size_t i = 0; i < ready; ++i) {
    const auto& op = *inflight_[i];
    scatter_[buffers++] = asio::buffer(answer_headers_[i]);
    if (op.op == wire::opcode::read) scatter_[buffers++] = asio::buffer(op.local, op.length);
  }
  receiving_ = true;
  socket_.async_read_some(std::span(scatter_.data(), buffers),
                          guarded([this](std::error_code ec, std::size_t n) {
                            receiving_ = false;
                            if (ec || broken_) return break_connection(io_failure());
                            deadline_.push(milliseconds(rt_.config.progress_timeout_ms));
                            on_answers(n);
                          }));
}

// `n` bytes of answers arrived, from answer_headers_[0] on. Each whole
// answer ends its exchange, the oldest first; the lane goes on (reads
// again, sends what the freed room allows) once, after the last.
void lane::on_answers(std::size_t n) {
  FL_ASSERT(n > 0 && !answering_);
  answering_ = true;
  struct done {
    bool& flag;
    ~done() { flag = false; }  // also when an answer's handling throws
  } scope{answering_};
  std::size_t left = n;
  for (std::size_t k = 0;; ++k) {
    FL_ASSERT(k < answer_headers_.size() && !inflight_.empty());
    const auto& op = *inflight_.front();
    const std::size_t header = std::min(left, response_.size());
    std::copy_n(answer_headers_[k].begin(), header, response_.begin());
    left -= header;
    if (header < response_.size()) {
      // Cut inside a header: the rest of it, then on as for one answer.
      answering_ = false;
      receiving_ = true;
      asio::async_read(socket_, asio::buffer(response_.data() + header, response_.size() - header),
                       progress_condition(),
                       guarded([this](std::error_code e, std::size_t) { on_response(e, 0); }));
      return;
    }
    std::size_t payload = 0;
    if (op.op == wire::opcode::read) {
      payload = std::min<std::size_t>(left, op.length);
      left -= payload;
    }
    if (left == 0) {
      // The last answer this read brought, whole or not: on_response reads
      // the rest of a payload, or ends the exchange and goes on.
      answering_ = false;
      return on_response({}, payload);
    }
    // More answers follow. After an error answer they sit one answer too
    // early: they become the carried bytes, behind the error header's own.
    const auto peek = wire::decode_response(response_);
    if (!peek.ok() || peek.value().status != wire::wire_status::ok) {
      carry_rest(k, left);
      answering_ = false;
      return on_response({}, payload);  // puts the payload part in front of carry_
    }
    FL_ASSERT(op.op != wire::opcode::read || payload == op.length);
    on_response({}, payload);
    // It ended the exchange; a broken lane settled or is settling.
    if (broken_ || state_ != state::busy || inflight_.empty()) return;
  }
}

// The `left` bytes that a scatter read put after answer k's header and
// payload buffers, in order, become carry_.
void lane::carry_rest(std::size_t k, std::size_t left) {
  FL_ASSERT(carry_.empty());
  for (std::size_t i = 1; left > 0; ++i) {
    FL_ASSERT(i < inflight_.size() && k + i < answer_headers_.size());
    const auto& later = *inflight_[i];
    auto take = [&](const std::byte* from, std::size_t size) {
      const std::size_t m = std::min(left, size);
      carry_.insert(carry_.end(), from, from + m);
      left -= m;
    };
    take(answer_headers_[k + i].data(), answer_headers_[k + i].size());
    if (later.op == wire::opcode::read) take(later.local, later.length);
  }
}

void lane::on_response(const std::error_code& ec, std::size_t payload_have) {
  receiving_ = false;
  FL_ASSERT(state_ == state::busy && !inflight_.empty());
  // An answer that arrived after the connection broke is not trusted: the
  // lane is settling everything in flight already.
  if (ec || broken_) return break_connection(io_failure());
  (void)FAULTLANE_FAILPOINT("client.on_response");
  auto& op = *inflight_.front();
  auto decoded = wire::decode_response(response_);
  if (!decoded.ok()) return break_connection(status::protocol_error);
  const auto& reply = decoded.value();
  if (reply.request_id == 0 && wire::is_header_rejection(reply.status) && payload_have == 0) {
    // The target could not decode a header (it was damaged on the way): it
    // answers without an id, executes nothing, and closes. The answer is
    // the oldest exchange's, and definite, only when nothing else was sent:
    // an earlier answer dropped on the way would make it a later one's.
    const bool alone = inflight_.size() == 1;
    return break_connection(status::protocol_error, alone ? fate::not_executed : fate::unknown);
  }
  // A header rejection names no request; with an id it is not an answer a
  // target sends, so it says nothing about what ran.
  if (reply.request_id != op.request_id || wire::is_header_rejection(reply.status)) {
    return break_connection(status::protocol_error);
  }
  if (reply.status != wire::wire_status::ok) {
    if (payload_have > 0) {
      // Past an error header come the next answers, or, with nothing else
      // in flight, garbage.
      if (inflight_.size() == 1) return break_connection(status::protocol_error);
      carry_.insert(carry_.begin(), op.local, op.local + payload_have);
    }
    // A definite answer: the target did not execute, and goes on with the
    // next request on this connection.
    return complete_head(wire::status_for(reply.status), 0, fate::not_executed);
  }
  if (reply.committed_bytes != op.length) return break_connection(status::protocol_error);
  if (op.op == wire::opcode::write || payload_have == op.length) {
    return complete_head(status::ok, op.length, fate::unknown);
  }
  receiving_ = true;
  const std::size_t rest = op.length - payload_have;
  watermark_.begin(socket_, rest, op.length);
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
  receiving_ = false;
  FL_ASSERT(state_ == state::busy && !inflight_.empty());
  if (ec || broken_) return break_connection(io_failure());
  complete_head(status::ok, inflight_.front()->length, fate::unknown);
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
    // A planted bug, for the harness's own tests only (docs/testing.md):
    // sends the WRITE again on the next connection, the defect the no-replay
    // checker exists to catch. Compiled out with failpoints.
    if (FAULTLANE_FAILPOINT("planted.replay_ambiguous_write") && state_ != state::closed &&
        !abort_status_) {
      FL_ASSERT(state_ == state::disconnected);  // settle_broken closed it; it pumps next
      queue_.push_front(std::move(op));
      return;
    }
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
