// answer_reader: one scatter read for every answer that arrived, each
// ending its exchange in order, and bytes that landed one answer too early
// (after a refusal) carried over to the answers they belong to. See
// answer_reader.hpp, request_writer.cpp for the requests, and
// docs/architecture.md ("One frame exchange", "The hot path").
#include "initiator/answer_reader.hpp"

#include <asio/read.hpp>

#include <algorithm>
#include <span>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "initiator/lane.hpp"

namespace faultlane::detail {

using namespace std::chrono;

auto answer_reader::progress_condition() {
  return [this](const std::error_code& ec, std::size_t) -> std::size_t {
    if (ec) return 0;
    lane_.deadline_.push(milliseconds(lane_.rt_.config.progress_timeout_ms));
    return limits::io_chunk_bytes_max;
  };
}

void answer_reader::end_read(state expected) noexcept {
  FL_ASSERT(state_ == expected);
  state_ = state::idle;
}

void answer_reader::read_head() {
  FL_ASSERT(state_ == state::idle && !lane_.broken_ && !lane_.inflight_.empty() &&
            lane_.head_request_sent());
  if (!carry_.empty()) return read_head_from_carry();
  read_answers();
}

// Bytes already received past the previous answer (see on_response) are
// the start of this one: its header, then a READ's payload, then perhaps
// the answers after it, which stay carried.
void answer_reader::read_head_from_carry() {
  FAULTLANE_PROBE(answer_from_carried_bytes);
  auto& op = *lane_.inflight_.front();
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
  if (header == response_.size()) return on_response(payload);
  FL_ASSERT(carry_.empty());
  read_header_rest(header);
}

// The rest of a header of which `have` bytes are in response_.
void answer_reader::read_header_rest(std::size_t have) {
  FL_ASSERT(state_ == state::idle);
  state_ = state::reading_header;
  asio::async_read(lane_.socket_, asio::buffer(response_.data() + have, response_.size() - have),
                   progress_condition(), lane_.guarded([this](std::error_code e, std::size_t) {
                     end_read(state::reading_header);
                     if (e || lane_.broken_) return lane_.break_connection(lane_.io_failure());
                     on_response(0);
                   }));
}

// The answers of every exchange whose request left, with one scatter read
// into their headers and READ payloads (straight into the callers'
// buffers): a lane's eight answers that arrived together cost one system
// call, not eight, and their exchanges end together, so the requests
// behind them leave together too. An ok answer is exactly its header and
// payload, so each byte lands where it belongs; an error answer has no
// payload, so the bytes after it landed one answer too early, and
// on_answers carries them over to the answers they belong to (a copy, as
// rare as refusals: docs/architecture.md, "The hot path"). A started
// read, not a readiness wait (Asio 1.22 re-arms the descriptor with
// epoll_ctl for every wait); and on a connection the idle check just
// found quiet, one without Asio's speculative recv (unprobed_read.hpp).
// When it takes every byte there was, the lane needs no idle check before
// the READs its callbacks hand it (check_idle_connection).
void answer_reader::read_answers() {
  const auto& inflight = lane_.inflight_;
  FL_ASSERT(state_ == state::idle && carry_.empty() && lane_.head_request_sent());
  const std::size_t ready =
      std::min(inflight.size() - lane_.writer_.leaving(), answer_headers_.size());
  std::size_t buffers = 0;
  for (std::size_t i = 0; i < ready; ++i) {
    const auto& op = *inflight[i];
    // Two READs into overlapping buffers: a refusal before them would move
    // bytes into both, and the later would overwrite what the earlier
    // holds for carrying. The read ends before the second.
    if (op.op == wire::opcode::read && i > 0 && overlaps_a_read_before(i)) break;
    scatter_[buffers++] = asio::buffer(answer_headers_[i]);
    if (op.op == wire::opcode::read) scatter_[buffers++] = asio::buffer(op.local, op.length);
  }
  state_ = state::reading_answers;
  static_assert(std::tuple_size_v<decltype(scatter_)> <= unprobed_read::buffers_max);
  const std::span<const asio::mutable_buffer> into(scatter_.data(), buffers);
  auto on_read = [this](std::error_code ec, std::size_t n) {
    end_read(state::reading_answers);
    if (ec || lane_.broken_) return lane_.break_connection(lane_.io_failure());
    if (answer_read_alone_ && answers_read_.left_nothing()) drained_connection_ = lane_.epoch();
    lane_.deadline_.push(milliseconds(lane_.rt_.config.progress_timeout_ms));
    on_answers(n);
  };
  if constexpr (reads_skip_the_probe) {
    answer_read_alone_ = !lane_.writer_.writing();
    // Not after a read that stopped short: that read may have left a FIN
    // behind the bytes, whose edge then never comes again.
    const auto how = quiet_connection_ != 0 && quiet_connection_ == lane_.epoch()
                         ? unprobed_read::probe::skip
                         : unprobed_read::probe::first;
    // `self` keeps the lane, and so this reader, alive until the handler ran.
    return answers_read_.start(
        lane_.socket_, into,
        [self = lane_.shared_from_this(), this, on_read](std::error_code ec,
                                                         std::size_t n) mutable {
          self->run_handler([&] { on_read(ec, n); });
          // run_handler took what the callbacks handed the lane: the
          // reactor may report the socket once this returns.
          drained_connection_ = 0;
        },
        how);
  }
  lane_.socket_.async_read_some(into, lane_.guarded(on_read));
}

bool answer_reader::overlaps_a_read_before(std::size_t i) const {
  const auto& op = *lane_.inflight_[i];
  for (std::size_t j = 0; j < i; ++j) {
    const auto& before = *lane_.inflight_[j];
    if (before.op == wire::opcode::read && op.local < before.local + before.length &&
        before.local < op.local + op.length) {
      return true;
    }
  }
  return false;
}

// `n` bytes of answers arrived, from answer_headers_[0] on. Each whole
// answer ends its exchange, the oldest first; the lane goes on (reads
// again, sends what the freed room allows) once, after the last.
void answer_reader::on_answers(std::size_t n) {
  FL_ASSERT(n > 0 && state_ == state::idle);
  state_ = state::answering;
  struct done {
    state& s;
    ~done() {  // also when an answer's handling throws
      if (s == state::answering) s = state::idle;
    }
  } scope{state_};
  auto& inflight = lane_.inflight_;
  std::size_t left = n;
  for (std::size_t k = 0;; ++k) {
    FL_ASSERT(k < answer_headers_.size() && !inflight.empty());
    const auto& op = *inflight.front();
    const std::size_t header = std::min(left, response_.size());
    std::copy_n(answer_headers_[k].begin(), header, response_.begin());
    left -= header;
    if (header < response_.size()) {
      // Cut inside a header: the rest of it, then on as for one answer.
      FAULTLANE_PROBE(answer_read_cut_in_header);
      state_ = state::idle;
      read_header_rest(header);
      // The room the answers before it freed is used now, not after it.
      return lane_.continue_exchanges();
    }
    std::size_t payload = 0;
    if (op.op == wire::opcode::read) {
      payload = std::min<std::size_t>(left, op.length);
      left -= payload;
    }
    if (left == 0) {
      // The last answer this read brought, whole or not: on_response reads
      // the rest of a payload, or ends the exchange and goes on.
      state_ = state::idle;
      on_response(payload);
      // A payload still coming: the room the answers before it freed is
      // used now, not after it (a no-op when the exchange ended and went
      // on already).
      if (reading() && !lane_.broken_ && lane_.state_ == lane::state::busy) {
        lane_.continue_exchanges();
      }
      return;
    }
    // More answers follow. After an error answer they sit one answer too
    // early: they become the carried bytes, behind the error header's own.
    const auto peek = wire::decode_response(response_);
    if (!peek.ok() || peek.value().status != wire::wire_status::ok) {
      FAULTLANE_PROBE(answers_carried_past_refusal);
      carry_rest(k, left);
      state_ = state::idle;
      return on_response(payload);  // puts the payload part in front of carry_
    }
    FL_ASSERT(op.op != wire::opcode::read || payload == op.length);
    on_response(payload);
    // It ended the exchange; a broken lane settled or is settling.
    if (lane_.broken_ || lane_.state_ != lane::state::busy || inflight.empty()) return;
  }
}

// The `left` bytes that a scatter read put after answer k's header and
// payload buffers, in order, become carry_.
void answer_reader::carry_rest(std::size_t k, std::size_t left) {
  FL_ASSERT(carry_.empty());
  for (std::size_t i = 1; left > 0; ++i) {
    FL_ASSERT(i < lane_.inflight_.size() && k + i < answer_headers_.size());
    const auto& later = *lane_.inflight_[i];
    auto take = [&](const std::byte* from, std::size_t size) {
      const std::size_t m = std::min(left, size);
      carry_.insert(carry_.end(), from, from + m);
      left -= m;
    };
    take(answer_headers_[k + i].data(), answer_headers_[k + i].size());
    if (later.op == wire::opcode::read) take(later.local, later.length);
  }
}

// The oldest exchange's answer is in response_, with `payload_have` bytes
// of a READ's payload in the caller's buffer.
void answer_reader::on_response(std::size_t payload_have) {
  FL_ASSERT(state_ == state::idle || state_ == state::answering);
  auto& l = lane_;
  FL_ASSERT(l.state_ == lane::state::busy && !l.inflight_.empty());
  // Never on a broken connection: every way here looks first (a read's
  // handler, read_head, and on_answers after each answer it ended), and
  // nothing between that look and this call breaks the lane. An answer
  // read after the connection broke is dropped there, untrusted.
  FL_ASSERT(!l.broken_);
  (void)FAULTLANE_FAILPOINT("client.on_response");
  auto& op = *l.inflight_.front();
  auto decoded = wire::decode_response(response_);
  if (!decoded.ok()) return l.break_connection(status::protocol_error);
  const auto& reply = decoded.value();
  if (reply.request_id == 0 && wire::is_header_rejection(reply.status) && payload_have == 0) {
    // The target could not decode a header (it was damaged on the way): it
    // answers without an id, executes nothing, and closes. The answer is
    // the oldest exchange's, and definite, only when nothing else was sent:
    // an earlier answer dropped on the way would make it a later one's.
    const bool alone = l.inflight_.size() == 1;
    FAULTLANE_PROBE_IF(alone, header_rejection_alone);
    FAULTLANE_PROBE_IF(!alone, header_rejection_with_others);
    return l.break_connection(status::protocol_error,
                              alone ? lane::fate::not_executed : lane::fate::unknown);
  }
  // A header rejection names no request; with an id it is not an answer a
  // target sends, so it says nothing about what ran.
  if (reply.request_id != op.request_id || wire::is_header_rejection(reply.status)) {
    return l.break_connection(status::protocol_error);
  }
  if (reply.status != wire::wire_status::ok) {
    if (payload_have > 0) {
      // Past an error header come the next answers, or, with nothing else
      // in flight, garbage.
      if (l.inflight_.size() == 1) return l.break_connection(status::protocol_error);
      carry_.insert(carry_.begin(), op.local, op.local + payload_have);
    }
    // A definite answer: the target did not execute, and goes on with the
    // next request on this connection.
    return l.complete_head(wire::status_for(reply.status), 0, lane::fate::not_executed);
  }
  if (reply.committed_bytes != op.length) return l.break_connection(status::protocol_error);
  if (op.op == wire::opcode::write || payload_have == op.length) {
    return l.complete_head(status::ok, op.length, lane::fate::unknown);
  }
  read_payload(payload_have);
}

// The rest of the oldest READ's payload, of which `have` bytes arrived.
void answer_reader::read_payload(std::size_t have) {
  FL_ASSERT(state_ == state::idle);  // never while answering: see on_answers
  auto& op = *lane_.inflight_.front();
  state_ = state::reading_payload;
  const std::size_t rest = op.length - have;
  watermark_.begin(lane_.socket_, rest, op.length);
  auto condition = [this](const std::error_code& e, std::size_t n) -> std::size_t {
    if (e) return 0;
    lane_.deadline_.push(milliseconds(lane_.rt_.config.progress_timeout_ms));
    watermark_.progress(lane_.socket_, n);
    return limits::io_chunk_bytes_max;
  };
  asio::async_read(lane_.socket_, asio::buffer(op.local + have, rest), condition,
                   lane_.guarded([this](std::error_code e, std::size_t) {
                     watermark_.end(lane_.socket_);
                     on_payload(e);
                   }));
}

void answer_reader::on_payload(const std::error_code& ec) {
  end_read(state::reading_payload);
  FL_ASSERT(lane_.state_ == lane::state::busy && !lane_.inflight_.empty());
  if (ec || lane_.broken_) {
    FAULTLANE_PROBE(read_payload_cut);
    return lane_.break_connection(lane_.io_failure());
  }
  lane_.complete_head(status::ok, lane_.inflight_.front()->length, lane::fate::unknown);
}

bool answer_reader::payload_queued_grew() { return watermark_.queued_bytes_grew(lane_.socket_); }

}  // namespace faultlane::detail
