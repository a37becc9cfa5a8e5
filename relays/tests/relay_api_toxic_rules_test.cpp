// The bounds of a toxic's fields (docs/relay-api.md, Toxics and Where it
// differs): each from both sides, and each half of the checks that accept
// either Toxiproxy's attribute or the relay's own key.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/toxics.hpp"

namespace faultlane::relays {
namespace {

using api::toxic;
using nlohmann::json;

// The complaint about a toxic, or "" if it maps to a fault.
std::string toxic_problem(const std::string& type, json attributes, double toxicity = 1.0) {
  auto f = api::to_fault({"t", type, direction::up, toxicity, std::move(attributes)});
  return f.ok() ? "" : f.error().message;
}

// Rule: a Toxiproxy type's needed value may come as Toxiproxy's attribute
// or as the relay's key (latency's ms, bandwidth's bytes_per_s...).
TEST(relay_api_toxic_rules, a_needed_value_may_come_as_the_relays_own_key) {
  EXPECT_EQ(toxic_problem("latency", {{"ms", 5}}), "");
  EXPECT_EQ(toxic_problem("bandwidth", {{"bytes_per_s", 1500}}), "");
  EXPECT_EQ(toxic_problem("slicer", {{"size", 10}}), "");
  EXPECT_EQ(toxic_problem("slow_close", {{"ms", 5}}), "");
}

// Rule: each Toxiproxy bound holds at its edge: jitter up to latency,
// rate and delay from 1, average_size one above size_variation.
TEST(relay_api_toxic_rules, toxiproxy_bounds_accept_their_edge) {
  EXPECT_EQ(toxic_problem("latency", {{"latency", 5}, {"jitter", 5}}), "");
  EXPECT_EQ(toxic_problem("latency", {{"latency", 1}}), "");
  EXPECT_EQ(toxic_problem("bandwidth", {{"rate", 1}}), "");
  EXPECT_EQ(toxic_problem("slow_close", {{"delay", 1}}), "");
  EXPECT_EQ(toxic_problem("slicer", {{"average_size", 5}, {"size_variation", 4}}), "");
  EXPECT_EQ(toxic_problem("slicer", {{"average_size", 4}, {"size_variation", 5}}),
            "slicer needs average_size above size_variation");
}

// Rule: a scaled attribute takes the largest value that fits 2^64 - 1
// after scaling (rate in KB/s) and refuses one more.
TEST(relay_api_toxic_rules, a_scaled_attribute_takes_the_largest_value_that_fits) {
  constexpr std::uint64_t rate_max = UINT64_MAX / 1000;
  auto f = api::to_fault({"t", "bandwidth", direction::up, 1.0, {{"rate", rate_max}}});
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f.value().bytes_per_s, rate_max * 1000);
  EXPECT_NE(toxic_problem("bandwidth", {{"rate", rate_max + 1}}).find("too large"),
            std::string::npos);
}

// Rule: a number is a whole number from 0 to 2^64 - 1: 0 and a float below
// 2^64 are taken, 2^64 written as a float is refused.
TEST(relay_api_toxic_rules, a_float_is_taken_below_two_to_the_64_only) {
  EXPECT_EQ(toxic_problem("stall", {{"after_bytes", 0}}), "");
  EXPECT_EQ(toxic_problem("stall", {{"after_bytes", 18446744073709549568.0}}), "");
  EXPECT_NE(toxic_problem("stall", json::parse(R"({"after_bytes": 18446744073709551616})"))
                .find("from 0 to 2^64 - 1"),
            std::string::npos);
  EXPECT_NE(toxic_problem("stall", {{"after_bytes", -1.0}}).find("from 0 to 2^64 - 1"),
            std::string::npos);
}

// Rule: dir, name and probability are set by the toxic's stream, name and
// toxicity, never as attributes.
TEST(relay_api_toxic_rules, stream_name_and_toxicity_are_not_attributes) {
  for (const char* key : {"dir", "name", "probability"}) {
    EXPECT_EQ(toxic_problem("stall", {{key, "x"}}),
              fmt::format("attribute {} is set by the toxic's stream, name or toxicity", key));
  }
}

// Rule: toxicity is in [0, 1], both ends included, and below 1 becomes
// the fault's probability.
TEST(relay_api_toxic_rules, toxicity_is_in_zero_to_one_inclusive) {
  auto never = api::to_fault({"t", "stall", direction::up, 0.0, json::object()});
  ASSERT_TRUE(never.ok()) << never.error().message;
  EXPECT_EQ(never.value().when.probability, 0.0);
  auto always = api::to_fault({"t", "stall", direction::up, 1.0, json::object()});
  ASSERT_TRUE(always.ok());
  EXPECT_EQ(always.value().when.probability, 1.0);
  EXPECT_EQ(toxic_problem("stall", json::object(), -0.1), "toxicity must be in [0, 1], got -0.1");
  EXPECT_EQ(toxic_problem("stall", json::object(), 1.1), "toxicity must be in [0, 1], got 1.1");
}

// Rule: a toxicity below 1 becomes the fault's probability (its text says
// so); a toxicity of 1 leaves the fault certain, with no probability.
TEST(relay_api_toxic_rules, a_toxicity_below_one_is_the_faults_probability) {
  auto some = api::to_fault({"t", "stall", direction::up, 0.75, json::object()});
  ASSERT_TRUE(some.ok()) << some.error().message;
  EXPECT_EQ(some.value().when.probability, 0.75);
  EXPECT_EQ(describe(some.value()), "stall dir=up probability=0.75");
  auto all = api::to_fault({"t", "stall", direction::up, 1.0, json::object()});
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(describe(all.value()), "stall dir=up");
}

// Rule: a configured fault shows its numbers as numbers and its words as
// words, and its probability as the toxic's toxicity.
TEST(relay_api_toxic_rules, a_fault_shows_numbers_as_numbers_and_words_as_words) {
  auto t = api::from_fault(
      parse_fault("drop_frame dir=down opcode=write frame=2 probability=0.25 name=d").value());
  EXPECT_EQ(t.attributes, (json{{"opcode", "write"}, {"frame", 2}}));
  EXPECT_EQ(t.toxicity, 0.25);
  EXPECT_EQ(t.name, "d");
  EXPECT_EQ(api::to_json(t)["stream"], "downstream");
}

// Rule: a Toxiproxy type shows every attribute, unless the relay's key for
// it was given (then that key stands for it).
TEST(relay_api_toxic_rules, default_attributes_skip_those_given_as_the_relays_key) {
  toxic t{"t", "slicer", direction::down, 1.0, {{"size", 10}}};
  api::fill_default_attributes(t);
  EXPECT_EQ(t.attributes, (json{{"size", 10}, {"size_variation", 0}, {"delay", 0}}));
}

}  // namespace
}  // namespace faultlane::relays
