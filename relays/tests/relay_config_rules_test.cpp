// The bounds a fault spec and a relay configuration are held to
// (docs/faults.md; validate(), relay::check(), the YAML reader): each
// bound from both sides, each half of a compound condition on its own.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <limits>

#include "faultlane/relays/config.hpp"
#include "faultlane/relays/limits.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays {
namespace {

using namespace testing;

// The complaint of a fault text that must fail, or "" if it parsed.
std::string refusal(const std::string& text) {
  auto f = parse_fault(text);
  return f.ok() ? "" : f.error().place->what;
}

// Rule: latency's jitter_ms may equal ms but not exceed it.
TEST(relay_config_rules, latency_jitter_may_equal_ms_but_not_exceed_it) {
  EXPECT_EQ(refusal("latency dir=up ms=5 jitter_ms=5"), "");
  EXPECT_EQ(refusal("latency dir=up ms=5 jitter_ms=6"), "latency jitter_ms must not exceed ms");
}

// Rule: each rate-shaping or close fault needs its value above 0, and 1 is enough.
TEST(relay_config_rules, a_fault_that_needs_a_value_takes_one_and_refuses_zero) {
  EXPECT_EQ(refusal("bandwidth dir=up bytes_per_s=1"), "");
  EXPECT_EQ(refusal("bandwidth dir=up bytes_per_s=0"), "bandwidth needs bytes_per_s= > 0");
  EXPECT_EQ(refusal("slow_close dir=up ms=1"), "");
  EXPECT_EQ(refusal("slow_close dir=up"), "slow_close needs ms=");
  EXPECT_EQ(refusal("slicer dir=up size=1"), "");
  EXPECT_EQ(refusal("slicer dir=up size=0"), "slicer needs size= > 0");
}

// Rule: a slicer's variation is smaller than its size (size - 1 is fine).
TEST(relay_config_rules, slicer_variation_stays_below_size) {
  EXPECT_EQ(refusal("slicer dir=up size=10 variation=9"), "");
  EXPECT_EQ(refusal("slicer dir=up size=10 variation=10"),
            "slicer variation must be smaller than size");
}

// Rule: a number is refused past its field's range, and its maximum taken.
TEST(relay_config_rules, numbers_take_their_fields_maximum_and_refuse_one_more) {
  EXPECT_EQ(refusal("slow_close dir=up ms=4294967295"), "");
  EXPECT_EQ(refusal("slow_close dir=up ms=4294967296"), "ms=4294967296 is too large");
  EXPECT_EQ(refusal("drop_frame dir=down status=65535"), "");
  EXPECT_EQ(refusal("drop_frame dir=down status=65536"), "status=65536 is too large");
}

// Rule: a number is decimal digits with no sign and no leading zero ("0"
// is one); only such digits past 2^64 - 1 are "too large", anything else
// (trailing junk, a leading zero, even on digits too large) is "not a
// non-negative integer".
TEST(relay_config_rules, numbers_are_plain_digits_and_each_refusal_says_why) {
  EXPECT_EQ(refusal("reset dir=up after_bytes=0"), "");
  EXPECT_EQ(refusal("reset dir=up after_bytes=18446744073709551615"), "");
  EXPECT_EQ(refusal("reset dir=up after_bytes=18446744073709551616"),
            "after_bytes=18446744073709551616 is too large");
  for (const char* value : {"5x", "05", "x5", "0x5", "018446744073709551616"}) {
    EXPECT_EQ(refusal(fmt::format("reset dir=up after_bytes={}", value)),
              fmt::format("after_bytes={} is not a non-negative integer (decimal digits, no sign "
                          "or leading zero)",
                          value));
  }
}

// Rule: a hex mask is hex digits to its end: trailing junk after a valid
// byte is refused, not read as the byte before it.
TEST(relay_config_rules, a_hex_mask_with_trailing_junk_is_refused) {
  EXPECT_EQ(refusal("corrupt dir=up field=flags mask=0x1f"), "");
  for (const char* mask : {"0x1g", "0x06z", "0xff_"}) {
    EXPECT_EQ(
        refusal(fmt::format("corrupt dir=up field=flags mask={}", mask)),
        fmt::format("mask={} is not a byte with a bit set (0x01 to 0xff, or 1 to 255)", mask));
  }
}

// Rule: probability is in [0, 1], both ends included, in the text and in a
// spec built in code.
TEST(relay_config_rules, probability_is_in_zero_to_one_inclusive) {
  for (const char* p : {"0", "1", "0.5"}) {
    EXPECT_EQ(refusal(std::string("reset dir=up probability=") + p), "") << p;
  }
  for (const char* p : {"-0.01", "1.01", "0.5x", "nan"}) {
    EXPECT_NE(refusal(std::string("reset dir=up probability=") + p).find("probability must be"),
              std::string::npos)
        << p;
  }
  fault_spec f;
  f.kind = fault_kind::reset;
  for (double p : {0.0, 1.0}) {
    f.when.probability = p;
    EXPECT_TRUE(validate(f).ok()) << p;
  }
  for (double p : {-0.5, 1.5, std::nan("")}) {
    f.when.probability = p;
    EXPECT_FALSE(validate(f).ok()) << p;
  }
}

// Rule: corrupt names a field of the direction's header (a request's going
// up, a response's going down), and a spec built in code needs a mask bit.
TEST(relay_config_rules, corrupt_takes_the_fields_of_its_directions_header) {
  EXPECT_EQ(refusal("corrupt dir=up field=remote_offset"), "");
  EXPECT_EQ(refusal("corrupt dir=down field=remote_offset"),
            "corrupt: no field 'remote_offset' in a response header");
  EXPECT_EQ(refusal("corrupt dir=down field=committed_bytes"), "");
  EXPECT_EQ(refusal("corrupt dir=up field=committed_bytes"),
            "corrupt: no field 'committed_bytes' in a request header");
  fault_spec f;
  f.kind = fault_kind::corrupt;
  f.field = "flags";
  f.mask = 0;
  auto r = validate(f);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().place->what, "corrupt mask must flip at least one bit");
  f.field = "";
  f.mask = 1;
  EXPECT_FALSE(validate(f).ok());
}

