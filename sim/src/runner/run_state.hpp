// scenario_run: one scenario run, and its phase driver: it runs the
// phases in order, each with its streams (workload.cpp, a stream_runner
// each) and control callers (control_callers.cpp), and judges the history
// (runner.cpp, runner_phases.cpp). What it runs on is its topology
// (run_topology.hpp); what the scenario does to that at logical points is
// its event engine (event_engine.hpp). Bytes in flight are in
// region_ranges.hpp.
//
// Threads: the runner's own thread runs the phases, polls fault triggers
// and reports progress; each stream of a phase has a thread that submits;
// completions arrive on the transports' io threads. In the dsim build the
// threads are fibers on the world (threads.hpp).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "faultlane/sim/runner.hpp"
#include "runner/event_engine.hpp"
#include "runner/recorder.hpp"
#include "runner/region_ranges.hpp"
#include "runner/run_error.hpp"
#include "runner/run_topology.hpp"
#include "runner/threads.hpp"

namespace faultlane::sim {

class scenario_run {
 public:
  scenario_run(const scenario& s, const run_options& o);
  ~scenario_run();
  run_result run();

  // workload.cpp: a stream's shared state (its batches' callbacks hold it).
  struct stream_state;

 private:
  class stream_runner;
  void run_stream(const stream_spec& st, const std::string& phase, bool liveness,
                  std::uint64_t count);
  // control_callers.cpp: one client of a `control:` caller, for its phase.
  void run_caller(const caller_spec& c, std::size_t client);

  // runner_phases.cpp
  void run_phase(const phase_spec& ph);
  std::vector<threads::thread> launch_phase(const phase_spec& ph);
  void finish();
  run_result judge(run_result r);
  // runner.cpp
  void report_progress(const std::string& phase);

  const scenario& s_;
  const run_options& o_;
  const std::uint64_t seed_;
  recorder rec_;
  // Before the topology: a transport destroyed with work still queued
  // settles it, and its callbacks release ranges and record completions.
  region_ranges ranges_;
  run_topology topology_;
  run_error error_;
  event_engine events_;
  threads::clock::time_point deadline_;
  std::vector<phase_spec> phases_;                // the scenario's, or fault, heal, liveness
  std::map<std::string, std::uint64_t> planned_;  // stream -> ops planned
  std::atomic<bool> timed_out_{false};
};

}  // namespace faultlane::sim
