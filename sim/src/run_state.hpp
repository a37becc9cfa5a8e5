// scenario_run: the state of one scenario run, shared by the runner's
// parts: setup and teardown (runner.cpp), workload streams (workload.cpp)
// and scenario events (events.cpp).
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

#include "faultlane/relays/relay.hpp"
#include "faultlane/sim/runner.hpp"
#include "peer.hpp"
#include "recorder.hpp"
#include "threads.hpp"

namespace faultlane::sim {

// What an initiator is told about a target: its descriptor with each
// rail's endpoint replaced by the relay in front of it.
class runner_source final : public descriptor_source {
 public:
  result<segment_descriptor> fetch() override {
    std::lock_guard lock(mutex_);
    return descriptor_;
  }
  void set(segment_descriptor d) {
    std::lock_guard lock(mutex_);
    descriptor_ = std::move(d);
  }

 private:
  std::mutex mutex_;
  segment_descriptor descriptor_;
};

// The byte ranges of each region that ops in flight touch. A stream draws
// an offset that overlaps none of them: two in-flight ops on the same bytes
// would be a data race in the target's memory (ThreadSanitizer reports it,
// rightly), and their result is undefined anyway. Ranges are freed when the
// op's callback ran.
class region_ranges {
 public:
  // Takes [offset, offset + length) of `region` if free.
  bool try_take(const std::string& region, std::uint64_t offset, std::uint64_t length);
  // Takes the first free `length` bytes of `region` (of `size` bytes) at or
  // after `from`, wrapping round; nullopt when no gap is that long.
  std::optional<std::uint64_t> take_first_fit(const std::string& region, std::uint64_t size,
                                              std::uint64_t length, std::uint64_t from);
  void release(const std::string& region, std::uint64_t offset);
  // Keeps the range taken until release_deferred() (the phase's end).
  void defer(const std::string& region, std::uint64_t offset);
  void release_deferred();
  bool has_deferred();
  // Releases so far; wait() returns `released` when that changed, `blocked`
  // at once when every range of `region` still taken is deferred (nothing
  // can free one before the phase ends), `timed_out` at `deadline`.
  std::uint64_t releases();
  enum class wait_result : std::uint8_t { released, blocked, timed_out };
  wait_result wait(std::uint64_t seen, const std::string& region,
                   threads::clock::time_point deadline);

 private:
  std::vector<std::pair<std::string, std::uint64_t>> deferred_;
  threads::mutex mutex_;
  threads::condition_variable cv_;
  std::map<std::string, std::map<std::uint64_t, std::uint64_t>> taken_;  // offset -> end
  std::uint64_t releases_ = 0;
};

struct transport_slot {
  const transport_spec* spec = nullptr;
  std::unique_ptr<peer> p;
  threads::shared_mutex lock;
  std::atomic<std::uint32_t> incarnation{0};
  std::atomic<bool> up{false};
  bool shut_down = false;                      // by a shutdown event: stays down (under `lock`)
  std::map<std::string, registration_id> ids;  // region -> current id (0: unregistered)
};

struct relay_slot {
  std::string name;                 // the link's name, or "<initiator>-<target>-r<rail>"
  const link_spec* link = nullptr;  // null: a plain pass-through
  std::string initiator;            // a control link's only if it opens the segment
  std::string target;
  std::size_t rail = 0;
  std::unique_ptr<relays::relay> r;
  std::uint64_t started_us = 0;                         // the relay's clock zero on the run's clock
  std::multimap<std::string, relays::fault_id> faults;  // name -> installed
};

struct pair_slot {
  std::string initiator;
  std::string target;
  std::vector<relay_slot> rails;  // none when opened by address
  std::string opened_by;          // the control link whose address opens the segment, if any
  std::shared_ptr<runner_source> source = std::make_shared<runner_source>();
  std::atomic<segment_id> segment{0};
};

class scenario_run {
 public:
  scenario_run(const scenario& s, const run_options& o);
  ~scenario_run();
  run_result run();

  // workload.cpp
  struct stream_state;
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

 private:
  // runner.cpp
  result<void> setup();
  result<void> start_transport(transport_slot& t, std::uint32_t index, bool fresh_regions);
  result<void> register_region(transport_slot& t, const region_spec& r, bool fresh);
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

 public:
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
