// transport_stats: what a transport counts, declared once.
//
// FAULTLANE_TRANSPORT_COUNTERS is the one list of counters. It generates the
// atomics the core bumps (core/src/runtime/runtime.hpp), the fields of the
// transport_stats snapshot, the table of names and meanings that
// docs/architecture.md shows (a test checks the two agree) and the test
// helper that compares every counter, zeros included.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "faultlane/core/status.hpp"

namespace faultlane {

// X(name, meaning). Gauges (`*_now`, `*_live`, `*_connected`, `*_connecting`)
// go up and down; every other counter only goes up.
#define FAULTLANE_TRANSPORT_COUNTERS(X)                                                         \
  X(tasks_submitted, "tasks accepted by submit()")                                              \
  X(tasks_completed, "tasks that reached their terminal status")                                \
  X(bytes_completed, "bytes moved by tasks that ended ok")                                      \
  X(lanes_connected, "gauge: lanes with an open connection")                                    \
  X(lanes_connecting, "gauge: lanes with a connect in flight")                                  \
  X(lanes_idle_closed, "lanes closed by the idle timeout")                                      \
  X(lanes_found_closed, "idle lanes whose peer had closed or reset before reuse")               \
  X(lanes_closed_unused,                                                                        \
    "connections closed as they came up: their work was cancelled or expired meanwhile")        \
  X(idle_checks_skipped,                                                                        \
    "idle lanes reused with no poll: the answer just read left nothing on the socket")          \
  X(connects, "successful lane connects")                                                       \
  X(connect_failures, "lane connects that failed (a connect we cancelled is not one)")          \
  X(connects_cancelled, "lane connects cancelled by drop_connections() or shutdown")            \
  X(reconnects, "successful connects of a lane that had been connected before")                 \
  X(requests_pipelined, "requests sent while an earlier exchange on their lane was unanswered") \
  X(request_sends,                                                                              \
    "socket writes of requests (one write carries every request a lane has room for)")          \
  X(handoffs_inline,                                                                            \
    "hand-offs a lane took from its own completion callbacks, with no event-loop turn")         \
  X(sessions_live, "gauge: accepted target-side sessions still open")                           \
  X(sessions_accepted, "connections accepted by a listener")                                    \
  X(sessions_rejected_limit, "connections refused over max_connections or while closing")       \
  X(sessions_timed_out, "target-side sessions closed by the progress deadline")                 \
  X(requests_read_unprobed,                                                                     \
    "target-side request reads with no probe: the read before left nothing, and answers left")  \
  X(accept_errors, "listener accept errors (EMFILE, ENFILE, ENOBUFS...), each then backed off") \
  X(stale_handlers_dropped, "handlers that arrived for an older connection or deadline")        \
  X(stale_refresh_attempts, "descriptor refreshes after a stale_registration answer")           \
  X(stale_refreshes, "refreshes that found the registration under a new id and retried")        \
  X(timeouts, "connect, progress and task deadlines that passed (WRITEs included)")             \
  X(deadline_checks_with_queued_bytes,                                                          \
    "progress deadlines extended because bytes waited in the socket below the watermark")       \
  X(server_reads, "READs the target served")                                                    \
  X(server_writes, "WRITEs the target executed and acknowledged")                               \
  X(server_rejects, "requests the target rejected (bad header, id, range, permission)")         \
  X(handler_exceptions, "exceptions caught by the handler guard (each marks the runtime failed)")

struct transport_stats {
#define FAULTLANE_STATS_FIELD(name, meaning) std::uint64_t name = 0;
  FAULTLANE_TRANSPORT_COUNTERS(FAULTLANE_STATS_FIELD)
#undef FAULTLANE_STATS_FIELD
  // From admission and the registry, not from the counter list.
  std::uint64_t tasks_admitted_now = 0;  // outstanding in admission
  std::uint64_t bytes_admitted_now = 0;
  std::uint64_t rejected_busy = 0;
  std::uint64_t leases_live = 0;
  std::uint64_t failures_by_status[status_count] = {};  // terminal statuses, ok included
  bool runtime_failed = false;
};

struct counter_info {
  std::string_view name;
  std::string_view meaning;
  std::uint64_t transport_stats::*field;
};

#define FAULTLANE_STATS_INFO(name, meaning) counter_info{#name, meaning, &transport_stats::name},
inline constexpr std::array transport_counters{FAULTLANE_TRANSPORT_COUNTERS(FAULTLANE_STATS_INFO)};
#undef FAULTLANE_STATS_INFO

}  // namespace faultlane
