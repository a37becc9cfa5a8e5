// Shrinking finds the one fault that matters: a scenario with 8 faults and
// 3 events (plus the event that plants a bug in the core through a
// test-only failpoint: it sends a WRITE again after its connection broke)
// shrinks to the one fault that exposes the bug, and the file it writes,
// run by the program as a user would (its own seed), still fails the same
// checker.
#include <gtest/gtest.h>

#include "faultlane/sim/runner.hpp"
#include "faultlane/sim/shrink.hpp"
#include "program_run.hpp"

namespace faultlane::sim {
namespace {

// The schedule: eight faults and three events, and the event that arms the
// planted bug.
std::string planted() {
  return test::read_file(std::string(FAULTLANE_SOURCE_DIR) + "/sim/tests/planted_replay.yaml");
}

TEST(shrink, a_planted_replay_shrinks_to_the_one_fault_that_exposes_it) {
  if (!failpoints_available()) GTEST_SKIP() << "the planted bug needs failpoints";
  auto s = parse_scenario(planted(), "planted.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s.value().links.front().faults.size(), 8u);
  ASSERT_EQ(s.value().events.size(), 4u);

  run_options o;
  o.seed = 3;
  auto original = run_scenario(s.value(), o);
  ASSERT_FALSE(original.passed);
  ASSERT_EQ(first_failing_checker(original), "no_replay") << failure_text(original);
  ASSERT_EQ(original.checkers[2].name, "no_replay");

  shrink_options so;
  so.checker = "no_replay";
  so.evidence = original.checkers[2].violations.front().evidence;  // no_replay's first
  so.runs_per_candidate = 2;
  so.run = o;
  auto out = shrink(s.value(), so);
  ASSERT_TRUE(out.confirmed);
  const auto& faults = out.minimal.links.front().faults;
  ASSERT_EQ(faults.size(), 1u) << to_yaml(out.minimal);
  EXPECT_EQ(faults.front().spec.name, "ack_lost");
  ASSERT_EQ(out.minimal.events.size(), 1u) << to_yaml(out.minimal);
  EXPECT_EQ(out.minimal.events.front().action, event_action::arm);
  EXPECT_LE(out.minimal.streams.front().count, 12u);

  // What it writes (faultlane-sim run --shrink writes to_yaml(minimal) as
  // NAME.min.yaml) replays as written: its own seed, run by the program
  // with no --seed, fails the same checker.
  // Its opening comment says in words what still fails, with the original
  // violation as the checker wrote it (numbers and all), not the masked
  // form the shrinker compares candidates by.
  const std::string text = to_yaml(out.minimal);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "# Shrunk from planted (seed 3): it still fails the no_replay checker the same way.")
      << text;
  EXPECT_NE(text.find("# The original run's violation: " + so.evidence + ".\n"), std::string::npos)
      << text;
  ASSERT_NE(evidence_form(so.evidence), so.evidence);  // it has numbers to mask
  EXPECT_EQ(text.find(evidence_form(so.evidence)), std::string::npos) << text;
  auto path = test::write_temp("planted.min.yaml", text);
  auto reloaded = load_scenario(path);
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  EXPECT_EQ(reloaded.value().seed, 3u);
  auto replay = test::run_program({"run", path});
  EXPECT_EQ(replay.code, 1) << replay.text;
  EXPECT_NE(replay.text.find("FAILED planted.min seed 3\n"), std::string::npos) << replay.text;
  EXPECT_NE(replay.text.find(": FAIL no_replay\n"), std::string::npos) << replay.text;
}

TEST(shrink, the_same_failure_means_the_same_evidence_numbers_aside) {
  // A run of digits, or 0x and its lowercase hex digits, is one '#'.
  EXPECT_EQ(evidence_form("server2 executed WRITE request 0x1f00000002 2 times (seqs 3, 4)"),
            "server# executed WRITE request # # times (seqs #, #)");
  EXPECT_EQ(evidence_form("0xg 10x5 0xAB 0x"), "#xg #x# #xAB #x");
  EXPECT_EQ(evidence_form(""), "");
  EXPECT_EQ(evidence_form("WRITE sent twice: request 0x1f00000002 seen 2 times"),
            evidence_form("WRITE sent twice: request 0xab seen 3 times"));
  EXPECT_NE(evidence_form("expect.counts writes.ok: 99 ops, expected 100"),
            evidence_form("stream writes: WRITE ended ambiguous_write, which the stream does "
                          "not allow (ok)"));
}

TEST(shrink, without_the_planted_bug_the_same_schedule_passes) {
  if (!failpoints_available()) GTEST_SKIP() << "the planted bug needs failpoints";
  auto s = parse_scenario(planted(), "planted.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto healthy = s.value();
  healthy.events.erase(healthy.events.begin());  // no arm: the core as shipped
  healthy.needs_failpoints = false;
  run_options o;
  o.seed = 3;
  auto r = run_scenario(healthy, o);
  EXPECT_TRUE(r.passed) << failure_text(r);
}

}  // namespace
}  // namespace faultlane::sim
