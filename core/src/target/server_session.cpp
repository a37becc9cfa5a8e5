// server_session: reading requests ahead, serving them in order, and
// sending their answers together; see server_session.hpp.
#include "target/server_session.hpp"

#include <asio/read.hpp>
#include <asio/write.hpp>

#include <algorithm>
#include <span>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "runtime/send_now.hpp"
#include "runtime/tsan_order.hpp"

namespace faultlane::detail {

using asio::ip::tcp;

void server_session::start() {
  FL_ASSERT(state_ == session_state::accepted);
  owner_.session_started(shard_, shared_from_this());
  state_ = session_state::reading;
  std::error_code ignored;
  socket_.set_option(tcp::no_delay(true), ignored);
  // send_now must never block the io thread: a socket that cannot be made
  // non-blocking is not served at all.
  std::error_code ec;
  socket_.non_blocking(true, ec);
  if (ec) return end();
  if constexpr (reads_skip_the_probe) (void)unprobed_read::report_bytes_left(socket_);
  if (rt_.observer) {
    auto local = socket_.local_endpoint(ignored);
    auto remote = socket_.remote_endpoint(ignored);
    rt_.observer->session_opened({local.address().to_string(), local.port()},
                                 {remote.address().to_string(), remote.port()});
  }
  // A new connection must send its first header byte within the progress
  // timeout; a connection that sends nothing never holds a slot for long.
  deadline_.set(progress(), shared_from_this());
  read_more();
}

void server_session::on_handler_exception() noexcept {
  FL_ASSERT(rt_.failed.load(std::memory_order_acquire));  // the guard marked it first
  close_socket();
  if (!io_pending_) end();
}

void server_session::expire() {
  FL_ASSERT(state_ != session_state::accepted && state_ != session_state::ended);
  (void)FAULTLANE_FAILPOINT("session.on_deadline");
  // A body streaming in below the receive watermark wakes nobody; bytes
  // waiting in the socket are progress all the same.
  if (state_ == session_state::receiving_body && watermark_.queued_bytes_grew(socket_)) {
    FAULTLANE_PROBE(session_deadline_met_queued_body);
    bump(rt_.stats.deadline_checks_with_queued_bytes);
    return deadline_.set(progress(), shared_from_this());
  }
  FAULTLANE_PROBE(session_timed_out);
  bump(rt_.stats.sessions_timed_out);
  bump(rt_.stats.timeouts);
  close_socket();
}

std::size_t server_session::take_staged(std::byte* to, std::size_t n) {
  const std::size_t k = std::min(n, staged());
  if (to != nullptr) std::copy_n(staging_.data() + staged_begin_, k, to);
  staged_begin_ += k;
  return k;
}

void server_session::serve() {
  FL_ASSERT(state_ != session_state::ended && !lease_);
  state_ = session_state::reading;
  while (staged() >= wire::request_frame_bytes) {
    if (answers_used_ == answers_max || answer_bytes_ >= answer_bytes_max) {
      return send_answers(then::serve);
    }
    if (!serve_one()) return;  // it went on asynchronously
  }
  if (answers_used_ > 0) return send_answers(then::serve);
  if (staged() == 0) deadline_.clear();
  read_more();
}

void server_session::read_more() {
  FL_ASSERT(state_ == session_state::reading && answers_used_ == 0);
  FL_ASSERT(staged() < wire::request_frame_bytes);
  // A header cut short stays staged; it moves to the front.
  std::copy(staging_.begin() + static_cast<std::ptrdiff_t>(staged_begin_),
            staging_.begin() + static_cast<std::ptrdiff_t>(staged_end_), staging_.begin());
  staged_end_ = staged();
  staged_begin_ = 0;
  io_pending_ = true;
  const auto into = asio::buffer(staging_.data() + staged_end_, staging_.size() - staged_end_);
  auto on_read = [this](std::error_code ec, std::size_t n) {
    io_pending_ = false;
    FL_ASSERT(state_ == session_state::reading);
    if (ec) return end();
    (void)FAULTLANE_FAILPOINT("server.on_header");
    if (deadline_.active()) deadline_.push(progress());
    else deadline_.set(progress(), shared_from_this());
    staged_end_ += n;
    drained_ = requests_read_.left_nothing();
    serve();
  };
  if constexpr (reads_skip_the_probe) {
    const auto how = quiet_ ? unprobed_read::probe::skip : unprobed_read::probe::first;
    if (quiet_) bump(rt_.stats.requests_read_unprobed);
    return requests_read_.start(
        socket_, std::span(&into, 1),
        [self = shared_from_this(), on_read](std::error_code ec, std::size_t n) mutable {
          run_guarded(
              self->rt_, [&] { on_read(ec, n); }, [&] { self->on_handler_exception(); });
          // The reactor may report the socket once this returns.
          self->drained_ = false;
          self->quiet_ = false;
        },
        how);
  }
  socket_.async_read_some(into, guarded(on_read));
}

bool server_session::serve_one() {
  FL_ASSERT(state_ == session_state::reading && staged() >= wire::request_frame_bytes);
  wire::request_bytes header;
  std::copy_n(staging_.data() + staged_begin_, header.size(), header.begin());
  staged_begin_ += header.size();
  auto decoded = wire::decode_request(header, rt_.config.max_transfer_bytes);
  if (!decoded.ok()) {
    // The header cannot be trusted, so neither can any body length: answer
    // and close this connection only.
    FAULTLANE_PROBE(target_rejected_header);
    bump(rt_.stats.server_rejects);
    hold_answer(wire::wire_status_for(decoded.error()), {}, 0, {});
    send_answers(then::close);
    return false;
  }
  request_ = decoded.value();
  auto kind = request_.op == wire::opcode::read ? access::read : access::write;
  auto leased =
      rt_.buffers.acquire(request_.registration_id, request_.remote_offset, request_.length, kind);
  if (!leased.ok()) return reject(leased.code());
  lease_ = std::move(leased).value();
  if (rt_.observer) rt_.observer->lease_acquired(request_.registration_id);
  if (request_.op == wire::opcode::read) {
    if (auto injected =
            FAULTLANE_FAILPOINT_KEY("server.before_read_payload", request_.registration_id)) {
      release_lease();
      return reject(*injected);
    }
    // The lease moves to the answer, and pins the buffer until its
    // payload left.
    hold_answer(wire::wire_status::ok, request_, request_.length, std::move(lease_));
    return true;
  }
  return receive_write_body();
}

bool server_session::reject(status why) {
  FL_ASSERT(why != status::ok);
  FL_ASSERT(!lease_);  // a rejected request never holds one
  bump(rt_.stats.server_rejects);
  report(request_, why);
  if (request_.op == wire::opcode::read) {
    hold_answer(wire::wire_status_for(why), request_, 0, {});
    return true;
  }
  drain_status_ = why;
  drain_left_ = request_.length - take_staged(nullptr, request_.length);
  if (drain_left_ == 0) {
    hold_answer(wire::wire_status_for(why), request_, 0, {});
    return true;
  }
  // Taken once per session and kept: a client refused again and again
  // (a stale registration) costs no allocation per refusal.
  FAULTLANE_PROBE(refused_write_body_drained);
  if (!drain_buffer_) drain_buffer_ = std::make_unique<std::array<std::byte, drain_buffer_bytes>>();
  send_answers(then::drain_body);
  return false;
}

void server_session::drain_body() {
  state_ = session_state::draining_body;
  if (drain_left_ == 0) {
    hold_answer(wire::wire_status_for(drain_status_), request_, 0, {});
    return serve();
  }
  auto step = std::min<std::uint64_t>(drain_left_, drain_buffer_->size());
  io_pending_ = true;
  asio::async_read(socket_, asio::buffer(drain_buffer_->data(), step), progress_condition(),
                   guarded([this](std::error_code ec, std::size_t n) {
                     io_pending_ = false;
                     FL_ASSERT(state_ == session_state::draining_body);
                     if (ec) return end();
                     drain_left_ -= n;
                     drain_body();
                   }));
}

bool server_session::receive_write_body() {
  FL_ASSERT(lease_ && request_.op == wire::opcode::write);
  state_ = session_state::receiving_body;
  // READ answers held leave before this WRITE changes any buffer: a READ
  // sent before it reads what was there before it.
  if (answer_bytes_ > 0) {
    FAULTLANE_PROBE(reads_answered_before_write);
    send_answers(then::land_body);
    return false;
  }
  return land_body();
}

bool server_session::land_body() {
  FL_ASSERT(lease_ && answer_bytes_ == 0);
  state_ = session_state::receiving_body;
  body_have_ = take_staged(lease_.data(), lease_.size());
  if (body_have_ == lease_.size()) return write_landed();
  FAULTLANE_PROBE(write_body_waits_after_header);
  if (lease_.size() - body_have_ > small_body_rest_max) {
    send_answers(then::receive_body);
    return false;
  }
  // Usually the rest is here already: it lands, the requests behind it
  // are staged, and the answers held stay held, to leave together.
  if (take_small_body_now()) return write_landed();
  if (state_ == session_state::ended) return false;
  // Not all here: the answers held leave before the session waits, so a
  // body that stalls holds back only what comes after it.
  send_answers(then::small_body);
  return false;
}

bool server_session::take_small_body_now() {
  FL_ASSERT(lease_ && body_have_ < lease_.size() && staged() == 0);
  staged_begin_ = 0;
  staged_end_ = 0;
  std::array<asio::mutable_buffer, 2> in{
      asio::buffer(lease_.data() + body_have_, lease_.size() - body_have_),
      asio::buffer(staging_.data(), staged_behind_body_bytes)};
  std::error_code ec;
  const std::size_t n = socket_.read_some(in, ec);
  if (ec == asio::error::would_block || ec == asio::error::try_again) return false;
  if (ec) {
    end();
    return false;
  }
  small_body_read(n);
  return body_have_ == lease_.size();
}

void server_session::small_body_read(std::size_t n) {
  FL_ASSERT(n > 0);
  deadline_.push(progress());
  const std::size_t body = std::min(n, lease_.size() - body_have_);
  body_have_ += body;
  staged_end_ = n - body;
  if (staged_end_ > 0) (void)FAULTLANE_FAILPOINT("server.on_header");
}

void server_session::read_small_body() {
  FL_ASSERT(lease_ && body_have_ < lease_.size() && answers_used_ == 0);
  state_ = session_state::receiving_body;
  staged_begin_ = 0;
  staged_end_ = 0;
  std::array<asio::mutable_buffer, 2> in{
      asio::buffer(lease_.data() + body_have_, lease_.size() - body_have_),
      asio::buffer(staging_.data(), staged_behind_body_bytes)};
  io_pending_ = true;
  socket_.async_read_some(in, guarded([this](std::error_code ec, std::size_t n) {
                            io_pending_ = false;
                            FL_ASSERT(state_ == session_state::receiving_body);
                            if (ec) {
                              FAULTLANE_PROBE(write_body_cut);
                              return end();
                            }
                            small_body_read(n);
                            if (body_have_ < lease_.size()) return read_small_body();
                            (void)write_landed();
                            serve();
                          }));
}

void server_session::read_write_body() {
  FL_ASSERT(lease_ && body_have_ < lease_.size());
  state_ = session_state::receiving_body;
  io_pending_ = true;
  const std::size_t rest = lease_.size() - body_have_;
  watermark_.begin(socket_, rest, lease_.size());
  auto condition = [this](const std::error_code& ec, std::size_t n) -> std::size_t {
    if (ec) return 0;
    deadline_.push(progress());
    watermark_.progress(socket_, n);
    return limits::io_chunk_bytes_max;
  };
  asio::async_read(socket_, asio::buffer(lease_.data() + body_have_, rest), condition,
                   guarded([this](std::error_code ec, std::size_t) {
                     io_pending_ = false;
                     FL_ASSERT(state_ == session_state::receiving_body);
                     watermark_.end(socket_);
                     if (ec) {
                       FAULTLANE_PROBE(write_body_cut);
                       release_lease();
                       return end();
                     }
                     (void)write_landed();
                     serve();
                   }));
}

bool server_session::write_landed() {
  FL_ASSERT(lease_ && state_ == session_state::receiving_body);
  state_ = session_state::reading;
  if (auto injected =
          FAULTLANE_FAILPOINT_KEY("server.before_write_ack", request_.registration_id)) {
    release_lease();
    report(request_, *injected);
    hold_answer(wire::wire_status_for(*injected), request_, 0, {});
    return true;
  }
  bump(rt_.stats.server_writes);
  report(request_, status::ok);  // lease held: before any unregister returns
  release_lease();
  hold_answer(wire::wire_status::ok, request_, request_.length, {});
  return true;
}

void server_session::send_answers(then next) {
  FL_ASSERT(!io_pending_);
  if (answers_used_ == 0) return after_answers(next);
  state_ = session_state::answering;
  std::size_t buffers = 0;
  for (std::size_t i = 0; i < answers_used_; ++i) {
    auto& a = answers_[i];
    gather_[buffers++] = asio::buffer(a.header);
    if (a.payload) {
      note_send_reads(a.payload.data(), a.payload.size());
      gather_[buffers++] = asio::const_buffer(a.payload.data(), a.payload.size());
    }
  }
  const std::span<asio::const_buffer> out(gather_.data(), buffers);
  std::error_code ec;
  const std::size_t sent = send_now(socket_, out, ec);
  if (ec || sent == asio::buffer_size(out)) return answers_sent(ec, sent, next);
  io_pending_ = true;
  asio::async_write(socket_, rest_of(out, sent), progress_condition(),
                    guarded([this, next, before = sent](std::error_code e, std::size_t n) {
                      io_pending_ = false;
                      FL_ASSERT(state_ == session_state::answering);
                      answers_sent(e, before + n, next);
                    }));
}

void server_session::answers_sent(const std::error_code& ec, std::size_t sent, then next) {
  std::size_t end_of = 0;
  for (std::size_t i = 0; i < answers_used_; ++i) {
    auto& a = answers_[i];
    end_of += a.header.size() + a.payload.size();
    if (a.payload && end_of <= sent) {
      bump(rt_.stats.server_reads);
      report(a.request, status::ok);
    }
    FAULTLANE_PROBE_IF(a.payload && end_of > sent, read_answer_cut_in_send);
    release(a.payload, a.request.registration_id);
  }
  answers_used_ = 0;
  answer_bytes_ = 0;
  if (ec) return end();
  // A reset behind the request bytes would have failed this send.
  quiet_ = drained_;
  after_answers(next);
}

void server_session::after_answers(then next) {
  FL_ASSERT(answers_used_ == 0);
  switch (next) {
    case then::serve: return serve();
    case then::land_body:
      if (land_body()) serve();
      return;
    case then::receive_body: return read_write_body();
    case then::small_body: return read_small_body();
    case then::drain_body: return drain_body();
    case then::close: return end();
  }
}

void server_session::release(lease& l, registration_id id) {
  if (!l) return;
  l.release();
  FL_ASSERT(!l);
  if (rt_.observer) rt_.observer->lease_released(id);
}

void server_session::report(const wire::request_frame& r, status outcome) {
  FL_ASSERT(state_ != session_state::accepted && state_ != session_state::ended);
  if (!rt_.observer) return;
  rt_.observer->server_executed(
      {r.op, r.request_id, r.registration_id, r.remote_offset, r.length, outcome});
}

void server_session::end() {
  if (state_ == session_state::ended) return;
  state_ = session_state::ended;
  FAULTLANE_PROBE_IF(lease_, session_ended_holding_leases);
  release_lease();
  for (std::size_t i = 0; i < answers_used_; ++i) {
    FAULTLANE_PROBE_IF(answers_[i].payload, session_ended_holding_leases);
    release(answers_[i].payload, answers_[i].request.registration_id);
  }
  answers_used_ = 0;
  deadline_.cancel();
  close_socket();
  FL_ASSERT(!lease_ && !socket_.is_open());
  owner_.session_ended(shard_, this);
}

}  // namespace faultlane::detail
