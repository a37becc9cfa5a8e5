// The runner end to end, on loopback: verdicts it must give, what it
// records (both sides, child processes included), and the faultlane-sim
// program's exit codes and report files.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "docs_example.hpp"
#include "faultlane/sim/runner.hpp"
#include "program_run.hpp"

namespace faultlane::sim {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using test::program_output;
using test::read_file;
using test::run_program;
using test::write_temp;

scenario parse(const std::string& yaml) {
  auto s = parse_scenario(yaml, "inline.yaml");
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return s.ok() ? s.value() : scenario{};
}

run_result run(const scenario& s, std::uint64_t seed = 1) {
  run_options o;
  o.seed = seed;
  o.child_program = FAULTLANE_SIM_PROGRAM;
  return run_scenario(s, o);
}

const checker_result* find(const run_result& r, const std::string& name) {
  for (const auto& c : r.checkers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

// The client's progress deadline is what turns a WRITE whose ACK was lost
// ambiguous, so the tests that drop one wait it out; 2 s, since these tests
// want clean runs around the fault, and a healthy op held 500 ms by a loaded
// machine under TSan once timed out.
const std::string two_peers = R"(
transports:
  - {name: client, config: {progress_timeout_ms: 2000, connections_per_peer: 2}}
  - {name: server}
regions:
  - {name: data, transport: server, size: 256KiB}
)";

TEST(runner, a_clean_run_passes_and_every_checker_had_work) {
  auto s = parse(two_peers + R"(
workload:
  - {name: mixed, from: client, region: data, ops: {read: 1, write: 1}, size: "1..8KiB",
     count: 60, depth: 3}
)");
  auto r = run(s);
  ASSERT_TRUE(r.passed) << failure_text(r);
  EXPECT_EQ(r.ops_done, r.ops_total);
  EXPECT_GE(r.ops_total, 60u + 4u);  // the stream and the liveness probe
  for (const char* name : {"exactly_once", "data_integrity", "no_replay", "stale_rejection",
                           "bounds", "drained_shutdown", "liveness"}) {
    const auto* c = find(r, name);
    ASSERT_NE(c, nullptr) << name;
    EXPECT_GT(c->checked, 0u) << name << " checked nothing";
  }
  // Both sides were observed: the target's executions and the initiator's tasks.
  std::size_t executed = 0, finalized = 0;
  for (const auto& e : r.hist->events) {
    executed += e.kind == event_kind::server_executed;
    finalized += e.kind == event_kind::task_finalized;
  }
  EXPECT_EQ(finalized, r.ops_total);
  EXPECT_GE(executed, r.ops_total);
}

// Rule: while a phase runs, the runner samples each transport's stats
// every 200 ms (stats_interval_us, runner_phases.cpp), for the bounds
// checker: at least once in a phase of 600 ms, and never more often, so a
// phase of T ms holds at most T / 200 + 1 samples of each transport.
TEST(runner, stats_are_sampled_every_200_ms_while_a_phase_runs) {
  auto s = parse(two_peers + R"(
workload:
  - {name: reads, from: client, region: data, ops: read, size: 4KiB, duration_ms: 600}
phases: [{name: only}]
)");
  auto r = run(s);
  ASSERT_EQ(r.error, "");
  ASSERT_TRUE(r.hist);
  ASSERT_EQ(r.hist->phases.size(), 1u);
  const auto& p = r.hist->phases[0];
  std::size_t during = 0;
  for (const auto& st : r.hist->stats) during += st.seq > p.start_seq && st.seq < p.end_seq;
  const std::uint64_t most = 2 * ((p.end_us - p.start_us) / 200'000 + 1);
  EXPECT_GE(during, 2u);
  EXPECT_LE(during, most) << "a phase of " << (p.end_us - p.start_us) << " us";
}

// The example that opens docs/scenarios.md passes as written.
TEST(runner, the_docs_opening_example_runs_and_passes) {
  const auto example = test::docs_opening_example(FAULTLANE_SOURCE_DIR);
  ASSERT_FALSE(example.empty());
  auto s = parse_scenario(example, "docs-example.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto r = run(s.value(), s.value().seed);
  EXPECT_TRUE(r.passed) << failure_text(r);
  EXPECT_EQ(r.faults_fired["ack_lost"], 1u);
}

TEST(runner, a_declared_fault_that_never_fired_fails_the_scenario) {
  auto s = parse(two_peers + R"(
links:
  - initiator: client
    target: server
    faults:
      - {type: reset, dir: up, frame: 100000, name: never}
workload:
  - {name: reads, from: client, region: data, ops: read, size: 4KiB, count: 10}
)");
  auto r = run(s);
  EXPECT_FALSE(r.passed);
  const auto* c = find(r, "expectations");
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->passed());
  EXPECT_NE(c->violations.front().evidence.find("never"), std::string::npos);
}

TEST(runner, an_armed_failpoint_that_never_fired_fails_the_scenario) {
  if (!failpoints_available()) GTEST_SKIP() << "needs failpoints";
  const std::string body = two_peers + R"(
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 10}
events:
  - {at: {phase: fault}, do: arm, failpoint: {name: NAME, action: delay, delay_ms: 1}}
)";
  auto with = [&](const std::string& name) {
    auto text = body;
    text.replace(text.find("NAME"), 4, name);
    return run(parse(text));
  };
  // WRITEs never reach the READ payload path: nothing fired.
  auto silent = with("server.before_read_payload");
  EXPECT_FALSE(silent.passed);
  const auto* c = find(silent, "expectations");
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->passed());
  EXPECT_NE(
      c->violations.front().evidence.find("armed failpoint server.before_read_payload never fired"),
      std::string::npos)
      << failure_text(silent);
  // The WRITE ACK path is reached by every WRITE.
  auto fired = with("server.before_write_ack");
  EXPECT_TRUE(fired.passed) << failure_text(fired);
  EXPECT_EQ(fired.hist->failpoints_fired.at("server.before_write_ack"), 10u);
}

