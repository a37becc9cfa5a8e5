// checkers: the invariants a scenario run must hold, read from its history.
//
// One implementation serves the scenario runner and the end-to-end
// properties. A checker reads only a finished history (history.hpp), which
// the runner fills from public seams; it never reaches into the core. Each
// returns its violations with the evidence a person needs (task, request
// id, what was expected and what was seen) and how many items it checked,
// so a checker that had nothing to look at is visible as such.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/sim/history.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

struct violation {
  std::string checker;
  std::uint64_t op_id = 0;  // history op id, 0 if none
  std::uint64_t task_id = 0;
  std::uint64_t request_id = 0;
  std::string transport;
  std::uint64_t seq = 0;  // where in the history (timeline highlight)
  std::string evidence;   // one or two sentences, with the numbers
};

// One line: "exactly_once: op 17 (task 17, request 0x2a) on client at seq 40:
// callback ran 2 times, expected 1". Parts it does not know are left out.
std::string describe(const violation& v);

struct checker_result {
  std::string name;
  bool ran = true;
  std::string reason_off;     // when !ran: the scenario's reason
  std::uint64_t checked = 0;  // items examined (tasks, bytes, frames...)
  std::vector<violation> violations;
  bool passed() const noexcept { return violations.empty(); }
};

// Each checker below says what it holds and what `checked` counts.

// Every op submit() accepted: one callback, a completion, batch status ==
// outcome, exactly one task_submitted and one task_finalized (with that
// outcome) for its task; no task_finalized for a task no op has; no READ
// ends ambiguous_write.
// checked: ops.
checker_result check_exactly_once(const history& h);
// A model of every (target, incarnation, region): registration fills, ok
// WRITEs, ambiguous WRITEs as unknown bytes. An ok READ and each
// region_final equal the model on every known byte no concurrent WRITE may
// have changed. checked: bytes compared.
checker_result check_data_integrity(const history& h);
// A target executes a WRITE request id at most once; a WRITE op is
// dispatched again only after its earlier request was refused, and
// executes at most once over all its request ids; the taps of one
// initiator show each WRITE request id once. checked: WRITE ops + WRITE
// request frames.
checker_result check_no_replay(const history& h);
// Each READ's dispatches, and its up frames on tapped links, equal
// plan_read_slices() (one whole slice on rail 0 when not sliced); an ok
// READ sent every planned slice. checked: READ ops.
checker_result check_slice_coverage(const history& h);
// A server_executed ok uses an id registered in that same incarnation and
// not yet unregistered. checked: ok executions.
checker_result check_stale_rejection(const history& h);
// Admission changes and stats within the incarnation's limits; leases never
// released below zero and none left after a clean shutdown. checked:
// admission events + stats records + lease events.
checker_result check_bounds(const history& h);
// Per shutdown: returned within shutdown_timeout_ms + 1 s, ok (or
// runtime_failed when the stats say so), every task of that incarnation
// submitted before it returned completed before it, none finalized after,
// and every gauge zero with tasks_submitted == tasks_completed. checked:
// shutdowns + ops examined.
checker_result check_drained_shutdown(const history& h);
// Per liveness phase: it ran ops, and each ended ok within deadline_ms of
// the phase's start. checked: ops of liveness phases.
checker_result check_liveness(const history& h);

// Every checker a scenario runs, in the order they run and are reported:
// the one list the scenario loader (the `expect.checkers` keys),
// run_checkers() and each checker's own name all read. A new checker is a
// row here, its function above, and its clauses (docs/scenarios.md,
// "Adding a checker").
struct checker_entry {
  std::string_view name;
  checker_result (*check)(const history&);
};
inline constexpr checker_entry checker_table[] = {
    {"exactly_once", check_exactly_once},
    {"data_integrity", check_data_integrity},
    {"no_replay", check_no_replay},
    {"slice_coverage", check_slice_coverage},
    {"stale_rejection", check_stale_rejection},
    {"bounds", check_bounds},
    {"drained_shutdown", check_drained_shutdown},
    {"liveness", check_liveness},
};

// The name of the expectations checker, which runs after the table's.
inline constexpr std::string_view expectations_name = "expectations";

namespace detail {
constexpr bool checker_table_is_well_formed() {
  for (std::size_t i = 0; i < std::size(checker_table); ++i) {
    const auto& a = checker_table[i];
    if (a.name.empty() || a.check == nullptr || a.name == expectations_name) return false;
    for (std::size_t j = i + 1; j < std::size(checker_table); ++j) {
      if (a.name == checker_table[j].name || a.check == checker_table[j].check) return false;
    }
  }
  return true;
}
}  // namespace detail
static_assert(
    detail::checker_table_is_well_formed(),
    "each checker once, with a name of its own (reports and `expect.checkers` key by it)");

// The table's names alone, for the scenario loader: it reads no function,
// so the loader links without the checkers.
inline constexpr auto checker_names = [] {
  std::array<std::string_view, std::size(checker_table)> names{};
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = checker_table[i].name;
  return names;
}();

// The name `check` has in checker_table; a checker left out of the table
// does not compile where it asks for its name.
consteval std::string_view checker_name(checker_result (*check)(const history&)) {
  for (const auto& c : checker_table) {
    if (c.check == check) return c.name;
  }
  throw "a checker function missing from checker_table";
}

// What one `control:` caller saw, over every call of every client: how
// each ended, and latency (nearest-rank percentiles, whatever the call
// ended with: a ping that timed out is a slow ping).
struct caller_summary {
  std::string name;
  std::string method;
  std::uint64_t calls = 0;
  std::map<status, std::uint64_t> by_status;
  std::uint64_t p50_us = 0;
  std::uint64_t p99_us = 0;
  std::uint64_t max_us = 0;
  std::uint64_t incarnations = 0;  // distinct incarnations describe answered with
  std::uint64_t listed = 0;        // the most registrations one ok call listed
};
std::vector<caller_summary> summarize_callers(const scenario& s, const history& h);
// "pinger (ping): 250 calls: 250 ok; p50 0.118 ms, p99 0.310 ms, max 1.204 ms",
// then "; N listed" (list_registrations, describe) and "; N incarnations"
// (describe).
std::string describe(const caller_summary& c);

// The scenario's `expect:` block and per-stream and per-caller `allow:`
// lists, as one more checker named "expectations": outcomes outside a
// stream's or caller's allowed set, counts, stats and caller measures out
// of range, and declared faults that never fired.
checker_result check_expectations(const scenario& s, const history& h);

// Every checker of checker_table (minus those the scenario turned off,
// which are reported with ran=false and their reason), then expectations.
std::vector<checker_result> run_checkers(const scenario& s, const history& h);

}  // namespace faultlane::sim
