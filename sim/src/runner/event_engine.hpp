// event_engine: what a scenario does to its system at logical points, and
// the triggers that decide when: a stream's count of ops, a phase's start
// or end, a fault's count of firings, a caller's count of ended calls.
// Each event runs once, one at a time, and is recorded as a timeline mark
// with its result; its action is a change to the topology or a failpoint
// armed or disarmed (event_engine.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "faultlane/sim/runner.hpp"
#include "runner/recorder.hpp"
#include "runner/run_error.hpp"
#include "runner/run_topology.hpp"
#include "runner/threads.hpp"

namespace faultlane::sim {

class event_engine {
 public:
  event_engine(const scenario& s, run_topology& topology, recorder& rec, run_error& error);
  event_engine(const event_engine&) = delete;
  event_engine& operator=(const event_engine&) = delete;

  // The triggers. Any thread.
  void stream_ops(const std::string& stream, std::uint64_t from, std::uint64_t to);
  void phase(trigger_kind kind, const std::string& phase);
  void poll_faults();
  // After a call of `caller` ended: fires what its count of ended calls
  // triggers.
  void caller_call_ended(const caller_spec& caller);
  // Every relay fault removed, every failpoint disarmed.
  void heal();
  // At the end of the run: every failpoint still armed is counted and
  // disarmed.
  void disarm_every_failpoint();

 private:
  void fire(const event_spec& e);
  result<void> apply(const event_spec& e);
  // Adds `name`'s firings to the history and disarms it; every armed one
  // when `name` is empty.
  void disarm_and_count(const std::string& name);

  const scenario& s_;
  run_topology& topology_;
  recorder& rec_;
  run_error& error_;
  threads::mutex mutex_;                                 // one event at a time
  std::vector<bool> fired_;                              // by event index (mutex_)
  std::vector<std::atomic<std::uint64_t>> calls_ended_;  // by caller index
  bool healed_ = false;                                  // a heal ran (mutex_)
  std::set<std::string> armed_;  // failpoints armed and not yet disarmed (mutex_)
};

}  // namespace faultlane::sim
