// run_topology: what a scenario run runs on. Its transports (each one
// incarnation at a time, with its regions registered and recorded), the
// relays on its links and rails, and the segments its initiators open
// through them; and the changes events make to it: a restart or SIGKILL, a
// shutdown, a region unregistered or registered again, connections
// dropped, a fault added or removed. The slots are in run_slots.hpp.
//
// Threads: setup and the end of the run are on the runner's thread; the
// changes come from the event engine, one at a time; streams and callers
// read the slots. A transport slot's `lock` is held shared while a stream
// submits to it and exclusively while a change restarts or shuts it down.
// A transport's region ids, and the faults each relay holds, have their own
// locks here.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "faultlane/sim/runner.hpp"
#include "runner/recorder.hpp"
#include "runner/run_slots.hpp"
#include "runner/threads.hpp"

namespace faultlane::sim {

class run_topology {
 public:
  run_topology(const scenario& s, const run_options& o, recorder& rec);
  run_topology(const run_topology&) = delete;
  run_topology& operator=(const run_topology&) = delete;

  // Starts every transport, the relays, publishes the descriptors and
  // opens every segment; then each transport is up.
  result<void> setup();

  transport_slot& transport(const std::string& name) { return *transports_.at(name); }
  pair_slot& pair(const std::string& initiator, const std::string& target) {
    return *pairs_.at({initiator, target});
  }
  const region_spec& region(const std::string& name) const { return *regions_.at(name); }
  // The id `t`'s region has now (0: unregistered).
  registration_id current_id(transport_slot& t, const std::string& region);
  // A control link's relay, if `link` names one.
  const relay_slot* control_relay(const std::string& link) const;

  // --- the changes events make
  result<void> restart(transport_slot& t, bool sigkill);
  result<void> shut_down(transport_slot& t);
  result<void> unregister(const region_spec& region);
  result<void> register_again(const region_spec& region);
  result<void> drop_connections(const std::string& initiator, const std::string& target);
  result<void> add_fault(const std::string& link, const relays::fault_spec& f);
  // `healed`: a heal already removed every fault, so a missing one is
  // cancelled rather than an error.
  result<void> remove_fault(const std::string& link, const std::string& name, bool healed);
  void remove_every_fault();

  // --- faults' counts
  std::uint64_t fault_fired(const std::string& name) const;
  // Every fault name a relay got, added ones included.
  std::set<std::string> fault_names() const;
  std::uint64_t faults_fired() const;

  // --- during and at the end of the run
  void record_stats_of_each_up();
  // Resets every relayed connection and waits (bounded) for the targets'
  // leases to drain: an ambiguous WRITE's range may go to new work.
  void quiesce_links();
  // Stats, each region's final bytes, every transport stopped (initiators
  // first) and every relay stopped, recorded.
  void finish();

 private:
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
  void shut_down_recorded(transport_slot& t);
  void stop_transport(transport_slot& t, const std::string& reason, bool graceful);
  void record_stats(transport_slot& t);
  void read_finals();
  void stop_relays();
  relay_slot* find_relay(const std::string& name);

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

  const scenario& s_;
  const run_options& o_;
  recorder& rec_;
  std::map<std::string, std::unique_ptr<transport_slot>> transports_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<pair_slot>> pairs_;
  // The relays of control links (in front of a target's control endpoint).
  std::vector<relay_slot> control_relays_;
  std::map<std::string, const region_spec*> regions_;
  // Guards every transport slot's `ids`.
  threads::mutex ids_mutex_;
  // Guards every relay slot's `faults` and fault_names_.
  mutable threads::mutex faults_mutex_;
  std::set<std::string> fault_names_;
};

}  // namespace faultlane::sim
