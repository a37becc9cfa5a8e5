// server and server_session; see server.hpp and docs/protocol.md.
#include "server.hpp"

#include <asio/connect.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <span>

#include "deadline.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "receive_watermark.hpp"
#include "send_now.hpp"
#include "tsan_order.hpp"

namespace faultlane::detail {

using asio::ip::tcp;
using namespace std::chrono;

namespace {
constexpr std::size_t drain_buffer_bytes = 64u << 10;
}  // namespace

// What a session is doing; each handler asserts the state it expects.
enum class session_state {
  accepted,        // built, start() not yet run
  reading,         // waiting for request bytes, or serving the requests staged
  receiving_body,  // a WRITE's body is landing in the registered buffer
  draining_body,   // a rejected WRITE's body is read and dropped
  answering,       // the answers held leave in one gather write
  ended,           // closed and removed from its shard's set
};

// One accepted connection. At most one socket operation is outstanding while
// it lives; the handler of that operation is the only place that ends it, so
// a lease is never released while the kernel could still write into it or
// read from it.
//
// Requests are read ahead into a staging buffer, so the requests an
// initiator pipelined arrive in one read and are served in order; their
// answers (a READ's payload straight from its leased buffer) are held and
// leave together in one gather write, before the session next waits on the
// socket: one receive and one send for a lane's eight requests, where
// serving them one by one took eight of each (docs/architecture.md, "The
// hot path").
class server_session : public std::enable_shared_from_this<server_session> {
 public:
  server_session(runtime& rt, server& owner, std::size_t shard, tcp::socket socket)
      : rt_(rt),
        owner_(owner),
        shard_(shard),
        socket_(std::move(socket)),
        deadline_(
            rt.pool->context(shard),
            [this] {
              run_guarded(
                  rt_, [this] { expire(); }, [this] { on_handler_exception(); });
            },
            [this] { bump(rt_.stats.stale_handlers_dropped); }) {}

