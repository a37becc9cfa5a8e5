#include "faultlane/core/completion.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

namespace faultlane {
namespace {

TEST(unique_function, holds_move_only_callables_inline_and_on_the_heap) {
  auto token = std::make_unique<int>(41);
  unique_function<int(int)> small = [t = std::move(token)](int x) { return *t + x; };
  EXPECT_EQ(small(1), 42);
  unique_function<int(int)> moved = std::move(small);
  EXPECT_FALSE(static_cast<bool>(small));
  EXPECT_EQ(moved(2), 43);

  auto shared = std::make_shared<int>(7);
  struct big {
    std::shared_ptr<int> p;
    char pad[128];
    int operator()(int x) const { return *p * x; }
  };
  {
    unique_function<int(int)> large = big{shared, {}};
    EXPECT_EQ(shared.use_count(), 2);
    unique_function<int(int)> large2 = std::move(large);
    EXPECT_EQ(large2(3), 21);
    EXPECT_EQ(shared.use_count(), 2);
  }
  EXPECT_EQ(shared.use_count(), 1);  // destroyed with its holder
}

TEST(terminal_action, is_consumed_by_one_finalize) {
  int calls = 0;
  status seen = status::internal_error;
  terminal_action action([&](status s, std::uint64_t) {
    ++calls;
    seen = s;
  });
  EXPECT_TRUE(action.armed());
  terminal_action moved = std::move(action);
  EXPECT_FALSE(action.armed());
  std::move(moved).finalize(status::ok, 0);
  EXPECT_FALSE(moved.armed());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, status::ok);
}

TEST(settlement, publishes_after_the_last_reference_with_the_most_severe_status) {
  int calls = 0;
  status seen = status::ok;
  std::uint64_t bytes = 0;
  settlement s(terminal_action([&](status st, std::uint64_t b) {
                 ++calls;
                 seen = st;
                 bytes = b;
               }),
               3);
  EXPECT_FALSE(s.retire(status::ok, 100));
  EXPECT_FALSE(s.retire(status::timeout, 20));
  EXPECT_EQ(calls, 0);  // a timed-out slice does not publish while I/O is live
  EXPECT_FALSE(s.settled());
  EXPECT_EQ(s.current_status(), status::timeout);
  EXPECT_TRUE(s.retire(status::cancelled, 0));
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, status::timeout);
  EXPECT_EQ(bytes, 120u);
  EXPECT_TRUE(s.settled());
}

// Rule: of two outcomes equally severe, the first retired stays (status.hpp,
// most_severe: "the first on a tie"); and every byte counts, one included.
TEST(settlement, keeps_the_first_of_equally_severe_outcomes_and_counts_every_byte) {
  ASSERT_EQ(severity(status::timeout), severity(status::connection_failed));
  for (const auto& [first, second] : {std::pair{status::timeout, status::connection_failed},
                                      std::pair{status::connection_failed, status::timeout}}) {
    status seen = status::ok;
    std::uint64_t bytes = 0;
    settlement s(terminal_action([&](status st, std::uint64_t b) {
                   seen = st;
                   bytes = b;
                 }),
                 3);
    EXPECT_FALSE(s.retire(status::ok, 1));
    EXPECT_FALSE(s.retire(first, 1));
    EXPECT_TRUE(s.retire(second, 0));
    EXPECT_EQ(seen, first) << to_string(first) << " then " << to_string(second);
    EXPECT_EQ(bytes, 2u);
  }
}

// A timeout and a completion race on two threads; each round exactly one of
// them runs the terminal action (whichever retires last), and it publishes
// the timeout, the more severe of the two outcomes.
TEST(settlement, timeout_racing_completion_finalizes_exactly_once) {
  constexpr int rounds = 5000;
  std::atomic<int> finalized{0};
  std::atomic<int> published_timeout{0};
  std::atomic<int> wins[2] = {0, 0};
  std::unique_ptr<settlement> current;
  std::barrier sync(3);
  auto racer = [&](int who, status outcome) {
    for (int i = 0; i < rounds; ++i) {
      sync.arrive_and_wait();  // start: `current` is ready
      if (current->retire(outcome, outcome == status::ok ? 64 : 0)) wins[who].fetch_add(1);
      sync.arrive_and_wait();  // end
    }
  };
  std::thread completion(racer, 0, status::ok);
  std::thread timeout(racer, 1, status::timeout);
  for (int i = 0; i < rounds; ++i) {
    current = std::make_unique<settlement>(terminal_action([&](status s, std::uint64_t) {
                                             finalized.fetch_add(1);
                                             if (s == status::timeout)
                                               published_timeout.fetch_add(1);
                                           }),
                                           2);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    ASSERT_EQ(finalized.load(), i + 1) << "round " << i;
    ASSERT_TRUE(current->settled());
  }
  completion.join();
  timeout.join();
  EXPECT_EQ(finalized.load(), rounds);
  EXPECT_EQ(published_timeout.load(), rounds);
  EXPECT_EQ(wins[0].load() + wins[1].load(), rounds);
}

}  // namespace
}  // namespace faultlane
