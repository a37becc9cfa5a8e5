#include "faultlane/core/failpoint.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <vector>

namespace faultlane {
namespace {

using namespace std::chrono_literals;
namespace fp = failpoint;

#if defined(FAULTLANE_FAILPOINTS_ENABLED)

TEST(failpoint, unarmed_does_nothing) {
  EXPECT_FALSE(FAULTLANE_FAILPOINT("test.unarmed").has_value());
  EXPECT_EQ(fp::fired("test.unarmed"), 0u);
}

TEST(failpoint, return_error_fires_count_times) {
  fp::scoped armed(
      "test.error",
      {.act = fp::action::return_error, .error = status::stale_registration, .count = 2});
  EXPECT_EQ(FAULTLANE_FAILPOINT("test.error"), status::stale_registration);
  EXPECT_EQ(FAULTLANE_FAILPOINT("test.error"), status::stale_registration);
  EXPECT_FALSE(FAULTLANE_FAILPOINT("test.error").has_value());
  EXPECT_EQ(fp::fired("test.error"), 2u);
  EXPECT_EQ(fp::evaluated("test.error"), 3u);
  EXPECT_FALSE(FAULTLANE_FAILPOINT("test.other").has_value());
}

TEST(failpoint, a_keyed_failpoint_fires_only_for_its_key) {
  fp::scoped armed("test.keyed",
                   {.act = fp::action::return_error, .error = status::busy, .only_key = 42});
  EXPECT_FALSE(FAULTLANE_FAILPOINT_KEY("test.keyed", 41).has_value());
  EXPECT_FALSE(FAULTLANE_FAILPOINT("test.keyed").has_value());
  EXPECT_EQ(FAULTLANE_FAILPOINT_KEY("test.keyed", 42), status::busy);
  EXPECT_EQ(fp::fired("test.keyed"), 1u);
  EXPECT_EQ(fp::evaluated("test.keyed"), 1u);  // other keys are not counted
}

TEST(failpoint, throw_raises_injected_exception) {
  fp::scoped armed("test.throw", {.act = fp::action::throw_exception, .count = 1});
  EXPECT_THROW((void)FAULTLANE_FAILPOINT("test.throw"), fp::injected_exception);
  EXPECT_NO_THROW((void)FAULTLANE_FAILPOINT("test.throw"));
}

std::vector<bool> failpoint_schedule(std::uint64_t seed) {
  fp::scoped armed("test.prob",
                   {.act = fp::action::return_error, .probability = 0.5, .seed = seed});
  std::vector<bool> fired;
  for (int i = 0; i < 200; ++i) fired.push_back(FAULTLANE_FAILPOINT("test.prob").has_value());
  return fired;
}

TEST(failpoint, probability_is_driven_by_the_seed) {
  auto a = failpoint_schedule(7);
  EXPECT_EQ(a, failpoint_schedule(7));
  EXPECT_NE(a, failpoint_schedule(8));
  auto fires = std::count(a.begin(), a.end(), true);
  EXPECT_GT(fires, 60);
  EXPECT_LT(fires, 140);
}

TEST(failpoint, pause_holds_until_resumed) {
  fp::scoped armed("test.pause", {.act = fp::action::pause, .count = 1});
  auto paused = std::async(std::launch::async, [] { return FAULTLANE_FAILPOINT("test.pause"); });
  ASSERT_TRUE(fp::wait_paused("test.pause", 1, 5000ms));
  EXPECT_EQ(paused.wait_for(10ms), std::future_status::timeout);
  fp::resume("test.pause");
  ASSERT_EQ(paused.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(paused.get().has_value());
}

TEST(failpoint, disarm_releases_paused_threads) {
  fp::arm("test.pause2", {.act = fp::action::pause});
  auto paused = std::async(std::launch::async, [] { return FAULTLANE_FAILPOINT("test.pause2"); });
  ASSERT_TRUE(fp::wait_paused("test.pause2", 1, 5000ms));
  fp::disarm("test.pause2");
  ASSERT_EQ(paused.wait_for(5s), std::future_status::ready);
}

TEST(failpoint, delay_holds_at_least_its_time) {
  fp::scoped armed("test.delay", {.act = fp::action::delay, .delay_ms = 30, .count = 1});
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(FAULTLANE_FAILPOINT("test.delay").has_value());
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_EQ(fp::fired("test.delay"), 1u);
}

#else

TEST(failpoint, compiled_out_in_this_build_even_when_armed) {
  fp::scoped armed("test.error", {.act = fp::action::return_error, .error = status::busy});
  EXPECT_FALSE(FAULTLANE_FAILPOINT("test.error").has_value());
  EXPECT_EQ(fp::evaluated("test.error"), 0u);
}

#endif

TEST(failpoint, actions_parse_and_print) {
  for (auto a : {fp::action::off, fp::action::return_error, fp::action::delay,
                 fp::action::throw_exception, fp::action::pause}) {
    EXPECT_EQ(fp::parse_action(fp::to_string(a)), a);
  }
  EXPECT_FALSE(fp::parse_action("explode").has_value());
}

}  // namespace
}  // namespace faultlane
