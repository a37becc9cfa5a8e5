// Tests of the exactly-once and stale-rejection checkers: a clean history
// passes, and each rule, planted broken on its own, is reported with the
// task, the request id and the numbers.
#include <gtest/gtest.h>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

core_event* find_event(world& w, event_kind k, std::uint64_t task) {
  for (auto& e : w.h.events) {
    if (e.kind == k && e.task_id == task && e.transport == "client") return &e;
  }
  return nullptr;
}

void erase_event(world& w, event_kind k, std::uint64_t task) {
  std::erase_if(w.h.events, [&](const core_event& e) { return e.kind == k && e.task_id == task; });
}

TEST(exactly_once, clean_history_passes) {
  auto w = clean_world();
  auto r = check_exactly_once(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 5u);
  EXPECT_EQ(r.name, "exactly_once");
}

TEST(exactly_once, callback_twice_or_never) {
  for (std::uint32_t n : {0u, 2u}) {
    auto w = clean_world();
    w.op(1).callbacks = n;
    EXPECT_TRUE(one_violation(check_exactly_once(w.h),
                              "callback ran " + std::to_string(n) + " times, expected 1", 100,
                              op1_request));
  }
}

// Only a WRITE can be ambiguous: the same outcome on a READ is a violation,
// on a WRITE it is not.
TEST(exactly_once, read_ended_ambiguous_write) {
  world w;
  w.write(0, 4096, 11);
  auto read = w.start(wire::opcode::read, 0, 1000, 0, "fault");
  w.end(read, status::ambiguous_write);
  w.finish();
  auto r = check_exactly_once(w.h);
  ASSERT_EQ(r.violations.size(), 1u) << all(r);
  EXPECT_TRUE(mentions(r, "a READ ended ambiguous_write")) << all(r);
  EXPECT_EQ(r.violations[0].task_id, w.op(read).task_id);
  world ok;
  auto write = ok.start(wire::opcode::write, 0, 4096, 11, "fault");
  ok.end(write, status::ambiguous_write);
  ok.finish();
  EXPECT_TRUE(check_exactly_once(ok.h).passed()) << all(check_exactly_once(ok.h));
}

TEST(exactly_once, never_completed) {
  auto w = clean_world();
  w.op(1).complete_seq = 0;
  EXPECT_TRUE(one_violation(check_exactly_once(w.h), "never completed", 100, op1_request));
}

TEST(exactly_once, batch_status_differs_from_outcome) {
  auto w = clean_world();
  w.op(1).batch_status = status::timeout;
  EXPECT_TRUE(one_violation(check_exactly_once(w.h), "batch status timeout but task outcome ok",
                            100, op1_request));
}

TEST(exactly_once, task_submitted_missing_or_twice) {
  auto w = clean_world();
  erase_event(w, event_kind::task_submitted, 100);
  EXPECT_TRUE(one_violation(check_exactly_once(w.h), "task_submitted seen 0 times on client#0", 100,
                            op1_request));
  auto w2 = clean_world();
  w2.h.events.push_back(*find_event(w2, event_kind::task_submitted, 100));
  EXPECT_TRUE(
      one_violation(check_exactly_once(w2.h), "task_submitted seen 2 times", 100, op1_request));
}

TEST(exactly_once, task_finalized_missing_or_twice) {
  auto w = clean_world();
  erase_event(w, event_kind::task_finalized, 100);
  EXPECT_TRUE(
      one_violation(check_exactly_once(w.h), "task_finalized seen 0 times", 100, op1_request));
  auto w2 = clean_world();
  auto again = *find_event(w2, event_kind::task_finalized, 100);
  again.seq = 9999;
  w2.h.events.push_back(again);
  EXPECT_TRUE(
      one_violation(check_exactly_once(w2.h), "task_finalized seen 2 times", 100, op1_request));
}

TEST(exactly_once, finalized_outcome_differs) {
  auto w = clean_world();
  find_event(w, event_kind::task_finalized, 100)->outcome = status::ambiguous_write;
  EXPECT_TRUE(one_violation(check_exactly_once(w.h),
                            "task_finalized says ambiguous_write but the callback saw ok", 100,
                            op1_request));
}

TEST(exactly_once, finalize_of_a_task_no_op_has) {
  auto w = clean_world();
  auto stray = *find_event(w, event_kind::task_finalized, 100);
  stray.task_id = 777;
  stray.seq = 9999;
  w.h.events.push_back(stray);
  auto r = check_exactly_once(w.h);
  EXPECT_TRUE(one_violation(r, "for task 777 that no op submitted", 777, 0));
  EXPECT_EQ(r.violations[0].seq, 9999u);
}

