// The world's clock and its records, each rule on a world of a context or
// two: the trace keeps exactly its bound, the latest oldest first, one
// line each in its format; a wait stops at a deadline it reached, runs an
// event due exactly at it, and with nothing left jumps to it; an event for
// a time passed runs now, in the seeded order of the instant; a cancelled
// event never runs nor moves time; time only moves forward; every ready
// context (and fiber) is picked first on some seed; a context drained as
// it goes runs all it has at once, busy or not; a timed event waits while
// a context has a ready handler; and which context ran enters the digest.
#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/post.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "faultlane/dsim/world.hpp"

namespace faultlane::dsim {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::uint64_t> marks(const world& w) {
  std::vector<std::uint64_t> out;
  for (const auto& e : w.trace()) out.push_back(e.a);
  return out;
}

TEST(dsim_world_rules, the_trace_keeps_exactly_its_bound_the_latest_oldest_first) {
  world w(1, 3);
  w.record("mark", 0);
  w.record("mark", 1);
  EXPECT_EQ(w.trace().size(), 2u);
  EXPECT_EQ(lines_of(w.trace_text()).size(), 2u);
  for (std::uint64_t i = 2; i < 7; ++i) w.record("mark", i);
  EXPECT_EQ(w.trace().size(), 3u) << "the trace outgrew its bound";
  const auto all = lines_of(w.trace_text());
  ASSERT_EQ(all.size(), 3u);
  EXPECT_NE(all[0].find("mark 4 "), std::string::npos) << all[0];
  EXPECT_NE(all[1].find("mark 5 "), std::string::npos) << all[1];
  EXPECT_NE(all[2].find("mark 6 "), std::string::npos) << all[2];
  const auto last_two = lines_of(w.trace_text(2));
  ASSERT_EQ(last_two.size(), 2u);
  EXPECT_NE(last_two[0].find("mark 5 "), std::string::npos) << last_two[0];
  EXPECT_NE(last_two[1].find("mark 6 "), std::string::npos) << last_two[1];
  EXPECT_TRUE(w.trace_text(0).empty());
  EXPECT_EQ(lines_of(w.trace_text(100)).size(), 3u);
  const auto kept_marks = marks(w);
  const std::set<std::uint64_t> kept(kept_marks.begin(), kept_marks.end());
  EXPECT_EQ(kept, (std::set<std::uint64_t>{4, 5, 6}));
}

// A bound of nothing keeps the one latest event.
TEST(dsim_world_rules, a_trace_bound_of_zero_keeps_the_latest_event) {
  world w(2, 0);
  w.record("mark", 1);
  w.record("mark", 2);
  ASSERT_EQ(w.trace().size(), 1u);
  EXPECT_EQ(w.trace()[0].a, 2u);
}

// One line an event: step, virtual time in microseconds, kind, two numbers.
TEST(dsim_world_rules, a_trace_line_says_step_time_kind_and_both_numbers) {
  world w(3);
  w.advance(5ms);
  w.record("mark", 7, 9);
  const auto lines = lines_of(w.trace_text(1));
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "step 0 t=5000us mark 7 9");
}

// run_until stops once virtual time reached the deadline: with a handler
// ready and the deadline now, it runs nothing.
TEST(dsim_world_rules, a_wait_whose_deadline_is_now_times_out_without_a_step) {
  world w(4);
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  bool ran = false;
  asio::post(ctx, [&] { ran = true; });
  EXPECT_EQ(w.run_until([] { return false; }, w.now()), world::wait_result::timed_out);
  EXPECT_FALSE(ran);
  EXPECT_EQ(w.steps(), 0u);
  EXPECT_EQ(w.run_until([&] { return ran; }), world::wait_result::met);
  w.remove_context(ctx);
}

// An event due exactly at the deadline runs inside the wait.
TEST(dsim_world_rules, an_event_due_at_the_deadline_runs_before_the_wait_ends) {
  world w(5);
  bool ran = false;
  w.at(clock::time_point(2ms), [&] { ran = true; });
  EXPECT_EQ(w.run_until([&] { return ran; }, clock::time_point(2ms)), world::wait_result::met);
  EXPECT_EQ(w.now(), clock::time_point(2ms));
}

