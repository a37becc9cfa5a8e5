// The draws of a swarm variant over many seeds (docs/dsim.md, "Swarm";
// swarm.hpp): an optional fault is left out with probability 1/2, and a
// kept one has its probability drawn log-uniformly from a quarter to four
// times the file's, at most 1. The seeds are fixed, so the counts are too;
// the bounds sit 3 standard deviations out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "faultlane/sim/swarm.hpp"

namespace faultlane::sim {
namespace {

constexpr std::uint64_t seeds = 1000;

scenario one_optional_fault(const std::string& probability) {
  auto s = parse_scenario(
      "transports: [{name: a}, {name: b}]\n"
      "regions: [{name: r, transport: b, size: 1}]\n"
      "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]\n"
      "links: [{initiator: a, target: b, faults: [{type: reset, dir: up, probability: " +
          probability + ", optional: true}]}]\n",
      "draws.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : scenario{};
}

// The probabilities the kept faults had over `seeds` seeds.
std::vector<double> kept_probabilities(const scenario& s) {
  std::vector<double> kept;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const scenario variant = swarm_variant(s, seed);
    for (const auto& f : variant.links.at(0).faults) kept.push_back(f.spec.when.probability);
  }
  return kept;
}

// Rule: an optional fault is left out of about half the seeds' variants.
TEST(swarm_draws, an_optional_fault_is_left_out_of_half_the_variants) {
  const auto kept = kept_probabilities(one_optional_fault("0.04"));
  EXPECT_GE(kept.size(), 450u);
  EXPECT_LE(kept.size(), 550u);
}

// Rule: a kept fault's probability is drawn log-uniformly from a quarter
// to four times the file's: it reaches near both ends, and its log is
// centred on the file's.
TEST(swarm_draws, a_kept_probability_spans_a_quarter_to_four_times_log_uniformly) {
  const double p = 0.04;
  const auto kept = kept_probabilities(one_optional_fault("0.04"));
  ASSERT_FALSE(kept.empty());
  const auto [low, high] = std::minmax_element(kept.begin(), kept.end());
  EXPECT_GE(*low, p / 4 - 1e-12);
  EXPECT_LT(*low, p * 0.3);
  EXPECT_LE(*high, p * 4 + 1e-12);
  EXPECT_GT(*high, p * 3.3);
  double log_sum = 0;
  for (double q : kept) log_sum += std::log2(q / p);
  EXPECT_NEAR(log_sum / static_cast<double>(kept.size()), 0.0, 0.2);  // sd 1.15 / sqrt(500)
}

// Rule: a drawn probability is at most 1, even when four times the file's
// is more: a quarter of the draws of 0.5 (a scale of 2 to 4) reach 1,
// none passes it.
TEST(swarm_draws, a_drawn_probability_is_capped_at_one) {
  const auto kept = kept_probabilities(one_optional_fault("0.5"));
  ASSERT_FALSE(kept.empty());
  const auto capped = std::count(kept.begin(), kept.end(), 1.0);
  EXPECT_EQ(*std::max_element(kept.begin(), kept.end()), 1.0);
  EXPECT_GT(capped, static_cast<std::ptrdiff_t>(kept.size() / 6));
  EXPECT_LT(capped, static_cast<std::ptrdiff_t>(kept.size() / 3));
}

}  // namespace
}  // namespace faultlane::sim
