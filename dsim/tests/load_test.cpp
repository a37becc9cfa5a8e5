// The load model: a handler's cost and a hiccup hold its context (and only
// its context) busy in virtual time; a timer due meanwhile fires late; off,
// a handler takes no time at all.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "faultlane/dsim/timer.hpp"
#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;

// Posts `count` handlers to `ctx` one after the other (each posts the
// next), recording the virtual time each ran at.
void chain(asio::io_context& ctx, std::size_t count, std::vector<clock::time_point>& at) {
  asio::post(ctx, [&ctx, count, &at] {
    at.push_back(clock::now());
    if (at.size() < count) chain(ctx, count, at);
  });
}

load_model hiccups_only(double probability, clock::duration most) {
  return {.handler_cost_max = {}, .hiccup_probability = probability, .hiccup_max = most};
}

TEST(dsim_load, each_half_of_the_model_turns_it_on_alone) {
  EXPECT_FALSE(load_model{}.on());
  EXPECT_TRUE((load_model{.handler_cost_max = 1us}).on());
  EXPECT_TRUE(hiccups_only(0.5, 1ms).on());
  EXPECT_FALSE(hiccups_only(0.5, {}).on());  // a hiccup of nothing
  EXPECT_FALSE(hiccups_only(0, 1ms).on());   // that never comes
}

TEST(dsim_load, without_a_model_a_handler_takes_no_virtual_time) {
  world w(1);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::vector<clock::time_point> at;
  chain(ctx, 50, at);
  EXPECT_EQ(w.run_until([&] { return at.size() == 50; }), world::wait_result::met);
  EXPECT_EQ(at.back(), clock::time_point{});
  w.remove_context(ctx);
}

TEST(dsim_load, a_hiccup_holds_its_context_and_no_other) {
  world w(2);
  w.set_load(hiccups_only(1, 10ms));  // after every handler
  asio::io_context a, b;
  w.add_context(a, "a");
  w.add_context(b, "b");
  std::vector<clock::time_point> on_a, on_b;
  chain(a, 3, on_a);
  chain(b, 1, on_b);
  EXPECT_EQ(w.run_until([&] { return on_a.size() == 3 && on_b.size() == 1; }),
            world::wait_result::met);
  EXPECT_EQ(on_a[0], clock::time_point{});
  EXPECT_EQ(on_b[0], clock::time_point{});  // a's hiccup did not hold b
  for (std::size_t k = 1; k < on_a.size(); ++k) {
    const auto gap = on_a[k] - on_a[k - 1];
    EXPECT_GE(gap, 5ms) << k;  // half the most, at least
    EXPECT_LE(gap, 10ms) << k;
  }
  w.remove_context(a);
  w.remove_context(b);
}

TEST(dsim_load, handler_costs_stay_within_the_bound_and_vary) {
  world w(3);
  w.set_load({.handler_cost_max = 100us});
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::vector<clock::time_point> at;
  chain(ctx, 1000, at);
  EXPECT_EQ(w.run_until([&] { return at.size() == 1000; }), world::wait_result::met);
  clock::duration shortest = 1h, longest{};
  for (std::size_t k = 1; k < at.size(); ++k) {
    shortest = std::min(shortest, at[k] - at[k - 1]);
    longest = std::max(longest, at[k] - at[k - 1]);
  }
  EXPECT_LE(longest, 100us);
  EXPECT_GE(longest, 90us);   // the draw reaches near the bound
  EXPECT_LE(shortest, 10us);  // and near nothing
  w.remove_context(ctx);
}

TEST(dsim_load, hiccups_come_about_as_often_as_asked) {
  world w(4);
  w.set_load(hiccups_only(0.1, 1ms));
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::vector<clock::time_point> at;
  chain(ctx, 2001, at);
  EXPECT_EQ(w.run_until([&] { return at.size() == 2001; }), world::wait_result::met);
  std::size_t hiccups = 0;
  for (std::size_t k = 1; k < at.size(); ++k) hiccups += at[k] - at[k - 1] >= 500us ? 1 : 0;
  // 2000 draws at 0.1: 200 expected, the standard deviation about 13.
  EXPECT_GT(hiccups, 140u);
  EXPECT_LT(hiccups, 260u);
  w.remove_context(ctx);
}