// The same with `optional: true`: a failpoint that may stay silent.
TEST(runner, an_optional_failpoint_may_stay_silent) {
  if (!failpoints_available()) GTEST_SKIP() << "needs failpoints";
  auto r = run(parse(two_peers + R"(
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 4}
events:
  - at: {phase: fault}
    do: arm
    failpoint: {name: server.before_read_payload, action: delay, delay_ms: 1, optional: true}
)"));
  EXPECT_TRUE(r.passed) << failure_text(r);
}

// An ambiguous WRITE keeps its range until the phase ends. When it fills the
// region, the stream stops early with a note instead of waiting for a range
// nothing can free (which used to hang the run until timeout_ms). With
// depth 2 the second op is already waiting when the first turns ambiguous:
// that must wake it too.
TEST(runner, a_region_full_of_ambiguous_writes_ends_the_stream_early) {
  auto r = run(parse(R"(
timeout_ms: 20000
transports:
  - {name: client, config: {progress_timeout_ms: 300, connections_per_peer: 1}}
  - {name: server}
regions:
  - {name: data, transport: server, size: 4KiB}
links:
  - initiator: client
    target: server
    faults:
      - {type: drop_frame, dir: down, opcode: write, count: 1, name: ack_lost}
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 3, depth: 2,
     allow: [ok, ambiguous_write]}
events:
  - {at: {stream: writes, ops: 3}, do: drop_connections, transport: client, target: server}
phases:
  - {name: fault}
)"));
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.passed) << failure_text(r);
  // Not a speed bound: a missed wake-up shows as the whole timeout_ms.
  EXPECT_LT(r.seconds, 10.0) << "the stream waited out the run's timeout";
  ASSERT_TRUE(r.hist);
  EXPECT_EQ(r.hist->ops.size(), 1u);
  bool noted = false;
  bool fired = false;  // the event at op 3, which the stream never reached
  for (const auto& m : r.hist->marks) {
    noted = noted || m.text.find("writes stopped after 1 ops") != std::string::npos;
    fired = fired || (m.kind == "event" && m.text.find("drop") != std::string::npos);
  }
  EXPECT_TRUE(noted);
  EXPECT_TRUE(fired);
}

// The other side of that rule: a region mostly held by ambiguous WRITEs
// still has room, and the stream goes on in it. Sequential offsets make
// the draws miss for sure: after three ambiguous WRITEs at 0, 4 and 8 KiB
// and three ok ones behind them, the next op wraps to 0 and finds it held
// sixteen times. Stopping there (as it did when only draws were tried,
// and kill_child_mid_write stopped at 54 of 120 ops once under load)
// leaves 3 ok; the gap behind them takes the rest.
TEST(runner, a_region_mostly_held_by_ambiguous_writes_is_still_used_where_it_is_free) {
  auto r = run(parse(R"(
transports:
  - {name: client, config: {progress_timeout_ms: 300, connections_per_peer: 1}}
  - {name: server}
regions:
  - {name: data, transport: server, size: 24KiB}
links:
  - initiator: client
    target: server
    faults:
      - {type: drop_frame, dir: down, opcode: write, count: 3, name: acks_lost}
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 8, depth: 1,
     offsets: sequential, allow: [ok, ambiguous_write]}
)"));
  EXPECT_TRUE(r.error.empty()) << r.error;
  ASSERT_TRUE(r.hist);
  std::size_t ok = 0, ambiguous = 0;
  for (const auto& op : r.hist->ops) {
    if (op.stream != "writes") continue;  // not the liveness probe after it
    ok += op.outcome == status::ok;
    ambiguous += op.outcome == status::ambiguous_write;
  }
  EXPECT_EQ(ambiguous + ok, 8u) << failure_text(r);
  EXPECT_GE(ok, 4u) << failure_text(r);  // 5 unless a WRITE timed out with no fault
  for (const auto& m : r.hist->marks) {
    EXPECT_EQ(m.text.find("stopped after"), std::string::npos) << m.text;
  }
}

