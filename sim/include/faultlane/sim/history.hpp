// history: everything a scenario run observed, in one order.
//
// The runner fills it from the public seams only: the transport observer
// (both sides, child processes included), the ops it submitted and the
// callbacks it got, stats() snapshots, relay taps and counters. Every
// record carries `seq`, drawn from one counter when the record was made, so
// checkers can order an observer event against a submit, a callback, a
// restart or a shutdown return. Records of a child process get their seq
// when the runner receives them; the child's own order is kept.
//
// Checkers (checkers.hpp) and reports (report.hpp) read a finished history;
// the runner is the only writer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/stats.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/relays/tap.hpp"

namespace faultlane::sim {

// One READ or WRITE the runner submitted.
struct op_record {
  std::uint64_t id = 0;  // runner-wide, from 1, in submit order
  std::string stream;
  std::string phase;
  bool liveness = false;  // submitted in a liveness phase
  std::string initiator;  // transport names
  std::string target;
  std::string region;
  std::uint32_t initiator_incarnation = 0;  // index, from 0, of the initiator's start
  std::uint32_t target_incarnation = 0;     // the target's incarnation at submit
  wire::opcode op = wire::opcode::read;
  std::uint64_t registration_id = 0;  // the id it was submitted with
  std::uint64_t offset = 0;           // within the region
  std::uint64_t length = 0;
  std::uint64_t data_seed = 0;  // WRITE: the bytes are fill_pattern(length, data_seed)
  std::uint64_t task_id = 0;    // the core's task id (task_submitted), 0 if not seen
  std::uint64_t submit_seq = 0;
  std::uint64_t complete_seq = 0;  // 0: never completed
  std::uint64_t submit_us = 0;     // since the run started
  std::uint64_t complete_us = 0;
  bool submit_failed = false;  // submit() refused the batch; `outcome` says why
  status outcome = status::ok;
  std::uint64_t bytes = 0;
  std::uint32_t callbacks = 0;       // times the task callback ran for it
  status batch_status = status::ok;  // transfer_batch::status() after the callback
  // An ok READ: the bytes it returned (the data checker compares them with
  // its model). Empty for everything else.
  std::vector<std::byte> data;
};

// Whether `op` has its terminal status: refused at submit, or completed.
inline bool ended(const op_record& op) noexcept { return op.submit_failed || op.complete_seq != 0; }
// How `op` ended, as the reports count it: its status's name, or
// "not_completed" for an op that never did.
inline std::string_view ending_name(const op_record& op) noexcept {
  return ended(op) ? to_string(op.outcome) : std::string_view("not_completed");
}

enum class event_kind : std::uint8_t {
  task_submitted,
  task_finalized,
  slice_dispatched,
  lane_connected,
  lane_closed,
  stale_handler_dropped,
  server_executed,
  session_opened,
  lease_acquired,
  lease_released,
  admission_changed,
};
std::string_view to_string(event_kind k) noexcept;

// One transport_observer callback.
struct core_event {
  std::uint64_t seq = 0;
  std::uint64_t time_us = 0;
  std::string transport;
  std::uint32_t incarnation = 0;  // index of the transport's start, from 0
  event_kind kind = event_kind::task_submitted;
  std::uint64_t task_id = 0;
  std::uint64_t request_id = 0;
  wire::opcode op = wire::opcode::read;
  std::uint64_t segment = 0;
  std::uint64_t registration_id = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t length = 0;  // task, slice or served length
  std::uint64_t offset = 0;  // slice: within the task
  std::size_t lane = 0;
  std::size_t rail = 0;
  std::uint64_t epoch = 0;
  std::string local;  // lane_connected, session_opened
  std::string remote;
  status outcome = status::ok;  // task_finalized, lane_closed, server_executed
  std::uint64_t bytes = 0;      // task_finalized
  std::uint64_t tasks = 0;      // admission_changed
  std::uint64_t admitted_bytes = 0;
};

// A transport's start (an incarnation) with the limits checkers need.
struct incarnation_record {
  std::string transport;
  std::uint32_t index = 0;
  std::uint64_t incarnation = 0;  // the descriptor's random value
  bool child = false;
  std::uint64_t start_seq = 0;
  std::uint64_t end_seq = 0;  // shut down, killed or the run ended; 0 = still up
  std::uint64_t start_us = 0;
  std::uint64_t end_us = 0;
  std::string end_reason;  // "shutdown", "restart", "kill", "end of run"
  std::size_t rails = 1;
  std::uint64_t max_outstanding_tasks = 0;
  std::uint64_t max_outstanding_bytes = 0;
  std::size_t max_connections = 0;
  std::uint32_t shutdown_timeout_ms = 0;
};

struct registration_record {
  std::string transport;
  std::uint32_t incarnation = 0;
  std::string region;
  std::uint64_t id = 0;
  std::uint64_t registered_seq = 0;
  std::uint64_t unregistered_seq = 0;  // when unregister_buffer() returned; 0 = never
  std::uint64_t fill_seed = 0;  // the region's bytes at registration: fill_pattern(size, fill_seed)
  std::uint64_t size = 0;
};

struct shutdown_record {
  std::string transport;
  std::uint32_t incarnation = 0;
  std::uint64_t start_seq = 0;
  std::uint64_t end_seq = 0;
  std::uint64_t start_us = 0;
  std::uint64_t end_us = 0;
  status result = status::ok;
  std::string message;
  std::uint32_t bound_ms = 0;  // shutdown_timeout_ms
  transport_stats after;       // stats() once shutdown() returned
};

struct stats_record {
  std::string transport;
  std::uint32_t incarnation = 0;
  std::uint64_t seq = 0;
  std::uint64_t time_us = 0;
  transport_stats stats;
};

// One relay, as the run left it. `tap` is empty when the link is untapped.
struct link_record {
  std::string name;
  std::string initiator;
  std::string target;
  std::size_t rail = 0;
  bool tapped = false;
  std::vector<relays::tap_record> tap;  // time_us rebased to the run's clock
  std::map<std::string, std::uint64_t> counters;
  std::size_t active_faults_peak = 0;  // relay::active_faults_peak()
  std::size_t active_faults_max = 0;   // relay_config::active_faults_max
};

// A scenario event, a phase boundary or a runner note, for the timeline.
struct mark_record {
  std::uint64_t seq = 0;
  std::uint64_t time_us = 0;
  std::string kind;  // "event", "phase", "note"
  std::string text;
  bool ok = true;
};

// A region's bytes at the end of the run (its last incarnation), when the
// runner could read them; the data checker compares them with its model.
struct region_final {
  std::string transport;
  std::uint32_t incarnation = 0;
  std::string region;
  std::uint64_t seq = 0;  // when they were read
  std::vector<std::byte> bytes;
};

struct phase_record {
  std::string name;
  bool heal = false;
  bool liveness = false;
  std::uint32_t deadline_ms = 0;
  std::uint64_t start_seq = 0;
  std::uint64_t end_seq = 0;
  std::uint64_t start_us = 0;
  std::uint64_t end_us = 0;
};

// One call of a `control:` caller, timed on the run's clock from before it
// was sent to when its answer (or error) came back.
struct call_record {
  std::string caller;
  std::size_t client = 0;
  std::uint64_t start_us = 0;
  std::uint64_t end_us = 0;
  status outcome = status::ok;
  std::uint64_t incarnation = 0;  // a describe answered ok: the incarnation it described
  std::uint64_t listed = 0;       // ok: registrations listed (list_registrations, describe)
  std::string message;            // an error's message
};

struct history {
  std::uint64_t seed = 0;
  std::vector<op_record> ops;  // by id - 1
  std::vector<core_event> events;
  std::vector<incarnation_record> incarnations;
  std::vector<registration_record> registrations;
  std::vector<shutdown_record> shutdowns;
  std::vector<stats_record> stats;  // sampled during the run, and one per transport at its end
  std::vector<link_record> links;
  std::vector<mark_record> marks;
  std::vector<phase_record> phases;
  std::vector<region_final> finals;
  std::vector<call_record> calls;  // `control:` callers' calls, in the order they ended
  // Firings of each failpoint the scenario armed (failpoint::fired, read
  // before each disarm), for "an armed failpoint must fire".
  std::map<std::string, std::uint64_t> failpoints_fired;
  std::uint64_t slice_step_bytes = 0;  // limits::slice_step_bytes, for the slice checker
};

}  // namespace faultlane::sim
