// Code probes: named rare branches and states, "this happened at least
// once" (docs/dsim.md, "Code probes"). A probe sits on the line where the
// state is certain:
//
//   if (code == status::stale_registration && can_refresh) {
//     FAULTLANE_PROBE(stale_refresh_requested);
//     ...
//
// Each is one row of FAULTLANE_PROBES: X(name, "what it means", scenario),
// where scenario is the library file (sim/scenarios/SCENARIO.yaml) expected
// to reach it. The name is an enumerator of probe_id, so a name the table
// does not declare does not compile, in every build.
//
// Where failpoints are compiled in (FAULTLANE_FAILPOINTS_ENABLED: the
// debug, asan, tsan and dsim presets) a probe is one relaxed atomic
// increment of its own counter: no lock, no allocation. The dsim build
// (FAULTLANE_PROBES_PER_THREAD) keeps one set of counters per thread: a
// world runs on one thread, so a run's before-and-after snapshot is its own
// even with other runs on other threads. In the release preset the macro
// is a cast of a constant to void: no code, no data, no symbol.
//
// The world (dsim/) stands below the core, so the probes live here, in
// the base library every layer stands on.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

// Every probe, once: X(name, "meaning", scenario). Rows are grouped by the
// library they sit in (core initiator, core target and memory, control,
// relays, the world); docs/dsim.md's probe table is made from this list (a
// test holds the page to it).
#define FAULTLANE_PROBES(X)                                                                        \
  /* core: the initiator's lanes and exchanges */                                                  \
  X(lane_handler_threw, "a lane's handler threw; its work ends runtime_failed", throwing_handler)  \
  X(op_reached_closed_lane, "work reached a lane that shutdown had closed",                        \
    shutdown_mid_sliced_submit)                                                                    \
  X(slice_cancelled_before_queued, "a slice reached its lane after a sibling failed",              \
    failed_slice_cancels_siblings)                                                                 \
  X(queued_op_missed_start_deadline, "queued work passed its start deadline and never left",       \
    stalled_peer_healthy_peer)                                                                     \
  X(idle_lane_found_closed, "an idle lane's peer had closed it: reconnect before sending",         \
    half_closed_idle_lane)                                                                         \
  X(inflight_slice_cut_for_sibling, "a slice in flight was cut because a sibling failed",          \
    failed_slice_cancels_siblings)                                                                 \
  X(progress_deadline_met_queued_bytes,                                                            \
    "a progress deadline found payload bytes queued below the watermark", swarm)                   \
  X(progress_timeout_broke_lane, "no progress within progress_timeout_ms: the lane broke",         \
    stalled_peer_healthy_peer)                                                                     \
  X(shutdown_with_exchanges_in_flight, "shutdown reached a lane with exchanges in flight",         \
    shutdown_under_load_stalled_peer)                                                              \
  X(write_cut_when_pool_stopped, "a WRITE still in flight when the io threads were gone",          \
    half_header_shutdown)                                                                          \
  X(answer_bytes_without_request, "answer bytes arrived with nothing in flight", corrupted_header) \
  X(connection_closed_unused, "a connection's work was cancelled before it left: closed",          \
    failed_slice_cancels_siblings)                                                                 \
  X(cancelled_slice_skipped_at_send, "a queued slice of a failed task was skipped at send",        \
    failed_slice_cancels_siblings)                                                                 \
  X(exchanges_cut_behind_head, "a broken connection cut exchanges behind the oldest",              \
    shutdown_under_load_stalled_peer)                                                              \
  X(ambiguous_write, "a WRITE failed after bytes of it left: ambiguous, never replayed",           \
    reset_in_write_body)                                                                           \
  X(stale_refresh_requested, "stale_registration answered: the id is refreshed by name",           \
    stale_ids_after_restart)                                                                       \
  X(siblings_cancelled, "a failed slice cancelled its task's sibling slices",                      \
    failed_slice_cancels_siblings)                                                                 \
  X(answer_from_carried_bytes, "an answer began in bytes carried past a refusal",                  \
    stale_ids_after_restart)                                                                       \
  X(answers_carried_past_refusal, "answers read with a refusal were carried to their owners",      \
    stale_ids_after_restart)                                                                       \
  X(answer_read_cut_in_header, "a read of answers ended inside an answer's header",                \
    torn_writes_under_load)                                                                        \
  X(header_rejection_alone, "a header rejection with one exchange in flight: not executed",        \
    corrupted_header)                                                                              \
  X(header_rejection_with_others, "a header rejection with several in flight: outcome unknown",    \
    swarm)                                                                                         \
  X(read_payload_cut, "a READ's payload stopped before its end", truncated_read_payload)           \
  X(request_send_went_async, "a gather write of requests did not leave at once",                   \
    small_writes_slow_link)                                                                        \
  X(request_send_failed, "sending requests failed part way", reset_in_write_body)                  \
  /* core: connects and the connect gate */                                                        \
  X(connect_cancelled, "a connect was cancelled by a drop or a shutdown",                          \
    shutdown_under_load_stalled_peer)                                                              \
  X(connect_failed, "a connect to the peer failed", refusing_target)                               \
  X(connect_ended_by_throw, "a connect's handler threw", throwing_connect)                         \
  X(connect_refused_in_cooldown, "the connect gate refused: the peer's cooldown runs",             \
    refusing_target)                                                                               \
  X(connect_waits_for_probe, "a lane waits while another lane probes a failed peer",               \
    refusing_target)                                                                               \
  X(connect_probes_failed_peer, "one lane probes a peer whose last connect failed",                \
    refusing_target)                                                                               \
  X(stale_id_refreshed_by_name, "a stale id was replaced by the new id of its name",               \
    stale_ids_after_restart)                                                                       \
  X(refresh_found_no_new_id, "a refresh found no new id for the name: stays stale",                \
    unregister_during_reads)                                                                       \
  /* core: submit, admission, shutdown, the registry */                                            \
  X(submit_after_runtime_failed, "a submit after the runtime failed", throwing_handler)            \
  X(submit_while_shutting_down, "a submit while the transport shuts down",                         \
    shutdown_under_load_stalled_peer)                                                              \
  X(admission_answered_busy, "admission answered busy: over a bound", admission_busy_recovery)     \
  X(shutdown_drain_timed_out, "shutdown's drain ran out of time with work admitted",               \
    shutdown_under_load_stalled_peer)                                                              \
  X(shutdown_waits_for_sessions, "shutdown waited for target sessions to end",                     \
    stale_ids_after_restart)                                                                       \
  X(unregister_waits_for_leases, "an unregister waited for leases on its buffer",                  \
    unregister_during_reads)                                                                       \
  X(acquire_of_unknown_id, "a request named an id this registry does not know",                    \
    stale_ids_after_restart)                                                                       \
  X(acquire_after_registry_closed, "a request reached a closed registry",                          \
    shutdown_under_load_stalled_peer)                                                              \
  /* core: the target's sessions */                                                                \
  X(session_deadline_met_queued_body,                                                              \
    "a session's deadline found body bytes queued below the watermark", target_progress_deadline)  \
  X(session_timed_out, "a target session made no progress in time: closed",                        \
    target_progress_deadline)                                                                      \
  X(target_rejected_header, "the target could not decode a request header", corrupted_header)      \
  X(refused_write_body_drained, "a refused WRITE's body is read and dropped",                      \
    stale_ids_after_restart)                                                                       \
  X(reads_answered_before_write, "READ answers held left before a WRITE landed",                   \
    stalled_peer_healthy_peer)                                                                     \
  X(write_body_waits_after_header, "a WRITE's body was not all there with its header",             \
    small_writes_slow_link)                                                                        \
  X(write_body_cut, "a WRITE's body stopped before its end", reset_in_write_body)                  \
  X(read_answer_cut_in_send, "a READ answer's payload did not all leave",                          \
    failed_slice_cancels_siblings)                                                                 \
  X(session_ended_holding_leases,                                                                  \
    "a session ended holding leases (a WRITE body cut, or a READ not yet sent)",                   \
    target_progress_deadline)                                                                      \
  X(session_refused_at_connection_limit, "a connection over max_connections was closed",           \
    connection_limit_idle_cleanup)                                                                 \
  /* control: the rpc server and client */                                                         \
  X(rpc_queue_full, "the worker queue was full: a call answered busy", control_queue_full)         \
  X(rpc_call_cancelled_by_stop, "a queued call was cancelled by the service's stop",               \
    control_queue_full)                                                                            \
  X(rpc_answer_for_closed_session, "a call's answer was ready after its connection closed",        \
    control_queue_full)                                                                            \
  X(rpc_reading_paused, "a session stopped reading calls: too many unanswered",                    \
    control_stalled_connection)                                                                    \
  X(rpc_client_waits_out_cooldown, "a client call waits out the reconnect cooldown",               \
    control_restart_redescribed)                                                                   \
  X(rpc_client_connect_failed, "the control client could not connect",                             \
    control_queue_full)                                                                            \
  X(rpc_client_busy_retried, "a call answered busy is sent again", control_queue_full)             \
  X(rpc_calls_resent_after_reset, "calls sent on a reset connection are sent again",               \
    control_reset_during_describe)                                                                 \
  X(rpc_attempt_timed_out, "a call got no answer within call_timeout_ms: reset",                   \
    control_stalled_connection)                                                                    \
  X(rpc_unsent_call_expired, "a call's overall bound ran out before it was sent",                  \
    control_stalled_connection)                                                                    \
  /* relays */                                                                                     \
  X(relay_stream_decode_failed, "a relay could not decode the frames it carries",                  \
    corrupted_header)                                                                              \
  X(relay_frame_dropped, "a relay dropped a whole frame", lost_write_ack_dropped)                  \
  X(relay_cut_inside_frame_header, "a positional fault fired inside a frame header",               \
    half_header_shutdown)                                                                          \
  X(relay_reset_after_bytes, "a relay reset a stream after bytes of it went by",                   \
    reset_in_write_body)                                                                           \
  X(relay_stream_truncated, "a relay truncated a stream", truncated_read_payload)                  \
  X(relay_half_closed, "a relay sent a FIN in one direction only", half_closed_idle_lane)          \
  X(relay_paused_for_room, "a relay stopped reading until its send queue drained",                 \
    paced_large_reads)                                                                             \
  X(relay_fin_held_behind_stall, "a source's FIN waits behind a stall", half_header_shutdown)      \
  X(relay_stall_lifted, "a stall was removed and what it held went on", stalled_peer_healthy_peer) \
  X(relay_upstream_refused, "a relay could not connect to its upstream",                           \
    control_restart_redescribed)                                                                   \
  X(relay_reset_passed_on, "a relay passed a reset from one side on to the other",                 \
    kill_child_mid_write)                                                                          \
  /* dsim: the world's network and load model */                                                   \
  X(world_bytes_read_before_reset, "a read took bytes that arrived before a reset",                \
    failed_slice_cancels_siblings)                                                                 \
  X(world_crashed_end_bytes_delivered, "bytes a crashed end wrote arrived before its reset",       \
    kill_child_mid_write)                                                                          \
  X(world_bytes_met_closed_socket, "bytes arrived at a closed socket: it answers a reset",         \
    peer_restart_no_storm)                                                                         \
  X(world_writer_waits_for_room, "a write found no room in the peer's buffer and waits",           \
    slow_rail_three_rails)                                                                         \
  X(world_connect_refused, "a connect found no listener, or its node down",                        \
    control_restart_redescribed)                                                                   \
  X(world_listener_closed_with_queue, "a listener closed with connections not yet accepted",       \
    accept_backlog_restart)                                                                        \
  X(world_node_crashed_with_connections, "a node crashed with connections open",                   \
    kill_child_mid_write)                                                                          \
  X(world_load_hiccup, "the load model held a context busy for a hiccup",                          \
    stalled_peer_healthy_peer)                                                                     \
  X(world_data_before_accept, "bytes arrived on a connection before it was accepted",              \
    control_stalled_connection)

