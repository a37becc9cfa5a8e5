#include "faultlane/core/config.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <type_traits>

#include "faultlane/testing/docs_table.hpp"
#include "faultlane/testing/settings.hpp"

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

// validate() holds every setting to its row's bounds: both ends pass, one
// past either end fails with a message naming the key and the range.
TEST(config, every_setting_is_checked_against_its_row) {
  for_each_transport_setting([](const auto& setting) {
    using T = std::remove_cvref_t<decltype(setting.initial)>;
    SCOPED_TRACE(std::string(setting.name));
    auto c = good();
    for (T ok : {setting.minimum, setting.maximum}) {
      c.*setting.field = ok;
      EXPECT_TRUE(validate(c).ok());
    }
    if constexpr (!std::is_same_v<T, bool>) {
      auto expect_out_of_bounds = [&](T bad) {
        c.*setting.field = bad;
        auto r = validate(c);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_EQ(r.error().message, "config: " + std::string(setting.name) + ": must be in [" +
                                         std::to_string(setting.minimum) + ", " +
                                         std::to_string(setting.maximum) + "], got " +
                                         std::to_string(bad));
      };
      if (setting.minimum > std::numeric_limits<T>::min()) {
        expect_out_of_bounds(static_cast<T>(setting.minimum - 1));
      }
      if (setting.maximum < std::numeric_limits<T>::max()) {
        expect_out_of_bounds(static_cast<T>(setting.maximum + 1));
      }
    }
  });
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
        bad_case{"worker_count: [", "<config>:1:"}}) {
    auto r = parse_config_yaml(bad.yaml);
    ASSERT_FALSE(r.ok()) << bad.yaml;
    EXPECT_EQ(r.code(), status::invalid_argument);
    EXPECT_NE(r.error().message.find(bad.names), std::string::npos)
        << bad.yaml << " -> " << r.error().message;
  }
}

std::string yaml_value(bool v) { return v ? "true" : "false"; }
template <typename T>
std::string yaml_value(T v) {
  return std::to_string(v);
}

// A file that sets every setting away from its default is read whole.
TEST(config, yaml_reads_every_setting) {
  const transport_config want = testing::every_setting_off_default();
  std::string text = "rpc_worker_count: " + std::to_string(want.rpc_worker_count) + "\n";
  for_each_transport_setting([&](const auto& setting) {
    text += std::string(setting.name) + ": " + yaml_value(want.*setting.field) + "\n";
  });
  auto got = parse_config_yaml(text);
  ASSERT_TRUE(got.ok()) << got.error().message << "\n" << text;
  EXPECT_TRUE(testing::same_settings(want, got.value())) << text;
  EXPECT_EQ(got.value(), want);
}

