// e2e_check: runs an end-to-end property, the simulator's checkers judging
// each generated schedule, and keeps what a person needs from a failure.
//
//   property_spec p{.name = "exactly_once", .gen = {...}};
//   auto out = check_property(p);   // out.passed, out.counterexample
//
// Each case draws a schedule, writes it as a scenario, reads the file back
// (so what runs is exactly what a user can replay) and runs it over
// loopback with relays on every rail. Any checker violation, expectation
// miss or run error fails the case. After the first failure rapidcheck
// only shrinks, and from then on each candidate runs `runs_per_candidate`
// times and counts as failing only if every run fails, so a schedule that
// failed by luck cannot pass for a smaller counterexample. Every failing
// case overwrites the
// counterexample files, so when rapidcheck stops they hold the minimal one:
// NAME.yaml (runnable with `faultlane-sim run`) and NAME.html (its timeline).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "faultlane/core/net.hpp"
#include "faultlane/sim/report.hpp"
#include "schedule.hpp"

namespace faultlane::props {

struct property_spec {
  std::string name;
  gen_options gen;
  // Defaults for this property; RC_PARAMS's max_success and max_size win.
  int cases = 20;
  int max_size = 60;
  // On the simulated world a candidate fails the same way every run.
  int runs_per_candidate = net::simulated ? 1 : 3;
  std::string planted;                // a planted-bug failpoint armed in every schedule
  std::optional<std::uint64_t> seed;  // default: RC_PARAMS's seed, else random
};

struct property_outcome {
  bool passed = true;
  std::size_t cases = 0;  // scenario runs, shrinking included
  // The last failing case: after shrinking, the minimal one.
  std::optional<schedule> counterexample;
  std::vector<std::string> failing_checkers;  // empty for a run error
  std::string yaml_path;
  std::string timeline_path;
};

property_outcome check_property(const property_spec& p);

// rc::check with this test's own defaults for max_success and max_size
// (RC_PARAMS's win when it sets them) and an optional fixed seed; prints
// rapidcheck's result and reproduce string. True when the property held.
bool check_with_defaults(const std::string& id, int cases, int max_size,
                         const std::function<void()>& property,
                         std::optional<std::uint64_t> seed = std::nullopt);

// Where counterexamples go: $FAULTLANE_COUNTEREXAMPLE_DIR, else
// ./props-counterexamples.
std::string counterexample_dir();

// What the runs so far exercised, for the soak table (docs/properties.md):
// cases, ops, faults fired by type x trigger x direction, events, outcomes
// by status, violations. Thread-safe; one per process.
struct coverage {
  std::uint64_t cases = 0;
  std::uint64_t ops = 0;
  std::uint64_t violations = 0;
  std::uint64_t run_errors = 0;
  std::map<std::string, std::uint64_t> faults_fired;  // "stall up header_byte"
  std::map<std::string, std::uint64_t> faults_drawn;  // the same keys, drawn
  std::map<std::string, std::uint64_t> events;        // "restart", "arm client.on_response"
  std::map<std::string, std::uint64_t> outcomes;      // "read ok", "write ambiguous_write"
};
coverage coverage_so_far();
// The table, and the fault (type, direction, trigger) cells never fired.
std::string coverage_table(const coverage& c);

}  // namespace faultlane::props
