// Every transport setting survives the sim's copies of a config: a
// scenario written by to_yaml() and loaded back, and the JSON a child
// transport process is started with; and every setting counts in
// transport_spec's ==. The settings come from the list in config.hpp, so a
// row added there is covered here with no edit.
#include <gtest/gtest.h>

#include "faultlane/sim/scenario.hpp"
#include "faultlane/testing/settings.hpp"
#include "runner/child_protocol.hpp"

namespace faultlane::sim {
namespace {

using faultlane::testing::every_setting_off_default;
using faultlane::testing::off_default;
using faultlane::testing::same_settings;

scenario two_transports() {
  auto s = parse_scenario(R"(
transports: [{name: a}, {name: b}]
regions: [{name: r, transport: b, size: 4096}]
workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]
)",
                          "inline.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : scenario{};
}

// A spec that differs from another in one setting alone is not equal to it.
TEST(settings, every_setting_counts_in_transport_spec_equality) {
  const transport_spec base{.name = "t"};
  for_each_transport_setting([&](const auto& setting) {
    transport_spec changed = base;
    changed.config.*setting.field = off_default(setting);
    EXPECT_FALSE(changed == base) << setting.name;
  });
  transport_spec changed = base;
  changed.config.rpc_worker_count = 3;
  EXPECT_FALSE(changed == base) << "rpc_worker_count";
  changed = base;
  changed.config.rpc_inline = true;
  EXPECT_FALSE(changed == base) << "rpc_inline";
}

// The writer writes every setting that differs from its default, and the
// loader reads each back; rpc_worker_count's `inline` spelling too.
TEST(settings, every_setting_survives_the_scenario_writer) {
  transport_config inline_rpc = every_setting_off_default();
  inline_rpc.rpc_worker_count = 0;
  inline_rpc.rpc_inline = true;
  for (const transport_config& config : {every_setting_off_default(), inline_rpc}) {
    scenario s = two_transports();
    ASSERT_EQ(s.transports.size(), 2u);
    s.transports[0].config = config;
    const std::string text = to_yaml(s);
    auto back = parse_scenario(text, s.file);
    ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
    EXPECT_TRUE(same_settings(config, back.value().transports[0].config)) << text;
    EXPECT_EQ(back.value().transports, s.transports) << text;
  }
}

// The child process is started with every setting the runner holds.
TEST(settings, every_setting_survives_the_child_json) {
  transport_config inline_rpc = every_setting_off_default();
  inline_rpc.rpc_inline = true;
  for (const transport_config& config : {every_setting_off_default(), inline_rpc}) {
    const auto json = child_protocol::to_json(config);
    const transport_config back = child_protocol::config_from_json(json);
    EXPECT_TRUE(same_settings(config, back)) << json.dump();
    EXPECT_TRUE(back == config) << json.dump();
  }
}

}  // namespace
}  // namespace faultlane::sim