TEST(runner, an_optional_fault_may_stay_silent) {
  auto s = parse(two_peers + R"(
links:
  - initiator: client
    target: server
    faults:
      - {type: reset, dir: up, frame: 100000, name: never, optional: true}
workload:
  - {name: reads, from: client, region: data, ops: read, size: 4KiB, count: 10}
)");
  auto r = run(s);
  EXPECT_TRUE(r.passed) << failure_text(r);
}

TEST(runner, an_outcome_outside_the_allowed_set_fails) {
  auto s = parse(two_peers + R"(
links:
  - initiator: client
    target: server
    faults:
      - {type: drop_frame, dir: down, opcode: write, count: 1, name: ack_lost}
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 5}
)");
  auto r = run(s);
  EXPECT_FALSE(r.passed);
  const auto* c = find(r, "expectations");
  ASSERT_NE(c, nullptr);
  ASSERT_FALSE(c->passed());
  EXPECT_NE(c->violations.front().evidence.find("ambiguous_write"), std::string::npos);
}

TEST(runner, a_killed_child_keeps_what_it_reported_and_comes_back_as_a_new_incarnation) {
  // The short cooldown: see the next test.
  auto s = parse(R"(
transports:
  - {name: client, config: {reconnect_cooldown_ms: 5}}
  - {name: server, process: child}
regions:
  - {name: data, transport: server, size: 256KiB}
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 40,
     allow: [ok, ambiguous_write, connection_failed]}
events:
  - {at: {stream: writes, ops: 20}, do: kill, transport: server}
)");
  auto r = run(s);
  ASSERT_TRUE(r.passed) << failure_text(r);
  ASSERT_TRUE(r.hist);
  std::size_t before_kill = 0, after_kill = 0;
  for (const auto& e : r.hist->events) {
    if (e.transport != "server" || e.kind != event_kind::server_executed) continue;
    (e.incarnation == 0 ? before_kill : after_kill)++;
  }
  EXPECT_GE(before_kill, 10u);
  EXPECT_GE(after_kill, 10u);
  std::vector<std::string> ends;
  for (const auto& inc : r.hist->incarnations) {
    if (inc.transport == "server") {
      EXPECT_TRUE(inc.child);
      ends.push_back(inc.end_reason);
    }
  }
  EXPECT_EQ(ends, (std::vector<std::string>{"kill", "end of run"}));
}

// A connect that meets a restart's gap (now and then, under load) can fail
// and start the client's reconnect cooldown, in which a lane that must
// connect fails its ops at once: with the default 1 s, every op after a
// quicker restart failed (kill_child_mid_write's writes.ok 74 < 80 once).
// The library's kill scenario keeps its counts by a 1 ms cooldown, over
// before a restart is. Catches the file without it, and a restart quicker
// than that, where the short cooldown would not help (5 ms was: a child
// restarts in about 4.5 ms in the release build).
TEST(runner, the_kill_scenario_restarts_slower_than_its_reconnect_cooldown) {
  std::ifstream in(std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios/kill_child_mid_write.yaml");
  std::stringstream file;
  file << in.rdbuf();
  const auto text = file.str();
  ASSERT_NE(text.find("reconnect_cooldown_ms: 1}"), std::string::npos)
      << "the library file lost its short cooldown";
  auto r = run(parse(text), 35);
  EXPECT_TRUE(r.passed) << failure_text(r);
  ASSERT_TRUE(r.hist);
  std::uint64_t killed_at_us = 0;
  std::uint64_t back_at_us = 0;
  for (const auto& inc : r.hist->incarnations) {
    if (inc.transport != "server") continue;
    if (inc.index == 0) killed_at_us = inc.end_us;
    if (inc.index == 1) back_at_us = inc.start_us;
  }
  ASSERT_GT(killed_at_us, 0u);
  EXPECT_GT(back_at_us, killed_at_us + 1000) << "the child restarted within the 1 ms cooldown";
}

TEST(runner, a_child_program_that_is_missing_is_a_clear_run_error) {
  auto s = parse(R"(
transports:
  - {name: client}
  - {name: server, process: child}
regions:
  - {name: data, transport: server, size: 4KiB}
workload:
  - {name: reads, from: client, region: data, ops: read, size: 1KiB, count: 1}
)");
  run_options o;
  o.child_program = "/nonexistent/faultlane-sim";
  auto r = run_scenario(s, o);
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.error.find("server"), std::string::npos) << r.error;
}

