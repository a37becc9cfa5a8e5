// What every checker reads a history through (checkers_support.hpp): task
// traces keyed per transport incarnation and in seq order, the op a
// request id or a task belongs to, and the fields a violation takes from
// its op or event. A checker's evidence names ops by these, so a wrong key
// or order here blames the wrong op.
#include <gtest/gtest.h>

#include <iterator>

#include "checkers/checkers_support.hpp"

namespace faultlane::sim::detail {
namespace {

core_event event(event_kind kind, std::uint32_t incarnation, std::uint64_t task, std::uint64_t seq,
                 std::uint64_t request = 0) {
  core_event e;
  e.kind = kind;
  e.transport = "client";
  e.incarnation = incarnation;
  e.task_id = task;
  e.seq = seq;
  e.request_id = request;
  return e;
}

op_record op(std::uint64_t id, std::uint32_t incarnation, std::uint64_t task) {
  op_record o;
  o.id = id;
  o.initiator = "client";
  o.initiator_incarnation = incarnation;
  o.task_id = task;
  o.submit_seq = 10 * id;
  return o;
}

// Task 7 in incarnations 0 and 1 (a restart reuses task ids), its slices
// listed out of seq order.
history restarted() {
  history h;
  h.ops = {op(1, 0, 7), op(2, 1, 7)};
  h.events = {event(event_kind::slice_dispatched, 0, 7, 30, 0xb),
              event(event_kind::slice_dispatched, 0, 7, 20, 0xa),
              event(event_kind::slice_dispatched, 1, 7, 40, 0xc),
              event(event_kind::task_finalized, 1, 7, 50)};
  return h;
}

// Rule: a task is (transport, incarnation, task id), and its events are in
// seq order whatever order the history lists them in.
TEST(checkers_support, a_task_trace_is_per_incarnation_and_in_seq_order) {
  const history h = restarted();
  const history_index index(h);
  const auto* first = index.trace(h.ops[0]);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(first->slices.size(), 2u);
  EXPECT_EQ(first->slices[0]->seq, 20u);
  EXPECT_EQ(first->slices[1]->seq, 30u);
  EXPECT_TRUE(first->finalized.empty());
  const auto* second = index.trace(h.ops[1]);
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->slices.size(), 1u);
  EXPECT_EQ(second->finalized.size(), 1u);
  EXPECT_EQ(index.op_of_request(0xa), &h.ops[0]);
  EXPECT_EQ(index.op_of_request(0xc), &h.ops[1]);
  EXPECT_EQ(index.op_of_task({"client", 1, 7}), &h.ops[1]);
}

// Rule: a violation about an op carries the op's first request id (by seq)
// and the seq given, else the op's completion, else its submit.
TEST(checkers_support, an_op_violation_takes_the_first_request_and_the_latest_known_seq) {
  history h = restarted();
  const history_index index(h);
  auto v = op_violation("c", index, h.ops[0], "why");
  EXPECT_EQ(v.request_id, 0xau);
  EXPECT_EQ(v.seq, 10u);  // submitted, never completed
  h.ops[0].complete_seq = 15;
  EXPECT_EQ(op_violation("c", index, h.ops[0], "why").seq, 15u);
  EXPECT_EQ(op_violation("c", index, h.ops[0], "why", 99).seq, 99u);
  EXPECT_EQ(v.op_id, 1u);
  EXPECT_EQ(v.transport, "client");
}

// Rule: a violation about an event names the op its request id belongs
// to, or else the op of its task (in its incarnation).
TEST(checkers_support, an_event_violation_finds_its_op_by_request_then_by_task) {
  const history h = restarted();
  const history_index index(h);
  EXPECT_EQ(event_violation("c", index, h.events[0], "why").op_id, 1u);  // by request 0xb
  EXPECT_EQ(event_violation("c", index, h.events[3], "why").op_id, 2u);  // by task, incarnation 1
  const auto stray = event(event_kind::task_finalized, 2, 7, 60);
  EXPECT_EQ(event_violation("c", index, stray, "why").op_id, 0u);
}

// Rule: request and task ids count from 1, only 0 means "none": an event
// with request id 1 names that request's op, and an event with no request
// id but task 1 names the task's op.
TEST(checkers_support, an_event_violation_takes_request_and_task_ids_from_1) {
  history h;
  h.ops = {op(1, 0, 1), op(2, 0, 2)};
  h.events = {event(event_kind::slice_dispatched, 0, 2, 10, 1)};  // op 2's request 1
  const history_index index(h);
  auto executed = event(event_kind::server_executed, 0, 0, 20, 1);
  executed.transport = "server";  // a target's event carries no task id
  EXPECT_EQ(event_violation("c", index, executed, "why").op_id, 2u);
  const auto finalized = event(event_kind::task_finalized, 0, 1, 30);
  const auto v = event_violation("c", index, finalized, "why");
  EXPECT_EQ(v.op_id, 1u);
  EXPECT_EQ(v.task_id, 1u);
}

// Rule: every status is found by its to_string() name, the last one too.
TEST(checkers_support, every_status_is_found_by_its_name) {
  for (int i = 0; i < status_count; ++i) {
    const auto s = static_cast<status>(i);
    EXPECT_EQ(status_named(to_string(s)), s) << to_string(s);
  }
  EXPECT_EQ(status_named("no_such_status"), std::nullopt);
}

// Rule: a count range in a message takes the form the file would: "3",
// ">=1", "<=2", "2..5".
TEST(checkers_support, a_count_range_is_shown_in_its_file_form) {
  EXPECT_EQ(show({3, 3}), "3");
  EXPECT_EQ(show({1, UINT64_MAX}), ">=1");
  EXPECT_EQ(show({0, UINT64_MAX}), ">=0");
  EXPECT_EQ(show({0, 2}), "<=2");
  EXPECT_EQ(show({2, 5}), "2..5");
}

// Rule: run_checkers reads the history through one index, built once for
// all its checkers, and each reaches the verdict it reaches alone (where it
// builds an index of its own).
TEST(checkers_support, run_checkers_builds_one_index_for_every_checker) {
  const history h = restarted();
  const scenario s;
  const auto before = history_index::built();
  const auto together = run_checkers(s, h);
  EXPECT_EQ(history_index::built() - before, 1u);
  ASSERT_EQ(together.size(), std::size(checker_table) + 1);
  std::size_t violations = 0;
  for (std::size_t i = 0; i < std::size(checker_table); ++i) {
    const auto alone = checker_table[i].check(h);
    EXPECT_EQ(together[i].name, alone.name);
    EXPECT_EQ(together[i].checked, alone.checked) << alone.name;
    ASSERT_EQ(together[i].violations.size(), alone.violations.size()) << alone.name;
    for (std::size_t v = 0; v < alone.violations.size(); ++v) {
      EXPECT_EQ(describe(together[i].violations[v]), describe(alone.violations[v])) << alone.name;
    }
    violations += alone.violations.size();
  }
  EXPECT_GT(violations, 0u) << "a history with nothing to report compares nothing";
}

}  // namespace
}  // namespace faultlane::sim::detail