// Task ids are numbered per transport incarnation: a finalize of task 100
// by client#1 or by the server is not op 1's, and is a task no op submitted.
TEST(exactly_once, a_finalize_elsewhere_is_another_task) {
  for (const auto& [transport, incarnation] :
       {std::pair<std::string, std::uint32_t>{"client", 1}, {"server", 0}}) {
    auto w = clean_world();
    auto other = *find_event(w, event_kind::task_finalized, 100);
    other.transport = transport;
    other.incarnation = incarnation;
    other.seq = 9999;
    w.h.events.push_back(other);
    EXPECT_TRUE(one_violation(check_exactly_once(w.h),
                              "task_finalized (ok) on " + transport + "#" +
                                  std::to_string(incarnation) +
                                  " for task 100 that no op submitted",
                              100, 0));
  }
}

// The same for task_submitted: another incarnation's task 100 is not op 1's.
TEST(exactly_once, a_submit_elsewhere_is_another_task) {
  auto w = clean_world();
  auto other = *find_event(w, event_kind::task_submitted, 100);
  other.incarnation = 1;
  w.h.events.push_back(other);
  EXPECT_TRUE(check_exactly_once(w.h).passed()) << all(check_exactly_once(w.h));
  w.h.events.back().incarnation = 0;
  EXPECT_TRUE(
      one_violation(check_exactly_once(w.h), "task_submitted seen 2 times", 100, op1_request));
}

TEST(exactly_once, refused_submit_is_not_a_task) {
  auto w = clean_world();
  auto refused = w.op(1);
  refused.id = w.h.ops.size() + 1;
  refused.task_id = 0;
  refused.submit_failed = true;
  refused.outcome = status::busy;
  refused.callbacks = 0;
  refused.complete_seq = 0;
  w.h.ops.push_back(refused);
  auto r = check_exactly_once(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 5u);
}

TEST(stale_rejection, clean_history_passes) {
  auto w = clean_world();
  auto r = check_stale_rejection(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 6u);  // server_executed ok: 2 WRITEs, 2 + 1 + 1 READ slices
}

core_event& first_execution(world& w) {
  for (auto& e : w.h.events) {
    if (e.kind == event_kind::server_executed) return e;
  }
  throw std::logic_error("no execution");
}

TEST(stale_rejection, never_registered) {
  auto w = clean_world();
  first_execution(w).registration_id = 0x9999;
  EXPECT_TRUE(one_violation(check_stale_rejection(w.h),
                            "registration 0x9999 was never registered on server", 100,
                            op1_request));
}

// Registrations are per transport: the client's id 0x9999 is not the
// server's.
TEST(stale_rejection, id_of_another_transport) {
  auto w = clean_world();
  w.h.registrations.push_back(registration_record{.transport = "client",
                                                  .region = "buf",
                                                  .id = 0x9999,
                                                  .registered_seq = 1,
                                                  .fill_seed = 3,
                                                  .size = region_size});
  first_execution(w).registration_id = 0x9999;
  EXPECT_TRUE(one_violation(check_stale_rejection(w.h),
                            "registration 0x9999 was never registered on server", 100,
                            op1_request));
  w.h.registrations.back().transport = "server";
  EXPECT_TRUE(check_stale_rejection(w.h).passed()) << all(check_stale_rejection(w.h));
}

TEST(stale_rejection, id_of_another_incarnation) {
  auto w = clean_world();
  w.h.registrations.push_back(registration_record{.transport = "server",
                                                  .incarnation = 1,
                                                  .region = "buf",
                                                  .id = 0x6000,
                                                  .registered_seq = 1,
                                                  .fill_seed = 3,
                                                  .size = region_size});
  first_execution(w).registration_id = 0x6000;
  EXPECT_TRUE(one_violation(check_stale_rejection(w.h),
                            "registration 0x6000 (buf) belongs to incarnation 1, not 0", 100,
                            op1_request));
}

TEST(stale_rejection, after_unregister) {
  auto w = clean_world();
  auto& e = first_execution(w);
  w.h.registrations[0].unregistered_seq = e.seq - 1;
  auto r = check_stale_rejection(w.h);
  ASSERT_FALSE(r.passed());
  EXPECT_TRUE(mentions(r, "was unregistered at seq " + std::to_string(e.seq - 1))) << all(r);
  EXPECT_EQ(r.violations[0].task_id, 100u);
  EXPECT_EQ(r.violations[0].request_id, op1_request);
  EXPECT_EQ(r.violations.size(), 6u);  // every execution after it
}

TEST(stale_rejection, unregistered_exactly_at_the_event_is_stale) {
  auto w = clean_world();
  auto& e = first_execution(w);
  w.h.registrations[0].unregistered_seq = e.seq;
  EXPECT_EQ(check_stale_rejection(w.h).violations.size(), 6u);
}

TEST(stale_rejection, before_registration) {
  auto w = clean_world();
  auto& e = first_execution(w);
  w.h.registrations[0].registered_seq = e.seq + 1;
  auto r = check_stale_rejection(w.h);
  EXPECT_TRUE(one_violation(r, "was registered only at seq", 100, op1_request));
}

TEST(stale_rejection, a_rejected_stale_request_is_fine) {
  auto w = clean_world();
  auto& e = first_execution(w);
  e.registration_id = 0x9999;
  e.outcome = status::stale_registration;
  auto r = check_stale_rejection(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 5u);
}

}  // namespace
}  // namespace faultlane::sim::test
