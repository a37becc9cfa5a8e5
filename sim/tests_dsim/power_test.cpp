// What the world catches every time that the real-time harness catches
// only sometimes: planted bugs (a test-only failpoint in the core that
// sends an ambiguous WRITE again) in the swarm at its original 500 ms
// progress deadline, and in the shrink test's schedule, caught and shrunk
// with one run per candidate; the same seeds pass without the bug.
#include <gtest/gtest.h>

#include "../tests/program_run.hpp"
#include "faultlane/sim/runner.hpp"
#include "faultlane/sim/shrink.hpp"

namespace faultlane::sim {
namespace {

constexpr const char* planted_point = "planted.replay_ambiguous_write";

std::string library_text(const std::string& name) {
  return test::read_file(std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios/" + name + ".yaml");
}

// The library's swarm with the 500 ms client progress deadline it had
// before real-time runs under load made it 1 s; `planted`: the replay bug
// armed from the start (optional: a seed with no ambiguous WRITE never
// reaches it).
scenario swarm_at_500ms(bool planted) {
  auto text = library_text("swarm");
  const auto at = text.find("progress_timeout_ms: 1000");
  EXPECT_NE(at, std::string::npos);
  text.replace(at, 25, "progress_timeout_ms: 500");
  if (planted) {
    text += std::string("events:\n  - at: {phase: fault}\n    do: arm\n    failpoint: {name: ") +
            planted_point + ", action: return_error, optional: true}\n";
  }
  auto s = parse_scenario(text, "swarm500.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? s.value() : scenario{};
}

std::uint64_t planted_fired(const run_result& r) {
  if (!r.hist) return 0;
  auto it = r.hist->failpoints_fired.find(planted_point);
  return it == r.hist->failpoints_fired.end() ? 0 : it->second;
}

// Seeds 1..4 and 5..8, each half a test of its own, so that ctest runs them
// side by side: the eight in one test took 80 s alone on two idle cores and
// past its 300 s limit under three test suites. The world is
// deterministic, so which seeds reach the bug is fixed: four of 1..4, three
// of 5..8 (the `reached` property in the test's XML).
class sim_on_world_swarm_500ms : public ::testing::TestWithParam<std::uint64_t> {};

INSTANTIATE_TEST_SUITE_P(seeds, sim_on_world_swarm_500ms, ::testing::Values(1u, 5u));

TEST_P(sim_on_world_swarm_500ms, catches_the_planted_replay_on_every_seed_it_reaches) {
  const auto healthy = swarm_at_500ms(false);
  const auto planted = swarm_at_500ms(true);
  std::size_t reached = 0;
  for (std::uint64_t seed = GetParam(); seed < GetParam() + 4; ++seed) {
    run_options o;
    o.seed = seed;
    const auto ok = run_scenario(healthy, o);
    EXPECT_TRUE(ok.passed) << "seed " << seed << " without the bug:\n" << failure_text(ok);
    const auto bad = run_scenario(planted, o);
    if (planted_fired(bad) == 0) {
      EXPECT_TRUE(bad.passed) << failure_text(bad);  // never reached: nothing to catch
      continue;
    }
    ++reached;
    EXPECT_EQ(first_failing_checker(bad), "no_replay") << "seed " << seed << failure_text(bad);
    if (reached == 1) {  // and again: the same failure, the same run
      const auto again = run_scenario(planted, o);
      EXPECT_EQ(again.digest, bad.digest) << "seed " << seed;
    }
  }
  RecordProperty("reached", static_cast<int>(reached));
  EXPECT_GE(reached, 3u);  // most seeds have an ambiguous WRITE to replay
}

// The shrink test's schedule (sim/tests/shrink_test.cpp) in
// planted_replay.yaml: eight faults and three events, of which only the
// lost ACK exposes the planted replay.
std::string shrink_schedule() {
  return test::read_file(std::string(FAULTLANE_SOURCE_DIR) + "/sim/tests/planted_replay.yaml");
}

TEST(sim_on_world_power, the_planted_replay_is_caught_and_shrunk_with_one_run_per_candidate) {
  auto s = parse_scenario(shrink_schedule(), "planted.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto healthy = s.value();
  healthy.events.erase(healthy.events.begin());  // no arm: the core as shipped
  healthy.needs_failpoints = false;
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    run_options o;
    o.seed = seed;
    const auto bad = run_scenario(s.value(), o);
    EXPECT_EQ(first_failing_checker(bad), "no_replay") << "seed " << seed << failure_text(bad);
    const auto ok = run_scenario(healthy, o);
    EXPECT_TRUE(ok.passed) << "seed " << seed << " without the bug:\n" << failure_text(ok);
  }
  run_options o;
  o.seed = 3;
  const auto original = run_scenario(s.value(), o);
  ASSERT_EQ(first_failing_checker(original), "no_replay");
  shrink_options so;
  so.checker = "no_replay";
  for (const auto& c : original.checkers) {
    if (c.name == "no_replay") so.evidence = c.violations.front().evidence;
  }
  so.runs_per_candidate = 1;
  so.run = o;
  const auto out = shrink(s.value(), so);
  ASSERT_TRUE(out.confirmed);
  const auto& faults = out.minimal.links.front().faults;
  ASSERT_EQ(faults.size(), 1u) << to_yaml(out.minimal);
  EXPECT_EQ(faults.front().spec.name, "ack_lost");
  ASSERT_EQ(out.minimal.events.size(), 1u) << to_yaml(out.minimal);
  EXPECT_EQ(out.minimal.events.front().action, event_action::arm);
  // Each candidate ran once: the count of runs is the count of candidates.
  EXPECT_GT(out.candidates_run, 0u);
}

}  // namespace
}  // namespace faultlane::sim
