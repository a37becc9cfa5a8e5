// request_writer: every queued request the lane has room for leaves in one
// gather write: headers, and a WRITE's body straight from the caller's
// buffer; usually all at once, without a trip through the loop. One write
// of eight requests is one system call and one TCP segment where eight
// writes were eight of each (docs/architecture.md, "The hot path"). See
// request_writer.hpp, and answer_reader.cpp for the answers.
#include "initiator/request_writer.hpp"

#include <asio/write.hpp>

#include <algorithm>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "initiator/lane.hpp"
#include "runtime/send_now.hpp"
#include "runtime/tsan_order.hpp"

namespace faultlane::detail {

using namespace std::chrono;

std::size_t request_writer::request_bytes(const transfer_op& op) noexcept {
  return wire::request_frame_bytes + (op.op == wire::opcode::write ? op.length : 0);
}

bool request_writer::takes(const transfer_op& op) const noexcept {
  FL_ASSERT(state_ != state::writing);
  return leaving_ == 0 || group_bytes_ + request_bytes(op) <= group_bytes_max;
}

void request_writer::add(transfer_op& op) {
  FL_ASSERT(state_ != state::writing && has_room());
  if (state_ == state::idle) {
    FL_ASSERT(leaving_ == 0);
    state_ = state::leaving;
    buffers_ = 0;
    group_bytes_ = 0;
    group_out_ = 0;
  }
  ++leaving_;
  op.request_left = false;
  wire::encode(wire::request_frame{op.op, 0, op.request_id, op.remote_registration,
                                   op.remote_offset, op.length},
               op.header);
  gather_[buffers_++] = asio::buffer(op.header);
  if (op.op == wire::opcode::write) {
    note_send_reads(op.local, op.length);
    gather_[buffers_++] = asio::const_buffer(op.local, op.length);
  }
  group_bytes_ += request_bytes(op);
}

void request_writer::send() {
  FL_ASSERT(state_ == state::leaving && leaving_ > 0);
  bump(lane_.rt_.stats.request_sends);
  gather_rest_ = std::span(gather_.data(), buffers_);
  write(0);
}

void request_writer::cut() noexcept {
  FL_ASSERT(state_ != state::writing);
  state_ = state::idle;
  leaving_ = 0;  // requests cut before they all left: request_left says which
}

// Writes what is left of the gather write, `sent` of its bytes being out.
// What does not fit now goes on asynchronously, one request at a time:
// each request's answer is read as soon as the request is out, while the
// ones behind it still leave. (Waiting for the whole write first could
// wait forever: a target answers a READ before it reads on, and with its
// answer unread it cannot, while our WRITE behind it cannot leave.)
void request_writer::write(std::size_t sent) {
  FL_ASSERT(state_ == state::leaving && !lane_.broken_ && leaving_ > 0 && sent < group_bytes_);
  auto& l = lane_;
  std::error_code ec;
  const std::size_t n = send_now(l.socket_, gather_rest_, ec);
  sent += n;
  // A failed send_now sent nothing, and the `sent` bytes before it were
  // marked already (by requests_out, or none at 0): nothing more left.
  if (ec) {
    FL_ASSERT(n == 0);  // send_now's contract; a partial send would need marking
    FAULTLANE_PROBE(request_send_failed);
    return l.break_connection(l.io_failure());
  }
  if (!requests_out(sent)) return;
  if (sent < group_bytes_) {
    FAULTLANE_PROBE(request_send_went_async);
    gather_rest_ = rest_of(gather_rest_, n);
    // The write stops where the request it is in ends.
    const auto& leaving = *l.inflight_[l.inflight_.size() - leaving_];
    const std::size_t stop = group_out_ + request_bytes(leaving) - sent;
    auto condition = [this, stop](const std::error_code& e, std::size_t done) -> std::size_t {
      if (e || done >= stop) return 0;
      lane_.deadline_.push(milliseconds(lane_.rt_.config.progress_timeout_ms));
      return std::min(limits::io_chunk_bytes_max, stop - done);
    };
    state_ = state::writing;
    l.reader_.write_started();
    asio::async_write(
        l.socket_, gather_rest_, condition,
        l.guarded([this, sent](std::error_code e, std::size_t m) { on_written(e, sent, m); }));
  }
  // Requests that are out may be answered already, while the rest leave.
  if (!l.broken_ && l.state_ == lane::state::busy && !l.reader_.reading() && !l.inflight_.empty() &&
      l.head_request_sent()) {
    l.reader_.read_head();
  }
}

// The async_write of `m` more bytes, after `sent`, ended.
void request_writer::on_written(const std::error_code& ec, std::size_t sent, std::size_t m) {
  // The leaving ops stay in flight until this handler returned:
  // settle_broken waits for it.
  FL_ASSERT(state_ == state::writing);
  state_ = state::leaving;
  auto& l = lane_;
  const std::size_t total = sent + m;
  // Done before the connection broke, or cut by it: either way the lane is
  // settling.
  if (ec || l.broken_) {
    FAULTLANE_PROBE(request_send_failed);
    requests_left(total);
    return l.break_connection(l.io_failure());
  }
  if (!requests_out(total)) return;
  if (total < group_bytes_) {
    gather_rest_ = rest_of(gather_rest_, m);
    write(total);
    // All out now: what waited behind the write goes.
    if (!writing() && !l.broken_ && l.state_ == lane::state::busy) l.continue_exchanges();
    return;
  }
  if (l.state_ == lane::state::busy) l.continue_exchanges();
}

// The leaving requests whose first byte is among the `sent` bytes of their
// gather write may have reached the target.
void request_writer::requests_left(std::size_t sent) {
  const auto& inflight = lane_.inflight_;
  FL_ASSERT(leaving_ > 0 && leaving_ <= inflight.size());
  std::size_t start = group_out_;
  for (std::size_t i = inflight.size() - leaving_; i < inflight.size() && start < sent; ++i) {
    auto& op = *inflight[i];
    op.request_left = true;
    start += request_bytes(op);
  }
}

// The leaving requests whose every byte is among the `sent` bytes are out:
// each one's failpoint runs, oldest first, before its answer can be read,
// so no answer ends an exchange this loop still looks at. False when the
// lane broke instead.
bool request_writer::requests_out(std::size_t sent) {
  requests_left(sent);
  const auto& inflight = lane_.inflight_;
  while (leaving_ > 0) {
    const auto& op = *inflight[inflight.size() - leaving_];
    const std::size_t end = group_out_ + request_bytes(op);
    if (end > sent) break;
    group_out_ = end;
    if (--leaving_ == 0) state_ = state::idle;
    if (auto injected =
            FAULTLANE_FAILPOINT_KEY("client.after_request_sent", op.remote_registration)) {
      lane_.abort_status_ = *injected;
      lane_.break_connection(*injected);
      return false;
    }
  }
  return true;
}

}  // namespace faultlane::detail