relay_config good_config() {
  relay_config c;
  c.upstream = {"127.0.0.1", 9};
  return c;
}

// relay::check's message, or "" if it passed.
std::string check_refusal(const relay_config& c) {
  auto r = relay::check(c);
  return r.ok() ? "" : r.error().message;
}

// Rule: relay::check holds buffer_bytes to buffer_bytes_min, which itself is fine.
TEST(relay_config_rules, buffer_bytes_is_at_least_its_minimum) {
  auto c = good_config();
  c.buffer_bytes = buffer_bytes_min;
  EXPECT_TRUE(relay::check(c).ok());
  c.buffer_bytes = buffer_bytes_min - 1;
  EXPECT_EQ(check_refusal(c), fmt::format("buffer_bytes below {}", buffer_bytes_min));
}

// Rule: the upstream needs a port; a faulty spec fails the check.
TEST(relay_config_rules, the_upstream_needs_a_port_and_every_fault_is_validated) {
  auto c = good_config();
  c.upstream.port = 0;
  EXPECT_EQ(check_refusal(c), "upstream needs a port");
  c = good_config();
  fault_spec f;
  f.kind = fault_kind::slow_close;  // ms 0: refused
  c.faults = {f};
  EXPECT_FALSE(relay::check(c).ok());
  c.faults[0].ms = 1;
  EXPECT_TRUE(relay::check(c).ok());
}

// Rule: listen, upstream and upstream_source are loopback unless
// allow_non_loopback, and numeric IPv4 always.
TEST(relay_config_rules, every_address_is_loopback_unless_allowed) {
  auto c = good_config();
  c.upstream_source = "127.0.0.2";
  EXPECT_TRUE(relay::check(c).ok());
  c.upstream_source = "10.0.0.1";
  EXPECT_NE(check_refusal(c).find("upstream_source 10.0.0.1 is not a loopback"), std::string::npos);
  c.upstream_source = "localhost";
  EXPECT_NE(check_refusal(c).find("is not a numeric IPv4 address"), std::string::npos);
  c.upstream_source.reset();
  c.listen = {"10.0.0.1", 0};
  EXPECT_NE(check_refusal(c).find("listen 10.0.0.1 is not a loopback"), std::string::npos);
  c.upstream_source = "10.0.0.2";
  c.upstream = {"10.0.0.3", 9};
  c.allow_non_loopback = true;
  EXPECT_TRUE(relay::check(c).ok());
}

