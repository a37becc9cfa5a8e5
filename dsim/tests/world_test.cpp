// The world: seeded choice among ready contexts, virtual time that jumps,
// timers on it, idleness reported instead of waited out, and a digest that
// is the same for the same seed and differs across seeds.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "faultlane/dsim/sync.hpp"
#include "faultlane/dsim/timer.hpp"
#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;

TEST(dsim_world, time_jumps_to_the_next_timer_and_timers_fire_in_expiry_order) {
  world w(1);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::vector<int> fired;
  timer late(ctx), early(ctx);
  late.expires_after(10s);
  early.expires_after(3s);
  late.async_wait([&](std::error_code ec) { fired.push_back(ec ? -2 : 2); });
  early.async_wait([&](std::error_code ec) { fired.push_back(ec ? -1 : 1); });
  EXPECT_EQ(w.run_until([&] { return fired.size() == 2; }), world::wait_result::met);
  EXPECT_EQ(fired, (std::vector<int>{1, 2}));
  EXPECT_EQ(w.now().time_since_epoch(), std::chrono::nanoseconds(10s));
  EXPECT_EQ(clock::now(), w.now());
  w.remove_context(ctx);
}

// Timers due at one instant fire in an order the seed draws (docs/dsim.md:
// "events due at the same instant run in an order drawn from the seed"),
// the same order for the same seed, not always the order they were set.
std::string same_instant_order(std::uint64_t seed) {
  world w(seed);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::string order;
  std::vector<std::unique_ptr<timer>> timers;
  for (char c = 'a'; c < 'g'; ++c) {
    timers.push_back(std::make_unique<timer>(ctx));
    timers.back()->expires_at(clock::time_point(1s));
    timers.back()->async_wait([&order, c](std::error_code ec) {
      if (!ec) order.push_back(c);
    });
  }
  EXPECT_EQ(w.run_until([&] { return order.size() == 6; }), world::wait_result::met);
  EXPECT_EQ(w.now(), clock::time_point(1s));
  w.remove_context(ctx);
  return order;
}

TEST(dsim_world, events_due_at_one_instant_run_in_an_order_the_seed_draws) {
  std::set<std::string> orders;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const auto order = same_instant_order(seed);
    EXPECT_EQ(order, same_instant_order(seed)) << "seed " << seed << " did not replay";
    orders.insert(order);
  }
  EXPECT_GE(orders.size(), 3u) << "ten seeds gave " << orders.size() << " orders";
}

TEST(dsim_world, a_cancelled_or_moved_wait_ends_aborted_and_never_fires) {
  world w(2);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::vector<std::error_code> ends;
  timer t(ctx);
  t.expires_after(1s);
  t.async_wait([&](std::error_code ec) { ends.push_back(ec); });
  EXPECT_EQ(t.expires_after(2s), 1u);  // moving it cancels the wait
  t.async_wait([&](std::error_code ec) { ends.push_back(ec); });
  EXPECT_EQ(t.cancel(), 1u);
  EXPECT_EQ(w.run_until([] { return false; }), world::wait_result::idle);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0], asio::error::operation_aborted);
  EXPECT_EQ(ends[1], asio::error::operation_aborted);
  EXPECT_EQ(w.now(), clock::time_point{});  // nothing was left to wait for
  w.remove_context(ctx);
}

TEST(dsim_world, a_wait_whose_deadline_comes_first_times_out_at_the_deadline) {
  world w(3);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  bool fired = false;
  timer t(ctx);
  t.expires_after(5s);
  t.async_wait([&](std::error_code) { fired = true; });
  EXPECT_EQ(w.run_until([&] { return fired; }, clock::time_point(2s)),
            world::wait_result::timed_out);
  EXPECT_EQ(w.now(), clock::time_point(2s));
  EXPECT_FALSE(fired);
  EXPECT_EQ(w.run_until([&] { return fired; }), world::wait_result::met);
  w.remove_context(ctx);
}

TEST(dsim_world, nothing_left_to_run_is_idle_not_a_hang) {
  world w(4);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  EXPECT_EQ(w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_FALSE(w.step());
  w.remove_context(ctx);
}

// Three contexts, each with a chain of handlers: the seed decides the
// interleaving. The order is the same for the same seed, and some seeds
// give different orders.
std::string interleaving(std::uint64_t seed, std::uint64_t* digest = nullptr) {
  world w(seed);
  asio::io_context a, b, c;
  w.add_context(a, "a");
  w.add_context(b, "b");
  w.add_context(c, "c");
  std::string order;
  for (int i = 0; i < 4; ++i) {
    asio::post(a, [&] { order += 'a'; });
    asio::post(b, [&] { order += 'b'; });
    asio::post(c, [&] { order += 'c'; });
  }
  EXPECT_EQ(w.run_until([&] { return order.size() == 12; }), world::wait_result::met);
  if (digest != nullptr) *digest = w.digest();
  w.remove_context(a);
  w.remove_context(b);
  w.remove_context(c);
  return order;
}

TEST(dsim_world, the_seed_picks_which_ready_context_runs_and_replays_it) {
  std::uint64_t d1 = 0, d1_again = 0;
  const auto first = interleaving(1, &d1);
  EXPECT_EQ(interleaving(1, &d1_again), first);
  EXPECT_EQ(d1, d1_again);
  std::vector<std::string> orders;
  std::vector<std::uint64_t> digests;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    std::uint64_t d = 0;
    orders.push_back(interleaving(seed, &d));
    digests.push_back(d);
  }
  std::sort(orders.begin(), orders.end());
  EXPECT_GT(std::unique(orders.begin(), orders.end()) - orders.begin(), 2);
  std::sort(digests.begin(), digests.end());
  EXPECT_EQ(std::unique(digests.begin(), digests.end()) - digests.begin(), 10);
}

