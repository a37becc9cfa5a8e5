// Tests of the expectations checker, run_checkers() and describe(): the
// scenario is built by hand (its parser is tested on its own), and each
// expectation is broken on its own.
#include <gtest/gtest.h>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

link_fault fault(relays::fault_kind kind, relays::direction dir, std::string name = {},
                 bool optional = false) {
  link_fault f;
  f.spec.kind = kind;
  f.spec.dir = dir;
  f.spec.name = std::move(name);
  f.optional = optional;
  return f;
}

scenario clean_scenario() {
  scenario s;
  s.name = "clean";
  s.transports = {transport_spec{.name = "client"}, transport_spec{.name = "server", .rails = 2}};
  s.regions = {region_spec{.name = "buf", .transport = "server", .size = region_size}};
  for (std::size_t rail = 0; rail < 2; ++rail) {
    link_spec l;
    l.name = "client-server-r" + std::to_string(rail);
    l.initiator = "client";
    l.target = "server";
    l.rail = rail;
    s.links.push_back(l);
  }
  s.links[0].faults.push_back(fault(relays::fault_kind::latency, relays::direction::up));
  s.links[1].faults.push_back(
      fault(relays::fault_kind::reset, relays::direction::down, "reset.down", true));
  for (const char* name : {"writes", "reads", "live"}) {
    stream_spec st;
    st.name = name;
    st.from = "client";
    st.region = "buf";
    s.streams.push_back(st);
  }
  s.phases = {phase_spec{.name = "fault"}, phase_spec{.name = "live", .liveness = true}};
  s.expect.counts = {{"writes.ok", {2, 2}}, {"reads.done", {2, 2}}};
  s.expect.stats = {{"client.tasks_completed", {1, UINT64_MAX}}};
  return s;
}

world fired_world() {
  auto w = clean_world();
  w.h.links[0].counters["latency.up"] = 4;
  return w;
}

TEST(expectations, clean_history_passes) {
  auto w = fired_world();
  auto r = check_expectations(clean_scenario(), w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 4u + 2u + 1u + 1u);  // ops, counts, declared fault, stats
}

TEST(expectations, an_outcome_the_stream_does_not_allow) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.counts.clear();
  w.op(1).outcome = status::ambiguous_write;
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "stream writes: WRITE ended ambiguous_write, which the stream does "
                            "not allow (ok)",
                            100, 0x1f00000000));
  s.streams[0].allow.push_back(status::ambiguous_write);
  EXPECT_TRUE(check_expectations(s, w.h).passed());
}

TEST(expectations, a_refused_submit_counts_with_its_outcome) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.counts.clear();
  w.op(4).submit_failed = true;
  w.op(4).outcome = status::busy;
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "stream reads: READ refused by submit() ended busy", 103,
                            0x1f00000004));
}

TEST(expectations, liveness_ops_are_the_liveness_checker_s) {
  auto w = fired_world();
  w.op(5).outcome = status::timeout;
  EXPECT_TRUE(check_expectations(clean_scenario(), w.h).passed());
}

TEST(expectations, counts_out_of_range) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.counts["writes.ok"] = {3, 3};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.counts writes.ok: 2 ops, expected 3", 0, 0));
  s = clean_scenario();
  s.expect.counts["reads.done"] = {0, 1};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.counts reads.done: 2 ops, expected <=1", 0, 0));
  s = clean_scenario();
  s.expect.counts["reads.bogus"] = {0, 1};
  EXPECT_TRUE(
      one_violation(check_expectations(s, w.h), "bogus is neither a status nor done", 0, 0));
}

// Rule: an expect.counts key is STREAM.STATUS or STREAM.done; one without
// the dot is a violation naming it, not a count of a stream named like it
// (here one no op belongs to, so any count of it would be 0 and pass).
TEST(expectations, a_count_key_without_a_stream_is_a_violation) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.counts["done"] = {0, UINT64_MAX};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.counts key done is not STREAM.STATUS or STREAM.done", 0, 0));
}

// STREAM.STATUS counts only that status; STREAM.done counts every outcome.
TEST(expectations, a_status_count_counts_only_that_status) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.streams[0].allow.push_back(status::timeout);
  w.op(2).outcome = status::timeout;
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.counts writes.ok: 1 ops, expected 2", 0, 0));
  s.expect.counts["writes.ok"] = {1, 1};
  s.expect.counts["writes.done"] = {2, 2};
  s.expect.counts["writes.timeout"] = {1, 1};
  EXPECT_TRUE(check_expectations(s, w.h).passed()) << all(check_expectations(s, w.h));
}

TEST(expectations, fault_counts_out_of_range) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.faults["latency.up"] = {5, 5};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.faults latency.up: fired 4 times, expected 5", 0, 0));
  s = clean_scenario();
  s.expect.faults["client-server-r1/latency.up"] = {1, UINT64_MAX};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.faults client-server-r1/latency.up: fired 0 times, expected "
                            ">=1",
                            0, 0));
  s = clean_scenario();
  s.expect.faults["client-server-r0/latency.up"] = {4, 4};
  EXPECT_TRUE(check_expectations(s, w.h).passed());
}

TEST(expectations, a_declared_fault_that_never_fired) {
  auto w = clean_world();  // no counters at all
  auto s = clean_scenario();
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "declared fault latency.up on link client-server-r0 never fired: "
                            "the scenario tested nothing",
                            0, 0));
  // Named in expect.faults (here: must not fire), it is held to that instead.
  s.expect.faults["latency.up"] = {0, 0};
  EXPECT_TRUE(check_expectations(s, w.h).passed());
}