// Rule: YAML's busy_poll_us is at most busy_poll_us_max, which is allowed.
TEST(relay_config_rules, yaml_busy_poll_takes_its_bound_and_refuses_one_more) {
  auto at = parse_relays_yaml(
      fmt::format("relays:\n  - upstream: 127.0.0.1:9\n    busy_poll_us: {}\n", busy_poll_us_max));
  ASSERT_TRUE(at.ok()) << at.error().message;
  EXPECT_EQ(at.value()[0].busy_poll_us, busy_poll_us_max);
  auto over = parse_relays_yaml(fmt::format(
      "relays:\n  - upstream: 127.0.0.1:9\n    busy_poll_us: {}\n", busy_poll_us_max + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().place->what, fmt::format("must be at most {}", busy_poll_us_max));
}

// Rule: every relay setting in YAML reaches the configuration, and an
// absent one keeps its default (the file's seed, relay<index>, rail 0...).
TEST(relay_config_rules, yaml_settings_reach_the_configuration_and_defaults_stay) {
  auto parsed = parse_relays_yaml(
      "seed: 11\nrelays:\n  - upstream: 127.0.0.1:9\n"
      "  - name: rail1\n    upstream: 127.0.0.1:9\n    listen: localhost:7001\n"
      "    upstream_source: 127.0.0.2\n    rail: 1\n    protocol: raw\n    tap: t.jsonl\n"
      "    seed: 5\n    allow_non_loopback: true\n    active_faults_max: 3\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const auto& d = parsed.value()[0];
  EXPECT_EQ(d.name, "relay0");
  EXPECT_EQ(d.seed, 11u);
  EXPECT_EQ(d.rail, 0u);
  EXPECT_EQ(d.proto, protocol::faultlane);
  EXPECT_FALSE(d.tap);
  EXPECT_FALSE(d.upstream_source.has_value());
  EXPECT_FALSE(d.allow_non_loopback);
  EXPECT_EQ(d.active_faults_max, relay_config{}.active_faults_max);
  const auto& s = parsed.value()[1];
  EXPECT_EQ(s.name, "rail1");
  EXPECT_EQ(s.listen, (address{"127.0.0.1", 7001}));  // not the default: it was read
  EXPECT_EQ(s.upstream_source, "127.0.0.2");
  EXPECT_EQ(s.rail, 1u);
  EXPECT_EQ(s.proto, protocol::raw);
  EXPECT_TRUE(s.tap);
  EXPECT_EQ(s.tap_path, "t.jsonl");
  EXPECT_EQ(s.seed, 5u);
  EXPECT_TRUE(s.allow_non_loopback);
  EXPECT_EQ(s.active_faults_max, 3u);
}

// Rule: a relay's `faults:` is a list; a mapping or a scalar there is
// refused at that key, "expected a list of faults", not read as faults.
TEST(relay_config_rules, yaml_faults_must_be_a_list) {
  for (const char* faults : {"{type: drop, dir: up}", "drop dir=up", "7"}) {
    auto parsed = parse_relays_yaml(
        fmt::format("relays:\n  - upstream: 127.0.0.1:9\n    faults: {}\n", faults));
    ASSERT_FALSE(parsed.ok()) << faults;
    ASSERT_TRUE(parsed.error().place.has_value()) << parsed.error().message;
    EXPECT_EQ(parsed.error().place->key, "relays[0].faults") << parsed.error().message;
    EXPECT_EQ(parsed.error().place->what, "expected a list of faults") << parsed.error().message;
    EXPECT_EQ(parsed.error().place->at.line, 3) << parsed.error().message;
  }
}

// Rule: a relay's `listen` in YAML is checked as `upstream` is: a bad
// address is refused at that key, not replaced by the default.
TEST(relay_config_rules, yaml_listen_is_checked_at_its_key) {
  for (const char* listen : {"127.0.0.1", "127.0.0.1:99999", "127.0.0.1:x", ":1"}) {
    auto parsed = parse_relays_yaml(
        fmt::format("relays:\n  - upstream: 127.0.0.1:9\n    listen: {}\n", listen));
    ASSERT_FALSE(parsed.ok()) << listen;
    ASSERT_TRUE(parsed.error().place.has_value()) << parsed.error().message;
    EXPECT_EQ(parsed.error().place->key, "relays[0].listen") << parsed.error().message;
    EXPECT_EQ(parsed.error().place->at.line, 3) << parsed.error().message;
  }
}

// Rule: a YAML fault is one key per value: no duplicates, no empty value.
TEST(relay_config_rules, a_yaml_fault_refuses_an_empty_value) {
  auto empty = parse_fault(YAML::Load("{type: latency, dir: up, ms: ''}"));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().place->what, "ms must be one word, got ''");
  auto eq = parse_fault(YAML::Load("{type: latency, dir: up, ms: 'a=b'}"));
  ASSERT_FALSE(eq.ok());
  EXPECT_EQ(eq.error().place->what, "ms must be one word, got 'a=b'");
}

// Rule: describe() shows probability only below 1 and bytes for truncate
// even at 0, so the text reads back to the same fault.
TEST(relay_config_rules, describe_shows_what_differs_from_the_default) {
  EXPECT_EQ(describe(parse_fault("truncate dir=up bytes=0").value()), "truncate dir=up bytes=0");
  EXPECT_EQ(describe(parse_fault("reset dir=up probability=1").value()), "reset dir=up");
  EXPECT_EQ(describe(parse_fault("reset dir=up probability=0").value()),
            "reset dir=up probability=0");
  EXPECT_EQ(describe(parse_fault("refuse").value()), "refuse dir=up");
  EXPECT_EQ(parse_fault("refuse").value().name, "refuse");
}

}  // namespace
}  // namespace faultlane::relays
