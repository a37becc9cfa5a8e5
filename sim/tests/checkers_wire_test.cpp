// Tests of the no-replay and slice-coverage checkers: what the core
// dispatched, what the target executed and what the taps saw, each rule
// broken on its own.
#include <gtest/gtest.h>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

TEST(no_replay, clean_history_passes) {
  auto w = clean_world();
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 2u + 2u);  // WRITE ops, WRITE request frames
}

TEST(no_replay, target_executed_a_request_id_twice) {
  auto w = clean_world();
  auto again = find(w, event_kind::server_executed, op1_request);
  again.seq = 5000;
  w.h.events.push_back(again);
  auto r = check_no_replay(w.h);
  ASSERT_EQ(r.violations.size(), 2u) << all(r);  // per target, and per op
  EXPECT_TRUE(mentions(r, "server#0 executed WRITE request 0x1f00000000 2 times")) << all(r);
  EXPECT_TRUE(mentions(r, "WRITE executed 2 times by the target")) << all(r);
  EXPECT_EQ(r.violations[0].task_id, 100u);
  EXPECT_EQ(r.violations[0].request_id, op1_request);
}

// A refusal is not an execution: refused, then run under the same id, the
// request ran once.
TEST(no_replay, a_refused_then_executed_request_ran_once) {
  auto w = clean_world();
  auto refused = find(w, event_kind::server_executed, op1_request);
  refused.outcome = status::stale_registration;
  refused.seq -= 1;
  w.h.events.push_back(refused);
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  w.h.events.back().outcome = status::ok;
  EXPECT_TRUE(
      mentions(check_no_replay(w.h), "server#0 executed WRITE request 0x1f00000000 2 times"));
}

TEST(no_replay, per_target_rule_holds_without_an_op) {
  auto w = clean_world();
  auto stray = find(w, event_kind::server_executed, op1_request);
  stray.request_id = 0x77;
  w.h.events.push_back(stray);
  stray.seq = 6000;
  w.h.events.push_back(stray);
  EXPECT_TRUE(one_violation(check_no_replay(w.h),
                            "server#0 executed WRITE request 0x77 2 times (seqs ", 0, 0x77));
}

TEST(no_replay, per_op_rule_across_target_incarnations) {
  auto w = clean_world();
  auto again = find(w, event_kind::server_executed, op1_request);
  again.incarnation = 1;
  again.seq = 5000;
  w.h.events.push_back(again);
  EXPECT_TRUE(one_violation(check_no_replay(w.h),
                            "WRITE executed 2 times by the target: request 0x1f00000000 on "
                            "server#0 at seq",
                            100, op1_request));
}

// (d) A WRITE the initiator called a definite failure, though the target
// ran it: its caller would send it again. Ambiguous is the honest outcome.
TEST(no_replay, a_definite_failure_the_target_executed) {
  auto w = clean_world();
  w.op(1).outcome = status::connection_failed;
  EXPECT_TRUE(one_violation(check_no_replay(w.h),
                            "WRITE ended connection_failed, a definite failure, but the target "
                            "executed request 0x1f00000000",
                            100, op1_request));
  w.op(1).outcome = status::ambiguous_write;
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  // Refused by the target: definite, and it did not run.
  w.op(1).outcome = status::stale_registration;
  find(w, event_kind::server_executed, op1_request).outcome = status::stale_registration;
  r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
}

TEST(no_replay, write_dispatched_again_without_a_rejection) {
  auto w = clean_world();
  dispatch_op1_again(w, w.op(1).complete_seq - 1);
  EXPECT_TRUE(one_violation(check_no_replay(w.h),
                            "WRITE dispatched 2 times: request 0x1f00000000 (seq", 100,
                            op1_request));
}

TEST(no_replay, write_dispatched_again_after_a_rejection_is_fine) {
  auto w = clean_world();
  dispatch_op1_again(w, w.op(1).complete_seq - 1);
  // The target refused the first request (observer side)...
  find(w, event_kind::server_executed, op1_request).outcome = status::stale_registration;
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  // ...or only the tap saw the refusal on its way down.
  erase_executions(w, op1_request);
  EXPECT_FALSE(check_no_replay(w.h).passed());
  refuse_on_tap(w, op1_request);
  r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
}

