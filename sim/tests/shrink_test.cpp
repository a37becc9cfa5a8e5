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
  // Thread timing is not replayed in real time: the minimal schedule fails
  // in most runs, not all (the shrinker's two confirming runs both passed
  // once, in a tsan suite four tests at a time). Confirmed there, or within
  // ten more runs, as the planted properties are (docs/properties.md).
  bool fails_again = out.confirmed;
  for (int i = 0; i < 10 && !fails_again; ++i) {
    const auto again = run_scenario(out.minimal, o);
    for (const auto& c : again.checkers) {
      fails_again = fails_again || (c.name == "no_replay" && !c.passed());
    }
  }
  ASSERT_TRUE(fails_again) << to_yaml(out.minimal);
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

// A scenario that fails its expectations however small it gets (an op
// done where none may be), with two link faults, an expectation on each,
// and two events that change nothing it fails for.
const char* always_failing = R"(
transports: [{name: a}, {name: b}]
regions: [{name: r, transport: b, size: 4KiB}]
workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 4, depth: 2}]
links:
  - initiator: a
    target: b
    faults:
      - {type: latency, dir: up, ms: 1, name: lat, optional: true}
      - {type: latency, dir: down, ms: 1, name: lat2, optional: true}
phases: [{name: p}]
events:
  - {at: {phase: p}, do: arm, failpoint: {name: lane.enqueue, action: delay, delay_ms: 1,
     optional: true}}
  - {at: {after_phase: p}, do: disarm, failpoint: lane.enqueue}
expect:
  counts: {s.done: 0}
  faults: {"a-b-r0/lat": ">=0", lat2: ">=0"}
)";

// Rule: the shrinker drops every part the failure does not need (link
// faults and events, with the expectations that name a dropped fault, so
// the candidate still loads), lowers the numbers, and names, seeds and
// confirms what it kept.
TEST(shrink, parts_the_failure_does_not_need_are_dropped_with_their_expectations) {
  if (!failpoints_available()) GTEST_SKIP() << "the scenario arms a failpoint";
  auto s = parse_scenario(always_failing, "always.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE(s.value().needs_failpoints);
  shrink_options so;
  so.checker = "expectations";
  so.runs_per_candidate = 1;
  so.run.seed = 5;
  std::size_t logged = 0;
  so.log = [&](const std::string&) { ++logged; };
  const auto out = shrink(s.value(), so);
  ASSERT_TRUE(out.confirmed);
  EXPECT_TRUE(out.minimal.links.front().faults.empty()) << to_yaml(out.minimal);
  EXPECT_TRUE(out.minimal.events.empty()) << to_yaml(out.minimal);
  EXPECT_TRUE(out.minimal.expect.faults.empty()) << to_yaml(out.minimal);
  EXPECT_EQ(out.minimal.expect.counts.size(), 1u);
  EXPECT_FALSE(out.minimal.needs_failpoints);
  EXPECT_EQ(out.minimal.streams.front().count, 1u);
  EXPECT_EQ(out.minimal.streams.front().depth, 1u);
  EXPECT_EQ(out.minimal.name, "always.min");
  EXPECT_EQ(out.minimal.seed, 5u);
  EXPECT_EQ(logged, out.steps_kept);
  EXPECT_GE(out.candidates_run, out.steps_kept + 1);
  EXPECT_TRUE(parse_scenario(to_yaml(out.minimal), "always.min.yaml").ok());
}

// A scenario whose armed failpoint never fires (its READs never reach a
// WRITE's ack), with a fault and a disarm it does not need.
const char* unfired_failpoint = R"(
transports: [{name: a}, {name: b}]
regions: [{name: r, transport: b, size: 4KiB}]
workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 2, depth: 1}]
links:
  - initiator: a
    target: b
    faults: [{type: latency, dir: up, ms: 1, name: lat, optional: true}]
phases: [{name: p}]
events:
  - {at: {phase: p}, do: arm, failpoint: {name: server.before_write_ack, action: return_error,
     error: busy}}
  - {at: {after_phase: p}, do: disarm, failpoint: server.before_write_ack}
)";