TEST(faultlane_sim_program, exit_codes_say_pass_violation_or_bad_input) {
  auto good = write_temp("good.yaml", two_peers + R"(
workload:
  - {name: reads, from: client, region: data, ops: read, size: 4KiB, count: 5}
)");
  auto failing = write_temp("failing.yaml", two_peers + R"(
links:
  - initiator: client
    target: server
    faults:
      - {type: drop_frame, dir: down, opcode: write, count: 1, name: ack_lost}
workload:
  - {name: writes, from: client, region: data, ops: write, size: 4KiB, count: 5}
)");
  auto broken = write_temp("broken.yaml", "transports: [\n");
  EXPECT_EQ(run_program({"check", good}).code, 0);
  auto bad = run_program({"check", broken});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("broken.yaml:"), std::string::npos) << bad.text;
  for (const auto& args : std::vector<std::vector<std::string>>{{"run", "--seed", "x", good},
                                                                {"run", "--seed", "-1", good},
                                                                {"run", "--bogus", good},
                                                                {"run", "--jobs", "999", good}}) {
    auto refused = run_program(args);
    EXPECT_EQ(refused.code, 2) << refused.text;
    // One line, naming the program and the problem.
    EXPECT_EQ(std::count(refused.text.begin(), refused.text.end(), '\n'), 1) << refused.text;
    EXPECT_EQ(refused.text.rfind("faultlane-sim: ", 0), 0u) << refused.text;
  }
  EXPECT_EQ(run_program({"run", fs::path(good).parent_path().string() + "/no-such-dir"}).code, 2);
  auto passed = run_program({"run", good});
  EXPECT_EQ(passed.code, 0) << passed.text;
  auto json = write_temp("out.json", "");
  auto junit = write_temp("out.xml", "");
  auto timeline = write_temp("out.html", "");
  auto failed = run_program(
      {"run", failing, "--seed", "5", "--json", json, "--junit", junit, "--timeline", timeline});
  EXPECT_EQ(failed.code, 1) << failed.text;
  // The failure names its checker and evidence, the seed and the replay line.
  EXPECT_NE(failed.text.find("expectations"), std::string::npos) << failed.text;
  EXPECT_NE(failed.text.find("faultlane-sim run " + failing + " --seed 5"), std::string::npos)
      << failed.text;
  EXPECT_NE(read_file(json).find("\"seed\""), std::string::npos);
  EXPECT_NE(read_file(junit).find("<failure"), std::string::npos);
  auto html = read_file(timeline);
  // One fault mark per fired fault: the dropped ACK fired once.
  std::size_t marks = 0;
  for (auto at = html.find("class=\"fault-mark\""); at != std::string::npos;
       at = html.find("class=\"fault-mark\"", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 1u);
}

// The simulated world is a build of its own: this build says so, and names
// the optimized one (dsim-release) that has it, instead of running in real
// time.
TEST(faultlane_sim_program, deterministic_runs_and_swarms_in_this_build_are_bad_input) {
  auto good = write_temp("real-time.yaml", two_peers + R"(
workload:
  - {name: reads, from: client, region: data, ops: read, size: 4KiB, count: 5}
)");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"run", "--deterministic", good},
           {"run", "--trace", write_temp("trace.txt", ""), good},
           {"swarm", "--deterministic", good, "--seeds", "1..3"}}) {
    auto refused = run_program(args);
    EXPECT_EQ(refused.code, 2) << refused.text;
    EXPECT_NE(refused.text.find("build/dsim-release/sim/faultlane-sim"), std::string::npos)
        << refused.text;
    EXPECT_EQ(refused.text.find("PASS"), std::string::npos) << refused.text;  // nothing ran
  }
}

TEST(faultlane_sim_program, list_prints_every_library_scenario_with_its_summary) {
  auto out = run_program({"list", std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios"});
  EXPECT_EQ(out.code, 0) << out.text;
  std::size_t lines = 0;
  for (char c : out.text) lines += c == '\n';
  EXPECT_GE(lines, 20u);
  EXPECT_NE(out.text.find("lost_write_ack_dropped"), std::string::npos) << out.text;
}

}  // namespace
}  // namespace faultlane::sim
