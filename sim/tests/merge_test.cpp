// merge_reports (docs/dsim.md, "Swarm"): the shards of one swarm merge
// into one report, its runs in (scenario, seed) order; any input that is
// not a shard of that swarm, given twice, or beside a report of another
// kind is refused with its name, and a run two inputs both hold is too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "faultlane/sim/swarm.hpp"
#include "report_fixtures.hpp"

namespace faultlane::sim {
namespace {

using report_fixtures::passed_run;

named_report shard_of(const std::string& name, seed_range seeds, shard part) {
  std::vector<run_result> runs;
  for (auto seed : shard_seeds(seeds, part)) runs.push_back(passed_run("s", seed));
  return {name, swarm_report(runs, {"s", seeds, part})};
}

std::string refusal(const std::vector<named_report>& inputs) {
  auto merged = merge_reports(inputs);
  EXPECT_FALSE(merged.ok());
  return merged.ok() ? std::string("merged") : merged.error().message;
}

TEST(merge, the_shards_of_one_swarm_merge_into_its_report) {
  auto merged = merge_reports({shard_of("b", {1, 5}, {1, 2}), shard_of("a", {1, 5}, {0, 2})});
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  EXPECT_EQ(merged->runs, 5u);
  auto doc = nlohmann::json::parse(merged->text);
  std::vector<std::uint64_t> seeds;
  for (const auto& run : doc["runs"]) seeds.push_back(run["seed"].get<std::uint64_t>());
  EXPECT_EQ(seeds, (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(doc["swarm"]["seeds"], "1..5");
  EXPECT_EQ(doc["swarm"]["shard"], "0/1");
}

TEST(merge, a_shard_of_another_swarm_is_refused_whichever_part_differs) {
  const auto first = shard_of("a", {1, 12}, {0, 2});
  EXPECT_NE(refusal({first, shard_of("b", {2, 12}, {1, 2})}).find("b: a shard of another swarm"),
            std::string::npos);
  EXPECT_NE(refusal({first, shard_of("b", {1, 13}, {1, 2})}).find("b: a shard of another swarm"),
            std::string::npos);
  EXPECT_NE(refusal({first, shard_of("b", {1, 12}, {1, 3})}).find("b: a shard of another swarm"),
            std::string::npos);
  auto other = shard_of("b", {1, 12}, {1, 2});
  other.text = swarm_report({passed_run("t", 2)}, {"t", {1, 12}, {1, 2}});
  EXPECT_NE(refusal({first, other}).find("b: a shard of another swarm"), std::string::npos);
}

TEST(merge, a_shard_twice_or_missing_is_refused) {
  const auto a = shard_of("a", {1, 6}, {0, 3});
  const auto b = shard_of("b", {1, 6}, {1, 3});
  EXPECT_NE(refusal({a, b, shard_of("c", {1, 6}, {1, 3})}).find("c: shard 1/3 again (also b)"),
            std::string::npos);
  EXPECT_NE(refusal({a, b}).find("shards missing of s: 2 (of 3)"), std::string::npos);
}

TEST(merge, reports_without_a_swarm_merge_but_never_hold_one_run_twice) {
  const named_report one{"one", to_json({passed_run("s", 1), passed_run("s", 3)})};
  const named_report two{"two", to_json({passed_run("s", 2)})};
  auto merged = merge_reports({one, two});
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  EXPECT_EQ(merged->runs, 3u);
  EXPECT_FALSE(nlohmann::json::parse(merged->text).contains("swarm"));
  const named_report again{"again", to_json({passed_run("s", 3)})};
  EXPECT_NE(refusal({one, again}).find("again: s seed 3 is in one too"), std::string::npos);
}

TEST(merge, a_swarm_report_beside_a_run_report_is_refused_in_either_order) {
  const auto swarm = shard_of("swarm", {1, 2}, {0, 1});
  const named_report run{"run", to_json({passed_run("s", 9)})};
  EXPECT_NE(refusal({swarm, run}).find("run: not a swarm report beside swarm"),
            std::string::npos);
  EXPECT_NE(refusal({run, swarm}).find("swarm: a swarm report beside run"), std::string::npos);
}

TEST(merge, what_is_not_a_report_is_refused_by_name) {
  for (const char* text : {"", "[]", "{\"runs\": 3}", "{\"swarm\": {}}"}) {
    EXPECT_NE(refusal({{"junk", text}}).find("junk: not a faultlane-sim --json report"),
              std::string::npos)
        << text;
  }
  auto broken = shard_of("broken", {1, 2}, {0, 1});
  auto doc = nlohmann::json::parse(broken.text);
  doc["swarm"]["seeds"] = "2..1";
  broken.text = doc.dump();
  EXPECT_NE(refusal({broken}).find("broken: a malformed \"swarm\" entry"), std::string::npos);
  auto seedless = nlohmann::json::parse(to_json({passed_run("s", 1)}));
  seedless["runs"][0].erase("seed");
  EXPECT_NE(refusal({{"seedless", seedless.dump()}}).find("seedless: a run without its scenario"),
            std::string::npos);
}

// Catches a merge that keeps one shard's probes, or sums a run twice.
TEST(merge, the_merged_probes_are_the_shards_summed) {
  const auto at = [](probe_id id) { return static_cast<std::size_t>(id); };
  auto shard_with_probes = [&](const std::string& name, shard part) {
    std::vector<run_result> runs;
    for (auto seed : shard_seeds({1, 4}, part)) {
      runs.push_back(passed_run("s", seed));
      runs.back().probes[at(probe_id::relay_frame_dropped)] = seed;
    }
    return named_report{name, swarm_report(runs, {"s", {1, 4}, part})};
  };
  auto merged = merge_reports({shard_with_probes("a", {0, 2}), shard_with_probes("b", {1, 2})});
  ASSERT_TRUE(merged.ok()) << merged.error().message;
  EXPECT_EQ(merged->probes.hits["relay_frame_dropped"], 1u + 2 + 3 + 4);
  EXPECT_EQ(merged->probes.runs, 4u);
  auto doc = nlohmann::json::parse(merged->text);
  EXPECT_EQ(doc["probes"]["relay_frame_dropped"], 10u);
  EXPECT_EQ(doc["probes_never_reached"].size(), probes::count - 1);
  EXPECT_EQ(doc["probes_counted"], probes::counted);
}

}  // namespace
}  // namespace faultlane::sim
