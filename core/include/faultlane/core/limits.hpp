// Every bound in the core, named with its unit last, declared once.
//
// FAULTLANE_LIMITS is the one list: it generates the constants below, the
// table of limits in docs/configuration.md (a test checks the two agree),
// and the bounds that transport configuration, faultlane-bench's flags and
// the relays validate against. A value outside a bound is a configuration
// error, never silently clamped. Related bounds are tied by static_assert
// after the list, each with its reason.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace faultlane::limits {

// X(type, name, value, meaning)
#define FAULTLANE_LIMITS(X)                                                                     \
  X(std::size_t, worker_count_min, 1, "io threads (shards) per transport, fewest")              \
  X(std::size_t, worker_count_max, 32, "io threads (shards) per transport, most")               \
  X(std::uint32_t, busy_poll_us_max, 10'000, "how long an io thread may poll before blocking")  \
  X(std::size_t, lane_count_max, 64, "lanes per peer, across all rails")                        \
  X(std::size_t, rail_count_max, 16, "rails (one listener and source address each)")            \
  X(std::size_t, lane_inflight_max, 256, "exchanges in flight on one lane, most")               \
  X(std::size_t, lane_inflight_default, 8, "lane_inflight_max by default")                      \
  X(std::uint64_t, slice_step_bytes, 1ull << 20,                                                \
    "a READ is sliced when every rail gets at least this much")                                 \
  X(std::uint64_t, transfer_bytes_max, 1ull << 34, "one request's payload, most")               \
  X(std::uint64_t, transfer_bytes_default, 1ull << 30, "max_transfer_bytes by default")         \
  X(std::uint64_t, outstanding_tasks_max, 1ull << 32, "max_outstanding_tasks, most")            \
  X(std::uint64_t, outstanding_tasks_default, 4096, "max_outstanding_tasks by default")         \
  X(std::uint64_t, outstanding_bytes_max, 1ull << 50, "max_outstanding_bytes, most")            \
  X(std::uint64_t, outstanding_bytes_default, 1ull << 32, "max_outstanding_bytes by default")   \
  X(std::size_t, connections_max, 65536, "max_connections (live target sessions), most")        \
  X(std::uint64_t, registration_sequence_max, (1ull << 63) - 1,                                 \
    "registrations per incarnation before the sequence is exhausted")                           \
  X(std::size_t, io_chunk_bytes_max, std::size_t{512} << 10,                                    \
    "bytes moved per socket step: a deadline moves at least this often, and a step's bytes "    \
    "are still in the caches when the peer copies them out")                                    \
  X(std::size_t, request_read_ahead_bytes, std::size_t{12} << 10,                               \
    "request bytes a target session reads at once: a WRITE of a 4 or 8 KiB page is read in "    \
    "one receive, its header with it")                                                          \
  X(std::uint32_t, accept_backoff_ms_min, 1, "first wait after an accept error")                \
  X(std::uint32_t, accept_backoff_ms_max, 100, "longest wait after accept errors")              \
  X(std::uint32_t, timeout_ms_max, 3'600'000, "any timeout or deadline, most")                  \
  X(std::uint32_t, connect_timeout_ms_default, 2000, "connect_timeout_ms by default")           \
  X(std::uint32_t, progress_timeout_ms_default, 30000, "progress_timeout_ms by default")        \
  X(std::uint32_t, idle_connection_timeout_ms_default, 60000,                                   \
    "idle_connection_timeout_ms by default")                                                    \
  X(std::uint32_t, reconnect_cooldown_ms_default, 1000, "reconnect_cooldown_ms by default")     \
  X(std::uint32_t, shutdown_timeout_ms_default, 10000, "shutdown_timeout_ms by default")        \
  X(std::size_t, registration_name_bytes_max, 4096, "a registration's name, most")              \
  X(std::size_t, registration_page_max, 1024,                                                   \
    "registrations a scan (describe, list_registrations) copies per hold of the registry's "    \
    "lock: the longest a register or unregister waits on a scan")                               \
  X(std::int64_t, rpc_worker_count_max, 256, "control-plane worker threads, most")              \
  X(std::size_t, rpc_queue_max_default, 1024, "rpc_queue_max by default")                       \
  X(std::size_t, rpc_queue_max_max, 1u << 20, "control-plane calls waiting for a worker, most") \
  X(std::uint32_t, rpc_request_bytes_max, 64 * 1024, "one control-plane request, most")         \
  X(std::uint32_t, rpc_response_bytes_max, 64u << 20, "one control-plane answer, most")

#define FAULTLANE_LIMIT_CONSTANT(type, name, value, meaning) inline constexpr type name = value;
FAULTLANE_LIMITS(FAULTLANE_LIMIT_CONSTANT)
#undef FAULTLANE_LIMIT_CONSTANT

static_assert(worker_count_min >= 1 && worker_count_min <= worker_count_max);
static_assert(rail_count_max <= lane_count_max, "each rail needs a lane");
static_assert(transfer_bytes_default <= transfer_bytes_max);
static_assert(slice_step_bytes <= transfer_bytes_default,
              "a sliceable READ must fit in one transfer");
static_assert(transfer_bytes_max < (1ull << 63) / rail_count_max,
              "offset arithmetic over every slice stays far from overflow");
static_assert(outstanding_tasks_default <= outstanding_tasks_max);
static_assert(outstanding_bytes_default <= outstanding_bytes_max);
static_assert(transfer_bytes_max <= outstanding_bytes_max,
              "one request of the largest size can be admitted");
static_assert(accept_backoff_ms_min > 0, "doubling from zero never backs off");
static_assert(accept_backoff_ms_min <= accept_backoff_ms_max);
static_assert(connect_timeout_ms_default <= timeout_ms_max &&
              progress_timeout_ms_default <= timeout_ms_max &&
              idle_connection_timeout_ms_default <= timeout_ms_max &&
              reconnect_cooldown_ms_default <= timeout_ms_max &&
              shutdown_timeout_ms_default <= timeout_ms_max);

// The list as data: for the docs table and for tests.
struct limit_info {
  std::string_view name;
  std::uint64_t value;
  std::string_view meaning;
};

#define FAULTLANE_LIMIT_INFO(type, name, value, meaning) \
  limit_info{#name, static_cast<std::uint64_t>(name), meaning},
inline constexpr std::array all{FAULTLANE_LIMITS(FAULTLANE_LIMIT_INFO)};
#undef FAULTLANE_LIMIT_INFO

}  // namespace faultlane::limits
