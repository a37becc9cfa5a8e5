// What the scenario loader refuses though every value has the right kind
// (docs/scenarios.md, each section's table): duplicate names, references to
// nothing, keys that only go with another, and combinations that could
// never run or never trigger. Each case is a file that loads but for that
// one thing; its error names the key and says what is wrong. (The files of
// sim/tests/broken/ hold more.)
#include <gtest/gtest.h>

#include <string>

#include "loader_support.hpp"

namespace faultlane::sim::refusals_test {
namespace {

const std::string transports =
    "transports: [{name: a}, {name: b, config: {rpc_enabled: true}}, {name: c}]\n";
const std::string regions =
    "regions: [{name: r, transport: b, size: 4KiB}, {name: keys, transport: b, size: 1, "
    "count: 4}, {name: own, transport: a, size: 1}]\n";
const std::string workload =
    "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 4}]\n";
const std::string links =
    "links: [{initiator: a, target: b, faults: [{type: stall, dir: up, name: f}]}]\n";
const std::string base = transports + regions + workload + links;

// `base` with the stream `s` given `keys` (its name, from and region aside).
std::string stream(const std::string& keys) {
  return transports + regions + "workload: [{name: s, from: a, region: r, " + keys + "}]\n";
}

TEST(scenario_refusals, the_base_files_load) {
  expect_each_loads({base, stream("ops: read, size: 1, count: 1"),
                     base + "control: [{name: c, target: b, method: ping, count: 1}]\n"});
}

// Rule: transport and region names are unique, references name what is
// there, processes are local or child, permissions the documented ones.
TEST(scenario_refusals, transports_and_regions) {
  const std::string tail = regions + workload;
  expect_each_fails_at_its_key({
      {"transports: [{name: a}, {name: b}, {name: a}]\n" + tail, "transports[2].name",
       "duplicate transport name 'a'"},
      {"transports: [{name: a}, {name: b, process: thread}]\n" + tail, "transports[1].process",
       "must be local or child"},
      {transports +
           "regions: [{name: r, transport: b, size: 1}, {name: r, transport: c, size: 1}]\n" +
           workload,
       "regions[1].name", "duplicate region name 'r'"},
      {transports + "regions: [{name: r, transport: b, size: 1, perm: all}]\n" + workload,
       "regions[0].perm", "must be local_only, remote_read or remote_read_write"},
      {transports + "regions: [{name: r, transport: z, size: 1}]\n" + workload,
       "regions[0].transport", "no transport 'z'"},
  });
}

// Rule: a link's ends, name, protocol and faults; a control link takes no
// rail, protocol or tap, and no other link may join its two transports.
TEST(scenario_refusals, links) {
  const std::string head = transports + regions + workload + "links: [";
  const std::string a_to_b = "{control: true, target: b, initiator: a}";
  expect_each_fails_at_its_key({
      {head + "{initiator: z, target: b}]\n", "links[0].initiator", "no transport 'z'"},
      {head + "{initiator: a, target: b, faults: [x]}]\n", "links[0].faults[0]",
       "a fault is a mapping with a type"},
      {head + "{initiator: a, target: b, faults: [{dir: up}]}]\n", "links[0].faults[0]",
       "a fault is a mapping with a type"},
      {head + "{initiator: a, target: b, faults: [{type: stall, dir: [up]}]}]\n",
       "links[0].faults[0].dir", "expected a plain value"},
      {head + "{control: true, target: b, protocol: raw}]\n", "links[0].protocol",
       "no rail, protocol or tap"},
      {head + "{control: true, target: b, tap: false}]\n", "links[0].tap",
       "no rail, protocol or tap"},
      {head + "{initiator: a, target: b}, " + a_to_b + "]\n", "links[1].initiator",
       "link 'a-b-r0' already joins a to b (a segment opened by address has no data link)"},
      {head + a_to_b + ", " + a_to_b + "]\n", "links[1].initiator",
       "link 'b-control' already joins a to b"},
      {head + "{control: true, target: b}, {control: true, target: b}]\n", "links[1].name",
       "duplicate link name 'b-control'"},
      {head + "{initiator: a, target: b, name: x}, {initiator: a, target: c, name: x}]\n",
       "links[1].name", "duplicate link name 'x'"},
      {head + "{initiator: a, target: b, protocol: tcp}]\n", "links[0].protocol",
       "must be faultlane or raw"},
  });
}

// Rule: phase and stream names are unique; a stream's ops, sizes, amount,
// offsets and allow list are the documented forms, and its target is
// another transport.
TEST(scenario_refusals, phases_and_streams) {
  const std::string two = transports + regions +
                          "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}, "
                          "{name: s, from: c, region: r, ops: read, size: 1, count: 1}]\n";
  expect_each_fails_at_its_key({
      {transports + regions + "phases: [{name: p}, {name: p}]\n" + workload, "phases[1].name",
       "duplicate phase name 'p'"},
      {two, "workload[1].name", "duplicate stream name 's'"},
      {stream("ops: copy, size: 1, count: 1"), "workload[0].ops",
       "must be read, write or {read: W, write: W}"},
      {stream("ops: read, size: \"5..4\", count: 1"), "workload[0].size",
       "'5..4' is not a range 1 <= A <= B"},
      {stream("ops: read, size: \"1..8KiB\", count: 1"), "workload[0].size",
       "8192 is above 4096 (the size of region 'r')"},
      {stream("ops: read, size: 1"), "workload[0].count",
       "give exactly one of count and duration_ms"},
      {stream("ops: read, size: 1, count: 1, offsets: zigzag"), "workload[0].offsets",
       "must be random or sequential"},
      {stream("ops: read, size: 1, count: 1, allow: [ok, timeout, ok]"), "workload[0].allow[2]",
       "listed twice"},
      {transports + regions +
           "workload: [{name: s, from: b, region: r, ops: read, size: 1, "
           "count: 1}]\n",
       "workload[0].region", "region 'r' belongs to 'b' itself"},
      {transports + regions +
           "workload: [{name: s, from: a, region: z, ops: read, size: 1, "
           "count: 1}]\n",
       "workload[0].region", "no region 'z'"},
  });
}

// Rule: a caller's name is its own (streams and callers share names), only
// list_registrations takes a pattern, of at most 4096 bytes, and a caller's
// link is a control link.
TEST(scenario_refusals, callers) {
  const std::string head = base + "control: [";
  const std::string ping = "{name: c, target: b, method: ping, count: 1";
  const std::string lister = "{name: c, target: b, method: list_registrations, count: 1";
  expect_each_fails_at_its_key({
      {head + "{name: s, target: b, method: ping, count: 1}]\n", "control[0].name",
       "duplicate name 's' (streams and callers share names)"},
      {head + ping + "}, " + ping + "}]\n", "control[1].name", "duplicate name 'c'"},
      {head + ping + ", pattern: x}]\n", "control[0].pattern",
       "only list_registrations takes a pattern"},
      {head + lister + ", pattern: " + std::string(4097, 'a') + "}]\n", "control[0].pattern",
       "4097 bytes is above 4096"},
      {head + ping + ", link: a-b-r0}]\n", "control[0].link", "no control link 'a-b-r0'"},
  });
  expect_each_loads({head + lister + ", pattern: " + std::string(4096, 'a') + "}]\n"});
}

// Rule: a trigger has exactly one form, ops only with a stream, times only
// with a fault, and names a phase that exists.
TEST(scenario_refusals, triggers) {
  const std::string head = base + "events: [{do: restart, transport: b, at: ";
  expect_each_fails_at_its_key({
      {base + "events: [{at: {phase: fault}, do: jump}]\n", "events[0].do",
       "'jump' is not an action"},
      {head + "{stream: s, ops: 1, phase: fault}}]\n", "events[0].at", "needs exactly one of"},
      {head + "{}}]\n", "events[0].at", "needs exactly one of"},
      {head + "{phase: fault, ops: 1}}]\n", "events[0].at.ops", "only with stream:"},
      {head + "{phase: fault, times: 1}}]\n", "events[0].at.times", "only with fault:"},
      {head + "{after_phase: nope}}]\n", "events[0].at.after_phase",
       "no phase 'nope', so this never triggers"},
      {head + "{stream: z, ops: 1}}]\n", "events[0].at.stream", "no stream 'z'"},
      {head + "{stream: s, ops: 5}}]\n", "events[0].at.ops",
       "5 is above the 4 ops stream 's' submits"},
  });
}

// Rule: each action's references exist and can be acted on.
TEST(scenario_refusals, actions) {
  const std::string head = base + "events: [{at: {phase: fault}, do: ";
  const std::string arm = head + "arm, failpoint: {name: lane.enqueue, action: ";
  const std::string child = "transports: [{name: a}, {name: b}, {name: k, process: child}]\n" +
                            std::string("regions: [{name: r, transport: b, size: 1}]\n") +
                            workload + "events: [{at: {phase: fault}, do: ";
  expect_each_fails_at_its_key({
      {arm + "pause, error: timeout}}]\n", "events[0].failpoint.error",
       "only with action: return_error"},
      {arm + "return_error, error: ok}}]\n", "events[0].failpoint.error", "cannot be ok"},
      {arm + "off}}]\n", "events[0].failpoint.action",
       "must be return_error, delay, throw or pause"},
      {head + "add_fault, link: a-b-r0, fault: {type: stall, dir: down, name: f}}]\n",
       "events[0].fault", "link 'a-b-r0' already has a fault named 'f'"},
      {head + "add_fault, link: zz, fault: {type: stall, dir: up}}]\n", "events[0].link",
       "no link 'zz'"},
      {head + "unregister, region: keys}]\n", "events[0].region",
       "region 'keys' has count 4: a counted region stays registered"},
      {head + "unregister, region: zz}]\n", "events[0].region", "no region 'zz'"},
      {head + "drop_connections, transport: a, target: a}]\n", "events[0].target",
       "is the transport itself"},
      {head + "restart, transport: zz}]\n", "events[0].transport", "no transport 'zz'"},
      {child + "drop_connections, transport: k, target: b}]\n", "events[0].transport",
       "'k' is a child process, which can only be a target"},
  });
}

// Rule: each expectation names a stream, caller, link, fault, transport or
// checker of the scenario, once.
TEST(scenario_refusals, expectations) {
  const std::string head =
      base + "control: [{name: c, target: b, method: ping, count: 1}]\nexpect: ";
  expect_each_fails_at_its_key({
      {head + "{counts: {nodot: 1}}\n", "expect.counts.nodot", "expected STREAM.STATUS"},
      {head + "{counts: {z.ok: 1}}\n", "expect.counts.z.ok", "expected STREAM.STATUS"},
      {head + "{counts: {s.done: 1, s.done: 2}}\n", "expect.counts.s.done", "duplicate key"},
      {head + "{faults: {zz/f: 1}}\n", "expect.faults.zz/f", "no link 'zz'"},
      {head + "{faults: {g: 1}}\n", "expect.faults.g",
       "no link declares a fault 'g' and no event adds one"},
      {head + "{stats: {nodot: 1}}\n", "expect.stats.nodot", "expected TRANSPORT.FIELD"},
      {head + "{stats: {z.leases_live: 1}}\n", "expect.stats.z.leases_live",
       "expected TRANSPORT.FIELD"},
      {head + "{checkers: {nope: {run: true}}}\n", "expect.checkers.nope", "not a checker"},
      {head + "{control: {c.listed: 1}}\n", "expect.control.c.listed",
       "only describe and list_registrations list registrations ('c' calls ping)"},
  });
}

}  // namespace
}  // namespace faultlane::sim::refusals_test
