// A lane's answer side: reads the answers of the exchanges whose requests
// left, oldest first, with one scatter read into their headers and READ
// payloads, and hands each one to the lane to end its exchange. Bytes that
// land one answer too early (after a refusal) are carried over to the
// answers they belong to. The lane owns the exchanges in flight and the
// socket; this reads them (answer_reader.cpp, docs/architecture.md,
// "One frame exchange" and "The hot path").
#pragma once

#include <asio/buffer.hpp>

#include <array>
#include <cstdint>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "runtime/receive_watermark.hpp"
#include "runtime/unprobed_read.hpp"

namespace faultlane::detail {

class lane;

class answer_reader {
 public:
  // What the reader is doing; every handler asserts the state it expects.
  enum class state : std::uint8_t {
    idle,             // no read outstanding, no answer being handled
    reading_answers,  // the scatter read of every answer whose request left
    reading_header,   // the rest of a header cut short
    reading_payload,  // the rest of a READ's payload, into the caller's buffer
    answering,        // ending the exchanges whose answers one read brought
  };

  explicit answer_reader(lane& owner) : lane_(owner) {}
  answer_reader(const answer_reader&) = delete;
  answer_reader& operator=(const answer_reader&) = delete;

  // A read is outstanding on the socket.
  bool reading() const noexcept {
    return state_ == state::reading_answers || state_ == state::reading_header ||
           state_ == state::reading_payload;
  }
  // Answers one read brought are ending their exchanges: the lane goes on
  // after the last, not after each.
  bool answering() const noexcept { return state_ == state::answering; }
  // Answer bytes received past the answers asked for are held.
  bool carrying() const noexcept { return !carry_.empty(); }

  // Reads the oldest exchange's answer, and those of the exchanges behind
  // it whose requests left. Idle only, with the oldest request out.
  void read_head();
  // The connection closed: carried bytes were that connection's only.
  void forget_connection() noexcept { carry_.clear(); }
  // An async_write started on the socket: the answer read outstanding, if
  // any, is no longer the one operation the reactor completes for it.
  void write_started() noexcept { answer_read_alone_ = false; }
  // The answer read whose handler is running left nothing on connection
  // `epoch`, not even a FIN (lane::check_idle_connection).
  bool drained(std::uint64_t epoch) const noexcept {
    return drained_connection_ != 0 && drained_connection_ == epoch;
  }
  // Connection `epoch` was found quiet (0: not) by the pump now running: an
  // answer read started before it returns needs no probe. Put back by the
  // returned guard.
  class quiet_scope {
   public:
    quiet_scope(answer_reader& r, std::uint64_t epoch) noexcept
        : v_(r.quiet_connection_), saved_(v_) {
      v_ = epoch;
    }
    quiet_scope(const quiet_scope&) = delete;
    quiet_scope& operator=(const quiet_scope&) = delete;
    ~quiet_scope() { v_ = saved_; }

   private:
    std::uint64_t& v_;
    std::uint64_t saved_;
  };
  // A payload streaming in below the receive watermark wakes nobody: bytes
  // waiting in the socket are progress all the same (lane::on_deadline).
  bool payload_queued_grew();

 private:
  void read_head_from_carry();
  void read_answers();
  void read_header_rest(std::size_t have);
  bool overlaps_a_read_before(std::size_t i) const;
  void on_answers(std::size_t n);
  void carry_rest(std::size_t k, std::size_t left);
  void on_response(std::size_t payload_have);
  void read_payload(std::size_t have);
  void on_payload(const std::error_code& ec);
  void end_read(state expected) noexcept;
  // A completion condition that moves the progress deadline on every chunk.
  auto progress_condition();

  lane& lane_;
  state state_ = state::idle;
  wire::response_bytes response_{};  // the oldest exchange's answer
  // The scatter read of answers: a header per exchange whose request left,
  // oldest first, each followed by its READ's payload buffer.
  std::array<wire::response_bytes, 32> answer_headers_{};
  std::array<asio::mutable_buffer, 64> scatter_{};
  // Answer bytes a READ's scatter read took past an error answer, when
  // requests had left behind it: the next answers' start.
  std::vector<std::byte> carry_;
  // Reads answers (unprobed_read.hpp): without Asio's probe on the
  // connection whose epoch quiet_connection_ holds, which the idle check
  // found quiet (or skipped, below) earlier in the running pump() (0
  // otherwise).
  unprobed_read answers_read_;
  std::uint64_t quiet_connection_ = 0;
  // The connection whose epoch drained_connection_ holds needs no idle
  // check before READs: the answer read this handler ran left nothing on
  // it, not even a FIN, and the reactor has not reported it since (0
  // otherwise). Set for the rest of the handler, the work its callbacks
  // hand the lane included.
  std::uint64_t drained_connection_ = 0;
  // No async_write was outstanding on the socket since the answer read
  // started: that read is then the one operation the reactor completes
  // when it reports the socket, at once (unprobed_read.hpp).
  bool answer_read_alone_ = false;
  receive_watermark watermark_;
};

}  // namespace faultlane::detail
