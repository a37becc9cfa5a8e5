// Tests of the bounds, drained-shutdown and liveness checkers: a clean
// history passes, and each limit or rule, planted broken on its own, is
// reported with the numbers.
#include <gtest/gtest.h>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

core_event& first(world& w, event_kind k) {
  for (auto& e : w.h.events) {
    if (e.kind == k) return e;
  }
  throw std::logic_error("no such event");
}

TEST(bounds, clean_history_passes) {
  auto w = clean_world();
  auto r = check_bounds(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 10u + 2u + 12u + 2u);  // admission changes, stats, lease events, relays
}

TEST(bounds, a_relay_over_its_active_fault_cap) {
  auto w = clean_world();
  w.h.links[1].active_faults_max = 4;
  w.h.links[1].active_faults_peak = 4;  // at the cap is within it
  EXPECT_TRUE(check_bounds(w.h).passed());
  w.h.links[1].active_faults_peak = 5;
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "relay client-server-r1 had 5 lasting fault effects in force at "
                            "once, over its active_faults_max of 4",
                            0, 0));
}

// Rule: a relay's fault-effect peak is a count over the whole run, not a
// moment of it: its violation names the link's initiator and no seq.
TEST(bounds, a_relay_over_its_cap_names_no_point_in_the_history) {
  auto w = clean_world();
  w.h.links[1].active_faults_max = 4;
  w.h.links[1].active_faults_peak = 5;
  const auto r = check_bounds(w.h);
  ASSERT_EQ(r.violations.size(), 1u) << all(r);
  EXPECT_EQ(r.violations[0].seq, 0u);
  EXPECT_EQ(r.violations[0].transport, "client");
  EXPECT_EQ(describe(r.violations[0]).find(" at seq "), std::string::npos) << all(r);
}

TEST(bounds, admission_tasks_over_the_limit) {
  auto w = clean_world();
  first(w, event_kind::admission_changed).tasks = 8;  // at the limit is within it
  EXPECT_TRUE(check_bounds(w.h).passed()) << all(check_bounds(w.h));
  first(w, event_kind::admission_changed).tasks = 9;
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "client#0 admitted 9 tasks, over max_outstanding_tasks 8", 0, 0));
}

TEST(bounds, admission_bytes_over_the_limit) {
  auto w = clean_world();
  first(w, event_kind::admission_changed).admitted_bytes = 1 << 20;
  EXPECT_TRUE(check_bounds(w.h).passed()) << all(check_bounds(w.h));
  first(w, event_kind::admission_changed).admitted_bytes = (1 << 20) + 1;
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "admitted 1048577 bytes, over max_outstanding_bytes 1048576", 0, 0));
}

TEST(bounds, stats_sessions_over_max_connections) {
  auto w = clean_world();
  w.h.stats[1].stats.sessions_live = 16;
  EXPECT_TRUE(check_bounds(w.h).passed()) << all(check_bounds(w.h));
  w.h.stats[1].stats.sessions_live = 17;
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "stats of server#0: sessions_live 17, over max_connections 16", 0, 0));
}

TEST(bounds, stats_admission_over_the_limits) {
  auto w = clean_world();
  w.h.stats[0].stats.tasks_admitted_now = 8;
  w.h.stats[0].stats.bytes_admitted_now = 1 << 20;
  EXPECT_TRUE(check_bounds(w.h).passed()) << all(check_bounds(w.h));
  w.h.stats[0].stats.tasks_admitted_now = 9;
  EXPECT_TRUE(
      one_violation(check_bounds(w.h), "tasks_admitted_now 9, over max_outstanding_tasks", 0, 0));
  auto w2 = clean_world();
  w2.h.stats[0].stats.bytes_admitted_now = 2 << 20;
  EXPECT_TRUE(one_violation(
      check_bounds(w2.h), "bytes_admitted_now 2097152, over max_outstanding_bytes 1048576", 0, 0));
}

TEST(bounds, lease_released_without_acquire) {
  auto w = clean_world();
  auto& acquired = first(w, event_kind::lease_acquired);
  acquired.seq = 100000;  // now after its release
  EXPECT_TRUE(one_violation(
      check_bounds(w.h), "server#0 released a lease of registration 0x5000 with none held", 0, 0));
}

TEST(bounds, lease_left_after_a_clean_shutdown) {
  auto w = clean_world();
  auto released = std::find_if(w.h.events.begin(), w.h.events.end(), [](const core_event& e) {
    return e.kind == event_kind::lease_released;
  });
  w.h.events.erase(released);
  auto r = check_bounds(w.h);
  EXPECT_TRUE(one_violation(
      r, "server#0 shut down cleanly with 1 leases acquired and never released", 0, 0));
  // A shutdown that failed is not held to it.
  w.h.shutdowns[1].result = status::timeout;
  EXPECT_TRUE(check_bounds(w.h).passed());
}

