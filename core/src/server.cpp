// server and server_session; see server.hpp and docs/protocol.md.
#include "server.hpp"

#include <asio/connect.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>

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
  reading_header,  // waiting for or reading a request header
  sending_read,    // a READ's answer and payload are leaving
  receiving_body,  // a WRITE's body is landing in the registered buffer
  draining_body,   // a rejected WRITE's body is read and dropped
  replying,        // a response header is leaving
  ended,           // closed and removed from its shard's set
};

// One accepted connection. Exactly one socket operation is outstanding while
// it lives; the handler of that operation is the only place that ends it, so
// a lease is never released while the kernel could still write into it.
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
    state_ = session_state::reading_header;
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
    read_header_start();
  }

  void close_socket() noexcept {
    std::error_code ignored;
    socket_.close(ignored);
    FL_ASSERT(!socket_.is_open());  // its pending operation now ends with an error
  }

 private:
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

  // Between requests there is no deadline: the next header's first byte
  // restarts it.
  void read_header_start() {
    FL_ASSERT(!lease_);
    state_ = session_state::reading_header;
    io_pending_ = true;
    socket_.async_read_some(asio::buffer(header_),
                            guarded([this](std::error_code ec, std::size_t n) {
                              io_pending_ = false;
                              FL_ASSERT(state_ == session_state::reading_header);
                              if (ec) return end();
                              (void)FAULTLANE_FAILPOINT("server.on_header");
                              if (!deadline_.active())
                                deadline_.set(progress(), shared_from_this());
                              read_header_rest(n);
                            }));
  }

  void read_header_rest(std::size_t have) {
    FL_ASSERT(state_ == session_state::reading_header);
    FL_ASSERT(have > 0 && have <= header_.size());          // the first read returned bytes
    if (have == header_.size()) return dispatch_request();  // the usual case: one read
    io_pending_ = true;
    asio::async_read(socket_, asio::buffer(header_.data() + have, header_.size() - have),
                     progress_condition(), guarded([this](std::error_code ec, std::size_t) {
                       io_pending_ = false;
                       FL_ASSERT(state_ == session_state::reading_header);
                       if (ec) return end();
                       dispatch_request();
                     }));
  }

  void dispatch_request() {
    FL_ASSERT(state_ == session_state::reading_header);
    auto decoded = wire::decode_request(header_, rt_.config.max_transfer_bytes);
    if (!decoded.ok()) {
      // The header cannot be trusted, so neither can any body length: answer
      // and close this connection only.
      bump(rt_.stats.server_rejects);
      return reply_then(wire::wire_status_for(decoded.error()), 0, 0, after_reply::close);
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
      return send_read_payload();
    }
    receive_write_body();
  }

  // A rejected request is answered and the connection goes on with the
  // next one (an initiator may have sent it already: lanes pipeline); a
  // rejected WRITE first drains exactly its announced body.
  void reject(status why) {
    FL_ASSERT(why != status::ok);
    FL_ASSERT(!lease_);  // a rejected request never holds one
    bump(rt_.stats.server_rejects);
    report(why);
    if (request_.op == wire::opcode::read) {
      return reply_then(wire::wire_status_for(why), request_.request_id, 0,
                        after_reply::next_request);
    }
    state_ = session_state::draining_body;
    drain_left_ = request_.length;
    // Taken once per session and kept: a client refused again and again
    // (a stale registration) costs no allocation per refusal.
    if (!drain_buffer_)
      drain_buffer_ = std::make_unique<std::array<std::byte, drain_buffer_bytes>>();
    drain_body(why);
  }

  void drain_body(status why) {
    FL_ASSERT(state_ == session_state::draining_body);
    if (drain_left_ == 0) {
      return reply_then(wire::wire_status_for(why), request_.request_id, 0,
                        after_reply::next_request);
    }
    auto step = std::min<std::uint64_t>(drain_left_, drain_buffer_->size());
    io_pending_ = true;
    asio::async_read(socket_, asio::buffer(drain_buffer_->data(), step), progress_condition(),
                     guarded([this, why](std::error_code ec, std::size_t n) {
                       io_pending_ = false;
                       FL_ASSERT(state_ == session_state::draining_body);
                       if (ec) return end();
                       drain_left_ -= n;
                       drain_body(why);
                     }));
  }

  void send_read_payload() {
    FL_ASSERT(lease_ && request_.op == wire::opcode::read);
    state_ = session_state::sending_read;
    wire::encode(wire::response_frame{wire::wire_status::ok, request_.request_id, request_.length},
                 reply_);
    send_buffers out{asio::buffer(reply_), asio::const_buffer(lease_.data(), lease_.size())};
    note_send_reads(lease_.data(), lease_.size());
    // Usually the whole answer fits in the socket at once.
    std::error_code ec;
    const std::size_t sent = send_now(socket_, out, ec);
    if (ec || sent == asio::buffer_size(out)) return read_payload_sent(ec);
    io_pending_ = true;
    asio::async_write(socket_, rest_of(out, sent), progress_condition(),
                      guarded([this](std::error_code e, std::size_t) {
                        io_pending_ = false;
                        read_payload_sent(e);
                      }));
  }

  void read_payload_sent(const std::error_code& ec) {
    FL_ASSERT(state_ == session_state::sending_read);
    if (ec) {
      release_lease();
      return end();
    }
    bump(rt_.stats.server_reads);
    // Reported while the lease still pins the buffer, so an observer sees
    // every execution before unregister_buffer() can return.
    report(status::ok);
    release_lease();
    FL_ASSERT(!lease_);  // the payload left: the buffer may be unregistered now
    next_request();
  }

  void receive_write_body() {
    FL_ASSERT(lease_ && request_.op == wire::opcode::write);
    state_ = session_state::receiving_body;
    io_pending_ = true;
    watermark_.begin(socket_, lease_.size());
    auto condition = [this](const std::error_code& ec, std::size_t n) -> std::size_t {
      if (ec) return 0;
      deadline_.push(progress());
      watermark_.progress(socket_, n);
      return limits::io_chunk_bytes_max;
    };
    asio::async_read(socket_, asio::buffer(lease_.data(), lease_.size()), condition,
                     guarded([this](std::error_code ec, std::size_t) {
                       io_pending_ = false;
                       FL_ASSERT(state_ == session_state::receiving_body);
                       watermark_.end(socket_);
                       if (ec) {
                         release_lease();
                         return end();
                       }
                       if (auto injected = FAULTLANE_FAILPOINT_KEY("server.before_write_ack",
                                                                   request_.registration_id)) {
                         release_lease();
                         report(*injected);
                         return reply_then(wire::wire_status_for(*injected), request_.request_id, 0,
                                           after_reply::next_request);
                       }
                       bump(rt_.stats.server_writes);
                       report(status::ok);  // lease held: before any unregister returns
                       release_lease();
                       reply_then(wire::wire_status::ok, request_.request_id, request_.length,
                                  after_reply::next_request);
                     }));
  }

  enum class after_reply { next_request, close };

  void reply_then(wire::wire_status s, std::uint64_t request_id, std::uint64_t committed,
                  after_reply then) {
    FL_ASSERT(!lease_);
    FL_ASSERT(s != wire::wire_status::ok || committed > 0);  // ok always names its bytes
    state_ = session_state::replying;
    wire::encode(wire::response_frame{s, request_id, committed}, reply_);
    io_pending_ = true;
    asio::async_write(socket_, asio::buffer(reply_), progress_condition(),
                      guarded([this, then](std::error_code ec, std::size_t) {
                        io_pending_ = false;
                        FL_ASSERT(state_ == session_state::replying);
                        if (ec || then == after_reply::close) return end();
                        next_request();
                      }));
  }

  void next_request() {
    FL_ASSERT(!lease_);
    FL_ASSERT(state_ != session_state::ended);
    deadline_.clear();
    read_header_start();
  }

  void release_lease() {
    if (!lease_) return;
    lease_.release();
    FL_ASSERT(!lease_);
    if (rt_.observer) rt_.observer->lease_released(request_.registration_id);
  }

  void report(status outcome) {
    FL_ASSERT(state_ != session_state::accepted && state_ != session_state::ended);
    if (!rt_.observer) return;
    rt_.observer->server_executed({request_.op, request_.request_id, request_.registration_id,
                                   request_.remote_offset, request_.length, outcome});
  }

  void end() {
    if (state_ == session_state::ended) return;
    state_ = session_state::ended;
    release_lease();
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
  wire::request_bytes header_{};
  wire::response_bytes reply_{};
  wire::request_frame request_{};
  lease lease_;
  receive_watermark watermark_;
  std::uint64_t drain_left_ = 0;
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