// The refusal that allows a second dispatch is the earlier request's: one
// of the later request, by the target or on the tap, does not.
TEST(no_replay, a_refusal_of_the_later_request_does_not_count) {
  for (bool on_tap : {false, true}) {
    auto w = clean_world();
    const auto again = dispatch_op1_again(w, w.op(1).complete_seq - 1);
    if (on_tap) {
      auto refusal = w.h.links[0].tap.back();
      refusal.request_id = op1_again_request;
      refusal.status = 6;
      w.h.links[0].tap.push_back(refusal);
    } else {
      auto refusal = find(w, event_kind::server_executed, op1_request);
      refusal.request_id = op1_again_request;
      refusal.outcome = status::stale_registration;
      refusal.seq = again.seq;
      w.h.events.push_back(refusal);
    }
    EXPECT_TRUE(one_violation(check_no_replay(w.h),
                              "WRITE dispatched 2 times: request 0x1f00000000 (seq", 100,
                              op1_request));
  }
}

// One WRITE op runs at most once over all its request ids, even when the
// tap saw the first one refused (so sending it again was allowed).
TEST(no_replay, one_op_executed_under_two_request_ids) {
  auto w = clean_world();
  dispatch_op1_again(w, w.op(1).complete_seq - 2);
  refuse_on_tap(w, op1_request);
  EXPECT_TRUE(check_no_replay(w.h).passed()) << all(check_no_replay(w.h));
  auto ran = find(w, event_kind::server_executed, op1_request);
  ran.request_id = op1_again_request;
  ran.seq = w.op(1).complete_seq - 1;
  w.h.events.push_back(ran);
  EXPECT_TRUE(one_violation(check_no_replay(w.h),
                            "WRITE executed 2 times by the target: request 0x1f00000000 on "
                            "server#0 at seq",
                            100, op1_request));
  EXPECT_TRUE(mentions(check_no_replay(w.h), "request 0x1f000000ff on server#0 at seq"));
}

// The per-target violation points at the execution that broke the rule:
// the second one of the request id, not the first that was allowed.
TEST(no_replay, a_second_execution_is_named_where_it_happened) {
  auto w = clean_world();
  auto stray = find(w, event_kind::server_executed, op1_request);
  stray.request_id = 0x77;
  stray.seq = 6000;
  w.h.events.push_back(stray);
  stray.seq = 7000;
  w.h.events.push_back(stray);
  stray.seq = 8000;
  w.h.events.push_back(stray);
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(one_violation(r,
                            "server#0 executed WRITE request 0x77 3 times (seqs 6000, 7000, "
                            "8000)",
                            0, 0x77));
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].seq, 7000u);
  EXPECT_EQ(r.violations[0].transport, "server");
}

// A WRITE op the core has no observer events of (its task never seen) is
// counted, and with nothing dispatched there is nothing sent again.
TEST(no_replay, a_write_without_a_trace_has_nothing_to_replay) {
  auto w = clean_world();
  op_record untraced = w.op(1);
  untraced.id = w.h.ops.size() + 1;
  untraced.task_id = 999;
  untraced.outcome = status::connection_failed;
  w.h.ops.push_back(untraced);
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 3u + 2u);  // WRITE ops, WRITE request frames
}

// Each per-op violation points at the event that made it one: the second
// dispatch, the execution of a WRITE that ended a definite failure, the
// second execution of the op.
TEST(no_replay, an_op_violation_names_the_event_that_made_it) {
  auto w = clean_world();
  const auto again = dispatch_op1_again(w, w.op(1).complete_seq - 2);
  auto r = check_no_replay(w.h);
  ASSERT_EQ(r.violations.size(), 1u) << all(r);
  EXPECT_EQ(r.violations[0].seq, again.seq);
  EXPECT_EQ(r.violations[0].op_id, 1u);

  w = clean_world();
  w.op(1).outcome = status::timeout;
  const auto ran_seq = find(w, event_kind::server_executed, op1_request).seq;
  r = check_no_replay(w.h);
  ASSERT_EQ(r.violations.size(), 1u) << all(r);
  EXPECT_EQ(r.violations[0].seq, ran_seq);

  w = clean_world();
  auto twice = find(w, event_kind::server_executed, op1_request);
  twice.incarnation = 1;  // another incarnation: only the per-op rule sees it
  twice.seq = 5000;
  w.h.events.push_back(twice);
  r = check_no_replay(w.h);
  ASSERT_EQ(r.violations.size(), 1u) << all(r);
  EXPECT_EQ(r.violations[0].seq, 5000u);
}

// A WRITE the tap saw twice whose request id no op dispatched is still a
// violation, naming the request and the initiator.
TEST(no_replay, a_write_seen_twice_without_an_op_names_its_initiator) {
  auto w = clean_world();
  auto stray = up_frame(w, 0, op1_request);
  stray.request_id = 0x99;
  w.h.links[0].tap.push_back(stray);
  stray.connection = 2;
  w.h.links[0].tap.push_back(stray);
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(one_violation(r, "WRITE sent twice: request 0x99 seen 2 times", 0, 0x99));
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].op_id, 0u);
  EXPECT_EQ(r.violations[0].transport, "client");
  EXPECT_EQ(r.violations[0].checker, "no_replay");
}

