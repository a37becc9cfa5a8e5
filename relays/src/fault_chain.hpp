// fault_chain: the faults of one direction of a relayed connection, applied
// to the bytes the pipe read.
//
// Bytes are cut into pieces (frames, when decoding), each piece goes through
// the chain in order, and what survives goes to the send queue with the time
// it may leave: latency, slicer and bandwidth only change those times, so
// reading goes on while data waits. Positional faults (stall, blackhole,
// reset, truncate, half_close) cut a piece where they fire and change what
// becomes of the rest of the stream. The chain does no I/O: the pipe reads,
// the send queue writes. Runs on the relay's io thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "frame_stream.hpp"
#include "relay_internal.hpp"
#include "send_queue.hpp"

namespace faultlane::relays::detail {

class connection;

class fault_chain {
 public:
  fault_chain(connection& owner, direction dir, send_queue& out);
  ~fault_chain();
  fault_chain(const fault_chain&) = delete;
  fault_chain& operator=(const fault_chain&) = delete;

  // Takes up the relay's fault list if it changed since the last look.
  void refresh();
  // No fault and no tap applies and bytes pass: the pipe may move them
  // without the chain (splice, or one write of the read buffer).
  bool transparent() const;
  // Bytes read from the source, in order.
  void process(std::byte* data, std::size_t n);
  // Bytes the pipe moved itself (transparent): the chain follows the stream.
  void passed_by(std::byte* data, std::size_t n);
  void spliced(std::size_t n) { note_received(n); }
  // The source sent FIN: part of a header held for decoding goes on (and
  // counts as a decode error) before it.
  void end_of_stream();
  // Bytes read from the source so far.
  std::uint64_t received() const noexcept { return received_; }
  // If the stall that holds the stream was removed, sends what it held and
  // passes bytes again; true if so.
  bool release_if_unstalled();
  // The source sent FIN: when the FIN may leave (slow_close delays it).
  clock_type::time_point close_time();

  bool holding() const noexcept { return mode_ == mode::holding; }
  bool dropping() const noexcept { return mode_ == mode::dropping; }

 private:
  enum class mode : std::uint8_t {
    passing,   // pieces go through the faults to the send queue
    holding,   // a stall fired: pieces are kept until it is removed
    dropping,  // blackhole, reset, truncate or half_close fired: pieces are dropped
  };
  struct fault_state {
    fault_ptr fault;
    bool applies = false;  // direction, connection, rail and probability matched
    bool done = false;     // a positional fault already fired here
    bool counted = false;  // a per-connection fault was counted here
    bool holds_slot = false;
  };
  // corrupt field=payload faults that fired on the frame whose payload is
  // passing: which byte of that payload, and the bits to flip.
  struct payload_flip {
    std::uint64_t byte = 0;
    std::byte mask{};
  };
  struct payload_flips {
    std::uint64_t frame = 0;
    std::vector<payload_flip> flips;
  };

  // Direction, connection, rail and (for faults decided per connection)
  // the probability draw.
  bool applies_here(const installed_fault& f) const;
  void note_decode_failure();
  void handle_piece(piece& p);
  void record_frame(const piece& p);
  void apply_frame_faults(piece& p);
  void flip_payload(piece& p);
  void cut_at_positions(piece& p);
  std::optional<std::uint64_t> position_of(const fault_state& s, const piece& p) const;
  void fire_positional(fault_state& s, const piece& p, std::uint64_t at);
  void forward(const std::byte* data, std::size_t n);
  void start_blackhole(const fault_spec& spec, clock_type::time_point now);
  void fire_timed();
  void note_received(std::size_t n) {
    received_ += n;
    relay_.received[static_cast<std::size_t>(dir_)].fetch_add(n, std::memory_order_relaxed);
    relay_.polling.event();
  }
  void keep(const std::byte* data, std::size_t n);
  bool try_fire(fault_state& s, std::uint64_t frame);
  void count_once(fault_state& s);

  connection& owner_;
  relay_state& relay_;
  const direction dir_;
  send_queue& out_;
  std::optional<frame_stream> decoder_;
  std::vector<fault_state> faults_;
  std::uint64_t generation_ = 0;
  std::uint64_t received_ = 0;  // source stream offset
  mode mode_ = mode::passing;
  clock_type::time_point bandwidth_free_{};
  std::mt19937_64 jitter_;
  std::vector<std::byte> held_back_;  // bytes behind a stall
  std::optional<payload_flips> payload_flips_;
};

}  // namespace faultlane::relays::detail
