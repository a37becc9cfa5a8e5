// runner: what a build can run, and a scenario run's progress reports
// (runner.hpp). Phases and the verdict are in runner_phases.cpp, streams in
// workload.cpp, the topology in run_topology.cpp, events in
// event_engine.cpp.
#include "runner/run_state.hpp"

namespace faultlane::sim {

bool failpoints_available() noexcept {
#if defined(FAULTLANE_FAILPOINTS_ENABLED)
  return true;
#else
  return false;
#endif
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FAULTLANE_SIM_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULTLANE_SIM_SANITIZED 1
#endif

bool timing_available() noexcept {
#if defined(__OPTIMIZE__) && !defined(FAULTLANE_SIM_SANITIZED)
  return true;
#else
  return false;
#endif
}

scenario_run::scenario_run(const scenario& s, const run_options& o)
    : s_(s),
      o_(o),
      seed_(o.seed),
      rec_(o.record),
      topology_(s, o, rec_),
      events_(s, topology_, rec_, error_) {
  phases_ = s_.phases;
  if (phases_.empty()) {
    phases_.push_back({"fault"});
    phases_.push_back({"heal", true});
    phases_.push_back({"liveness", false, true});
  }
}

scenario_run::~scenario_run() = default;

void scenario_run::report_progress(const std::string& phase) {
  if (!o_.on_progress) return;
  progress p;
  p.scenario = s_.name;
  p.phase = phase;
  p.ops_done = rec_.ops_done();
  for (const auto& [name, n] : planned_) p.ops_total += n;
  p.faults_fired = topology_.faults_fired();
  p.elapsed_s = static_cast<double>(rec_.now_us()) / 1e6;
  o_.on_progress(p);
}

}  // namespace faultlane::sim
