// tap: what a relay saw, decoded.
//
// A tap records connection events (open/close with both addresses and the
// relay's rail), every decoded frame (direction, opcode, request id,
// registration, offset, length, status, byte offset in its stream), every
// fault that fired and every write the relay made, in order, to memory and optionally to a JSONL
// file (docs/taps.md). Tests query it: "all READ requests per rail" is how a
// test proves which bytes crossed which rail.
#pragma once

#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/relays/fault.hpp"

namespace faultlane::relays {

// The kinds of tap record, each with the name the JSONL and the run
// reports write: one row each (connect_failed: the upstream refused or
// could not be reached, so neither open nor close follows).
#define FAULTLANE_TAP_RECORD_KINDS(X) \
  X(open)                             \
  X(close)                            \
  X(frame)                            \
  X(fault)                            \
  X(decode_error)                     \
  X(write)                            \
  X(connect_failed)

enum class record_kind : std::uint8_t {
#define FAULTLANE_TAP_KIND(name) name,
  FAULTLANE_TAP_RECORD_KINDS(FAULTLANE_TAP_KIND)
#undef FAULTLANE_TAP_KIND
};

// The name a record of kind k has in the JSONL ("decode_error", ...).
std::string_view record_kind_name(record_kind k) noexcept;

struct tap_record {
  record_kind kind = record_kind::frame;
  std::uint64_t time_us = 0;  // since the relay started
  std::string relay;
  std::size_t rail = 0;
  std::uint64_t connection = 0;
  // open/close
  std::string client_address;  // the peer that connected to the relay
  std::string upstream_local;  // the relay's source address towards upstream
  std::string upstream_remote;
  // close: bytes read from the client (up) and from the upstream (down),
  // how long the connection lived, and why it closed; connect_failed: the
  // error in `reason`
  std::uint64_t bytes_up = 0;
  std::uint64_t bytes_down = 0;
  std::uint64_t duration_us = 0;
  std::string reason;
  // frame/fault/decode_error
  direction dir = direction::up;
  std::uint64_t frame_index = 0;
  std::uint64_t stream_offset = 0;
  bool request = true;
  wire::opcode op = wire::opcode::read;
  std::uint64_t request_id = 0;
  std::uint64_t registration_id = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t length = 0;  // request length, committed bytes, or bytes written
  std::uint16_t status = 0;
  std::string fault;  // fault name, or the decode error
  // write: when the faults let these bytes leave (time_us is when they
  // did; later when the relay fell behind), in microseconds since start
  std::uint64_t due_us = 0;
};

std::string to_json(const tap_record& r);

class tap {
 public:
  tap() = default;
  // Also writes every record to `jsonl_path` (one JSON object per line),
  // after what the file held if `append`, else into an emptied file.
  bool open_file(const std::string& jsonl_path, bool append = false);

  void record(tap_record r);
  std::vector<tap_record> records() const;
  // The records, moved out: the tap holds none after (as after clear()).
  // For a reader done with the relay, without a copy of every record.
  std::vector<tap_record> take_records();
  std::vector<tap_record> frames(const std::function<bool(const tap_record&)>& keep = {}) const;
  // READ request frames (direction up) grouped by rail.
  std::map<std::size_t, std::vector<tap_record>> read_requests_by_rail() const;
  std::size_t count(record_kind kind) const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<tap_record> records_;
  std::ofstream file_;
};

}  // namespace faultlane::relays
