// server_session: one accepted connection on the target side, and how it
// serves the requests that arrive on it; see server.hpp, and
// docs/architecture.md ("The hot path") for the read-ahead and the
// answers sent together.
#pragma once

#include <asio/ip/tcp.hpp>

#include <array>
#include <memory>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/core/registry.hpp"
#include "runtime/deadline.hpp"
#include "runtime/receive_watermark.hpp"
#include "runtime/runtime.hpp"
#include "runtime/unprobed_read.hpp"
#include "target/server.hpp"

namespace faultlane::detail {

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
  server_session(runtime& rt, server& owner, std::size_t shard, net::socket socket)
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

  void start();

  void close_socket() noexcept {
    std::error_code ignored;
    socket_.close(ignored);
    FL_ASSERT(!socket_.is_open());  // its pending operation now ends with an error
  }

 private:
  // Request bytes read at once: 256 headers, or a header and the start of
  // a WRITE's body (copied into the leased buffer). A WRITE of a 4 or
  // 8 KiB page, header and body, is read in one receive; when nothing
  // follows it (one request at a time), that receive can leave the socket
  // empty, and the session reads the next request without a probe. At
  // 4 KiB the read cut such a WRITE, and a second receive took the rest
  // (docs/benchmarks.md, "The hot path in numbers").
  static constexpr std::size_t staging_bytes = limits::request_read_ahead_bytes;
  static_assert(staging_bytes >= (8u << 10) + wire::request_frame_bytes);
  // Of it, what a scatter read of a WRITE body's rest takes of the requests
  // behind it. More would copy more of the next WRITE's body out of the
  // staging buffer when large WRITEs come back to back: with the whole
  // read-ahead there, 64 KiB WRITEs in batches of 32 cost 13% more CPU
  // per op (mean of six alternations; bench/results/history.csv).
  static constexpr std::size_t staged_behind_body_bytes = 4u << 10;
  static_assert(staged_behind_body_bytes <= staging_bytes);
  // Answers held for one gather write (a header and a READ's payload
  // each), and the payload bytes past which they leave before the next
  // request is served: a large READ's answer leaves alone.
  static constexpr std::size_t answers_max = 32;
  static constexpr std::size_t answer_bytes_max = 256u << 10;
  // A WRITE body with at most this much still to come after the
  // read-ahead is read together with the requests behind it; a larger one
  // lands alone (and under the receive watermark from 1 MiB), its answers
  // held sent first.
  static constexpr std::size_t small_body_rest_max = 64u << 10;
  // A refused WRITE's body is read and dropped this much at a time.
  static constexpr std::size_t drain_buffer_bytes = 64u << 10;

  struct answer {
    wire::response_bytes header{};
    wire::request_frame request{};
    lease payload;  // a READ's, until its answer left
  };
  // What runs once the answers held have left.
  enum class then { serve, land_body, receive_body, small_body, drain_body, close };

  std::chrono::milliseconds progress() const {
    return std::chrono::milliseconds(rt_.config.progress_timeout_ms);
  }

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
  void on_handler_exception() noexcept;

  void expire();

  std::size_t staged() const { return staged_end_ - staged_begin_; }

  // Takes up to `n` staged bytes (a WRITE body's start) into `to`.
  std::size_t take_staged(std::byte* to, std::size_t n);

  // Serves every request whose header is staged, then lets the answers
  // leave, then reads more. Between requests there is no deadline: the
  // next header's first byte restarts it.
  void serve();

  void read_more();

  // Serves the first staged request. False when it went on asynchronously
  // (a WRITE body still to come, or a header that closes the session).
  bool serve_one();

  // A rejected request is answered and the connection goes on with the
  // next one (an initiator may have sent it already: lanes pipeline); a
  // rejected WRITE first drains exactly its announced body.
  bool reject(status why);

  void drain_body();

  // A WRITE's body lands straight in the registered buffer; what the
  // staging read took of it is copied there first.
  bool receive_write_body();
  // What the read-ahead took of the body lands; true when that was all of
  // it (the WRITE ran), false when the rest is being read.
  bool land_body();
  // The rest of a small WRITE body, and the requests behind it, in one
  // scatter read: body bytes straight into the registered buffer, what
  // follows into the emptied staging buffer. take_small_body_now does not
  // wait (true when the body is all in); read_small_body waits.
  bool take_small_body_now();
  void read_small_body();
  void small_body_read(std::size_t n);

  void read_write_body();

  // The body is in: the WRITE executed, unless a failpoint says otherwise.
  bool write_landed();

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
  void send_answers(then next);

  // Each READ whose whole answer left is served: reported while its lease
  // still pins the buffer (an observer sees every execution before
  // unregister_buffer() can return), then the lease goes.
  void answers_sent(const std::error_code& ec, std::size_t sent, then next);

  void after_answers(then next);

  void release(lease& l, registration_id id);
  void release_lease() { release(lease_, request_.registration_id); }

  void report(const wire::request_frame& r, status outcome);

  void end();

  runtime& rt_;
  server& owner_;
  const std::size_t shard_;
  net::socket socket_;
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
  // Reads requests (unprobed_read.hpp). The session's one socket operation
  // at a time is what lets it trust left_nothing().
  unprobed_read requests_read_;
  // For the rest of the request read's handler: that read left nothing on
  // the socket, not even a FIN (drained_); and answers left since, so no
  // reset waits either (quiet_): the next request read needs no probe.
  bool drained_ = false;
  bool quiet_ = false;
};

}  // namespace faultlane::detail