// A declared fault fires on its own link: the same counter on another link
// does not count. A range for LINK/NAME in expect.faults replaces the rule.
TEST(expectations, a_declared_fault_fires_on_its_own_link) {
  auto w = clean_world();
  w.h.links[1].counters["latency.up"] = 4;
  auto s = clean_scenario();
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "declared fault latency.up on link client-server-r0 never fired", 0,
                            0));
  s.expect.faults["client-server-r0/latency.up"] = {0, 0};
  EXPECT_TRUE(check_expectations(s, w.h).passed()) << all(check_expectations(s, w.h));
}

// An armed failpoint must fire at least once, unless marked optional.
TEST(expectations, an_armed_failpoint_that_never_fired) {
  auto w = fired_world();
  auto s = clean_scenario();
  event_spec e;
  e.action = event_action::arm;
  e.failpoint = "lane.before_send";
  s.events.push_back(e);
  const std::string text =
      "armed failpoint lane.before_send never fired: the scenario tested nothing";
  EXPECT_TRUE(one_violation(check_expectations(s, w.h), text, 0, 0));
  w.h.failpoints_fired["lane.other"] = 1;
  EXPECT_TRUE(one_violation(check_expectations(s, w.h), text, 0, 0));
  w.h.failpoints_fired["lane.before_send"] = 0;
  EXPECT_TRUE(one_violation(check_expectations(s, w.h), text, 0, 0));
  w.h.failpoints_fired["lane.before_send"] = 1;
  EXPECT_TRUE(check_expectations(s, w.h).passed()) << all(check_expectations(s, w.h));
  w.h.failpoints_fired.clear();
  s.events.back().failpoint_optional = true;
  EXPECT_TRUE(check_expectations(s, w.h).passed()) << all(check_expectations(s, w.h));
}

TEST(expectations, a_fault_added_by_an_event_must_fire_too) {
  auto w = fired_world();
  auto s = clean_scenario();
  event_spec e;
  e.action = event_action::add_fault;
  e.link = "client-server-r1";
  e.added = fault(relays::fault_kind::stall, relays::direction::up);
  s.events.push_back(e);
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "declared fault stall.up on link client-server-r1 never fired", 0, 0));
  w.h.links[1].counters["stall.up"] = 1;
  EXPECT_TRUE(check_expectations(s, w.h).passed());
}

TEST(expectations, stats_out_of_range_or_unknown) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.stats["client.tasks_completed"] = {9, 9};
  auto r = check_expectations(s, w.h);
  EXPECT_TRUE(one_violation(r,
                            "expect.stats client.tasks_completed: 5 at the end (stats of "
                            "client#0 at seq",
                            0, 0));
  EXPECT_TRUE(mentions(r, "expected 9")) << all(r);
  s = clean_scenario();
  s.expect.stats["server.leases_live"] = {1, 1};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h),
                            "expect.stats server.leases_live: 0 at the end", 0, 0));
  s = clean_scenario();
  s.expect.stats["client.bogus"] = {0, 0};
  EXPECT_TRUE(one_violation(check_expectations(s, w.h), "bogus is not a stats field", 0, 0));
  s = clean_scenario();
  s.expect.stats["nobody.tasks_completed"] = {0, 0};
  EXPECT_TRUE(
      one_violation(check_expectations(s, w.h), "no stats of transport nobody were taken", 0, 0));
}

TEST(expectations, stats_are_the_last_snapshot) {
  auto w = fired_world();
  auto s = clean_scenario();
  auto early = w.h.stats[0];
  early.seq = 1;
  early.stats.tasks_completed = 0;
  w.h.stats.push_back(early);  // recorded later in the vector, but earlier in seq
  EXPECT_TRUE(check_expectations(s, w.h).passed());
}

TEST(run_checkers, every_checker_in_order_then_expectations) {
  auto w = fired_world();
  auto s = clean_scenario();
  s.expect.checkers_off["no_replay"] = "taps are off in this scenario";
  auto results = run_checkers(s, w.h);
  ASSERT_EQ(results.size(), std::size(checker_names) + 1);
  for (std::size_t i = 0; i < std::size(checker_names); ++i) {
    EXPECT_EQ(results[i].name, checker_names[i]);
    EXPECT_TRUE(results[i].passed()) << all(results[i]);
    if (results[i].name == "no_replay") {
      EXPECT_FALSE(results[i].ran);
      EXPECT_EQ(results[i].reason_off, "taps are off in this scenario");
      EXPECT_EQ(results[i].checked, 0u);
    } else {
      EXPECT_TRUE(results[i].ran);
      EXPECT_GT(results[i].checked, 0u) << results[i].name;
    }
  }
  EXPECT_EQ(results.back().name, "expectations");
}

TEST(run_checkers, a_violation_reaches_its_checker) {
  auto w = fired_world();
  w.op(2).callbacks = 2;
  auto results = run_checkers(clean_scenario(), w.h);
  EXPECT_FALSE(results[0].passed());
  for (std::size_t i = 1; i < results.size(); ++i)
    EXPECT_TRUE(results[i].passed()) << all(results[i]);
}

TEST(describe, names_what_it_knows) {
  violation v{.checker = "no_replay",
              .op_id = 42,
              .task_id = 42,
              .request_id = 0x1f0000002a,
              .transport = "client",
              .seq = 90,
              .evidence = "WRITE sent twice"};
  EXPECT_EQ(describe(v),
            "no_replay: op 42 (task 42, request 0x1f0000002a) on client at seq 90: WRITE sent "
            "twice");
  v.op_id = 0;
  EXPECT_EQ(describe(v),
            "no_replay: task 42, request 0x1f0000002a on client at seq 90: WRITE "
            "sent twice");
  EXPECT_EQ(describe(violation{.checker = "bounds", .evidence = "x"}), "bounds: x");
}

}  // namespace
}  // namespace faultlane::sim::test