// Limits are those of the incarnation that reported: client#1 allows 2
// tasks and 2 sessions, client#0 8 and 16.
TEST(bounds, limits_are_the_reporting_incarnation_s) {
  auto w = clean_world();
  auto second = w.h.incarnations[0];
  second.index = 1;
  second.max_outstanding_tasks = 2;
  second.max_connections = 2;
  w.h.incarnations.push_back(second);
  auto adm = first(w, event_kind::admission_changed);
  adm.tasks = 3;
  w.h.events.push_back(adm);
  auto st = w.h.stats[0];
  st.stats.sessions_live = 3;
  w.h.stats.push_back(st);
  EXPECT_TRUE(check_bounds(w.h).passed()) << all(check_bounds(w.h));
  w.h.events.back().incarnation = 1;
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "client#1 admitted 3 tasks, over max_outstanding_tasks 2", 0, 0));
  w.h.events.back().incarnation = 0;
  w.h.stats.back().incarnation = 1;
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "stats of client#1: sessions_live 3, over max_connections 2", 0, 0));
}

// Leases are counted per transport incarnation: server#2 acquiring does
// not cover server#1 releasing, and a lease server#1 still holds is not
// server#0's at its clean shutdown.
TEST(bounds, leases_are_counted_per_incarnation) {
  auto w = clean_world();
  auto lease = [&](event_kind k, std::uint32_t incarnation) {
    auto& e = w.event(k, "server");
    e.incarnation = incarnation;
    e.registration_id = region_id;
  };
  lease(event_kind::lease_acquired, 2);
  lease(event_kind::lease_released, 1);
  EXPECT_TRUE(one_violation(check_bounds(w.h),
                            "server#1 released a lease of registration 0x5000 with none held "
                            "(-1 live)",
                            0, 0));
  auto held = clean_world();
  auto& e = held.event(event_kind::lease_acquired, "server");
  e.incarnation = 1;
  e.registration_id = region_id;
  EXPECT_TRUE(check_bounds(held.h).passed()) << all(check_bounds(held.h));
  held.h.events.back().incarnation = 0;
  EXPECT_TRUE(one_violation(check_bounds(held.h),
                            "server#0 shut down cleanly with 1 leases acquired", 0, 0));
}

TEST(drained_shutdown, clean_history_passes) {
  auto w = clean_world();
  auto r = check_drained_shutdown(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 2u + 5u);  // shutdowns, the client's ops
}

TEST(drained_shutdown, took_longer_than_its_bound) {
  auto w = clean_world();
  auto& s = w.h.shutdowns[0];
  s.end_us = s.start_us + 2'000'001;  // 1000 ms bound + 1 s slack, plus 1 us
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h),
                            "shutdown of client#0 took 2000001 us, over its bound of 1000 ms", 0,
                            0));
  s.end_us = s.start_us + 2'000'000;
  EXPECT_TRUE(check_drained_shutdown(w.h).passed());
}

TEST(drained_shutdown, result_not_ok) {
  auto w = clean_world();
  w.h.shutdowns[0].result = status::timeout;
  w.h.shutdowns[0].message = "2 tasks still running";
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h),
                            "shutdown of client#0 returned timeout (2 tasks still running)", 0, 0));
}

TEST(drained_shutdown, runtime_failed_needs_the_stats_to_say_so) {
  auto w = clean_world();
  w.h.shutdowns[0].result = status::runtime_failed;
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h), "but stats say not failed", 0, 0));
  w.h.shutdowns[0].after.runtime_failed = true;
  EXPECT_TRUE(check_drained_shutdown(w.h).passed());
}

TEST(drained_shutdown, op_settled_after_shutdown_returned) {
  auto w = clean_world();
  w.op(1).complete_seq = w.h.shutdowns[0].end_seq + 1;
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h),
                            "before shutdown of client#0 returned (seq " +
                                std::to_string(w.h.shutdowns[0].end_seq) + "), but completed at",
                            100, 0x1f00000000));
  w.op(1).complete_seq = 0;
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h), "but never completed", 100, 0x1f00000000));
}

TEST(drained_shutdown, task_finalized_after_shutdown_returned) {
  auto w = clean_world();
  auto late = first(w, event_kind::task_finalized);
  late.seq = w.h.shutdowns[0].end_seq + 1;
  w.h.events.push_back(late);
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h), "task finalized (ok) at seq", 100, 0));
}