  void start() {
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

  void close_socket() noexcept {
    std::error_code ignored;
    socket_.close(ignored);
    FL_ASSERT(!socket_.is_open());  // its pending operation now ends with an error
  }

 private:
  // Request bytes read at once: 85 headers, or a header and the start of a
  // WRITE's body (copied into the leased buffer).
  static constexpr std::size_t staging_bytes = 4u << 10;
  // Answers held for one gather write (a header and a READ's payload
  // each), and the payload bytes past which they leave before the next
  // request is served: a large READ's answer leaves alone.
  static constexpr std::size_t answers_max = 32;
  static constexpr std::size_t answer_bytes_max = 256u << 10;

  struct answer {
    wire::response_bytes header{};
    wire::request_frame request{};
    lease payload;  // a READ's, until its answer left
  };
  // What runs once the answers held have left.
  enum class then { serve, receive_body, drain_body, close };

  milliseconds progress() const { return milliseconds(rt_.config.progress_timeout_ms); }

  auto progress_condition() {
    return [this](const std::error_code& ec, std::size_t) -> std::size_t {
      if (ec) return 0;
      deadline_.push(progress());
      return limits::io_chunk_bytes_max;
    };
  }

  // Wraps a socket handler in the runtime's guard; the session stays alive
  // until the handler ran.
  template <typename Fn>
  auto guarded(Fn fn) {
    return [self = shared_from_this(), fn = std::move(fn)](auto&&... args) mutable {
      run_guarded(
          self->rt_, [&] { fn(std::forward<decltype(args)>(args)...); },
          [&] { self->on_handler_exception(); });
    };
  }

  // A handler failed: drop this connection. Its socket operation, if one
  // was started, still ends the session through its own handler.
  void on_handler_exception() noexcept {
    FL_ASSERT(rt_.failed.load(std::memory_order_acquire));  // the guard marked it first
    close_socket();
    if (!io_pending_) end();
  }

  void expire() {
    FL_ASSERT(state_ != session_state::accepted && state_ != session_state::ended);
    (void)FAULTLANE_FAILPOINT("session.on_deadline");
    // A body streaming in below the receive watermark wakes nobody; bytes
    // waiting in the socket are progress all the same.
    if (state_ == session_state::receiving_body && watermark_.queued_bytes_grew(socket_)) {
      bump(rt_.stats.deadline_checks_with_queued_bytes);
      return deadline_.set(progress(), shared_from_this());
    }
    bump(rt_.stats.sessions_timed_out);
    bump(rt_.stats.timeouts);
    close_socket();
  }

  std::size_t staged() const { return staged_end_ - staged_begin_; }

  // Takes up to `n` staged bytes (a WRITE body's start) into `to`.
  std::size_t take_staged(std::byte* to, std::size_t n) {
    const std::size_t k = std::min(n, staged());
    if (to != nullptr) std::copy_n(staging_.data() + staged_begin_, k, to);
    staged_begin_ += k;
    return k;
  }

  // Serves every request whose header is staged, then lets the answers
  // leave, then reads more. Between requests there is no deadline: the
  // next header's first byte restarts it.
  void serve() {
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

  void read_more() {
    FL_ASSERT(state_ == session_state::reading && answers_used_ == 0);
    FL_ASSERT(staged() < wire::request_frame_bytes);
    // A header cut short stays staged; it moves to the front.
    std::copy(staging_.begin() + static_cast<std::ptrdiff_t>(staged_begin_),
              staging_.begin() + static_cast<std::ptrdiff_t>(staged_end_), staging_.begin());
    staged_end_ = staged();
    staged_begin_ = 0;
    io_pending_ = true;
    socket_.async_read_some(
        asio::buffer(staging_.data() + staged_end_, staging_.size() - staged_end_),
        guarded([this](std::error_code ec, std::size_t n) {
          io_pending_ = false;
          FL_ASSERT(state_ == session_state::reading);
          if (ec) return end();
          (void)FAULTLANE_FAILPOINT("server.on_header");
          if (deadline_.active()) deadline_.push(progress());
          else deadline_.set(progress(), shared_from_this());
          staged_end_ += n;
          serve();
        }));
  }

  // Serves the first staged request. False when it went on asynchronously
  // (a WRITE body still to come, or a header that closes the session).
  bool serve_one() {
    FL_ASSERT(state_ == session_state::reading && staged() >= wire::request_frame_bytes);
    wire::request_bytes header;
    std::copy_n(staging_.data() + staged_begin_, header.size(), header.begin());
    staged_begin_ += header.size();
    auto decoded = wire::decode_request(header, rt_.config.max_transfer_bytes);
    if (!decoded.ok()) {
      // The header cannot be trusted, so neither can any body length: answer
      // and close this connection only.
      bump(rt_.stats.server_rejects);
      hold_answer(wire::wire_status_for(decoded.error()), {}, 0, {});
      send_answers(then::close);
      return false;
    }
    request_ = decoded.value();
    auto kind = request_.op == wire::opcode::read ? access::read : access::write;
    auto leased = rt_.buffers.acquire(request_.registration_id, request_.remote_offset,
                                      request_.length, kind);
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

  // A rejected request is answered and the connection goes on with the
  // next one (an initiator may have sent it already: lanes pipeline); a
  // rejected WRITE first drains exactly its announced body.
  bool reject(status why) {
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
    if (!drain_buffer_)
      drain_buffer_ = std::make_unique<std::array<std::byte, drain_buffer_bytes>>();
    send_answers(then::drain_body);
    return false;
  }

  void drain_body() {
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

  // A WRITE's body lands straight in the registered buffer; what the
  // staging read took of it is copied there first.
  bool receive_write_body() {
    FL_ASSERT(lease_ && request_.op == wire::opcode::write);
    state_ = session_state::receiving_body;
    body_have_ = take_staged(lease_.data(), lease_.size());
    if (body_have_ == lease_.size()) return write_landed();
    send_answers(then::receive_body);
    return false;
  }

  void read_write_body() {
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
                         release_lease();
                         return end();
                       }
                       (void)write_landed();
                       serve();
                     }));
  }

