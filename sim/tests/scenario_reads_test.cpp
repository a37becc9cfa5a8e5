// Every value the scenario loader reads is checked, and a bad one is the
// error the loader returns (docs/scenarios.md: "a problem is an error at
// FILE:LINE:COL: KEY"), never ignored: each case below is a small file that
// loads, but for one key given a value of the wrong kind (or left out where
// it is required), and the error must name that very key.
#include <gtest/gtest.h>

#include <string>

#include "loader_support.hpp"

namespace faultlane::sim::reads_test {
namespace {

// The base file every case changes one part of: `b` has a control plane,
// `s` a stream of 4 READs, the link a fault `f`.
const std::string transports = "transports: [{name: a}, {name: b, config: {rpc_enabled: true}}]\n";
const std::string regions = "regions: [{name: r, transport: b, size: 4KiB}]\n";
const std::string workload =
    "workload: [{name: s, from: a, region: r, ops: read, size: 1, "
    "count: 4}]\n";
const std::string links =
    "links: [{initiator: a, target: b, faults: [{type: stall, dir: up, name: f}]}]\n";
const std::string base = transports + regions + workload + links;

// The stream `s` of every key in `keys`.
std::string stream(const std::string& keys) {
  return transports + regions + "workload: [{" + keys + "}]\n";
}

TEST(scenario_reads, the_base_files_load) {
  expect_each_loads({base, base + "control: [{name: c, target: b, method: ping, count: 1}]\n",
                     stream("name: s, from: a, region: r, ops: read, size: 1, count: 1")});
}

// Rule: the header's values (name, tags, seed, timeout_ms, timing, perturb,
// load) and the required sections.
TEST(scenario_reads, a_bad_header_value_is_the_error) {
  expect_each_fails_at_its_key({
      {"name: [x]\n" + base, "name"},
      {"tags: x\n" + base, "tags"},
      {"tags: [[x]]\n" + base, "tags[0]"},
      {"tags: [ok, \"Not A Name\"]\n" + base, "tags[1]"},
      {"seed: [x]\n" + base, "seed"},
      {"timeout_ms: [x]\n" + base, "timeout_ms"},
      {"timing: [x]\n" + base, "timing"},
      {"perturb: [x]\n" + base, "perturb"},
      {"perturb: {probability: [x]}\n" + base, "perturb.probability"},
      {"perturb: {max_us: [x]}\n" + base, "perturb.max_us"},
      {"load: [x]\n" + base, "load"},
      {"load: {cost_us: [x]}\n" + base, "load.cost_us"},
      {"load: {hiccup_probability: [x], hiccup_ms: 1}\n" + base, "load.hiccup_probability"},
      {"load: {hiccup_probability: 0.5, hiccup_ms: [x]}\n" + base, "load.hiccup_ms"},
      {"nope: 1\n" + base, "nope"},
      {regions + workload, "transports"},
      {transports + regions, "workload"},
  });
}

// Rule: each transport's and region's values.
TEST(scenario_reads, a_bad_transport_or_region_value_is_the_error) {
  const std::string tail = regions + workload;
  const std::string t1 = "transports: [{name: a}, ";
  expect_each_fails_at_its_key({
      {"transports: x\n" + tail, "transports"},
      {t1 + "{rails: 1}]\n" + tail, "transports[1].name"},
      {t1 + "{name: [x]}]\n" + tail, "transports[1].name"},
      {t1 + "{name: b, process: [x]}]\n" + tail, "transports[1].process"},
      {t1 + "{name: b, config: [x]}]\n" + tail, "transports[1].config"},
      {t1 + "{name: b, config: {worker_count: [x]}}]\n" + tail,
       "transports[1].config.worker_count"},
      {t1 + "{name: b, rails: [x]}]\n" + tail, "transports[1].rails"},
      {t1 + "{name: b, wheels: 1}]\n" + tail, "transports[1].wheels"},
      {transports + "regions: x\n" + workload, "regions"},
      {transports + "regions: [{transport: b, size: 1}]\n" + workload, "regions[0].name"},
      {transports + "regions: [{name: [x], transport: b, size: 1}]\n" + workload,
       "regions[0].name"},
      {transports + "regions: [{name: r, size: 1}]\n" + workload, "regions[0].transport"},
      {transports + "regions: [{name: r, transport: [x], size: 1}]\n" + workload,
       "regions[0].transport"},
      {transports + "regions: [{name: r, transport: b}]\n" + workload, "regions[0].size"},
      {transports + "regions: [{name: r, transport: b, size: [x]}]\n" + workload,
       "regions[0].size"},
      {transports + "regions: [{name: r, transport: b, size: 1, perm: [x]}]\n" + workload,
       "regions[0].perm"},
      {transports + "regions: [{name: r, transport: b, size: 1, count: [x]}]\n" + workload,
       "regions[0].count"},
  });
}

// Rule: each link's values, a data link's and a control link's.
TEST(scenario_reads, a_bad_link_value_is_the_error) {
  const std::string head = transports + regions + workload + "links: [{";
  const std::string fault = "initiator: a, target: b, faults: [{type: stall, dir: up, ";
  expect_each_fails_at_its_key({
      {transports + regions + workload + "links: x\n", "links"},
      {head + "initiator: a, target: b, control: [x]}]\n", "links[0].control"},
      {head + "target: b}]\n", "links[0].initiator"},
      {head + "initiator: [x], target: b}]\n", "links[0].initiator"},
      {head + "initiator: a}]\n", "links[0].target"},
      {head + "initiator: a, target: [x]}]\n", "links[0].target"},
      {head + "initiator: a, target: b, rail: [x]}]\n", "links[0].rail"},
      {head + "initiator: a, target: b, name: [x]}]\n", "links[0].name"},
      {head + "initiator: a, target: b, protocol: [x]}]\n", "links[0].protocol"},
      {head + "initiator: a, target: b, tap: [x]}]\n", "links[0].tap"},
      {head + "initiator: a, target: b, faults: x}]\n", "links[0].faults"},
      {head + fault + "optional: maybe}]}]\n", "links[0].faults[0].optional"},
      {head + fault + "name: \"Not A Name\"}]}]\n", "links[0].faults[0].name"},
      {head + "control: true}]\n", "links[0].target"},
      {head + "control: true, target: [x]}]\n", "links[0].target"},
      {head + "control: true, target: b, initiator: [x]}]\n", "links[0].initiator"},
  });
}

// Rule: each phase's values.
TEST(scenario_reads, a_bad_phase_value_is_the_error) {
  const std::string tail = workload;
  const std::string head = transports + regions + "phases: [{";
  expect_each_fails_at_its_key({
      {transports + regions + "phases: x\n" + tail, "phases"},
      {head + "heal: true}]\n" + tail, "phases[0].name"},
      {head + "name: [x]}]\n" + tail, "phases[0].name"},
      {head + "name: p, heal: [x]}]\n" + tail, "phases[0].heal"},
      {head + "name: p, liveness: [x]}]\n" + tail, "phases[0].liveness"},
      {head + "name: p, deadline_ms: [x]}]\n" + tail, "phases[0].deadline_ms"},
      {head + "name: p, settle_ms: [x]}]\n" + tail, "phases[0].settle_ms"},
  });
}

// Rule: each stream's values.
TEST(scenario_reads, a_bad_stream_value_is_the_error) {
  const std::string rest = "ops: read, size: 1, count: 1";
  const std::string named = "name: s, from: a, region: r, ";
  expect_each_fails_at_its_key({
      {transports + regions + "workload: x\n", "workload"},
      {stream("from: a, region: r, " + rest), "workload[0].name"},
      {stream("name: [x], from: a, region: r, " + rest), "workload[0].name"},
      {stream("name: s, region: r, " + rest), "workload[0].from"},
      {stream("name: s, from: [x], region: r, " + rest), "workload[0].from"},
      {stream("name: s, from: a, " + rest), "workload[0].region"},
      {stream("name: s, from: a, region: [x], " + rest), "workload[0].region"},
      {stream(named + "size: 1, count: 1"), "workload[0].ops"},
      {stream(named + "ops: [x], size: 1, count: 1"), "workload[0].ops"},
      {stream(named + "ops: {read: [x]}, size: 1, count: 1"), "workload[0].ops.read"},
      {stream(named + "ops: {write: [x]}, size: 1, count: 1"), "workload[0].ops.write"},
      {stream(named + "ops: {copy: 1}, size: 1, count: 1"), "workload[0].ops.copy"},
      {stream(named + "ops: read, count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: {a: 1}, count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: x, count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: [], count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: [1, x], count: 1"), "workload[0].size[1]"},
      {stream(named + "ops: read, size: \"x..4\", count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: \"1..x\", count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: \"1..4KiB+1\", count: 1"), "workload[0].size"},
      {stream(named + "ops: read, size: 1, count: [x]"), "workload[0].count"},
      {stream(named + "ops: read, size: 1, duration_ms: [x]"), "workload[0].duration_ms"},
      {stream(named + rest + ", depth: [x]"), "workload[0].depth"},
      {stream(named + rest + ", batch: [x]"), "workload[0].batch"},
      {stream(named + rest + ", offsets: [x]"), "workload[0].offsets"},
      {stream(named + rest + ", start_deadline_ms: [x]"), "workload[0].start_deadline_ms"},
      {stream(named + rest + ", phase: [x]"), "workload[0].phase"},
      {stream(named + rest + ", allow: x"), "workload[0].allow"},
      {stream(named + rest + ", allow: [[x]]"), "workload[0].allow[0]"},
  });
}

// Rule: each control-plane caller's values.
TEST(scenario_reads, a_bad_caller_value_is_the_error) {
  const std::string head = transports + "control: [{";
  const std::string ping = "name: c, target: b, method: ping, count: 1";
  const std::string lister = "name: c, target: b, method: list_registrations, count: 1";
  expect_each_fails_at_its_key({
      {transports + "control: x\n", "control"},
      {head + "target: b, method: ping, count: 1}]\n", "control[0].name"},
      {head + "name: [x], target: b, method: ping, count: 1}]\n", "control[0].name"},
      {head + "name: c, method: ping, count: 1}]\n", "control[0].target"},
      {head + "name: c, target: [x], method: ping, count: 1}]\n", "control[0].target"},
      {head + ping + ", link: [x]}]\n", "control[0].link"},
      {head + "name: c, target: b, count: 1}]\n", "control[0].method"},
      {head + "name: c, target: b, method: [x], count: 1}]\n", "control[0].method"},
      {head + lister + ", pattern: [x]}]\n", "control[0].pattern"},
      {head + ping + ", clients: [x]}]\n", "control[0].clients"},
      {head + ping + ", interval_ms: [x]}]\n", "control[0].interval_ms"},
      {head + ping + ", call_timeout_ms: [x]}]\n", "control[0].call_timeout_ms"},
      {head + "name: c, target: b, method: ping, count: [x]}]\n", "control[0].count"},
      {head + ping + ", phase: [x]}]\n", "control[0].phase"},
      {head + ping + ", allow: [[x]]}]\n", "control[0].allow[0]"},
      {head + ping + ", color: red}]\n", "control[0].color"},
  });
}

// Rule: each event trigger's values.
TEST(scenario_reads, a_bad_trigger_value_is_the_error) {
  const std::string head = base + "control: [{name: c, target: b, method: ping, count: 2}]\n" +
                           "events: [{do: restart, transport: b, at: ";
  expect_each_fails_at_its_key({
      {base + "events: x\n", "events"},
      {base + "events: [x]\n", "events[0]"},
      {base + "events: [{at: {phase: fault}, transport: b}]\n", "events[0].do"},
      {base + "events: [{at: {phase: fault}, do: [x], transport: b}]\n", "events[0].do"},
      {base + "events: [{do: restart, transport: b}]\n", "events[0].at"},
      {head + "x}]\n", "events[0].at"},
      {head + "{stream: [x], ops: 1}}]\n", "events[0].at.stream"},
      {head + "{stream: s}}]\n", "events[0].at.ops"},
      {head + "{stream: s, ops: [x]}}]\n", "events[0].at.ops"},
      {head + "{fault: [x]}}]\n", "events[0].at.fault"},
      {head + "{fault: f, times: [x]}}]\n", "events[0].at.times"},
      {head + "{phase: [x]}}]\n", "events[0].at.phase"},
      {head + "{after_phase: [x]}}]\n", "events[0].at.after_phase"},
      {head + "{caller: [x], calls: 1}}]\n", "events[0].at.caller"},
      {head + "{caller: c}}]\n", "events[0].at.calls"},
      {head + "{caller: c, calls: [x]}}]\n", "events[0].at.calls"},
  });
}

// Rule: each event action's values.
TEST(scenario_reads, a_bad_action_value_is_the_error) {
  const std::string head = base + "events: [{at: {phase: fault}, do: ";
  const std::string arm = head + "arm, failpoint: {name: lane.enqueue, action: ";
  expect_each_fails_at_its_key({
      {head + "restart}]\n", "events[0].transport"},
      {head + "restart, transport: [x]}]\n", "events[0].transport"},
      {head + "drop_connections, transport: [x], target: b}]\n", "events[0].transport"},
      {head + "drop_connections, transport: a}]\n", "events[0].target"},
      {head + "drop_connections, transport: a, target: [x]}]\n", "events[0].target"},
      {head + "unregister}]\n", "events[0].region"},
      {head + "unregister, region: [x]}]\n", "events[0].region"},
      {head + "add_fault, fault: {type: stall, dir: up, name: g}}]\n", "events[0].link"},
      {head + "add_fault, link: [x], fault: {type: stall, dir: up, name: g}}]\n", "events[0].link"},
      {head + "add_fault, link: a-b-r0}]\n", "events[0].fault"},
      {head + "add_fault, link: a-b-r0, fault: {type: stall, dir: up, name: \"G G\"}}]\n",
       "events[0].fault.name"},
      {head + "remove_fault, link: a-b-r0, fault: [x]}]\n", "events[0].fault"},
      {head + "arm}]\n", "events[0].failpoint"},
      {head + "arm, failpoint: x}]\n", "events[0].failpoint"},
      {head + "arm, failpoint: {action: pause}}]\n", "events[0].failpoint.name"},
      {head + "arm, failpoint: {name: [x], action: pause}}]\n", "events[0].failpoint.name"},
      {head + "arm, failpoint: {name: lane.enqueue}}]\n", "events[0].failpoint.action"},
      {arm + "[x]}}]\n", "events[0].failpoint.action"},
      {arm + "return_error, error: [x]}}]\n", "events[0].failpoint.error"},
      {arm + "pause, optional: [x]}}]\n", "events[0].failpoint.optional"},
      {arm + "delay, delay_ms: [x]}}]\n", "events[0].failpoint.delay_ms"},
      {arm + "pause, count: [x]}}]\n", "events[0].failpoint.count"},
      {arm + "pause, probability: [x]}}]\n", "events[0].failpoint.probability"},
      {arm + "pause, key: [x]}}]\n", "events[0].failpoint.key"},
      {arm + "pause, seed: [x]}}]\n", "events[0].failpoint.seed"},
      {head + "disarm}]\n", "events[0].failpoint"},
      {head + "disarm, failpoint: [x]}]\n", "events[0].failpoint"},
      {head + "disarm, failpoint: {}}]\n", "events[0].failpoint.name"},
      {head + "disarm, failpoint: {name: [x]}}]\n", "events[0].failpoint.name"},
      {head + "disarm, failpoint: {name: lane.enqueue, action: pause}}]\n",
       "events[0].failpoint.action"},
  });
}

// Rule: each expectation's value.
TEST(scenario_reads, a_bad_expectation_value_is_the_error) {
  const std::string head =
      base + "control: [{name: c, target: b, method: ping, count: 1}]\n" + "expect: ";
  expect_each_fails_at_its_key({
      {head + "x\n", "expect"},
      {head + "{counts: x}\n", "expect.counts"},
      {head + "{counts: {s.done: [x]}}\n", "expect.counts.s.done"},
      {head + "{control: x}\n", "expect.control"},
      {head + "{control: {c.done: [x]}}\n", "expect.control.c.done"},
      {head + "{faults: x}\n", "expect.faults"},
      {head + "{faults: {f: [x]}}\n", "expect.faults.f"},
      {head + "{faults: {a-b-r0/f: [x]}}\n", "expect.faults.a-b-r0/f"},
      {head + "{stats: x}\n", "expect.stats"},
      {head + "{stats: {a.leases_live: [x]}}\n", "expect.stats.a.leases_live"},
      {head + "{checkers: x}\n", "expect.checkers"},
      {head + "{checkers: {bounds: x}}\n", "expect.checkers.bounds"},
      {head + "{checkers: {bounds: {run: [x]}}}\n", "expect.checkers.bounds.run"},
      {head + "{checkers: {bounds: {run: false, reason: [x]}}}\n", "expect.checkers.bounds.reason"},
  });
}

}  // namespace
}  // namespace faultlane::sim::reads_test
