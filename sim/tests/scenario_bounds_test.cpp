// What the topology and expect readers refuse (docs/scenarios.md, "links:",
// "regions:", "expect:"), each bound and each half of a compound rule on
// its own: a value at the bound loads, one past it is an error at its key.
#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "loader_support.hpp"

namespace faultlane::sim {
namespace {

const std::string three =
    "transports: [{name: a, rails: 2, config: {connections_per_peer: 2}}, {name: b, rails: 2, "
    "config: {connections_per_peer: 2}}, {name: c}]\n"
    "regions: [{name: r, transport: b, size: 1}]\n"
    "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]\n";

// Rule: one link per (initiator, target, rail): a second on the same three
// is refused; another rail, or another target, is a link of its own.
TEST(scenario_bounds, one_link_per_initiator_target_and_rail) {
  expect_bound(three + "links: [{initiator: a, target: b}, {initiator: a, target: b, rail: 1}]\n",
               three + "links: [{initiator: a, target: b}, {initiator: a, target: b, name: x}]\n",
               "links[1]");
  expect_bound(three + "links: [{initiator: a, target: b}, {initiator: a, target: c}]\n",
               three + "links: [{initiator: a, target: c}, {initiator: a, target: c, name: y}]\n",
               "links[1]");
}

// Rule: a link's rail is below both transports' rails, the smaller of the
// two deciding.
TEST(scenario_bounds, a_link_rail_is_below_the_rails_of_both_ends) {
  expect_bound(three + "links: [{initiator: a, target: c, rail: 0}]\n",
               three + "links: [{initiator: a, target: c, rail: 1}]\n", "links[0].rail");
}

// Rule: a link's initiator is a local transport (a child may only be a
// target).
TEST(scenario_bounds, a_link_from_a_child_transport_is_refused) {
  const std::string tail =
      "regions: [{name: r, transport: b, size: 1}]\n"
      "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]\n"
      "links: [{initiator: c, target: b}]\n";
  expect_bound("transports: [{name: a}, {name: b}, {name: c}]\n" + tail,
               "transports: [{name: a}, {name: b}, {name: c, process: child}]\n" + tail,
               "links[0].initiator");
}

// A file whose transport, region, stream and phase are each named `name`
// in turn (`which`: 0..3), the others short.
std::string named(int which, const std::string& name) {
  auto pick = [&](int i, const char* other) { return which == i ? name : std::string(other); };
  const auto t = pick(0, "a"), r = pick(1, "r"), st = pick(2, "s"), ph = pick(3, "p");
  return "transports: [{name: " + t + "}, {name: b}]\nregions: [{name: " + r +
         ", transport: b, size: 1}]\nworkload: [{name: " + st + ", from: " + t + ", region: " + r +
         ", ops: read, size: 1, count: 1}]\nphases: [{name: " + ph + "}]\n";
}

// Rule: a name (of a transport, region, stream or phase) is 1..32
// characters (docs/scenarios.md): 32 load, 33 are an error at the name.
TEST(scenario_bounds, a_name_has_at_most_32_characters) {
  const std::string keys[] = {"transports[0].name", "regions[0].name", "workload[0].name",
                              "phases[0].name"};
  for (int which = 0; which < 4; ++which) {
    SCOPED_TRACE(keys[which]);
    expect_bound(named(which, std::string(32, 'n')), named(which, std::string(33, 'n')),
                 keys[which]);
  }
}

std::string faults(std::size_t n) {
  std::string list;
  for (std::size_t i = 0; i < n; ++i) {
    list += (i == 0 ? "" : ", ") + std::string("{type: stall, dir: up, optional: true, name: f") +
            std::to_string(i) + "}";
  }
  return "links: [{initiator: a, target: b, faults: [" + list + "]}]\n";
}

// Rule: a link has at most 32 faults.
TEST(scenario_bounds, a_link_has_at_most_32_faults) {
  expect_bound(three + faults(32), three + faults(33), "links[0].faults");
}

std::string regions(std::size_t n) {
  std::string text = "transports: [{name: a}, {name: b}]\nregions:\n";
  for (std::size_t i = 0; i < n; ++i) {
    text += "  - {name: r" + std::to_string(i) + ", transport: b, size: 1}\n";
  }
  return text + "workload: [{name: s, from: a, region: r0, ops: read, size: 1, count: 1}]\n";
}

// Rule: a scenario has at most 64 regions.
TEST(scenario_bounds, a_scenario_has_at_most_64_regions) {
  expect_bound(regions(64), regions(65), "regions");
}

std::string counted(const std::string& size, const std::string& count) {
  return "transports: [{name: a}, {name: b}]\n"
         "regions: [{name: r, transport: b, size: 1}, {name: keys, transport: b, size: " +
         size + ", count: " + count +
         "}]\n"
         "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]\n";
}

// Rule: a counted region has 1..2^20 registrations, and count x size is at
// most 1GiB.
TEST(scenario_bounds, a_counted_region_is_bounded_in_count_and_bytes) {
  expect_bound(counted("1", "1048576"), counted("1", "1048577"), "regions[1].count");
  expect_bound(counted("1", "1"), counted("1", "0"), "regions[1].count");
  expect_bound(counted("1KiB", "1048576"), counted("1025", "1048576"), "regions[1].count");
}

std::string caller_expect(const std::string& method, const std::string& measure) {
  const std::string pattern = method == "list_registrations" ? ", pattern: x" : "";
  return "transports: [{name: a}, {name: b, config: {rpc_enabled: true}}]\n"
         "control: [{name: c, target: b, method: " +
         method + pattern + ", count: 1}]\nexpect: {control: {c." + measure + ": 1}}\n";
}

// Rule: `listed` is a measure of describe and list_registrations callers
// only; `incarnations` of describe only.
TEST(scenario_bounds, listed_is_expected_of_describe_and_list_registrations_only) {
  expect_bound(caller_expect("describe", "listed"), caller_expect("ping", "listed"),
               "expect.control.c.listed");
  expect_bound(caller_expect("list_registrations", "listed"), caller_expect("stats", "listed"),
               "expect.control.c.listed");
  expect_bound(caller_expect("describe", "incarnations"),
               caller_expect("list_registrations", "incarnations"),
               "expect.control.c.incarnations");
}

// Rule: `LINK/NAME` in expect.faults names a fault of that very link; a
// fault of another link with that name is not enough.
TEST(scenario_bounds, a_link_fault_count_names_a_fault_of_that_link) {
  const std::string links =
      "links: [{initiator: a, target: b, faults: [{type: stall, dir: up, name: here}]},\n"
      "        {initiator: a, target: c, faults: [{type: stall, dir: up, name: there}]}]\n";
  expect_bound(three + links + "expect: {faults: {\"a-b-r0/here\": 1, there: 1}}\n",
               three + links + "expect: {faults: {\"a-b-r0/there\": 1}}\n",
               "expect.faults.a-b-r0/there");
}

// Rule: only a checker turned off needs a reason; `run: true` keeps it on.
TEST(scenario_bounds, a_checker_needs_a_reason_only_to_be_turned_off) {
  const std::string on = with("", "1", "size: 1, count: 1") +
                         "expect: {checkers: {bounds: {run: true}, liveness: {run: false, "
                         "reason: \"no liveness phase\"}}}\n";
  auto s = parse_scenario(on, "on.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().expect.checkers_off,
            (std::map<std::string, std::string>{{"liveness", "no liveness phase"}}));
  expect_bound(on,
               with("", "1", "size: 1, count: 1") +
                   "expect: {checkers: {bounds: {run: false, reason: \"\"}}}\n",
               "expect.checkers.bounds.reason");
}

// Rule: a stream's batch is 1..256 and at most its depth: 0 is refused.
TEST(scenario_bounds, a_batch_is_at_least_one) {
  expect_bound(with("", "1", "size: 1, count: 1, batch: 1"),
               with("", "1", "size: 1, count: 1, batch: 0"), "workload[0].batch");
}

std::string cooldowns(std::uint32_t first_ms, std::uint32_t second_ms) {
  return "transports: [{name: a, config: {reconnect_cooldown_ms: " + std::to_string(first_ms) +
         "}}, {name: b, config: {reconnect_cooldown_ms: " + std::to_string(second_ms) +
         "}}, {name: c}]\n"
         "regions: [{name: r, transport: b, size: 1}]\n"
         "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]\n";
}

// Rule: the default heal settles for the longest reconnect cooldown of all
// the transports plus 100 ms, wherever in the list that transport is
// (docs/scenarios.md, "phases:").
TEST(scenario_bounds, the_default_heal_waits_out_the_longest_cooldown) {
  for (auto [first, second, settle] :
       {std::tuple{5000u, 200u, 5100u}, std::tuple{200u, 5000u, 5100u},
        std::tuple{1u, 1u, limits::reconnect_cooldown_ms_default + 100}}) {
    auto s = parse_scenario(cooldowns(first, second), "cooldowns.yaml");
    ASSERT_TRUE(s.ok()) << s.error().message;
    ASSERT_EQ(s.value().phases.size(), 3u);
    EXPECT_TRUE(s.value().phases[1].heal);
    EXPECT_EQ(s.value().phases[1].settle_ms, settle) << first << " " << second;
    EXPECT_EQ(s.value().phases[0].settle_ms, 0u);
    EXPECT_EQ(s.value().phases[2].settle_ms, 0u);
  }
}

}  // namespace
}  // namespace faultlane::sim