// Rule: a shrunk scenario needs failpoints exactly while one of its events
// arms one: here the arm is what fails, so it stays, and the disarm goes.
TEST(shrink, a_shrunk_scenario_needs_failpoints_while_an_event_arms_one) {
  if (!failpoints_available()) GTEST_SKIP() << "the scenario arms a failpoint";
  auto s = parse_scenario(unfired_failpoint, "unfired.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  run_options o;
  o.seed = 5;
  const auto original = run_scenario(s.value(), o);
  ASSERT_EQ(first_failing_checker(original), "expectations") << failure_text(original);
  shrink_options so;
  so.checker = "expectations";
  so.evidence = original.checkers.back().violations.front().evidence;
  so.runs_per_candidate = 1;
  so.run = o;
  const auto out = shrink(s.value(), so);
  ASSERT_TRUE(out.confirmed);
  ASSERT_EQ(out.minimal.events.size(), 1u) << to_yaml(out.minimal);
  EXPECT_EQ(out.minimal.events.front().action, event_action::arm);
  EXPECT_TRUE(out.minimal.needs_failpoints);
}

// A stream of `count` ops, `depth` deep in batches of `batch`, of sizes
// `size`, and an event after `ops` of them.
scenario numbers(std::uint64_t count, std::size_t depth, std::size_t batch, size_dist size,
                 std::uint64_t ops) {
  scenario s;
  stream_spec st;
  st.name = "s";
  st.count = count;
  st.depth = depth;
  st.batch = batch;
  st.size = std::move(size);
  s.streams.push_back(st);
  event_spec e;
  e.when = trigger_kind::stream_ops;
  e.stream = "s";
  e.ops = ops;
  s.events.push_back(e);
  return s;
}

size_dist values(std::vector<std::uint64_t> v) {
  size_dist d;
  d.values = std::move(v);
  return d;
}

size_dist range(std::uint64_t lo, std::uint64_t hi) {
  size_dist d;
  d.range = true;
  d.lo = lo;
  d.hi = hi;
  return d;
}

// What one candidate changed, in words ("count 5" for a count now 5).
std::string change(const scenario& from, const scenario& to) {
  const auto& a = from.streams[0];
  const auto& b = to.streams[0];
  std::string out;
  auto note = [&](const char* what, auto was, auto now) {
    if (was != now)
      out += (out.empty() ? "" : ", ") + std::string(what) + " " + std::to_string(now);
  };
  note("count", a.count, b.count);
  note("depth", a.depth, b.depth);
  note("batch", a.batch, b.batch);
  note("lo", a.size.lo, b.size.lo);
  note("hi", a.size.hi, b.size.hi);
  if (a.size.values != b.size.values) {
    out += (out.empty() ? "" : ", ") + std::string("values");
    for (auto v : b.size.values) out += " " + std::to_string(v);
  }
  note("ops", from.events[0].ops, to.events[0].ops);
  return out;
}

std::vector<std::string> changes(const scenario& s) {
  std::vector<std::string> out;
  for (const auto& c : lowered(s)) out.push_back(change(s, c));
  return out;
}

using texts = std::vector<std::string>;

// Rule: each lowering step changes one number: a count halves to at least 1,
// a depth halves to at least 1 and takes the batch down with it, a batch goes
// to 1, an event's ops halve.
TEST(shrink, each_lowering_step_halves_one_number) {
  EXPECT_EQ(changes(numbers(9, 8, 8, values({64}), 9)),
            (texts{"count 4", "depth 4, batch 4", "batch 1", "ops 4"}));
  EXPECT_EQ(changes(numbers(3, 3, 2, values({64}), 3)),
            (texts{"count 1", "depth 1, batch 1", "batch 1", "ops 1"}));
  EXPECT_EQ(changes(numbers(2, 2, 1, values({64}), 2)), (texts{"count 1", "depth 1", "ops 1"}));
  EXPECT_EQ(changes(numbers(2, 6, 2, values({64}), 1)), (texts{"count 1", "depth 3", "batch 1"}));
}

// Rule: nothing is offered at its least: a count, depth and batch of 1, one
// size, a range of one size, an event after one op.
TEST(shrink, nothing_at_its_least_is_lowered) {
  EXPECT_TRUE(lowered(numbers(1, 1, 1, values({64}), 1)).empty());
  EXPECT_TRUE(lowered(numbers(1, 1, 1, range(7, 7), 1)).empty());
  // A duration stream (count 0) keeps its duration.
  EXPECT_TRUE(lowered(numbers(0, 1, 1, values({64}), 1)).empty());
  // An event of another trigger has no ops to lower.
  auto s = numbers(1, 1, 1, values({64}), 1);
  s.events[0].when = trigger_kind::phase_start;
  s.events[0].ops = 8;
  EXPECT_TRUE(lowered(s).empty());
}

// Rule: a size range's top halves towards its bottom; a size list is cut to
// its first half, or loses its first value.
TEST(shrink, a_size_range_narrows_and_a_size_list_shrinks) {
  EXPECT_EQ(changes(numbers(1, 1, 1, range(10, 30), 1)), texts{"hi 20"});
  EXPECT_EQ(changes(numbers(1, 1, 1, range(10, 11), 1)), texts{"hi 10"});
  EXPECT_EQ(changes(numbers(1, 1, 1, values({1, 2, 3, 4, 5}), 1)),
            (texts{"values 1 2", "values 2 3 4 5"}));
  EXPECT_EQ(changes(numbers(1, 1, 1, values({8, 9}), 1)), (texts{"values 8", "values 9"}));
  // A range's values are not a list, nor a list's bounds a range.
  auto s = numbers(1, 1, 1, range(10, 10), 1);
  s.streams[0].size.values = {1, 2};
  EXPECT_TRUE(lowered(s).empty());
  s = numbers(1, 1, 1, values({64}), 1);
  s.streams[0].size.lo = 1;
  s.streams[0].size.hi = 64;
  EXPECT_TRUE(lowered(s).empty());
}

// Rule: each stream and each event is lowered on its own, in order.
TEST(shrink, every_stream_and_event_is_lowered_on_its_own) {
  auto s = numbers(4, 1, 1, values({64}), 1);
  s.streams.push_back(s.streams[0]);
  s.streams[1].name = "t";
  s.streams[1].count = 6;
  s.events.push_back(s.events[0]);
  s.events[1].ops = 4;
  const auto out = lowered(s);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].streams[0].count, 2u);
  EXPECT_EQ(out[0].streams[1].count, 6u);
  EXPECT_EQ(out[1].streams[0].count, 4u);
  EXPECT_EQ(out[1].streams[1].count, 3u);
  EXPECT_EQ(out[2].events[0].ops, 1u);
  EXPECT_EQ(out[2].events[1].ops, 2u);
  EXPECT_EQ(out[2].streams[1].count, 6u);
}

}  // namespace
}  // namespace faultlane::sim
