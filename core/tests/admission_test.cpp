#include "faultlane/core/admission.hpp"

#include "faultlane/core/failpoint.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <random>
#include <thread>
#include <vector>

namespace faultlane {

namespace {

using namespace std::chrono_literals;

TEST(admission, task_bound_at_the_limit_and_one_past) {
  admission a({.tasks_max = 4, .bytes_max = 1000});
  auto full = a.try_reserve(4, 400);
  ASSERT_TRUE(full.ok());
  auto over = a.try_reserve(1, 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.code(), status::busy);
  EXPECT_EQ(a.snapshot().tasks, 4u);  // a refused batch counts nothing
  EXPECT_EQ(a.snapshot().bytes, 400u);
  EXPECT_EQ(a.snapshot().rejected_busy, 1u);
  full->release();
  EXPECT_TRUE(a.try_reserve(1, 1).ok());  // recovery once work retires
}

TEST(admission, byte_bound_at_the_limit_and_one_past) {
  admission a({.tasks_max = 100, .bytes_max = 1000});
  EXPECT_EQ(a.try_reserve(1, 1001).code(), status::busy);
  auto exact = a.try_reserve(1, 1000);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(a.try_reserve(1, 1).code(), status::busy);
  EXPECT_TRUE(a.try_reserve(1, 0).ok());  // zero bytes still fits
}

TEST(admission, batch_splits_into_per_task_reservations_released_once) {
  admission a({.tasks_max = 10, .bytes_max = 1000});
  auto batch = a.try_reserve(3, 300);
  ASSERT_TRUE(batch.ok());
  std::vector<admission_reservation> tasks;
  for (int i = 0; i < 3; ++i) tasks.push_back(batch->split(1, 100));
  EXPECT_EQ(batch->tasks(), 0u);
  batch->release();
  EXPECT_EQ(a.snapshot().tasks, 3u);
  tasks[1].release();
  tasks[1].release();  // a second release of the same reservation is a no-op
  EXPECT_EQ(a.snapshot().tasks, 2u);
  EXPECT_EQ(a.snapshot().bytes, 200u);
  admission_reservation moved = std::move(tasks[0]);
  tasks[0].release();  // moved-from: nothing to give back
  EXPECT_EQ(a.snapshot().tasks, 2u);
  tasks.clear();
  moved.release();
  EXPECT_EQ(a.snapshot().tasks, 0u);
  EXPECT_EQ(a.snapshot().bytes, 0u);
  EXPECT_TRUE(a.wait_drained(10ms).ok());
}

TEST(admission, close_refuses_new_work_and_drain_waits) {
  admission a({.tasks_max = 10, .bytes_max = 1000});
  auto held = a.try_reserve(2, 20);
  ASSERT_TRUE(held.ok());
  a.close();
  EXPECT_EQ(a.try_reserve(1, 1).code(), status::shutting_down);
  EXPECT_EQ(a.wait_drained(20ms).code(), status::timeout);
  std::thread releaser([r = std::move(held).value()]() mutable { r.release(); });
  EXPECT_TRUE(a.wait_drained(5000ms).ok());
  releaser.join();
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// The type system never produces a release of more than was reserved; a
// failpoint plants one, for tasks and for bytes on their own.
class admission_underflow_case : public ::testing::TestWithParam<std::uint64_t> {};

TEST_P(admission_underflow_case, one_more_than_reserved_fails_closed) {
  admission a({.tasks_max = 10, .bytes_max = 1000});
  auto held = a.try_reserve(2, 20);
  ASSERT_TRUE(held.ok());
  auto planted = held->split(1, 10);
  auto kept = a.try_reserve(1, 10);  // someone else's reservation
  ASSERT_TRUE(kept.ok());
  held->release();  // outstanding now: planted's and kept's
  {
    failpoint::scoped extra("admission.release_extra",
                            {.act = failpoint::action::return_error, .only_key = GetParam()});
    // One task (key 0) or one byte (key 1) more than planted holds. It
    // still fits in what is outstanding; the books break at kept's release.
    planted.release();
  }
  const auto before_kept = a.snapshot();
  EXPECT_FALSE(before_kept.failed);
  kept->release();
  auto snap = a.snapshot();
  EXPECT_TRUE(snap.failed);
  EXPECT_EQ(snap.tasks, before_kept.tasks);  // counters preserved
  EXPECT_EQ(snap.bytes, before_kept.bytes);
  EXPECT_EQ(a.try_reserve(1, 1).code(), status::admission_underflow);
  EXPECT_EQ(a.wait_drained(5000ms).code(), status::admission_underflow);
  EXPECT_EQ(a.try_reserve(1, 1).code(), status::admission_underflow);
}

INSTANTIATE_TEST_SUITE_P(tasks_and_bytes, admission_underflow_case, ::testing::Values(0u, 1u));

// Once the books broke, a drain already waiting wakes at once, and the
// counters stay as they were: a later release that would fit moves
// nothing. One byte too many: `planted` gives back 11 of its 10 bytes,
// `kept`'s 10 then exceed the 9 counted, and `zero` (no bytes) is still
// out, so its release would fit the counters.
TEST(admission, a_failure_wakes_a_waiting_drain_and_freezes_the_counters) {
  admission a({.tasks_max = 10, .bytes_max = 1000});
  auto planted = a.try_reserve(1, 10);
  auto kept = a.try_reserve(1, 10);
  auto zero = a.try_reserve(1, 0);
  ASSERT_TRUE(planted.ok() && kept.ok() && zero.ok());
  {
    failpoint::scoped extra("admission.release_extra",
                            {.act = failpoint::action::return_error, .only_key = 1});
    planted->release();
  }
  auto drained = std::async(std::launch::async, [&] { return a.wait_drained(30000ms).code(); });
  EXPECT_EQ(drained.wait_for(100ms), std::future_status::timeout);  // 2 tasks still out
  kept->release();
  ASSERT_EQ(drained.wait_for(10s), std::future_status::ready) << "the waiting drain slept on";
  EXPECT_EQ(drained.get(), status::admission_underflow);
  const auto failed = a.snapshot();
  ASSERT_TRUE(failed.failed);
  EXPECT_EQ(failed.tasks, 2u);
  EXPECT_EQ(failed.bytes, 9u);
  zero->release();
  EXPECT_EQ(a.snapshot().tasks, 2u) << "a release after the failure moved the counters";
  EXPECT_EQ(a.snapshot().bytes, 9u);
}
#endif

TEST(admission, concurrent_reserve_and_release_never_exceed_the_bounds) {
  constexpr std::uint64_t tasks_max = 16;
  constexpr std::uint64_t bytes_max = 4096;
  admission a({.tasks_max = tasks_max, .bytes_max = bytes_max});
  std::atomic<std::uint64_t> busy{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      std::vector<admission_reservation> held;
      for (int i = 0; i < 5000; ++i) {
        if (held.empty() || rng() % 2 == 0) {
          auto r = a.try_reserve(1 + rng() % 3, rng() % 1024);
          if (r.ok()) {
            held.push_back(std::move(r).value());
          } else {
            EXPECT_EQ(r.code(), status::busy);
            busy.fetch_add(1);
          }
        } else {
          held.erase(held.begin() + static_cast<long>(rng() % held.size()));
        }
        auto snap = a.snapshot();
        EXPECT_LE(snap.tasks, tasks_max);
        EXPECT_LE(snap.bytes, bytes_max);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GT(busy.load(), 0u);  // the bound was really reached
  auto snap = a.snapshot();
  EXPECT_EQ(snap.tasks, 0u);
  EXPECT_EQ(snap.bytes, 0u);
  EXPECT_FALSE(snap.failed);
}

}  // namespace
}  // namespace faultlane
