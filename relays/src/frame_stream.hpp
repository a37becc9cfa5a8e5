// frame_stream: follows faultlane frames through one direction of a relayed
// connection, across any read boundaries.
//
// It cuts the byte stream into pieces: a header (held back until all of it
// arrived, then handed over whole and decoded with the core's codec), a
// frame's payload (skipped by length: a WRITE's body upstream, an OK READ
// response's payload downstream), or raw bytes once the stream stops
// making sense. Downstream, a response is paired with the oldest request
// still waiting for one, which says whether a payload follows.
//
// Decoding never holds bytes that cannot be a header: the magic and the
// version are checked byte by byte as they arrive, so a stream that is not
// faultlane (a redis or HTTP request of 14 bytes) fails at its first byte
// and passes through raw; and a stream that ends inside a header hands the
// bytes it held over before its FIN (finish()).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/relays/fault.hpp"

namespace faultlane::relays::detail {

struct frame_info {
  direction dir = direction::up;
  std::uint64_t index = 0;               // in this direction, from 0
  std::uint64_t stream_offset = 0;       // where its header starts
  wire::request_frame request;           // when dir == up
  wire::response_frame response;         // when dir == down
  wire::opcode op = wire::opcode::read;  // a response's: its request's
  std::uint64_t payload_bytes = 0;
  bool dropped = false;  // swallowed by drop_frame: expects no response
};

// Requests waiting for their response, in order, shared by both directions.
struct pairing {
  std::deque<std::shared_ptr<frame_info>> waiting;
};

struct piece {
  enum class part : std::uint8_t { header, payload, raw };
  part what = part::raw;
  std::uint64_t stream_offset = 0;
  std::byte* data = nullptr;
  std::size_t size = 0;
  std::shared_ptr<frame_info> frame;  // null for raw
  std::uint64_t offset_in_payload = 0;
  // A header (or held raw bytes) whose first bytes already left with a
  // pass-through write: they are not in [data, data + size), and a frame
  // fault cannot change them. frame->stream_offset is the header's start.
  std::size_t sent_before = 0;
};

class frame_stream {
 public:
  frame_stream(direction d, pairing& pairs) : dir_(d), pairs_(pairs) {}

  // Calls sink(piece&) for each piece of [data, data + n), in order. A
  // header piece points into internal storage valid during the call.
  template <typename Sink>
  void feed(std::byte* data, std::size_t n, Sink&& sink);
  // The bytes held so far (part of a header) have left by another way (the
  // pipe wrote its read buffer out whole): they will not be handed over
  // again.
  void held_were_sent() noexcept { held_sent_ = held_size_; }
  // Part of a header waits for more bytes, and not all of it has left.
  bool holding_unsent() const noexcept { return held_size_ > held_sent_; }
  // The source ended: bytes held inside a header go on as raw, and the
  // stream is failed ("ended N bytes into a header").
  template <typename Sink>
  void finish(Sink&& sink);

  bool failed() const noexcept { return failed_; }
  const std::string& failure() const noexcept { return failure_; }

 private:
  std::size_t header_size() const {
    return dir_ == direction::up ? wire::request_frame_bytes : wire::response_frame_bytes;
  }
  std::shared_ptr<frame_info> decode_header();
  // Whether the bytes held so far can still begin a header; if not, fails
  // the stream (bad magic or version).
  bool held_can_begin_header();
  // Hands the held bytes over as one raw piece (less what already left).
  template <typename Sink>
  void release_held(Sink& sink);

  direction dir_;
  pairing& pairs_;
  std::array<std::byte, wire::request_frame_bytes> held_{};
  std::size_t held_size_ = 0;
  std::size_t held_sent_ = 0;  // of held_, already written out (held_were_sent)
  std::uint64_t offset_ = 0;   // stream bytes consumed
  std::uint64_t next_index_ = 0;
  std::shared_ptr<frame_info> payload_of_;
  std::uint64_t payload_left_ = 0;
  bool failed_ = false;
  std::string failure_;
};

template <typename Sink>
void frame_stream::feed(std::byte* data, std::size_t n, Sink&& sink) {
  std::size_t at = 0;
  while (at < n) {
    if (failed_) {
      piece p{piece::part::raw, offset_, data + at, n - at, nullptr, 0};
      offset_ += n - at;
      sink(p);
      return;
    }
    if (payload_left_ > 0) {
      auto take = static_cast<std::size_t>(std::min<std::uint64_t>(payload_left_, n - at));
      piece p{piece::part::payload,
              offset_,
              data + at,
              take,
              payload_of_,
              payload_of_->payload_bytes - payload_left_};
      payload_left_ -= take;
      offset_ += take;
      at += take;
      sink(p);
      continue;
    }
    auto take = std::min(header_size() - held_size_, n - at);
    std::copy_n(data + at, take, held_.data() + held_size_);
    held_size_ += take;
    at += take;
    if (!held_can_begin_header()) {
      release_held(sink);
      continue;
    }
    if (held_size_ < header_size()) continue;  // the rest comes later
    auto frame = decode_header();
    if (!frame) {
      release_held(sink);
      continue;
    }
    const std::size_t sent = held_sent_;
    piece p{piece::part::header,
            offset_ + sent,
            held_.data() + sent,
            header_size() - sent,
            frame,
            0,
            sent};
    offset_ += held_size_;
    held_size_ = held_sent_ = 0;
    sink(p);
    payload_of_ = frame;
    payload_left_ = frame->payload_bytes;
  }
}

template <typename Sink>
void frame_stream::release_held(Sink& sink) {
  FL_ASSERT(failed_);
  const std::size_t sent = held_sent_;
  piece p{
      piece::part::raw, offset_ + sent, held_.data() + sent, held_size_ - sent, nullptr, 0, sent};
  offset_ += held_size_;
  held_size_ = held_sent_ = 0;
  if (p.size > 0) sink(p);
}

template <typename Sink>
void frame_stream::finish(Sink&& sink) {
  if (failed_ || held_size_ == 0) return;
  failed_ = true;
  failure_ =
      fmt::format("{} {} at byte {}: the stream ended {} bytes into its header",
                  dir_ == direction::up ? "request" : "response", next_index_, offset_, held_size_);
  release_held(sink);
}

}  // namespace faultlane::relays::detail