// Request ids are numbered per initiator: the same id from another
// initiator's link is another request.
TEST(no_replay, the_tap_rule_is_per_initiator) {
  auto w = clean_world();
  auto other = w.h.links[0];
  other.name = "client2-server-r0";
  other.initiator = "client2";
  other.tap = {up_frame(w, 0, op1_request)};
  w.h.links.push_back(other);
  EXPECT_TRUE(check_no_replay(w.h).passed()) << all(check_no_replay(w.h));
  w.h.links.back().initiator = "client";
  EXPECT_TRUE(one_violation(check_no_replay(w.h), "WRITE sent twice: request 0x1f00000000", 100,
                            op1_request));
}

TEST(no_replay, tap_saw_a_write_sent_twice_on_one_link) {
  auto w = clean_world();
  auto again = up_frame(w, 0, op1_request);
  again.connection = 3;
  w.h.links[0].tap.push_back(again);
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(one_violation(r,
                            "no_replay: op 1 (task 100, request 0x1f00000000) on client at seq " +
                                std::to_string(w.op(1).complete_seq) +
                                ": WRITE sent twice: request 0x1f00000000 seen 2 times on link "
                                "client-server-r0 (connections 1 and 3)",
                            100, op1_request));
  EXPECT_EQ(r.checked, 2u + 3u);
}

TEST(no_replay, tap_saw_a_write_on_two_links) {
  auto w = clean_world();
  w.h.links[1].tap.push_back(up_frame(w, 0, op1_request));
  EXPECT_TRUE(one_violation(check_no_replay(w.h),
                            "on link client-server-r0 (connection 1); on link client-server-r1 "
                            "(connection 1)",
                            100, op1_request));
}

TEST(slice_coverage, clean_history_passes) {
  auto w = clean_world();
  auto r = check_slice_coverage(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 3u);  // READ ops
}

TEST(slice_coverage, a_dispatch_off_the_plan) {
  auto w = clean_world();
  auto extra = find(w, event_kind::slice_dispatched, 0x1f00000002);
  extra.request_id = 0x1f000000aa;
  extra.length = 8192;  // the whole READ on rail 0
  w.h.events.push_back(extra);
  auto r = check_slice_coverage(w.h);
  EXPECT_TRUE(one_violation(r,
                            "READ of 8192 bytes dispatched request 0x1f000000aa on rail 0 for "
                            "task bytes [0, 8192), which is not in the plan: rail 0 [0, 4096), "
                            "rail 1 [4096, 8192)",
                            102, 0x1f000000aa));
}

TEST(slice_coverage, an_ok_read_missing_a_planned_slice) {
  auto w = clean_world();
  std::erase_if(w.h.events, [](const core_event& e) {
    return e.kind == event_kind::slice_dispatched && e.request_id == 0x1f00000003;
  });
  w.h.links[1].tapped = false;  // the dispatch rule alone
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "ended ok but planned slice rail 1 [4096, 8192) of the task was never "
                            "dispatched",
                            102, 0x1f00000002));
  // A READ that failed need not have sent everything.
  w.op(3).outcome = status::timeout;
  EXPECT_TRUE(check_slice_coverage(w.h).passed());
}

// A dispatch must match a planned slice in rail, offset and length, each
// on its own (the READ failed, so only this rule is at stake).
TEST(slice_coverage, a_dispatch_off_the_plan_in_one_field) {
  auto w = clean_world();
  w.op(3).outcome = status::timeout;
  EXPECT_TRUE(check_slice_coverage(w.h).passed()) << all(check_slice_coverage(w.h));
  auto& d = find(w, event_kind::slice_dispatched, 0x1f00000003);  // rail 1 [4096, 8192)
  d.rail = 0;
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "dispatched request 0x1f00000003 on rail 0 for task bytes [4096, 8192)",
                            102, 0x1f00000003));
  d.rail = 1;
  d.offset = 4000;
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "dispatched request 0x1f00000003 on rail 1 for task bytes [4000, 8096)",
                            102, 0x1f00000003));
  d.offset = 4096;
  d.length = 4000;
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "dispatched request 0x1f00000003 on rail 1 for task bytes [4096, 8096)",
                            102, 0x1f00000003));
}