// A shutdown answers for the tasks of its own transport incarnation that
// were submitted before it returned: not client#1's, not later ones.
TEST(drained_shutdown, only_its_own_tasks) {
  auto w = clean_world();
  const auto end = w.h.shutdowns[0].end_seq;
  auto other = w.op(1);
  other.id = w.h.ops.size() + 1;
  other.task_id = 500;
  other.initiator_incarnation = 1;
  other.complete_seq = end + 5;
  w.h.ops.push_back(other);
  auto later = other;
  later.id = w.h.ops.size() + 1;
  later.task_id = 501;
  later.initiator_incarnation = 0;
  later.submit_seq = end + 1;
  later.complete_seq = 0;
  w.h.ops.push_back(later);
  auto fin = first(w, event_kind::task_finalized);
  fin.task_id = 500;
  fin.incarnation = 1;
  fin.seq = end + 5;
  w.h.events.push_back(fin);
  EXPECT_TRUE(check_drained_shutdown(w.h).passed()) << all(check_drained_shutdown(w.h));
  w.h.ops[other.id - 1].initiator_incarnation = 0;
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h), "but completed at seq", 500, 0));
  w.h.ops[other.id - 1].initiator_incarnation = 1;
  w.h.events.back().incarnation = 0;
  EXPECT_TRUE(one_violation(check_drained_shutdown(w.h), "task finalized (ok) at seq", 500, 0));
  w.h.events.back().transport = "server";
  w.h.events.back().incarnation = 0;
  w.h.events.back().seq = end + 1;  // before the server's own shutdown returned
  EXPECT_TRUE(check_drained_shutdown(w.h).passed()) << all(check_drained_shutdown(w.h));
}

TEST(drained_shutdown, every_gauge_must_be_zero) {
  using field = std::uint64_t transport_stats::*;
  const std::pair<const char*, field> gauges[] = {
      {"tasks_admitted_now", &transport_stats::tasks_admitted_now},
      {"bytes_admitted_now", &transport_stats::bytes_admitted_now},
      {"leases_live", &transport_stats::leases_live},
      {"lanes_connected", &transport_stats::lanes_connected},
      {"lanes_connecting", &transport_stats::lanes_connecting},
      {"sessions_live", &transport_stats::sessions_live}};
  for (const auto& [name, member] : gauges) {
    auto w = clean_world();
    w.h.shutdowns[1].after.*member = 3;
    EXPECT_TRUE(one_violation(check_drained_shutdown(w.h),
                              std::string("after shutdown of server#0: ") + name + " = 3", 0, 0));
  }
}

TEST(drained_shutdown, submitted_and_completed_must_agree) {
  auto w = clean_world();
  w.h.shutdowns[0].after.tasks_submitted += 1;
  EXPECT_TRUE(
      one_violation(check_drained_shutdown(w.h), "tasks_submitted 6 != tasks_completed 5", 0, 0));
}

TEST(liveness, clean_history_passes) {
  auto w = clean_world();
  auto r = check_liveness(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 1u);
}

TEST(liveness, a_phase_with_no_ops) {
  auto w = clean_world();
  w.op(5).phase = "fault";
  EXPECT_TRUE(one_violation(check_liveness(w.h), "liveness phase live ran no ops", 0, 0));
}

TEST(liveness, an_op_that_failed) {
  for (auto outcome : {status::timeout, status::connection_failed, status::stale_registration}) {
    auto w = clean_world();
    w.op(5).outcome = outcome;
    EXPECT_TRUE(one_violation(check_liveness(w.h),
                              "the op ended " + std::string(to_string(outcome)) + ", expected ok",
                              104, 0x1f00000005));
  }
}

TEST(liveness, an_op_submit_refused) {
  auto w = clean_world();
  w.op(5).submit_failed = true;
  w.op(5).outcome = status::busy;
  EXPECT_TRUE(
      one_violation(check_liveness(w.h), "submit refused the op (busy)", 104, 0x1f00000005));
}

TEST(liveness, an_op_that_never_completed) {
  auto w = clean_world();
  w.op(5).complete_seq = 0;
  EXPECT_TRUE(one_violation(check_liveness(w.h), "the op never completed", 104, 0x1f00000005));
}

TEST(liveness, an_op_past_the_deadline) {
  auto w = clean_world();
  const auto& live = w.h.phases[1];
  w.op(5).complete_us = live.start_us + 5'000'001;
  EXPECT_TRUE(one_violation(check_liveness(w.h), "after the deadline", 104, 0x1f00000005));
  w.op(5).complete_us = live.start_us + 5'000'000;
  EXPECT_TRUE(check_liveness(w.h).passed());
}

}  // namespace
}  // namespace faultlane::sim::test
