// Every bound in the relays, named with its unit last. Flags, YAML and
// fault specs are validated against these; a value outside them is an
// error, never silently clamped. The core's bounds are in
// faultlane/core/limits.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "faultlane/core/limits.hpp"

namespace faultlane::relays {

// Upstream connect failures come in bursts (the upstream is down): the
// first is written to stderr, then at most one message per gap, with the
// number that went unwritten. Every one is counted and tapped.
inline constexpr std::uint32_t connect_failure_log_gap_ms = 10'000;

// One read of one direction (relay_config::buffer_bytes) at least this.
inline constexpr std::size_t buffer_bytes_min = 4096;

// relay_config::busy_poll_us at most this (the core's bound for its io threads).
inline constexpr std::uint32_t busy_poll_us_max = limits::busy_poll_us_max;

// A direction stops reading while more than this waits in its send queue
// (held back by latency, slicer or bandwidth), and reads again below it.
inline constexpr std::size_t queued_bytes_max = 8u << 20;
static_assert(buffer_bytes_min <= queued_bytes_max, "one read must fit before reading pauses");

// corrupt field=payload: the last byte of the longest payload the relay's
// frame decoder follows (it accepts any length the core's codec does).
inline constexpr std::uint64_t corrupt_payload_byte_max = limits::transfer_bytes_max - 1;

}  // namespace faultlane::relays