TEST(slice_coverage, an_unsliced_read_goes_whole_on_whichever_rail_its_lane_has) {
  auto w = clean_world();
  find(w, event_kind::slice_dispatched, 0x1f00000004).rail = 1;  // rotation picked rail 1
  move_request_to_rail_1(w, 0x1f00000004);                       // and its relay
  EXPECT_TRUE(check_slice_coverage(w.h).passed()) << all(check_slice_coverage(w.h));
  find(w, event_kind::slice_dispatched, 0x1f00000004).length = 500;  // but never a part of it
  auto r = check_slice_coverage(w.h);
  EXPECT_TRUE(mentions(r,
                       "dispatched request 0x1f00000004 on rail 1 for task bytes [0, 500), "
                       "which is not in the plan: rail any [0, 1000)"))
      << all(r);
  EXPECT_TRUE(mentions(r, "planned slice rail any [0, 1000) of the task was never dispatched"))
      << all(r);
}

TEST(slice_coverage, rails_come_from_the_initiator_incarnation) {
  auto w = clean_world();
  w.h.incarnations[0].rails = 1;  // then 8192 bytes are one slice, on any rail
  auto r = check_slice_coverage(w.h);
  EXPECT_TRUE(mentions(r, "which is not in the plan: rail any [0, 8192)")) << all(r);
}

// Rule: without a record of the initiator's incarnation the plan is the
// one-rail plan: the READ is one exchange of its whole length.
TEST(slice_coverage, an_initiator_incarnation_not_recorded_plans_one_rail) {
  auto w = clean_world();
  w.h.incarnations[0].index = 7;  // the ops name the client's incarnation 0
  auto r = check_slice_coverage(w.h);
  EXPECT_TRUE(mentions(r, "which is not in the plan: rail any [0, 8192)")) << all(r);
}

TEST(slice_coverage, a_tapped_frame_off_the_plan) {
  auto w = clean_world();
  up_frame(w, 0, 0x1f00000002).remote_offset = 512;
  w.op(3).outcome = status::timeout;  // the frame rule alone
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "tap of link client-server-r0 (rail 0) saw READ request 0x1f00000002 "
                            "for region bytes [512, 4608), which is not in the plan",
                            102, 0x1f00000002));
}

TEST(slice_coverage, a_tapped_frame_of_the_wrong_length) {
  auto w = clean_world();
  up_frame(w, 0, 0x1f00000002).length = 4000;
  w.op(3).outcome = status::timeout;  // the frame rule alone
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "tap of link client-server-r0 (rail 0) saw READ request 0x1f00000002 "
                            "for region bytes [0, 4000), which is not in the plan",
                            102, 0x1f00000002));
}

// An unsliced READ may take any rail, but its frame travels on the rail its
// dispatch named: seen on another, it is off the plan, and missing on its own.
TEST(slice_coverage, an_unsliced_read_is_looked_for_on_its_own_rail) {
  auto w = clean_world();
  move_request_to_rail_1(w, 0x1f00000004);
  auto r = check_slice_coverage(w.h);
  EXPECT_EQ(r.violations.size(), 2u) << all(r);
  EXPECT_TRUE(mentions(r,
                       "tap of link client-server-r1 (rail 1) saw READ request 0x1f00000004 for "
                       "region bytes [100, 1100), which is not in the plan: rail 0 [100, 1100)"))
      << all(r);
  EXPECT_TRUE(mentions(r,
                       "READ ended ok but the tapped link of rail 0 never saw its planned "
                       "slice [100, 1100)"))
      << all(r);
  w.op(4).outcome = status::timeout;  // the frame rule alone
  EXPECT_TRUE(
      one_violation(check_slice_coverage(w.h), "saw READ request 0x1f00000004", 103, 0x1f00000004));
  w.op(4).outcome = status::ok;
  find(w, event_kind::slice_dispatched, 0x1f00000004).rail = 1;
  EXPECT_TRUE(check_slice_coverage(w.h).passed()) << all(check_slice_coverage(w.h));
}

TEST(slice_coverage, a_frame_on_the_wrong_rail) {
  auto w = clean_world();
  move_request_to_rail_1(w, 0x1f00000002);
  auto r = check_slice_coverage(w.h);
  EXPECT_EQ(r.violations.size(), 2u) << all(r);
  EXPECT_TRUE(mentions(r, "tap of link client-server-r1 (rail 1) saw READ request 0x1f00000002"))
      << all(r);
  EXPECT_TRUE(mentions(r, "the tapped link of rail 0 never saw its planned slice [0, 4096)"))
      << all(r);
}

TEST(slice_coverage, an_ok_read_whose_slice_the_tap_never_saw) {
  auto w = clean_world();
  erase_request_frames(w, 1, 0x1f00000003);
  EXPECT_TRUE(one_violation(check_slice_coverage(w.h),
                            "READ ended ok but the tapped link of rail 1 never saw its planned "
                            "slice [4096, 8192)",
                            102, 0x1f00000002));
}

}  // namespace
}  // namespace faultlane::sim::test