namespace faultlane {

#define FAULTLANE_PROBE_ENUM(name, meaning, scenario) name,
enum class probe_id : std::uint16_t { FAULTLANE_PROBES(FAULTLANE_PROBE_ENUM) };
#undef FAULTLANE_PROBE_ENUM

namespace probes {

// The list expands to `0 +1 +1 ...`: parentheses around `+1` would not parse.
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define FAULTLANE_PROBE_ONE(name, meaning, scenario) +1
inline constexpr std::size_t count = 0 FAULTLANE_PROBES(FAULTLANE_PROBE_ONE);
#undef FAULTLANE_PROBE_ONE

struct row {
  std::string_view name;
  std::string_view meaning;
  std::string_view scenario;  // sim/scenarios/SCENARIO.yaml
};

#define FAULTLANE_PROBE_ROW(name, meaning, scenario) row{#name, meaning, #scenario},
inline constexpr std::array<row, count> table{FAULTLANE_PROBES(FAULTLANE_PROBE_ROW)};
#undef FAULTLANE_PROBE_ROW

// Hits per probe, in the table's order.
using counts = std::array<std::uint64_t, count>;

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
inline constexpr bool counted = true;

namespace detail {
#if defined(FAULTLANE_PROBES_PER_THREAD)
#define FAULTLANE_PROBE_STORAGE thread_local
#else
#define FAULTLANE_PROBE_STORAGE
#endif
// Constant-initialized: no guard, no wrapper, no allocation.
constinit inline FAULTLANE_PROBE_STORAGE std::array<std::atomic<std::uint64_t>, count> hits{};
#undef FAULTLANE_PROBE_STORAGE
}  // namespace detail

inline void hit(probe_id id) noexcept {
  detail::hits[static_cast<std::size_t>(id)].fetch_add(1, std::memory_order_relaxed);
}

// The hits so far: this thread's in the dsim build, the process's otherwise.
inline counts snapshot() noexcept {
  counts out{};
  for (std::size_t i = 0; i < count; ++i) out[i] = detail::hits[i].load(std::memory_order_relaxed);
  return out;
}
#else
inline constexpr bool counted = false;

// Nothing is counted: every probe reads 0.
inline counts snapshot() noexcept { return counts{}; }
#endif

// after - before, probe by probe (counters only grow).
inline counts delta(const counts& before, const counts& after) noexcept {
  counts out{};
  for (std::size_t i = 0; i < count; ++i) out[i] = after[i] - before[i];
  return out;
}

}  // namespace probes
}  // namespace faultlane

// FAULTLANE_PROBE_IF(condition, name): the probe, where a condition the
// code does not branch on says the state is reached. The condition is
// evaluated only where probes count; in release it is an unevaluated
// operand, so it costs nothing (and a mutant of it is no mutant: it sits in
// a macro's argument).
#if defined(FAULTLANE_FAILPOINTS_ENABLED)
#define FAULTLANE_PROBE(name) ::faultlane::probes::hit(::faultlane::probe_id::name)
#define FAULTLANE_PROBE_IF(condition, name) \
  (static_cast<bool>(condition) ? FAULTLANE_PROBE(name) : static_cast<void>(0))
#else
// Names the enumerator, so an undeclared name fails here too, and does nothing.
#define FAULTLANE_PROBE(name) static_cast<void>(::faultlane::probe_id::name)
#define FAULTLANE_PROBE_IF(condition, name)                 \
  (static_cast<void>(sizeof(static_cast<bool>(condition))), \
   static_cast<void>(::faultlane::probe_id::name))
#endif
