// Every bound in the core, named with its unit last, with the reasons that
// tie related bounds together. Configuration is validated against these; a
// value outside them is a configuration error, never silently clamped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faultlane::limits {

// io pool: one event-loop thread per shard.
inline constexpr std::size_t worker_count_min = 1;
inline constexpr std::size_t worker_count_max = 32;

// io threads may poll this long before blocking (io_pool::create).
inline constexpr std::uint32_t busy_poll_us_max = 10'000;

// Persistent lanes per peer (the total budget across rails).
inline constexpr std::size_t lane_count_max = 64;
// Rails never outnumber lanes: every rail needs at least one lane.
inline constexpr std::size_t rail_count_max = 16;
static_assert(rail_count_max <= lane_count_max, "each rail needs a lane");

// READ slicing: a READ is split only when every rail gets at least one step.
inline constexpr std::uint64_t slice_step_bytes = 1ull << 20;

// One transfer (one frame's payload). 16 GiB is far above any sane request
// and far below where offset arithmetic could overflow.
inline constexpr std::uint64_t transfer_bytes_max = 1ull << 34;
inline constexpr std::uint64_t transfer_bytes_default = 1ull << 30;
static_assert(transfer_bytes_default <= transfer_bytes_max);
static_assert(slice_step_bytes <= transfer_bytes_default,
              "a sliceable READ must fit in one transfer");

// Admission defaults.
inline constexpr std::uint64_t outstanding_tasks_default = 4096;
inline constexpr std::uint64_t outstanding_bytes_default = 1ull << 32;

// Registration sequence: the namespace is XORed with a sequence that never
// reaches the top bit, so exhaustion is a clear error long before wrapping.
inline constexpr std::uint64_t registration_sequence_max = (1ull << 63) - 1;

// Socket I/O moves at most this much per read_some/write_some step, so a
// large transfer moves its progress deadline at least this often.
inline constexpr std::size_t io_chunk_bytes_max = std::size_t{4} << 20;

// Timeouts.
inline constexpr std::uint32_t connect_timeout_ms_default = 2000;
inline constexpr std::uint32_t progress_timeout_ms_default = 30000;
inline constexpr std::uint32_t idle_connection_timeout_ms_default = 60000;
inline constexpr std::uint32_t timeout_ms_max = 3'600'000;

// A listener whose accept fails for want of descriptors or buffers waits
// before it tries again, doubling from the minimum to the maximum.
inline constexpr std::uint32_t accept_backoff_ms_min = 1;
inline constexpr std::uint32_t accept_backoff_ms_max = 100;
static_assert(accept_backoff_ms_min > 0, "doubling from zero never backs off");
static_assert(accept_backoff_ms_min <= accept_backoff_ms_max);

}  // namespace faultlane::limits