// An error is placed as data: the line and column of the field's key, its
// path and the complaint alone; the message is made of the same.
TEST(config, an_error_carries_its_place) {
  struct bad_case {
    const char* yaml;
    source_mark at;
    const char* key;
    std::string_view what;
  };
  for (const auto& c : {
           bad_case{
               "port: 1\nworker_count: 0\n", {"<config>", 2, 1}, "worker_count", "must be in [1, "},
           bad_case{"worker_count: many",
                    {"<config>", 1, 1},
                    "worker_count",
                    "expected a whole number (decimal digits, no sign or leading zero), got "
                    "'many'"},
           // One spelling of a number and a switch in every file: no hex, no
           // `+`, no leading zero (octal to one reader, decimal to another),
           // no yes/on.
           bad_case{"worker_count: 0x4", {"<config>", 1, 1}, "worker_count", "expected a whole"},
           bad_case{"worker_count: +4", {"<config>", 1, 1}, "worker_count", "expected a whole"},
           bad_case{"worker_count: 010", {"<config>", 1, 1}, "worker_count", "expected a whole"},
           bad_case{
               "rpc_worker_count: 04", {"<config>", 1, 1}, "rpc_worker_count", "expected a whole"},
           bad_case{"rpc_worker_count: -1",
                    {"<config>", 1, 1},
                    "rpc_worker_count",
                    "must not be negative"},
           bad_case{"rpc_enabled: yes",
                    {"<config>", 1, 1},
                    "rpc_enabled",
                    "expected true or false, got 'yes'"},
           bad_case{"worker_count: [1]",
                    {"<config>", 1, 1},
                    "worker_count",
                    "expected a value, got a list"},
           bad_case{"worker_count: -1",
                    {"<config>", 1, 1},
                    "worker_count",
                    "must not be negative, got -1"},
           bad_case{"port: 99999999999999999999999",
                    {"<config>", 1, 1},
                    "port",
                    "99999999999999999999999 is too large"},
           bad_case{"port: 70000", {"<config>", 1, 1}, "port", "70000 is too large"},
           bad_case{"rail_addresses: [127.0.0.1, [x]]",
                    {"<config>", 1, 29},
                    "rail_addresses[1]",
                    "expected a string, got a list"},
           bad_case{"port: 1\nwrker: 1", {"<config>", 2, 1}, "wrker", "unknown field"},
           // A repeated key is refused, whichever of its values is the valid one.
           bad_case{"worker_count: 2\nport: 1\nworker_count: 3",
                    {"<config>", 3, 1},
                    "worker_count",
                    "duplicate key"},
           bad_case{"rail_addresses: [127.0.0.1]\nrail_addresses: [127.0.0.2]",
                    {"<config>", 2, 1},
                    "rail_addresses",
                    "duplicate key"},
           bad_case{"worker_count: [", {"<config>", 1, 0}, "", "end of sequence flow"},  // syntax
       }) {
    auto r = parse_config_yaml(c.yaml);
    ASSERT_FALSE(r.ok()) << c.yaml;
    const auto& place = r.error().place;
    ASSERT_TRUE(place.has_value()) << c.yaml;
    EXPECT_EQ(place->at.file, c.at.file) << c.yaml;
    EXPECT_EQ(place->at.line, c.at.line) << c.yaml << " -> " << r.error().message;
    if (c.at.column != 0) {
      EXPECT_EQ(place->at.column, c.at.column) << c.yaml;
    }
    EXPECT_EQ(place->key, c.key) << c.yaml;
    EXPECT_EQ(place->what.substr(0, c.what.size()), c.what) << c.yaml;
    if (!place->key.empty()) {
      EXPECT_EQ(r.error().message, fmt::format("<config>:{}:{}: {}: {}", c.at.line, c.at.column,
                                               place->key, place->what));
    }
  }
  // validate() knows no file: the field and complaint, no line.
  auto c = good();
  c.worker_count = 0;
  auto r = validate(c);
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(r.error().place.has_value());
  EXPECT_EQ(r.error().place->key, "worker_count");
  EXPECT_EQ(r.error().place->at.line, 0);
}

TEST(config, file_loading_reports_the_path) {
  auto missing = load_config_file("/nonexistent/faultlane.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/faultlane.yaml"), std::string::npos);
  auto path = ::testing::TempDir() + std::to_string(::getpid()) + "-faultlane_config_test.yaml";
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

// The two tables of fields in docs/configuration.md are the two lists in
// config.hpp, in their order, defaults and bounds included.
TEST(config, docs_settings_tables_match_the_lists) {
  using docs_table::doc_value;
  std::string settings = "| field | meaning | default | bound |\n|---|---|---:|---|\n";
  for_each_transport_setting([&](const auto& setting) {
    std::string initial;
    std::string bound;
    if constexpr (std::is_same_v<decltype(setting.initial), bool>) {
      initial = setting.initial ? "`true`" : "`false`";
      bound = "`true` or `false`";
    } else {
      initial = doc_value(setting.initial);
      bound = doc_value(setting.minimum) + ".." + doc_value(setting.maximum);
    }
    settings += "| `" + std::string(setting.name) + "` | " + std::string(setting.meaning) + " | " +
                initial + " | " + bound + " |\n";
  });
  EXPECT_TRUE(docs_table::doc_holds("configuration.md", settings));
  std::string by_hand = "| field | meaning | bound |\n|---|---|---|\n";
  for (const auto& field : transport_fields_by_hand) {
    by_hand += "| `" + std::string(field.name) + "` | " + std::string(field.meaning) + " | " +
               std::string(field.bound) + " |\n";
  }
  EXPECT_TRUE(docs_table::doc_holds("configuration.md", by_hand));
}

}  // namespace
}  // namespace faultlane
