// Faults a relay injects, and the triggers that decide when.
//
// A fault acts on one direction of a relayed connection: `up` is client to
// server (requests), `down` is server to client (responses). Triggers are
// logical (bytes, frames, opcodes, statuses, connection and rail indexes),
// so a schedule replays the same way however slowly the program runs, and a
// probability is drawn from the relay's seed keyed by (connection, frame),
// so one seed always yields one schedule. docs/faults.md is the reference.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/status.hpp"

namespace YAML {
class Node;
}

namespace faultlane::relays {

enum class direction : std::uint8_t { up, down };

enum class fault_kind : std::uint8_t {
  latency,     // delay each chunk by ms +- jitter_ms
  bandwidth,   // cap the direction at bytes_per_s
  slicer,      // cut chunks into writes of size +- variation, delay_us apart
  truncate,    // forward `bytes` bytes of the direction, then close (FIN)
  reset,       // abort the connection with RST at the trigger (or ms after it)
  stall,       // stop forwarding at the trigger; keep the sockets open
  blackhole,   // swallow everything; keep the sockets open (with ms: close them
               // ms after it applies, as Toxiproxy's timeout toxic does)
  refuse,      // refuse new connections (accepted, then reset at once)
  drop_frame,  // swallow a decoded frame (header and payload)
  corrupt,     // flip bits in a named header field or a payload byte
  half_close,  // FIN this direction at the trigger; the other stays open
  slow_close,  // hold a close (FIN from the source) for ms before passing it on
};

std::string_view to_string(fault_kind k) noexcept;
std::string_view to_string(direction d) noexcept;

struct trigger {
  std::optional<std::uint64_t> after_bytes;  // stream position in this direction
  std::optional<std::uint64_t> frame;        // frame index in this direction, from 0
  std::optional<std::uint64_t> header_byte;  // with `frame`: bytes of its header let through
  std::optional<wire::opcode> opcode;        // a response matches its request's opcode
  std::optional<std::uint16_t> status;       // response status
  std::optional<std::uint64_t> request_id;
  std::optional<std::uint64_t> connection;  // accepted connection index, from 0
  std::optional<std::size_t> rail;          // the relay's rail
  std::optional<std::uint64_t> count;       // fire at most this many times (relay-wide)
  double probability = 1.0;

  // Conditions that need a decoded frame header.
  bool needs_frame() const noexcept { return frame || opcode || status || request_id; }
};

struct fault_spec {
  fault_kind kind = fault_kind::latency;
  direction dir = direction::up;
  trigger when;
  std::string name;  // counter name; defaults to "<kind>.<dir>"

  std::uint32_t ms = 0;            // latency, slow_close; reset: delay; blackhole: close after
  std::uint32_t jitter_ms = 0;     // latency
  std::uint64_t bytes_per_s = 0;   // bandwidth
  std::size_t size = 0;            // slicer: average write size
  std::size_t variation = 0;       // slicer
  std::uint32_t delay_us = 0;      // slicer
  std::uint64_t bytes = 0;         // truncate
  std::string field;               // corrupt: a header field name, or "payload"
  std::uint64_t payload_byte = 0;  // corrupt field=payload: index, to corrupt_payload_byte_max
  std::uint8_t mask = 0x01;        // corrupt: bits flipped (parsed as 0x06 or 6)

  // Faults whose effect lasts (a held stall, a delayed chunk) take a slot in
  // the relay's active-fault cap while it lasts.
  bool frame_aware() const noexcept {
    return kind == fault_kind::drop_frame || kind == fault_kind::corrupt || when.needs_frame();
  }
};

// "latency dir=down ms=5 jitter_ms=1", "reset dir=down after_bytes=1000",
// "stall dir=up frame=3 header_byte=7", "drop_frame dir=down opcode=write".
result<fault_spec> parse_fault(std::string_view text);
// The same keys as a YAML mapping: {type: latency, dir: down, ms: 5}.
result<fault_spec> parse_fault(const YAML::Node& node);
// The checks parse_fault makes on the values (ranges, required keys, known
// fields), for a spec built in code. relay::start applies them too.
result<void> validate(const fault_spec& f);
std::string describe(const fault_spec& f);

}  // namespace faultlane::relays