TEST(dsim_load, a_timer_due_while_its_context_is_busy_fires_when_the_context_is_free) {
  world w(5);
  w.set_load(hiccups_only(1, 20ms));
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  clock::time_point fired_at{};
  bool fired = false;
  timer t(ctx);
  asio::post(ctx, [&] {
    t.expires_after(1ms);
    t.async_wait([&](std::error_code) {
      fired = true;
      fired_at = clock::now();
    });
  });
  EXPECT_EQ(w.run_until([&] { return fired; }), world::wait_result::met);
  EXPECT_GE(fired_at, clock::time_point(10ms));  // not at 1 ms: the hiccup held it
  EXPECT_LE(fired_at, clock::time_point(20ms));
  w.remove_context(ctx);
}

TEST(dsim_load, a_loaded_run_replays_and_the_seed_moves_it) {
  auto end_time = [](std::uint64_t seed) {
    world w(seed);
    w.set_load({.handler_cost_max = 50us, .hiccup_probability = 0.01, .hiccup_max = 5ms});
    asio::io_context ctx;
    w.add_context(ctx, "ctx");
    std::vector<clock::time_point> at;
    chain(ctx, 500, at);
    w.run_until([&] { return at.size() == 500; });
    w.remove_context(ctx);
    return std::pair{at.back(), w.digest()};
  };
  EXPECT_EQ(end_time(7), end_time(7));
  EXPECT_NE(end_time(7).first, end_time(8).first);
}

// Every hiccup lasts between half its bound and all of it, the draws
// reaching near both ends; each is a `hiccup` event in the trace, naming
// the context's slot and the hiccup's length, the gap it made.
TEST(dsim_load, hiccups_last_half_to_all_of_their_bound_and_each_is_in_the_trace) {
  world w(6, 1 << 16);
  w.set_load(hiccups_only(1, 1ms));  // no cost: a gap is its hiccup
  asio::io_context idle, ctx;
  w.add_context(idle, "idle");
  w.add_context(ctx, "ctx");
  std::vector<clock::time_point> at;
  chain(ctx, 401, at);
  EXPECT_EQ(w.run_until([&] { return at.size() == 401; }), world::wait_result::met);
  clock::duration shortest = 1h, longest{};
  std::vector<std::uint64_t> gaps;
  for (std::size_t k = 1; k < at.size(); ++k) {
    const auto gap = at[k] - at[k - 1];
    shortest = std::min(shortest, gap);
    longest = std::max(longest, gap);
    gaps.push_back(static_cast<std::uint64_t>(gap.count()));
  }
  EXPECT_GE(shortest, 500us);
  EXPECT_LE(longest, 1ms);
  EXPECT_LE(shortest, 550us);  // the draw reaches near half
  EXPECT_GE(longest, 950us);   // and near the whole
  std::vector<std::uint64_t> hiccups;
  for (const auto& e : w.trace()) {
    if (e.kind != "hiccup") continue;
    EXPECT_EQ(e.a, 1u) << "the hiccup names another context's slot";
    hiccups.push_back(e.b);
  }
  ASSERT_EQ(hiccups.size(), 401u);  // the last handler's too
  hiccups.pop_back();
  EXPECT_EQ(hiccups, gaps);
  w.remove_context(idle);
  w.remove_context(ctx);
}

// Rule: a handler whose drawn cost is nothing leaves its context free at
// once, with no busy time and no event behind it. A model on only for its
// hiccups, none of which comes: 50 handlers are 50 steps at time zero.
TEST(dsim_load, a_handler_that_costs_nothing_leaves_no_busy_time_and_no_event) {
  world w(7);
  w.set_load(hiccups_only(1e-12, 1ms));
  ASSERT_TRUE(w.load().on());
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  std::vector<clock::time_point> at;
  chain(ctx, 50, at);
  EXPECT_EQ(w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_EQ(at.size(), 50u);
  EXPECT_EQ(w.steps(), 50u) << "a step that ran no handler";
  EXPECT_EQ(w.now(), clock::time_point{});
  w.remove_context(ctx);
}

}  // namespace
}  // namespace faultlane::dsim
