// Fibers on the world: picked by the seed like contexts, parked by a wait
// until their condition or deadline, joined; the world's mutexes held
// across a wait; a fiber's exception reaches the driver.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <algorithm>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "faultlane/dsim/sync.hpp"
#include "faultlane/dsim/timer.hpp"
#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;

void sleep(world& w, clock::duration d) {
  const auto until = w.now() + d;
  (void)w.wait([&] { return w.now() >= until; }, until);
}

// Three fibers and a context, each logging four turns; every fiber wakes
// at the same instants, so the seed alone orders them.
std::string fiber_interleaving(std::uint64_t seed, std::uint64_t* digest) {
  world w(seed);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::string log;
  for (int k = 0; k < 4; ++k) asio::post(ctx, [&] { log += 'h'; });
  std::vector<fiber_thread> fibers;
  for (char name : {'a', 'b', 'c'}) {
    fibers.emplace_back([&w, &log, name] {
      for (int k = 0; k < 4; ++k) {
        log += name;
        sleep(w, 1ms);
      }
    });
  }
  for (auto& f : fibers) f.join();
  w.remove_context(ctx);
  EXPECT_EQ(w.now(), clock::time_point(4ms));
  EXPECT_EQ(w.fibers(), 0u);
  *digest = w.digest();
  return log;
}

TEST(dsim_fiber, fibers_interleave_as_the_seed_picks_and_a_seed_replays_its_order) {
  std::uint64_t d = 0, again = 0;
  const auto first = fiber_interleaving(3, &d);
  EXPECT_EQ(fiber_interleaving(3, &again), first);
  EXPECT_EQ(d, again);
  EXPECT_EQ(std::count(first.begin(), first.end(), 'a'), 4);
  EXPECT_EQ(std::count(first.begin(), first.end(), 'h'), 4);
  std::vector<std::string> orders;
  for (std::uint64_t seed = 1; seed <= 10; ++seed) orders.push_back(fiber_interleaving(seed, &d));
  std::sort(orders.begin(), orders.end());
  EXPECT_GT(std::unique(orders.begin(), orders.end()) - orders.begin(), 2);
}

TEST(dsim_fiber, a_parked_fiber_runs_again_once_a_handler_makes_its_condition_true) {
  world w(4);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  bool fired = false;
  timer t(ctx);
  t.expires_after(5s);
  t.async_wait([&](std::error_code) { fired = true; });
  clock::time_point woke{};
  fiber_thread f([&] {
    EXPECT_TRUE(w.in_fiber());
    EXPECT_TRUE(w.wait([&] { return fired; }));
    woke = w.now();
  });
  EXPECT_FALSE(w.in_fiber());
  f.join();
  EXPECT_EQ(woke, clock::time_point(5s));
  w.remove_context(ctx);
}

TEST(dsim_fiber, a_condition_variable_wait_in_a_fiber_times_out_in_virtual_time) {
  world w(5);
  fiber_thread f([&] {
    std::mutex m;
    condition_variable cv;
    std::unique_lock lock(m);
    EXPECT_FALSE(cv.wait_for(lock, 2s, [] { return false; }));
    EXPECT_EQ(w.now(), clock::time_point(2s));
  });
  f.join();
  EXPECT_EQ(w.now(), clock::time_point(2s));
}

TEST(dsim_fiber, a_mutex_held_across_a_wait_holds_the_other_fiber_until_released) {
  world w(6);
  mutex m;
  std::vector<std::string> log;
  fiber_thread second;
  fiber_thread first([&] {
    std::lock_guard lock(m);
    second = fiber_thread([&] {
      std::lock_guard lock(m);  // waits: the first holds it across its sleep
      log.push_back("second at " + std::to_string(w.now().time_since_epoch().count()));
    });
    sleep(w, 1s);
    log.push_back("first releases");
  });
  first.join();
  second.join();
  EXPECT_EQ(log, (std::vector<std::string>{"first releases", "second at 1000000000"}));
}

TEST(dsim_fiber, a_shared_mutex_lets_readers_share_and_holds_a_writer_until_they_leave) {
  world w(7);
  shared_mutex m;
  clock::time_point written{};
  int readers_inside = 0;
  int most_inside = 0;
  std::vector<fiber_thread> fibers;
  for (int k = 0; k < 2; ++k) {
    fibers.emplace_back([&] {
      std::shared_lock lock(m);
      most_inside = std::max(most_inside, ++readers_inside);
      sleep(w, 1s);
      --readers_inside;
    });
  }
  fibers.emplace_back([&] {
    sleep(w, 1ms);  // after both readers are in
    std::unique_lock lock(m);
    EXPECT_EQ(readers_inside, 0);
    written = w.now();
  });
  for (auto& f : fibers) f.join();
  EXPECT_EQ(most_inside, 2);
  EXPECT_EQ(written, clock::time_point(1s));
}

TEST(dsim_fiber, an_exception_in_a_fiber_reaches_the_driver) {
  world w(8);
  fiber_thread f([] { throw std::runtime_error("boom in a fiber"); });
  EXPECT_THROW(f.join(), std::runtime_error);
  EXPECT_EQ(w.fibers(), 0u);
}

TEST(dsim_fiber_death, relocking_a_mutex_from_its_holder_is_an_assertion_not_a_hang) {
  EXPECT_DEATH(
      {
        world w(9);
        mutex m;
        fiber_thread f([&] {
          m.lock();
          m.lock();
        });
        f.join();
      },
      "holder_");
}

TEST(dsim_fiber_death, a_writer_taking_its_shared_mutex_again_is_an_assertion_not_a_hang) {
  EXPECT_DEATH(
      {
        world w(11);
        shared_mutex m;
        fiber_thread f([&] {
          m.lock();
          m.lock_shared();
        });
        f.join();
      },
      "writer_holder_");
}

TEST(dsim_fiber_death, a_fiber_that_waits_for_nothing_is_a_deadlock_at_its_join) {
  EXPECT_DEATH(
      {
        world w(10);
        fiber_thread f([&] { (void)w.wait([] { return false; }); });
        f.join();
      },
      "deadlock");
}

}  // namespace
}  // namespace faultlane::dsim
