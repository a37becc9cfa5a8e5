#include "faultlane/core/config.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

namespace faultlane {
namespace {

transport_config good() {
  transport_config c;
  c.bind_address = "127.0.0.1";
  return c;
}

void expect_rejected(const transport_config& c, const std::string& field) {
  auto r = validate(c);
  ASSERT_FALSE(r.ok()) << field;
  EXPECT_EQ(r.code(), status::invalid_argument);
  EXPECT_NE(r.error().message.find(field), std::string::npos) << r.error().message;
}

TEST(config, defaults_are_valid) { EXPECT_TRUE(validate(good()).ok()); }

TEST(config, worker_count_at_both_bounds_and_past_them) {
  auto c = good();
  for (std::size_t ok : {std::size_t{1}, std::size_t{32}}) {
    c.worker_count = ok;
    EXPECT_TRUE(validate(c).ok()) << ok;
  }
  for (std::size_t bad : {std::size_t{0}, std::size_t{33}}) {
    c.worker_count = bad;
    expect_rejected(c, "worker_count");
  }
}

TEST(config, every_bounded_field_names_itself) {
  auto c = good();
  c.connections_per_peer = 0;
  expect_rejected(c, "connections_per_peer");
  c = good();
  c.connections_per_peer = limits::lane_count_max + 1;
  expect_rejected(c, "connections_per_peer");
  c = good();
  c.max_transfer_bytes = limits::transfer_bytes_max + 1;
  expect_rejected(c, "max_transfer_bytes");
  c = good();
  c.max_outstanding_tasks = 0;
  expect_rejected(c, "max_outstanding_tasks");
  c = good();
  c.max_outstanding_bytes = 0;
  expect_rejected(c, "max_outstanding_bytes");
  c = good();
  c.max_connections = 0;
  expect_rejected(c, "max_connections");
  c = good();
  c.progress_timeout_ms = 0;
  expect_rejected(c, "progress_timeout_ms");
  c = good();
  c.idle_connection_timeout_ms = limits::timeout_ms_max + 1;
  expect_rejected(c, "idle_connection_timeout_ms");
  c = good();
  c.busy_poll_us = limits::busy_poll_us_max + 1;
  expect_rejected(c, "busy_poll_us");
}

TEST(config, addresses_must_be_numeric_and_specific_where_published) {
  auto c = good();
  c.bind_address = "localhost";
  expect_rejected(c, "bind_address");
  c = good();
  c.bind_address = "0.0.0.0";
  expect_rejected(c, "advertise_address");  // a wildcard cannot be published
  c.advertise_address = "127.0.0.1";
  EXPECT_TRUE(validate(c).ok());
  c.advertise_address = "0.0.0.0";
  expect_rejected(c, "advertise_address");
}

TEST(config, yaml_round_trip_and_errors_name_the_problem) {
  auto parsed = parse_config_yaml(R"(
bind_address: 127.0.0.1
port: 0
worker_count: 4
connections_per_peer: 8
progress_timeout_ms: 1500
)");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(parsed->worker_count, 4u);
  EXPECT_EQ(parsed->connections_per_peer, 8u);
  EXPECT_EQ(parsed->progress_timeout_ms, 1500u);

  struct bad_case {
    const char* yaml;
    const char* names;
  };
  for (const auto& bad :
       {bad_case{"worker_count: 0", "worker_count"}, bad_case{"worker_count: -1", "worker_count"},
        bad_case{"worker_count: many", "worker_count"}, bad_case{"port: 70000", "port"},
        bad_case{"max_conections: 4", "max_conections"},
        bad_case{"rail_addresses: 127.0.0.1", "rail_addresses"}, bad_case{"[1, 2]", "mapping"},
        bad_case{"worker_count: [", "YAML"}}) {
    auto r = parse_config_yaml(bad.yaml);
    ASSERT_FALSE(r.ok()) << bad.yaml;
    EXPECT_EQ(r.code(), status::invalid_argument);
    EXPECT_NE(r.error().message.find(bad.names), std::string::npos)
        << bad.yaml << " -> " << r.error().message;
  }
}

TEST(config, file_loading_reports_the_path) {
  auto missing = load_config_file("/nonexistent/faultlane.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/faultlane.yaml"), std::string::npos);
  auto path = ::testing::TempDir() + "faultlane_config_test.yaml";
  {
    std::ofstream out(path);
    out << "worker_count: 99\n";
  }
  auto r = load_config_file(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find(path), std::string::npos);
  EXPECT_NE(r.error().message.find("worker_count"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace faultlane
