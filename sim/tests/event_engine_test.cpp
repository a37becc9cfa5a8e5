// When a scenario's events fire (docs/scenarios.md, "events:"): the event
// engine alone, over a topology with nothing started. Each event here is a
// `remove_fault` on a link that has no relay, so firing it records an
// event mark naming its fault (and a run error: it could not act); a test
// reads which events fired from the marks. Failpoint events use a real
// failpoint name, armed only in this process.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/sim/runner.hpp"
#include "runner/event_engine.hpp"
#include "runner/recorder.hpp"
#include "runner/run_error.hpp"
#include "runner/run_topology.hpp"

namespace faultlane::sim {
namespace {

event_spec removal(trigger_kind when, std::string fault_name) {
  event_spec e;
  e.when = when;
  e.action = event_action::remove_fault;
  e.link = "nowhere";
  e.fault_name = std::move(fault_name);
  return e;
}

event_spec at_ops(std::string stream, std::uint64_t ops, std::string fault_name) {
  auto e = removal(trigger_kind::stream_ops, std::move(fault_name));
  e.stream = std::move(stream);
  e.ops = ops;
  return e;
}

event_spec at_phase(trigger_kind when, std::string phase, std::string fault_name) {
  auto e = removal(when, std::move(fault_name));
  e.phase = std::move(phase);
  return e;
}

event_spec at_calls(std::string caller, std::uint64_t calls, std::string fault_name) {
  auto e = removal(trigger_kind::caller_calls, std::move(fault_name));
  e.caller = std::move(caller);
  e.calls = calls;
  return e;
}

// An engine over `s` with its topology, recorder and run error.
struct engine_world {
  explicit engine_world(scenario scn) : s(std::move(scn)), topology(s, options, rec) {}
  scenario s;
  run_options options;
  recorder rec{true};
  run_error error;
  run_topology topology;
  event_engine engine{s, topology, rec, error};

