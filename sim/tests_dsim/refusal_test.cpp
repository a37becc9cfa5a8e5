// What the simulated world cannot run (real-time latency bounds) is refused
// when the file loads, at the key's line, never run wrongly; what it now
// runs (the control plane) loads; the program's bad input ends with
// exit 2 before anything runs.
#include <gtest/gtest.h>

#include <string>

#include "../tests/program_run.hpp"
#include "faultlane/sim/report.hpp"
#include "faultlane/sim/runner.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {
namespace {

constexpr const char* head = R"(transports:
  - {name: a}
  - {name: b}
regions:
  - {name: r, transport: b, size: 64KiB}
workload:
  - {name: s, from: a, region: r, ops: {read: 1, write: 1}, size: 4KiB, count: 4}
)";

// Loads `text` (it must load) and runs it on the world with `seed`.
run_result run_text(const std::string& text, std::uint64_t seed) {
  auto s = parse_scenario(text, "f.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  if (!s.ok()) return {};
  run_options o;
  o.seed = seed;
  return run_scenario(s.value(), o);
}

std::string refusal(const std::string& text) {
  auto s = parse_scenario(text, "f.yaml");
  return s.ok() ? std::string("loaded") : s.error().message;
}

TEST(sim_on_world_refusal, a_timing_scenario_is_refused_at_its_timing_key) {
  const auto why = refusal(std::string("timing: true\n") + head);
  EXPECT_NE(why.find("f.yaml:1:9: timing:"), std::string::npos) << why;
  EXPECT_NE(why.find("real-time build"), std::string::npos) << why;
  EXPECT_EQ(refusal(std::string("timing: false\n") + head), "loaded");
}

// The control plane is on the world: its callers and a control link load,
// and a caller's calls pass through the relay on the link.
TEST(sim_on_world_refusal, control_callers_and_a_control_link_load_and_run) {
  const auto text =
      std::string(head) +
      "links:\n  - {initiator: a, target: b, control: true}\n"
      "control:\n  - {name: c, target: b, method: describe, link: b-control, count: 5}\n";
  const auto r = run_text(text, 4);
  EXPECT_TRUE(r.passed) << failure_text(r);
  ASSERT_EQ(r.callers.size(), 1u);
  EXPECT_EQ(r.callers[0].calls, 5u);
  EXPECT_EQ(r.callers[0].by_status.at(status::ok), 5u);
  EXPECT_GT(r.virtual_seconds, 0);
}

// A client that never failed never waits out a reconnect cooldown. It used
// the clock's epoch for "no failure yet", which on the world is the start
// of the run: every call begun in the first 50 ms (the default cooldown)
// waited until 50 ms, a 50 ms first call in every control scenario.
TEST(sim_on_world_refusal, a_client_that_never_failed_sends_its_first_call_at_once) {
  const auto text = std::string(head) +
                    "control:\n  - {name: c, target: b, method: ping, clients: 2, count: 3}\n";
  const auto r = run_text(text, 6);
  EXPECT_TRUE(r.passed) << failure_text(r);
  ASSERT_TRUE(r.hist);
  ASSERT_EQ(r.hist->calls.size(), 6u);
  for (const auto& call : r.hist->calls) {
    EXPECT_LT(call.start_us, 40'000u);  // inside the first cooldown, where the bug showed
    EXPECT_LT(call.end_us - call.start_us, 10'000u)
        << "a ping of a healthy target took " << call.end_us - call.start_us << " us";
  }
}

// `at: {caller, calls}` fires once, at the call it names, counting every
// client of the caller: 10 is the last call of 2 clients x 5 (an
// off-by-one in the count would never reach it, a second firing would
// show a second mark). The stream allows what a dropped connection does to
// its ops in flight: the calls end while it runs.
TEST(sim_on_world_refusal, a_caller_trigger_fires_once_at_the_last_call_of_two_clients) {
  const auto text = std::string(R"(transports:
  - {name: a}
  - {name: b}
regions:
  - {name: r, transport: b, size: 64KiB}
workload:
  - {name: s, from: a, region: r, ops: {read: 1, write: 1}, size: 4KiB, count: 4,
     allow: [ok, connection_failed, ambiguous_write]}
)") + "control:\n  - {name: c, target: b, method: ping, clients: 2, count: 5}\n"
      "events:\n  - {at: {caller: c, calls: 10}, do: drop_connections, "
      "transport: a, target: b}\n";
  const auto r = run_text(text, 5);
  EXPECT_TRUE(r.passed) << failure_text(r);
  ASSERT_TRUE(r.hist);
  std::size_t fired = 0;
  for (const auto& m : r.hist->marks) {
    if (m.kind == "event" && m.text.find("drop_connections") != std::string::npos) ++fired;
  }
  EXPECT_EQ(fired, 1u);
  EXPECT_EQ(r.hist->calls.size(), 10u);
}

TEST(sim_on_world_refusal, a_trace_that_cannot_be_written_is_exit_2_before_any_run) {
  const auto scenario_path = test::write_temp("refusal.yaml", head);
  const auto out = test::run_program(
      {"run", "--deterministic", "--trace", "/nonexistent-faultlane-dir/t.txt", scenario_path});
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("cannot write /nonexistent-faultlane-dir/t.txt"), std::string::npos)
      << out.text;
  EXPECT_EQ(out.text.find("PASS"), std::string::npos) << out.text;  // nothing ran
}

TEST(sim_on_world_refusal, a_run_prints_its_digest_and_virtual_time) {
  const auto scenario_path = test::write_temp("digest.yaml", head);
  const auto trace = test::write_temp("digest-trace.txt", "");
  const auto out =
      test::run_program({"run", "--deterministic", "--trace", trace, scenario_path, "--seed", "3"});
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("digest seed 3: digest "), std::string::npos) << out.text;
  EXPECT_NE(out.text.find(" s wall ("), std::string::npos) << out.text;
  EXPECT_NE(test::read_file(trace).find(" step "), std::string::npos);
}

}  // namespace
}  // namespace faultlane::sim