// With nothing left to run, a finite wait's deadline is what comes next:
// time goes there, and the wait ends timed out (or met, if that met it).
TEST(dsim_world_rules, with_nothing_left_a_finite_wait_jumps_to_its_deadline) {
  world w(6);
  EXPECT_EQ(w.run_until([] { return false; }, clock::time_point(3ms)),
            world::wait_result::timed_out);
  EXPECT_EQ(w.now(), clock::time_point(3ms));
  EXPECT_EQ(w.run_until([&] { return w.now() >= clock::time_point(5ms); }, clock::time_point(5ms)),
            world::wait_result::met);
  EXPECT_EQ(w.now(), clock::time_point(5ms));
  EXPECT_FALSE(w.wait([] { return false; }, clock::time_point(8ms)));
  EXPECT_EQ(w.now(), clock::time_point(8ms));
  EXPECT_EQ(w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_EQ(w.now(), clock::time_point(8ms)) << "no deadline, and time moved";
}

// Time only moves forward: an event set for a time passed runs at once,
// at the time it is now, and among the events of this instant in an order
// the seed draws, not always first.
TEST(dsim_world_rules, an_event_for_a_time_passed_runs_now_in_the_seeded_order) {
  std::set<std::string> orders;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    world w(seed);
    w.advance(5ms);
    std::string order;
    std::vector<clock::time_point> at;
    w.at(w.now(), [&] { order += 'n'; });
    w.at(clock::time_point(1ms), [&] {
      order += 'p';
      at.push_back(w.now());
    });
    EXPECT_EQ(w.run_until([&] { return order.size() == 2; }), world::wait_result::met);
    ASSERT_EQ(at.size(), 1u);
    EXPECT_EQ(at[0], clock::time_point(5ms)) << "time went back";
    orders.insert(order);
  }
  EXPECT_EQ(orders.size(), 2u) << "the event for a time passed always ran " << *orders.begin();
}

// A cancelled event never runs and does not move time; an event cancels
// once, and not after it ran.
TEST(dsim_world_rules, a_cancelled_event_never_runs_and_cancels_once) {
  world w(7);
  bool ran = false;
  const auto id = w.at(clock::time_point(1ms), [&] { ran = true; });
  EXPECT_TRUE(w.cancel(id));
  EXPECT_FALSE(w.cancel(id)) << "cancelled twice";
  EXPECT_EQ(w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_FALSE(ran);
  EXPECT_EQ(w.now(), clock::time_point{});
  const auto done = w.at(clock::time_point(1ms), [&] { ran = true; });
  EXPECT_EQ(w.run_until([&] { return ran; }), world::wait_result::met);
  EXPECT_FALSE(w.cancel(done)) << "cancelled after it ran";
}

// advance() moves time forward only, and records only a move; an event
// that came due meanwhile runs after it, at the time it is then.
TEST(dsim_world_rules, advance_moves_time_forward_only_and_what_came_due_runs_late) {
  world w(8);
  std::vector<clock::time_point> at;
  w.at(clock::time_point(1ms), [&] { at.push_back(w.now()); });
  const auto before = w.trace().size();
  w.advance(-1ms);
  w.advance(clock::duration::zero());
  EXPECT_EQ(w.now(), clock::time_point{});
  EXPECT_EQ(w.trace().size(), before) << "an advance of nothing was recorded";
  w.advance(2ms);
  EXPECT_EQ(w.now(), clock::time_point(2ms));
  ASSERT_EQ(w.trace().size(), before + 1);
  EXPECT_EQ(w.trace().back().kind, "advance");
  EXPECT_EQ(w.trace().back().a, 2000000u);
  EXPECT_EQ(w.run_until([&] { return !at.empty(); }), world::wait_result::met);
  EXPECT_EQ(at[0], clock::time_point(2ms));
}

// Time moves once per instant: events due together record one jump.
TEST(dsim_world_rules, events_of_one_instant_record_one_time_jump) {
  world w(9);
  int ran = 0;
  for (int i = 0; i < 3; ++i) w.at(clock::time_point(1ms), [&] { ++ran; });
  EXPECT_EQ(w.run_until([&] { return ran == 3; }), world::wait_result::met);
  int jumps = 0;
  for (const auto& e : w.trace()) jumps += e.kind == "time" ? 1 : 0;
  EXPECT_EQ(jumps, 1);
}

// With n contexts ready, each is the one that runs first on some seed:
// every order of the shuffle is possible.
std::set<std::size_t> firsts(std::size_t n, std::uint64_t seeds) {
  std::set<std::size_t> out;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    world w(seed);
    std::vector<asio::io_context> contexts(n);
    std::size_t first = n;
    for (std::size_t i = 0; i < n; ++i) {
      w.add_context(contexts[i], "ctx");
      asio::post(contexts[i], [&first, i, n] {
        if (first == n) first = i;
      });
    }
    EXPECT_TRUE(w.step());
    out.insert(first);
    for (auto& c : contexts) w.remove_context(c);
  }
  return out;
}

TEST(dsim_world_rules, every_ready_context_runs_first_on_some_seed) {
  EXPECT_EQ(firsts(2, 30), (std::set<std::size_t>{0, 1}));
  EXPECT_EQ(firsts(3, 40), (std::set<std::size_t>{0, 1, 2}));
}