  // The fault names of the events that fired so far, in firing order.
  std::vector<std::string> fired() {
    history h = rec.take();
    std::vector<std::string> names;
    for (const auto& m : h.marks) {
      if (m.kind != "event") continue;
      const auto start = std::string("remove_fault nowhere ").size();
      names.push_back(m.text.substr(start, m.text.find(':') - start));
    }
    rec.edit([&](history& back) { back = std::move(h); });
    return names;
  }
};

using names = std::vector<std::string>;

// Rule: {stream: S, ops: N} fires once N ops of S were submitted: when a
// submit takes S's count from below N to N or past it, not before, not
// for another stream, and not again.
TEST(event_engine, an_ops_trigger_fires_when_the_count_reaches_n_and_only_once) {
  scenario s;
  s.events = {at_ops("w", 5, "five"), at_ops("w", 7, "seven"), at_ops("other", 1, "other")};
  engine_world world(std::move(s));
  world.engine.stream_ops("w", 0, 4);  // ops 1..4: below 5
  EXPECT_EQ(world.fired(), names{});
  world.engine.stream_ops("w", 4, 5);  // op 5
  EXPECT_EQ(world.fired(), names{"five"});
  world.engine.stream_ops("w", 4, 6);  // a second report of 5 does not fire it again
  EXPECT_EQ(world.fired(), names{"five"});
  world.engine.stream_ops("w", 7, 9);  // op 7 was counted before (from 7): not 7 again
  EXPECT_EQ(world.fired(), names{"five"});
  world.engine.stream_ops("w", 6, 9);  // ops 7..9, a batch past 7
  EXPECT_EQ(world.fired(), (names{"five", "seven"}));
  world.engine.stream_ops("x", 0, 100);
  EXPECT_EQ(world.fired(), (names{"five", "seven"}));
  world.engine.stream_ops("other", 0, 1);
  EXPECT_EQ(world.fired(), (names{"five", "seven", "other"}));
}

// Rule: {phase: P} fires when P starts and {after_phase: P} when it ends;
// neither for another phase, and each once.
TEST(event_engine, a_phase_trigger_fires_at_its_phase_start_or_end_only) {
  scenario s;
  s.events = {at_phase(trigger_kind::phase_start, "heal", "heal_start"),
              at_phase(trigger_kind::phase_end, "heal", "heal_end"),
              at_phase(trigger_kind::phase_start, "fault", "fault_start")};
  engine_world world(std::move(s));
  world.engine.phase(trigger_kind::phase_end, "fault");
  EXPECT_EQ(world.fired(), names{});
  world.engine.phase(trigger_kind::phase_start, "heal");
  EXPECT_EQ(world.fired(), names{"heal_start"});
  world.engine.phase(trigger_kind::phase_start, "heal");
  EXPECT_EQ(world.fired(), names{"heal_start"});
  world.engine.phase(trigger_kind::phase_end, "heal");
  EXPECT_EQ(world.fired(), (names{"heal_start", "heal_end"}));
  world.engine.phase(trigger_kind::phase_start, "fault");
  EXPECT_EQ(world.fired(), (names{"heal_start", "heal_end", "fault_start"}));
}

// Rule: {caller: C, calls: N} fires once the N-th call of C ended (of any
// of its clients): not at N - 1, not at N + 1, and calls of another
// caller do not count toward C.
TEST(event_engine, a_calls_trigger_fires_at_the_nth_ended_call_of_its_caller) {
  scenario s;
  s.control = {caller_spec{.name = "pings"}, caller_spec{.name = "other"}};
  s.events = {at_calls("pings", 3, "third"), at_calls("pings", 1, "first")};
  engine_world world(std::move(s));
  const caller_spec& pings = world.s.control[0];
  const caller_spec& other = world.s.control[1];
  for (int i = 0; i < 5; ++i) world.engine.caller_call_ended(other);
  EXPECT_EQ(world.fired(), names{});
  world.engine.caller_call_ended(pings);
  EXPECT_EQ(world.fired(), names{"first"});
  world.engine.caller_call_ended(pings);
  EXPECT_EQ(world.fired(), names{"first"});
  world.engine.caller_call_ended(pings);
  EXPECT_EQ(world.fired(), (names{"first", "third"}));
  world.engine.caller_call_ended(pings);
  EXPECT_EQ(world.fired(), (names{"first", "third"}));
}

// Rule: an event that could not act is a run error naming it, and its
// timeline mark says it failed.
TEST(event_engine, an_event_that_cannot_act_is_a_run_error_and_a_failed_mark) {
  scenario s;
  s.events = {at_ops("w", 1, "gone")};
  engine_world world(std::move(s));
  EXPECT_EQ(world.error.get(), "");
  world.engine.stream_ops("w", 0, 1);
  EXPECT_NE(world.error.get().find("event remove_fault nowhere gone failed: "), std::string::npos)
      << world.error.get();
  const history h = world.rec.take();
  ASSERT_EQ(h.marks.size(), 1u);
  EXPECT_FALSE(h.marks[0].ok);
  EXPECT_NE(h.marks[0].text.find(": failed: "), std::string::npos) << h.marks[0].text;
}

// Rule: a fault added to a link with no relay (a data link needs a stream
// to relay) cannot act: a run error naming the link, and a failed mark.
TEST(event_engine, a_fault_added_to_a_link_without_a_relay_is_a_run_error) {
  scenario s;
  event_spec e = at_ops("w", 1, "");
  e.action = event_action::add_fault;
  e.fault_name.clear();
  e.added.spec.name = "late";
  s.events = {e};
  engine_world world(std::move(s));
  world.engine.stream_ops("w", 0, 1);
  const std::string error = world.error.get();
  EXPECT_EQ(error.rfind("event add_fault nowhere ", 0), 0u) << error;
  EXPECT_NE(error.find(" failed: no link nowhere (a data link needs a stream to relay)"),
            std::string::npos)
      << error;
  const history h = world.rec.take();
  ASSERT_EQ(h.marks.size(), 1u);
  EXPECT_FALSE(h.marks[0].ok);
}

event_spec failpoint_event(event_action action, std::uint64_t ops) {
  event_spec e;
  e.when = trigger_kind::stream_ops;
  e.stream = "w";
  e.ops = ops;
  e.action = action;
  e.failpoint = "server.before_write_ack";
  e.failpoint_config.act = failpoint::action::return_error;
  return e;
}

// Rule: an armed failpoint's firings reach the history when it is disarmed
// (by a `disarm` event or at the end of the run), and arming it again
// first counts what the earlier arming fired; an armed failpoint that
// never fired is counted with 0, so the checker can say it never fired.
TEST(event_engine, an_armed_failpoint_counts_every_firing_across_rearming) {
  if (!failpoints_available()) GTEST_SKIP() << "a build without failpoints";
  const std::string name = "server.before_write_ack";
  scenario s;
  s.events = {failpoint_event(event_action::arm, 1), failpoint_event(event_action::arm, 2),
              failpoint_event(event_action::disarm, 3)};
  s.events[2].failpoint_config = {};
  engine_world world(std::move(s));
  world.engine.stream_ops("w", 0, 1);
  EXPECT_TRUE(failpoint::evaluate(name).has_value());
  EXPECT_TRUE(failpoint::evaluate(name).has_value());
  world.engine.stream_ops("w", 1, 2);  // armed again: the 2 firings so far are counted
  EXPECT_TRUE(failpoint::evaluate(name).has_value());
  world.engine.stream_ops("w", 2, 3);  // disarm: 1 more
  EXPECT_FALSE(failpoint::evaluate(name).has_value());
  world.engine.disarm_every_failpoint();
  EXPECT_EQ(world.rec.take().failpoints_fired, (std::map<std::string, std::uint64_t>{{name, 3}}));
  EXPECT_EQ(world.error.get(), "");

  scenario never;
  never.events = {failpoint_event(event_action::arm, 1)};
  engine_world quiet(std::move(never));
  quiet.engine.stream_ops("w", 0, 1);
  quiet.engine.disarm_every_failpoint();  // the end of the run
  EXPECT_FALSE(failpoint::evaluate(name).has_value());
  EXPECT_EQ(quiet.rec.take().failpoints_fired, (std::map<std::string, std::uint64_t>{{name, 0}}));
}

}  // namespace
}  // namespace faultlane::sim
