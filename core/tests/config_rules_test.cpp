// The rules of docs/configuration.md that config_test.cpp and rail_test.cpp
// leave out: the hand-checked fields' each half, and the YAML reader's
// bounds of a field's type on both sides.
#include <gtest/gtest.h>

#include <string>

#include "faultlane/core/config.hpp"

// A namespace of its own: the unity build batches this file with
// config_test.cpp, whose helpers have the same names.
namespace faultlane::config_rules {
namespace {

transport_config good() {
  transport_config c;
  c.bind_address = "127.0.0.1";
  return c;
}

// The key a validate() error names, or "" when the config is valid.
std::string refused_key(const transport_config& c) {
  auto r = validate(c);
  if (r.ok()) return "";
  EXPECT_EQ(r.code(), status::invalid_argument);
  return r.error().place ? r.error().place->key : "?";
}

// The complaint of parse_config_yaml(), or "" when it reads.
std::string yaml_complaint(const std::string& text) {
  auto r = parse_config_yaml(text);
  if (r.ok()) return "";
  return r.error().place ? r.error().place->what : r.error().message;
}

// Rule: advertise_address is a specific numeric IPv4 address: a name is
// refused as well as the wildcard.
TEST(config_rules, advertise_address_must_be_numeric_as_well_as_specific) {
  auto c = good();
  c.advertise_address = "127.0.0.9";
  EXPECT_EQ(refused_key(c), "");
  c.advertise_address = "localhost";
  EXPECT_EQ(refused_key(c), "advertise_address");
  c.advertise_address = "0.0.0.0";
  EXPECT_EQ(refused_key(c), "advertise_address");
}

// Rule: an empty bind_address is a wildcard too: it needs advertise_address
// or rails, and with either it is valid.
TEST(config_rules, an_empty_bind_address_is_a_wildcard_that_needs_advertise_or_rails) {
  auto c = good();
  c.bind_address = "";
  EXPECT_EQ(refused_key(c), "advertise_address");
  c.advertise_address = "127.0.0.1";
  EXPECT_EQ(refused_key(c), "");
  c.advertise_address = "";
  c.rail_addresses = {"127.0.0.1"};
  EXPECT_EQ(refused_key(c), "");
}

// Rule: rpc_bind_address is empty or a numeric IPv4 address.
TEST(config_rules, rpc_bind_address_is_empty_or_numeric_ipv4) {
  auto c = good();
  EXPECT_EQ(refused_key(c), "");
  c.rpc_bind_address = "127.0.0.1";
  EXPECT_EQ(refused_key(c), "");
  c.rpc_bind_address = "localhost";
  EXPECT_EQ(refused_key(c), "rpc_bind_address");
}

// Rule: rpc_worker_count is in 0..256 (rpc_worker_count_max); negative is
// refused with its own message.
TEST(config_rules, rpc_worker_count_is_zero_to_its_max_both_ends_included) {
  auto c = good();
  for (std::int64_t ok : {std::int64_t{0}, std::int64_t{limits::rpc_worker_count_max}}) {
    c.rpc_worker_count = ok;
    EXPECT_EQ(refused_key(c), "") << ok;
  }
  c.rpc_worker_count = limits::rpc_worker_count_max + 1;
  auto r = validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().place->what, "must be in [0, 256], got 257");
  c.rpc_worker_count = -1;
  r = validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().place->what.substr(0, 26), "must not be negative, got ");
}

// Rule: `rpc_worker_count: inline` sets rpc_inline (and only that spelling);
// a number leaves rpc_inline off.
TEST(config_rules, rpc_worker_count_inline_in_a_file_sets_rpc_inline) {
  auto in = parse_config_yaml("rpc_worker_count: inline\n");
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_TRUE(in->rpc_inline);
  auto pooled = parse_config_yaml("rpc_worker_count: 3\n");
  ASSERT_TRUE(pooled.ok()) << pooled.error().message;
  EXPECT_FALSE(pooled->rpc_inline);
  EXPECT_EQ(pooled->rpc_worker_count, 3);
  EXPECT_NE(yaml_complaint("rpc_worker_count: Inline\n"), "");
  EXPECT_EQ(yaml_complaint("rpc_worker_count: [inline]\n"), "expected a value, got a list");
}

// Rule: a file's number must fit its field's type: the type's largest value
// is read (and then bound by validate()), one more is "too large".
TEST(config_rules, a_file_number_fits_its_fields_type_both_sides) {
  auto port = parse_config_yaml("port: 65535\nrpc_port: 65535\n");
  ASSERT_TRUE(port.ok()) << port.error().message;
  EXPECT_EQ(port->port, 65535);
  EXPECT_EQ(port->rpc_port, 65535);
  EXPECT_EQ(yaml_complaint("port: 65536\n"), "65536 is too large");
  EXPECT_EQ(yaml_complaint("rpc_port: 65536\n"), "65536 is too large");
  // 64-bit unsigned: past 2^64 - 1 is too large, not a wrapped value.
  EXPECT_EQ(yaml_complaint("max_outstanding_bytes: 18446744073709551616\n"),
            "18446744073709551616 is too large");
  EXPECT_EQ(yaml_complaint("max_outstanding_bytes: 18446744073709551615\n"),
            "must be in [1, 1125899906842624], got 18446744073709551615");
  // Signed: up to 2^63 - 1 is read (validate() bounds it), 2^63 is too large.
  EXPECT_EQ(yaml_complaint("rpc_worker_count: 9223372036854775807\n"),
            "must be in [0, 256], got 9223372036854775807");
  EXPECT_EQ(yaml_complaint("rpc_worker_count: 9223372036854775808\n"),
            "9223372036854775808 is too large");
  EXPECT_EQ(yaml_complaint("rpc_worker_count: -0\n"), "");
  EXPECT_EQ(yaml_complaint("port: 0\n"), "");
}

// Rule: a key must be a plain name, and the document a mapping.
TEST(config_rules, a_file_key_is_a_plain_name) {
  EXPECT_EQ(yaml_complaint("? [port]\n: 1\n"), "a key must be a plain name");
  EXPECT_EQ(yaml_complaint("rail_addresses: {a: 1}\n"), "expected a list of addresses");
  auto rails = parse_config_yaml("bind_address: ''\nrail_addresses: [127.0.0.1, 127.0.0.2]\n");
  ASSERT_TRUE(rails.ok()) << rails.error().message;
  EXPECT_EQ(rails->rail_addresses, (std::vector<std::string>{"127.0.0.1", "127.0.0.2"}));
}

}  // namespace
}  // namespace faultlane::config_rules
