// scenario_run: one scenario run. Its state is private to its parts:
// setup and teardown (runner.cpp), the phases (runner_phases.cpp), the
// workload streams (workload.cpp, a stream_runner each), the control
// callers (control_callers.cpp) and the scenario's events (events.cpp).
// Its topology's slots are in run_slots.hpp, the bytes in flight in
// region_ranges.hpp.
//
// Threads: the runner's own thread runs the phases, polls fault triggers
// and reports progress; each stream of a phase has a thread that submits;
// completions arrive on the transports' io threads. In the dsim build the
// threads are fibers on the world (threads.hpp). A transport slot's
// `lock` is held shared while a stream submits to it and exclusively while
// an event restarts or shuts it down, so no submit meets a transport being
// destroyed. Events run one at a time (`events_mutex_`).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "faultlane/sim/runner.hpp"
#include "recorder.hpp"
#include "region_ranges.hpp"
#include "run_slots.hpp"
#include "threads.hpp"

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
  // events.cpp
  void fire_stream_events(const std::string& stream, std::uint64_t from, std::uint64_t to);
  void fire_phase_events(trigger_kind kind, const std::string& phase);
  void poll_fault_events();
  // After a call of `caller` ended: fires what its count of ended calls
  // triggers.
  void caller_call_ended(const caller_spec& caller);
  void heal();
  std::uint64_t fault_fired(const std::string& name) const;

  // runner.cpp
  result<void> setup();
  result<void> start_transport(transport_slot& t, std::uint32_t index, bool fresh_regions);
  // Registers `r` on `t`'s incarnation `inc` and records it.
  result<void> register_region(transport_slot& t, std::uint32_t inc, const region_spec& r,
                               bool fresh);
  result<void> start_relays();
  result<void> start_control_relays();
  result<void> start_relay(relay_slot& slot, relays::relay_config c);
  result<void> open_segments(const std::string& initiator);
  result<void> open_segment(pair_slot& p);
  void publish_descriptor(const std::string& target);
  void run_phase(const phase_spec& ph);
  std::vector<threads::thread> launch_phase(const phase_spec& ph);
  void stop_transport(transport_slot& t, const std::string& reason, bool graceful);
  void record_stats(transport_slot& t);
  void finish();
  void read_finals();
  void quiesce_links();
  run_result judge(run_result r);
  void report_progress(const std::string& phase);

  // events.cpp
  void fire(const event_spec& e);
  result<void> apply(const event_spec& e);
  result<void> restart(transport_slot& t, bool sigkill);
  result<void> change_fault(const event_spec& e);

 private:
  const scenario& s_;
  const run_options& o_;
  const std::uint64_t seed_;
  recorder rec_;
  // Before the transports: a transport destroyed with work still queued
  // settles it, and its callbacks release ranges and record completions.
  region_ranges ranges_;
  threads::clock::time_point deadline_;
  std::map<std::string, std::unique_ptr<transport_slot>> transports_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<pair_slot>> pairs_;
  // The relays of control links (in front of a target's control endpoint).
  std::vector<relay_slot> control_relays_;
  std::map<std::string, const region_spec*> regions_;
  std::vector<phase_spec> phases_;                // the scenario's, or fault, heal, liveness
  std::map<std::string, std::uint64_t> planned_;  // stream -> ops planned
  std::set<std::string> fault_names_;
  bool healed_ = false;          // a heal ran (events_mutex_)
  std::set<std::string> armed_;  // failpoints armed and not yet disarmed (events_mutex_)
  // Adds `name`'s firings to the history and disarms it; every armed one
  // when `name` is empty.
  void disarm_and_count(
      const std::string& name);  // every fault name a relay got, added ones included

  threads::mutex events_mutex_;
  std::vector<bool> fired_;                              // by event index
  std::vector<std::atomic<std::uint64_t>> calls_ended_;  // by caller index
  std::atomic<bool> timed_out_{false};

  // Every relay: each pair's rails, then the control links.
  template <typename F>
  void each_relay(F&& f) {
    for (auto& [key, p] : pairs_) {
      for (auto& rail : p->rails) f(rail);
    }
    for (auto& slot : control_relays_) f(slot);
  }
  template <typename F>
  void each_relay(F&& f) const {
    for (const auto& [key, p] : pairs_) {
      for (const auto& rail : p->rails) f(rail);
    }
    for (const auto& slot : control_relays_) f(slot);
  }
  std::string error_;  // a run error (setup, timeout); guarded by events_mutex_
  std::string phase_;  // for progress
};

}  // namespace faultlane::sim
