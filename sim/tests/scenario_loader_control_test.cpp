// The scenario loader on the control plane's parts: `control:` callers,
// counted regions, control links, `expect.control` and `timing`, parsed to
// their exact values (their broken files are in sim/tests/broken/ with the
// rest, and control.yaml is in the round trip of scenario_loader_test).
#include <gtest/gtest.h>

#include "loader_support.hpp"

namespace faultlane::sim {
namespace {

TEST(ScenarioLoader, ControlCallersRegionsAndLinksParseToExactValues) {
  const scenario s = load_ok("control.yaml");
  EXPECT_TRUE(s.timing);
  EXPECT_TRUE(s.runs_alone());
  EXPECT_FALSE(s.needs_failpoints);
  ASSERT_EQ(s.transports.size(), 3u);
  EXPECT_EQ(s.transports[1].config.rpc_worker_count, 3);
  EXPECT_FALSE(s.transports[1].config.rpc_inline);
  EXPECT_EQ(s.transports[1].config.rpc_queue_max, 64u);
  EXPECT_TRUE(s.transports[2].config.rpc_inline);
  ASSERT_EQ(s.regions.size(), 2u);
  EXPECT_EQ(s.regions[0].count, 1u);
  EXPECT_EQ(s.regions[1].count, 1000u);
  EXPECT_EQ(s.regions[1].perm, permission::remote_read);
  EXPECT_EQ(counted_name("keys", 42), "keys/0000042");
  ASSERT_EQ(s.links.size(), 2u);
  EXPECT_TRUE(s.links[0].control);
  EXPECT_EQ(s.links[0].name, "server-control");
  EXPECT_EQ(s.links[0].initiator, "client");
  EXPECT_EQ(s.links[0].proto, relays::protocol::raw);
  EXPECT_FALSE(s.links[0].tap);
  EXPECT_EQ(s.links[1].name, "side");
  EXPECT_TRUE(s.links[1].initiator.empty());
  ASSERT_EQ(s.control.size(), 5u);
  const caller_spec& scans = s.control[0];
  EXPECT_EQ(scans.method, control_method::list_registrations);
  EXPECT_EQ(scans.pattern, "^keys/00\\d+$");
  EXPECT_EQ(scans.clients, 4u);
  EXPECT_EQ(scans.count, 0u);
  EXPECT_EQ(scans.duration_ms, 500u);
  EXPECT_EQ(scans.interval_ms, 0u);
  EXPECT_EQ(scans.call_timeout_ms, 30000u);
  EXPECT_EQ(scans.phase, "load");
  EXPECT_EQ(scans.allow, (std::vector<status>{status::ok, status::busy}));
  const caller_spec& pinger = s.control[1];
  EXPECT_EQ(pinger.method, control_method::ping);
  EXPECT_EQ(pinger.link, "side");
  EXPECT_EQ(pinger.count, 25u);
  EXPECT_EQ(pinger.interval_ms, 20u);
  EXPECT_EQ(pinger.clients, 1u);
  EXPECT_EQ(pinger.call_timeout_ms, scenario_bounds::call_timeout_ms_default);
  EXPECT_EQ(pinger.allow, std::vector<status>{status::ok});
  EXPECT_EQ(s.control[2].phase, "after");
  EXPECT_EQ(s.control[3].method, control_method::service_ready);
  EXPECT_EQ(s.control[4].method, control_method::stats);
  EXPECT_EQ(s.expect.control.at("pinger.p99_us"), (count_range{0, 4999}));
  EXPECT_EQ(s.expect.control.at("looks.incarnations"), (count_range{1, 1}));
  EXPECT_EQ(s.expect.control.size(), 5u);
}

TEST(ScenarioLoader, ControlAloneNeedsNoWorkload) {
  auto s = parse_scenario(
      "transports: [{name: t}]\ncontrol: [{name: p, target: t, method: ping, count: 1}]\n",
      "inline.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s.value().streams.empty());
  auto back = parse_scenario(to_yaml(s.value()), "inline.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << to_yaml(s.value());
  EXPECT_TRUE(back.value().streams.empty());
  // Without callers, a workload of streams is still required, and not empty.
  auto none = parse_scenario("transports: [{name: t}]\nworkload: []\n", "inline.yaml");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("workload: needs 1..32 items, got 0"), std::string::npos)
      << none.error().message;
}

}  // namespace
}  // namespace faultlane::sim