// A fiber is shuffled with the contexts: on some seeds it runs first, on
// others a context does.
TEST(dsim_world_rules, a_fiber_and_a_context_each_run_first_on_some_seed) {
  std::set<char> first;
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    world w(seed);
    asio::io_context ctx;
    w.add_context(ctx, "ctx");
    char who = 0;
    asio::post(ctx, [&] { who = who == 0 ? 'c' : who; });
    w.spawn("f", [&] { who = who == 0 ? 'f' : who; });
    EXPECT_TRUE(w.step());
    first.insert(who);
    EXPECT_EQ(w.run_until([&] { return w.fibers() == 0; }), world::wait_result::met);
    w.remove_context(ctx);
  }
  EXPECT_EQ(first, (std::set<char>{'c', 'f'}));
}

// A fiber reports its id inside and none outside; its start, each resume
// and its end are in the trace.
TEST(dsim_world_rules, a_fiber_knows_its_id_and_its_life_is_in_the_trace) {
  world w(10);
  world::fiber_id inside = 0;
  const auto id = w.spawn("f", [&] { inside = w.current_fiber(); });
  EXPECT_EQ(w.current_fiber(), 0u);
  EXPECT_FALSE(w.finished(id));
  EXPECT_EQ(w.run_until([&] { return w.finished(id); }), world::wait_result::met);
  EXPECT_EQ(inside, id);
  std::set<std::string> kinds;
  for (const auto& e : w.trace()) {
    if (e.a == id) kinds.insert(e.kind);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"spawn", "fiber", "fiber_end"}));
}

// Outside every world the clock reads its epoch.
TEST(dsim_world_rules, the_clock_reads_zero_outside_a_world) {
  EXPECT_FALSE(world::exists());
  EXPECT_EQ(clock::now(), clock::time_point{});
  world w(11);
  w.advance(1ms);
  EXPECT_EQ(clock::now(), clock::time_point(1ms));
}

// A context drained as it is removed runs every handler it has, those they
// post too, at once: busy under a hiccup or not, with no time passing.
TEST(dsim_world_rules, a_drained_context_runs_all_it_has_at_once_busy_or_not) {
  world w(12);
  w.set_load({.handler_cost_max = {}, .hiccup_probability = 1, .hiccup_max = 10ms});
  asio::io_context ctx;
  w.add_context(ctx, "ctx");
  int ran = 0;
  asio::post(ctx, [&] { ++ran; });
  EXPECT_TRUE(w.step());  // the context is busy for 5 to 10 ms now
  ASSERT_EQ(ran, 1);
  const auto now = w.now();
  const auto steps = w.steps();
  asio::post(ctx, [&] { ++ran; });
  asio::post(ctx, [&] {
    ++ran;
    asio::post(ctx, [&] { ++ran; });
  });
  w.drain_and_remove(ctx);
  EXPECT_EQ(ran, 4);
  EXPECT_EQ(w.now(), now);
  EXPECT_EQ(w.steps(), steps + 3);
  int drains = 0;
  for (const auto& e : w.trace()) drains += e.kind == "drain" ? 1 : 0;
  EXPECT_EQ(drains, 3);
  asio::post(ctx, [&] { ++ran; });
  EXPECT_EQ(w.run_until([] { return false; }), world::wait_result::idle);
  EXPECT_EQ(ran, 4) << "a removed context still ran";
}

// Rule: a step runs a ready handler whenever a context has one; a timed
// event runs only when none has, even an event due now. Three handlers
// and an event due at once: the event runs last, stepped one by one or
// by a wait, on every seed.
TEST(dsim_world_rules, a_timed_event_waits_while_a_context_has_a_ready_handler) {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    for (bool by_wait : {false, true}) {
      world w(seed);
      asio::io_context ctx;
      w.add_context(ctx, "ctx");
      std::string order;
      w.at(w.now(), [&] { order += 'e'; });
      for (int i = 0; i < 3; ++i) asio::post(ctx, [&] { order += 'h'; });
      if (by_wait) {
        EXPECT_EQ(w.run_until([&] { return order.size() == 4; }), world::wait_result::met);
      } else {
        for (int i = 0; i < 4; ++i) EXPECT_TRUE(w.step());
      }
      EXPECT_EQ(order, "hhhe") << "seed " << seed << (by_wait ? ", a wait" : ", steps");
      w.remove_context(ctx);
    }
  }
}

// Rule: the digest chains which context ran each step. Two worlds of one
// seed, alike but for the context their one handler is on, digest apart.
TEST(dsim_world_rules, which_context_ran_a_step_enters_the_digest) {
  auto digest_with_handler_on = [](std::size_t which) {
    world w(13);
    asio::io_context first, second;
    w.add_context(first, "ctx");
    w.add_context(second, "ctx");
    asio::post(which == 0 ? first : second, [] {});
    EXPECT_TRUE(w.step());
    EXPECT_FALSE(w.step());
    const auto digest = w.digest();
    w.remove_context(first);
    w.remove_context(second);
    return digest;
  };
  EXPECT_EQ(digest_with_handler_on(0), digest_with_handler_on(0));
  EXPECT_NE(digest_with_handler_on(0), digest_with_handler_on(1));
}

}  // namespace
}  // namespace faultlane::dsim
