// runner: runs one scenario with one seed, on loopback, and judges it. In
// the dsim build it runs on the simulated world instead (docs/dsim.md): one
// seed, one identical run, with its digest and virtual time in the result.
//
//   auto s = load_scenario("sim/scenarios/lost_write_ack.yaml").value();
//   run_options o;
//   o.seed = 7;
//   run_result r = run_scenario(s, o);   // r.passed, r.checkers, r.replay
//
// The runner starts the scenario's transports (in this process, or as
// child processes it can SIGKILL), puts a relay in front of every rail of
// every (initiator, target) pair a stream uses (the link's faults and tap
// when the scenario declares one, a plain pass-through otherwise, so a
// restarted target is reached at the same address), registers the regions
// filled from the seed, and runs the phases in order: each phase's streams
// run together, events fire at their logical points, a heal phase removes
// every fault, a liveness phase demands that new work succeeds within its
// deadline. It records everything into a history (history.hpp) and runs the
// checkers over it. docs/scenarios.md describes a run step by step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "faultlane/sim/report.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

struct progress {
  std::string scenario;
  std::string phase;
  std::uint64_t ops_done = 0;
  std::uint64_t ops_total = 0;  // planned; duration-bound streams count what they submitted
  std::uint64_t faults_fired = 0;
  double elapsed_s = 0;
};

struct run_options {
  std::uint64_t seed = 1;
  // The program started for `process: child` transports with the argument
  // `child`; faultlane-sim passes itself. Empty: a scenario with a child
  // transport fails to start with a message saying so.
  std::string child_program;
  // Off: no observer, no taps, no checkers (the speed baseline of
  // docs/benchmarks.md); the run still fails on a run error.
  bool record = true;
  // Called from the runner's thread about every 100 ms, and once at the end.
  std::function<void(const progress&)> on_progress;
  // Prefix of the replay line, e.g. "faultlane-sim run".
  std::string replay_command = "faultlane-sim run";
  // The dsim build: how many of the world's latest events run_result::trace
  // keeps, one per line (0: none).
  std::size_t trace_events = 0;
};

run_result run_scenario(const scenario& s, const run_options& options);

// True when this build can arm failpoints (FAULTLANE_FAILPOINTS); a
// scenario that arms one is skipped, with that reason, where it cannot.
bool failpoints_available() noexcept;
// True in an optimized build without sanitizers, where a `timing: true`
// scenario's latency bounds mean something; elsewhere such a run is skipped.
bool timing_available() noexcept;

// The entry point of a child transport process (`faultlane-sim child`):
// reads commands on stdin, writes replies and observer events on stdout.
int run_child_process();

}  // namespace faultlane::sim