// A check-then-act between two contexts: each reads a shared balance in one
// handler and writes its update in the next (the check and the act are two
// steps apart, as when a handler posts its continuation). Whether the other
// context's read falls between them is up to the schedule.
struct check_then_act {
  int balance = 0;
  bool lost_update = false;
};

check_then_act run_check_then_act(std::uint64_t seed, bool act_in_the_same_handler) {
  world w(seed);
  asio::io_context a, b;
  w.add_context(a, "a");
  w.add_context(b, "b");
  check_then_act out;
  auto deposit = [&](asio::io_context& ctx) {
    asio::post(ctx, [&] {
      const int seen = out.balance;  // the check
      if (act_in_the_same_handler) {
        out.balance = seen + 1;
        return;
      }
      asio::post(ctx, [&, seen] { out.balance = seen + 1; });  // the act, a step later
    });
  };
  deposit(a);
  deposit(b);
  (void)w.run_until([] { return false; });
  out.lost_update = out.balance != 2;
  w.remove_context(a);
  w.remove_context(b);
  return out;
}

TEST(dsim_world, the_seed_reaches_a_check_then_act_race_between_contexts_and_replays_it) {
  std::vector<std::uint64_t> racing, clean;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const auto r = run_check_then_act(seed, false);
    (r.lost_update ? racing : clean).push_back(seed);
    EXPECT_EQ(run_check_then_act(seed, false).balance, r.balance);  // the seed replays it
    // Checked and acted on in one handler, no schedule loses an update.
    EXPECT_FALSE(run_check_then_act(seed, true).lost_update) << seed;
  }
  EXPECT_FALSE(racing.empty());  // some schedule puts b's check inside a's window
  EXPECT_FALSE(clean.empty());   // and some does not
}

TEST(dsim_world, the_trace_keeps_the_latest_events_in_order) {
  world w(5, 3);
  for (std::uint64_t i = 0; i < 5; ++i) w.record("mark", i);
  const auto text = w.trace_text();
  EXPECT_EQ(text.find("mark 1 "), std::string::npos) << text;
  const auto two = text.find("mark 2 ");
  const auto four = text.find("mark 4 ");
  ASSERT_NE(two, std::string::npos) << text;
  ASSERT_NE(four, std::string::npos) << text;
  EXPECT_LT(two, four);
}

TEST(dsim_sync, a_wait_pumps_the_world_until_its_predicate_holds) {
  world w(6);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::mutex m;
  condition_variable cv;
  bool fired = false;
  timer t(ctx);
  t.expires_after(3s);
  t.async_wait([&](std::error_code) { fired = true; });
  std::unique_lock lock(m);
  EXPECT_FALSE(cv.wait_for(lock, 1s, [&] { return fired; }));  // times out, in virtual time
  EXPECT_EQ(w.now(), clock::time_point(1s));
  EXPECT_TRUE(cv.wait_for(lock, 10s, [&] { return fired; }));
  EXPECT_EQ(w.now(), clock::time_point(3s));
  w.remove_context(ctx);
}

TEST(dsim_sync_death, a_wait_nothing_can_meet_is_a_deadlock_not_a_hang) {
  EXPECT_DEATH(
      {
        world w(7);
        std::mutex m;
        condition_variable cv;
        std::unique_lock lock(m);
        cv.wait(lock, [] { return false; });
      },
      "deadlock");
}

TEST(dsim_sync_death, a_blocking_wait_inside_a_handler_is_an_assertion) {
  EXPECT_DEATH(
      {
        world w(8);
        asio::io_context ctx;
        w.add_context(ctx, "ctx");
        asio::post(ctx, [] {
          std::mutex m;
          condition_variable cv;
          std::unique_lock lock(m);
          (void)cv.wait_for(lock, 1s, [] { return false; });
        });
        (void)w.step();
      },
      "in_step");
}

TEST(dsim_sync_death, starting_an_os_thread_is_an_assertion) {
  EXPECT_DEATH({ no_thread t([] {}); }, "no OS thread");
}

}  // namespace
}  // namespace faultlane::dsim
