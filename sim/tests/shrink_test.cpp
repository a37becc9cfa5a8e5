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

const char* planted = R"(
# Eight faults and three events; only the lost ACK exposes the planted replay.
transports:
  - name: client
    config: {progress_timeout_ms: 250, connections_per_peer: 1, reconnect_cooldown_ms: 10}
  - {name: server}
regions:
  - {name: data, transport: server, size: 256KiB}
links:
  - initiator: client
    target: server
    faults:
      - {type: latency, dir: up, ms: 1, name: lat_up}
      - {type: slicer, dir: down, size: 700, variation: 300, delay_us: 0, name: slicer_down}
      - {type: bandwidth, dir: up, bytes_per_s: 100000000, name: wide_up}
      - {type: drop_frame, dir: down, opcode: write, count: 1, name: ack_lost}
      - {type: slow_close, dir: down, ms: 1, name: slow_fin, optional: true}
      - {type: reset, dir: up, frame: 100000, name: late_reset, optional: true}
      - {type: stall, dir: down, frame: 100000, name: late_stall, optional: true}
      - {type: corrupt, dir: up, field: reserved, frame: 100000, name: late_corrupt, optional: true}
workload:
  - name: writes
    from: client
    region: data
    ops: {read: 1, write: 1}
    size: [1KiB, 4KiB]
    count: 12
    allow: [ok, ambiguous_write, connection_failed]  # drop_connections may cut an op
events:
  - at: {phase: fault}
    do: arm
    failpoint: {name: planted.replay_ambiguous_write, action: return_error, count: 1}
  - {at: {stream: writes, ops: 4}, do: drop_connections, transport: client, target: server}
  - at: {stream: writes, ops: 6}
    do: add_fault
    link: client-server-r0
    fault: {type: latency, dir: down, ms: 1, name: added_lat}
  - {at: {stream: writes, ops: 8}, do: remove_fault, link: client-server-r0, fault: added_lat}
expect:
  checkers:
    slice_coverage: {run: false, reason: "one rail"}
)";

TEST(shrink, a_planted_replay_shrinks_to_the_one_fault_that_exposes_it) {
  if (!failpoints_available()) GTEST_SKIP() << "the planted bug needs failpoints";
  auto s = parse_scenario(planted, "planted.yaml");
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
  auto path = test::write_temp("planted.min.yaml", to_yaml(out.minimal));
  auto reloaded = load_scenario(path);
  ASSERT_TRUE(reloaded.ok()) << reloaded.error().message;
  EXPECT_EQ(reloaded.value().seed, 3u);
  auto replay = test::run_program({"run", path});
  EXPECT_EQ(replay.code, 1) << replay.text;
  EXPECT_NE(replay.text.find("FAILED planted.min seed 3\n"), std::string::npos) << replay.text;
  EXPECT_NE(replay.text.find(": FAIL no_replay\n"), std::string::npos) << replay.text;
}

TEST(shrink, the_same_failure_means_the_same_evidence_numbers_aside) {
  EXPECT_EQ(evidence_form("WRITE sent twice: request 0x1f00000002 seen 2 times"),
            evidence_form("WRITE sent twice: request 0xab seen 3 times"));
  EXPECT_NE(evidence_form("expect.counts writes.ok: 99 ops, expected 100"),
            evidence_form("stream writes: WRITE ended ambiguous_write, which the stream does "
                          "not allow (ok)"));
}

TEST(shrink, without_the_planted_bug_the_same_schedule_passes) {
  if (!failpoints_available()) GTEST_SKIP() << "the planted bug needs failpoints";
  auto s = parse_scenario(planted, "planted.yaml");
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
