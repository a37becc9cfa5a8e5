// Each end-to-end property catches a planted bug (docs/testing.md): with a
// planted-bug failpoint armed in every schedule, the property fails, its
// own checker names the violation, and rapidcheck shrinks the schedule to
// at most 3 faults, written as a scenario file that fails again when run
// (within 10 runs: see docs/properties.md, "Shrinking and nondeterminism").
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>

#include "faultlane/core/net.hpp"
#include "faultlane/sim/runner.hpp"
#include "properties.hpp"

// ThreadSanitizer, in this binary only: a replayed WRITE (the planted bug
// itself) can land while its first copy is still landing, so two target
// sessions write the same region bytes at once, and the planted bugs break
// the core on purpose in other ways too. Such a race is the defect under
// test; the properties report it through their checkers. The reports name
// no faultlane frame (the reactor performs the reads), so the suppression
// names what starts the racing threads: the io threads of the simulator's
// in-process transports (local_peer::start). It applies to these planted
// tests only; every other test binary reports every race and halts.
extern "C" __attribute__((visibility("default"), used)) const char* __tsan_default_suppressions() {
  return "race:local_peer::start\n";
}

namespace faultlane::props {
namespace {

void caught_and_shrunk(property_spec p, const std::string& planted, const std::string& checker) {
  if (!sim::failpoints_available()) GTEST_SKIP() << "planted bugs are failpoints; none in release";
  p.name = "planted_" + planted.substr(planted.find('.') + 1);
  p.planted = planted;
  p.cases = 60;  // stops at the first failure; most bugs show in the first few cases
  auto out = check_property(p);
  ASSERT_FALSE(out.passed) << planted << " went unnoticed";
  ASSERT_TRUE(out.counterexample);
  const auto& failing = out.failing_checkers;
  EXPECT_NE(std::find(failing.begin(), failing.end(), checker), failing.end())
      << "the minimal case fails other checkers only; see " << out.yaml_path;
  EXPECT_LE(fault_count(*out.counterexample), 3u) << out.yaml_path;
  // The file is what a person replays: it loads, and fails the same way.
  auto loaded = sim::load_scenario(out.yaml_path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  // Thread timing is not replayed in real time: a bug that needs a restart
  // to land while a WRITE is in flight shows in some runs of the same file,
  // not all. On the simulated world the first run fails, or none does.
  constexpr int replays_max = net::simulated ? 1 : 10;
  bool again = false;
  for (int i = 0; i < replays_max && !again; ++i) {
    sim::run_options o;
    o.seed = out.counterexample->seed;
    auto r = sim::run_scenario(loaded.value(), o);
    for (const auto& c : r.checkers) again = again || (c.name == checker && !c.passed());
  }
  EXPECT_TRUE(again) << out.yaml_path << " did not fail " << checker << " again";
}

// The "at most 3 faults" above rests on this: shrinking can empty any
// slot of the fault, failpoint and event lists, not only the last one. A
// property that fails whenever a schedule holds one kind of element must
// shrink, from every seed, to that one element alone. (With slots
// rapidcheck cannot empty, the elements drawn before it stayed in the
// counterexample.)
void shrinks_to_the_one(const std::string& what, const std::function<bool(const schedule&)>& bad) {
  gen_options g;
  g.faults_max = 4;
  g.failpoints_max = 4;
  g.events_max = 4;
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    std::optional<schedule> last_failing;
    const bool held = check_with_defaults(
        "e2e_shrinking." + what, 300, 60,
        [&] {
          const auto s = *gen_schedule(g);
          if (!bad(s)) return;
          last_failing = s;
          RC_FAIL(what);
        },
        seed);
    ASSERT_FALSE(held) << what << ", seed " << seed << ": no schedule held one";
    ASSERT_TRUE(last_failing);
    EXPECT_EQ(fault_count(*last_failing), 1u) << what << ", seed " << seed;
  }
}

TEST(e2e_shrinking, any_fault_can_go) {
  shrinks_to_the_one("a reset", [](const schedule& s) {
    return std::any_of(s.faults.begin(), s.faults.end(),
                       [](const fault_draw& f) { return f.kind == relays::fault_kind::reset; });
  });
}

TEST(e2e_shrinking, any_event_can_go) {
  shrinks_to_the_one("a drop_connections", [](const schedule& s) {
    return std::any_of(s.events.begin(), s.events.end(), [](const event_draw& e) {
      return e.kind == event_draw_kind::drop_connections;
    });
  });
}

TEST(e2e_shrinking, any_failpoint_can_go) {
  // The menu's last entry: a pick shrinks toward 0, so only the slot
  // holding it, emptied or kept, decides.
  const auto last = failpoint_menu.size() - 1;
  shrinks_to_the_one("the last failpoint", [last](const schedule& s) {
    return std::any_of(s.failpoints.begin(), s.failpoints.end(),
                       [last](const failpoint_draw& d) { return d.pick == last; });
  });
}

TEST(e2e_planted, a_task_finalized_twice_fails_exactly_once) {
  caught_and_shrunk(exactly_once_property(), "planted.finalize_twice", "exactly_once");
}

TEST(e2e_planted, a_replayed_ambiguous_write_fails_no_replay) {
  // In real time, relay faults only: an event or a failpoint changes which
  // WRITE turns ambiguous first from run to run, and a schedule that fails
  // only some of the time cannot shrink (a candidate must fail every run).
  // On the simulated world every run of a schedule is the same run: the
  // whole generator, events, failpoints and perturbation included.
  auto p = no_replay_property();
  p.gen.write_percent_min = 80;
  if constexpr (!net::simulated) {
    p.gen.events.clear();
    p.gen.failpoints_max = 0;
    p.gen.perturb = false;
    // A fixed seed. Each failing candidate runs 3 times and each run waits
    // out a progress timeout, so the cost follows the schedules a seed
    // draws: 11 s to 163 s under TSan over seeds 1-10. Seed 1 fails at its
    // first few cases and shrinks in 12-23 s under TSan (6-12 s under ASan),
    // so every run costs about the same. Random seeds of this property run
    // in e2e.no_replay and in the soak (docs/properties.md).
    p.seed = 1;
  }
  caught_and_shrunk(p, "planted.replay_ambiguous_write", "no_replay");
}

TEST(e2e_planted, a_shutdown_that_skips_the_drain_fails_drained_shutdown) {
  // As for the replay: relay faults only, no perturbation, and the shutdown
  // comes while a stall holds work, so that work is in flight at the
  // shutdown in every run (at an op count, a 1-byte op may finish first).
  auto p = drained_shutdown_property();
  p.gen.shutdown_on_a_stall = true;
  p.gen.events.clear();
  p.gen.failpoints_max = 0;
  p.gen.faults_max = 2;
  p.gen.perturb = false;
  caught_and_shrunk(p, "planted.shutdown_skip_drain", "drained_shutdown");
}

TEST(e2e_planted, a_stale_id_the_target_accepts_fails_stale_rejection) {
  auto p = stale_rejection_property();
  p.gen.events = {event_draw_kind::unregister};
  caught_and_shrunk(p, "planted.accept_stale_id", "stale_rejection");
}

}  // namespace
}  // namespace faultlane::props
