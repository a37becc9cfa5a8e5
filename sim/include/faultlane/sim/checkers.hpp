// checkers: the invariants a scenario run must hold, read from its history.
//
// One implementation serves the scenario runner and the end-to-end
// properties. A checker reads only a finished history (history.hpp), which
// the runner fills from public seams; it never reaches into the core. Each
// returns its violations with the evidence a person needs (task, request
// id, what was expected and what was seen) and how many items it checked,
// so a checker that had nothing to look at is visible as such.
#pragma once

#include <cstdint>
#include <string>
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

// "exactly_once: op 17 (task 17, request 0x...): ..." on one line.
std::string describe(const violation& v);

struct checker_result {
  std::string name;
  bool ran = true;
  std::string reason_off;  // when !ran: the scenario's reason
  std::uint64_t checked = 0;  // items examined (tasks, bytes, frames...)
  std::vector<violation> violations;
  bool passed() const noexcept { return violations.empty(); }
};

checker_result check_exactly_once(const history& h);
checker_result check_data_integrity(const history& h);
checker_result check_no_replay(const history& h);
checker_result check_slice_coverage(const history& h);
checker_result check_stale_rejection(const history& h);
checker_result check_bounds(const history& h);
checker_result check_drained_shutdown(const history& h);
checker_result check_liveness(const history& h);

// The scenario's `expect:` block and per-stream `allow:` lists, as one more
// checker named "expectations": outcomes outside a stream's allowed set,
// counts and stats out of range, and declared faults that never fired.
checker_result check_expectations(const scenario& s, const history& h);

// Every checker of checker_names (minus those the scenario turned off,
// which are reported with ran=false and their reason), then expectations.
std::vector<checker_result> run_checkers(const scenario& s, const history& h);

}  // namespace faultlane::sim