  // The body is in: the WRITE executed, unless a failpoint says otherwise.
  bool write_landed() {
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

  // Queues an answer to leave with the others; `request` is empty for a
  // header the session could not decode.
  void hold_answer(wire::wire_status s, const wire::request_frame& request, std::uint64_t committed,
                   lease payload) {
    FL_ASSERT(answers_used_ < answers_max);
    FL_ASSERT(s != wire::wire_status::ok || committed > 0);  // ok always names its bytes
    auto& a = answers_[answers_used_++];
    a.request = request;
    a.payload = std::move(payload);
    wire::encode(wire::response_frame{s, request.request_id, committed}, a.header);
    answer_bytes_ += a.payload.size();
  }

  // The answers held leave in one gather write, then `next` runs.
  void send_answers(then next) {
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

  // Each READ whose whole answer left is served: reported while its lease
  // still pins the buffer (an observer sees every execution before
  // unregister_buffer() can return), then the lease goes.
  void answers_sent(const std::error_code& ec, std::size_t sent, then next) {
    std::size_t end_of = 0;
    for (std::size_t i = 0; i < answers_used_; ++i) {
      auto& a = answers_[i];
      end_of += a.header.size() + a.payload.size();
      if (a.payload && end_of <= sent) {
        bump(rt_.stats.server_reads);
        report(a.request, status::ok);
      }
      release(a.payload, a.request.registration_id);
    }
    answers_used_ = 0;
    answer_bytes_ = 0;
    if (ec) return end();
    after_answers(next);
  }

  void after_answers(then next) {
    FL_ASSERT(answers_used_ == 0);
    switch (next) {
      case then::serve: return serve();
      case then::receive_body: return read_write_body();
      case then::drain_body: return drain_body();
      case then::close: return end();
    }
  }

  void release(lease& l, registration_id id) {
    if (!l) return;
    l.release();
    FL_ASSERT(!l);
    if (rt_.observer) rt_.observer->lease_released(id);
  }
  void release_lease() { release(lease_, request_.registration_id); }

  void report(const wire::request_frame& r, status outcome) {
    FL_ASSERT(state_ != session_state::accepted && state_ != session_state::ended);
    if (!rt_.observer) return;
    rt_.observer->server_executed(
        {r.op, r.request_id, r.registration_id, r.remote_offset, r.length, outcome});
  }

  void end() {
    if (state_ == session_state::ended) return;
    state_ = session_state::ended;
    release_lease();
    for (std::size_t i = 0; i < answers_used_; ++i) {
      release(answers_[i].payload, answers_[i].request.registration_id);
    }
    answers_used_ = 0;
    deadline_.cancel();
    close_socket();
    FL_ASSERT(!lease_ && !socket_.is_open());
    owner_.session_ended(shard_, this);
  }

  runtime& rt_;
  server& owner_;
  const std::size_t shard_;
  tcp::socket socket_;
  deadline deadline_;
  std::array<std::byte, staging_bytes> staging_{};
  std::size_t staged_begin_ = 0;  // staging_[staged_begin_, staged_end_) is unread
  std::size_t staged_end_ = 0;
  wire::request_frame request_{};  // the request being served
  lease lease_;                    // its lease, while it is served here
  std::uint64_t body_have_ = 0;    // WRITE body bytes landed
  std::array<answer, answers_max> answers_{};
  std::size_t answers_used_ = 0;
  std::size_t answer_bytes_ = 0;  // payload bytes held
  std::array<asio::const_buffer, 2 * answers_max> gather_{};
  receive_watermark watermark_;
  std::uint64_t drain_left_ = 0;
  status drain_status_ = status::ok;
  std::unique_ptr<std::array<std::byte, drain_buffer_bytes>> drain_buffer_;
  session_state state_ = session_state::accepted;
  // Whether the current state's socket operation is outstanding (its
  // handler, not a failing one, then ends the session).
  bool io_pending_ = false;
};

server::server(runtime& rt) : rt_(rt), sessions_(rt.pool->size()) {
  FL_ASSERT(!sessions_.empty());  // one session set per shard
}

// Runs after the pool's threads were joined. Sessions a timed-out shutdown
// left open are released here; any that a queued handler still holds goes
// when the pool destroys that handler.
server::~server() = default;

// The socket already belongs to its shard's io_context; the session starts
// there.
void server::start_session(std::size_t shard, tcp::socket socket) {
  FL_ASSERT(socket.is_open());
  auto s = std::make_shared<server_session>(rt_, *this, shard, std::move(socket));
  post_guarded(rt_, shard, [s] { s->start(); });
}

void server::session_started(std::size_t shard, const std::shared_ptr<server_session>& s) {
  FL_ASSERT(shard < sessions_.size() && s != nullptr);
  const bool inserted = sessions_[shard].emplace(s.get(), s).second;
  FL_ASSERT(inserted);
}

void server::session_ended(std::size_t shard, server_session* s) {
  // Erasing may drop the last owner; `s` must not be used afterwards.
  const auto erased = sessions_[shard].erase(s);
  FL_ASSERT(erased == 1);
  const auto live_before = rt_.stats.sessions_live.fetch_sub(1, std::memory_order_acq_rel);
  FL_ASSERT(live_before > 0);
}

void server::close_sessions(std::size_t shard) {
  FL_ASSERT(shard < sessions_.size());
  for (const auto& [raw, s] : sessions_[shard]) s->close_socket();
}

}  // namespace faultlane::detail
