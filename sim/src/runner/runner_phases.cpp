// runner_phases: a run from start to verdict: the phases in order, each
// with its streams and callers, the triggers polled while they run, and the
// checkers (runner.hpp). Setup and the end-of-run sweep (stats, region
// bytes, ordered shutdown, relay records) are the topology's
// (run_topology.cpp).
#include <csignal>

#include <fmt/format.h>

#include "faultlane/base/hash.hpp"
#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "runner/run_digest.hpp"
#include "runner/run_state.hpp"

#if defined(FAULTLANE_DSIM)
#include "faultlane/dsim/network.hpp"
#endif

namespace faultlane::sim {
namespace {

constexpr auto poll_interval = std::chrono::milliseconds(5);
constexpr auto stats_interval_us = 200'000;
constexpr std::uint64_t liveness_probe_ops = 4;

// `load:` on the simulated world, or a note that real time has the
// machine's own; the text is the run's note.
std::string apply_load(const load_spec& load) {
#if defined(FAULTLANE_DSIM)
  dsim::world::current().set_load({.handler_cost_max = std::chrono::microseconds(load.cost_us),
                                   .hiccup_probability = load.hiccup_probability,
                                   .hiccup_max = std::chrono::milliseconds(load.hiccup_ms)});
  return fmt::format("load: every handler up to {} us, hiccups of {:g}..{} ms with probability {}",
                     load.cost_us, load.hiccup_ms / 2.0, load.hiccup_ms, load.hiccup_probability);
#else
  (void)load;
  return "load: modelled on the simulated world only (docs/dsim.md); this real-time run has "
         "the machine's own load";
#endif
}

}  // namespace

// A thread for each stream of the phase and each client of its callers.
std::vector<threads::thread> scenario_run::launch_phase(const phase_spec& ph) {
  std::vector<threads::thread> streams;
  auto launch = [&](const stream_spec& st, std::uint64_t count) {
    streams.emplace_back([this, &st, &ph, count] { run_stream(st, ph.name, ph.liveness, count); });
  };
  bool any = false;
  for (const auto& st : s_.streams) {
    const auto& phase = st.phase.empty() ? phases_.front().name : st.phase;
    if (phase != ph.name) continue;
    any = true;
    launch(st, st.count);
  }
  for (const auto& c : s_.control) {
    if ((c.phase.empty() ? phases_.front().name : c.phase) != ph.name) continue;
    for (std::size_t k = 0; k < c.clients; ++k) {
      streams.emplace_back([this, &c, k] { run_caller(c, k); });
    }
  }
  // A liveness phase with no streams of its own probes every stream's
  // path with a few ops of its shape, unless an event shut a side down.
  if (ph.liveness && !any) {
    for (const auto& st : s_.streams) {
      const auto& target = topology_.region(st.region).transport;
      if (!topology_.transport(st.from).up || !topology_.transport(target).up) {
        rec_.add_mark("note", "no liveness probe for " + st.name + ": a side was shut down");
        continue;
      }
      launch(st, liveness_probe_ops);
    }
  }
  return streams;
}

void scenario_run::run_phase(const phase_spec& ph) {
  rec_.add_mark("phase", "phase " + ph.name + " begins");
  const auto start_seq = rec_.next_seq();
  const auto start_us = rec_.now_us();
  if (ph.heal) events_.heal();
  events_.phase(trigger_kind::phase_start, ph.name);
  auto streams = launch_phase(ph);
  // Poll triggers and progress while the streams run; joining below
  // returns when they have (each stream bounds its own waits).
  std::uint64_t last_stats = rec_.now_us();
  std::atomic<bool> done{false};
  threads::thread joiner([&] {
    for (auto& t : streams) t.join();
    done = true;
  });
  std::uint64_t last_progress = 0;
  while (!done) {
    threads::sleep_for(poll_interval);  // sleep-ok: the runner's poll of relay counters
    events_.poll_faults();
    if (rec_.now_us() - last_progress >= 100'000) {
      report_progress(ph.name);
      last_progress = rec_.now_us();
    }
    if (rec_.enabled() && rec_.now_us() - last_stats >= stats_interval_us) {
      topology_.record_stats_of_each_up();
      last_stats = rec_.now_us();
    }
  }
  joiner.join();
  if (ranges_.has_deferred()) topology_.quiesce_links();
  ranges_.release_deferred();
  if (ph.settle_ms > 0) {
    // A settle period is a wait by design: the scenario asks for time to pass.
    threads::sleep_for(std::chrono::milliseconds(ph.settle_ms));
  }
  events_.poll_faults();
  events_.phase(trigger_kind::phase_end, ph.name);
  rec_.edit([&](history& h) {
    h.phases.push_back({ph.name, ph.heal, ph.liveness, ph.deadline_ms, start_seq, rec_.next_seq(),
                        start_us, rec_.now_us()});
  });
}

void scenario_run::finish() {
  if (s_.perturb) failpoint::perturb_off();
  topology_.finish();
  events_.disarm_every_failpoint();
}

run_result scenario_run::run() {
  // Wall time for the report; the run's own deadline is on its clock
  // (virtual time in the dsim build).
  const auto started = std::chrono::steady_clock::now();
  deadline_ = threads::clock::now() + std::chrono::milliseconds(s_.timeout_ms);
  run_result r;
  r.scenario = s_.name;
  r.file = s_.file;
  r.seed = seed_;
  r.replay = fmt::format("{} {} --seed {}", o_.replay_command, s_.file, seed_);
  if (s_.needs_failpoints && !failpoints_available()) {
    r.skipped = true;
    r.passed = true;
    r.skip_reason = "arms failpoints; this build has none (use the debug, asan or tsan preset)";
    return r;
  }
  if (s_.timing && !timing_available()) {
    r.skipped = true;
    r.passed = true;
    r.skip_reason =
        "timing: its latency bounds hold in an optimized build without sanitizers (the release "
        "preset; ci/demo runs it)";
    return r;
  }
  for (const auto& st : s_.streams) planned_[st.name] = st.count;
  rec_.add_mark("note", fmt::format("seed {}", seed_));
  // Off again in finish(); a build without failpoints has no points to perturb.
  if (s_.perturb && failpoints_available()) {
    failpoint::perturb_on(
        {stable_hash(seed_ ^ 0x7065727475726221ull), s_.perturb->probability, s_.perturb->max_us});
    rec_.add_mark("note", fmt::format("perturbation: probability {}, max_us {}",
                                      s_.perturb->probability, s_.perturb->max_us));
  }
  if (s_.load) rec_.add_mark("note", apply_load(*s_.load));
  if (auto ok = topology_.setup(); !ok) {
    error_.set("setup: " + ok.error().message);
  } else {
    for (const auto& ph : phases_) run_phase(ph);
  }
  if (timed_out_) {
    error_.set(fmt::format("timed out after timeout_ms {} with work in flight", s_.timeout_ms));
  }
  finish();
  report_progress("done");
  const auto judged = std::chrono::steady_clock::now();
  r = judge(std::move(r));
  const auto now = std::chrono::steady_clock::now();
  r.check_seconds = std::chrono::duration<double>(now - judged).count();
  r.seconds = std::chrono::duration<double>(now - started).count();
  return r;
}

run_result scenario_run::judge(run_result r) {
  auto h = std::make_shared<history>(rec_.take());
  h->seed = seed_;
  h->slice_step_bytes = limits::slice_step_bytes;
  r.ops_done = rec_.ops_done();
  r.ops_total = h->ops.size();
  for (const auto& name : topology_.fault_names()) {
    std::uint64_t n = 0;
    for (const auto& l : h->links) {
      auto it = l.counters.find(name);
      if (it != l.counters.end()) n += it->second;
    }
    r.faults_fired[name] = n;
  }
  r.error = error_.get();
  if (rec_.overflowed() && r.error.empty()) {
    r.error = fmt::format(
        "more than {} core events: the history stopped recording (a runaway "
        "loop in the core?)",
        recorder::events_max);
  }
  if (rec_.enabled()) r.checkers = run_checkers(s_, *h);
  r.callers = summarize_callers(s_, *h);
  r.passed = r.error.empty() && std::all_of(r.checkers.begin(), r.checkers.end(),
                                            [](const auto& c) { return c.passed(); });
  r.counts = count_history(*h);
  r.hist = std::move(h);
  return r;
}

namespace {

run_result run_in_this_build(const scenario& s, const run_options& options) {
#if defined(FAULTLANE_DSIM)
  const auto wall_started = std::chrono::steady_clock::now();
  dsim::world w(options.seed, std::max<std::size_t>(options.trace_events, 1));
  run_result r;
  {
    dsim::network network(w);
    {
      scenario_run run(s, options);
      r = run.run();
    }  // its transports and relays close on the world, before the network goes
    r.deterministic = true;
    r.virtual_seconds = std::chrono::duration<double>(w.now().time_since_epoch()).count();
    r.digest = run_digest(w.digest(), r);
    if (options.trace_events > 0) r.trace = w.trace_text(options.trace_events);
  }
  r.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_started).count();
  return r;
#else
  scenario_run run(s, options);
  return run.run();
#endif
}

}  // namespace

run_result run_scenario(const scenario& s, const run_options& options) {
  // A child that dies mid-command must not take the runner with it.
  std::signal(SIGPIPE, SIG_IGN);
  // The probes this run reached: on the world this thread's alone (the
  // world runs here), else the process's, other runs at the same time
  // included. Added after the digest and the verdict, which never read them.
  const auto before = probes::snapshot();
  auto r = run_in_this_build(s, options);
  r.probes = probes::delta(before, probes::snapshot());
  return r;
}

}  // namespace faultlane::sim
