// Swarm: seed ranges and shards parsed strictly, shards that split a range
// exactly, per-seed fault mixes within the file's freedom, and the sharding
// contract: n shard processes merged give the report of one run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "../tests/program_run.hpp"
#include "faultlane/sim/swarm.hpp"

namespace faultlane::sim {
namespace {

std::string library(const std::string& name) {
  return std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios/" + name + ".yaml";
}

TEST(swarm, a_seed_range_is_a_to_b_both_included_and_never_empty_or_reversed) {
  auto r = parse_seed_range("3..7");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value().first, 3u);
  EXPECT_EQ(r.value().last, 7u);
  EXPECT_TRUE(parse_seed_range("5..5").ok());
  EXPECT_NE(parse_seed_range("7..3").error().message.find("reversed"), std::string::npos);
  for (auto bad : {"", "5", "5..", "..5", "a..b", "1...3", "-1..3", "1..3x"}) {
    EXPECT_FALSE(parse_seed_range(bad).ok()) << bad;
  }
}

TEST(swarm, a_shard_is_i_of_n_with_i_below_n) {
  auto s = parse_shard("2/8");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().index, 2u);
  EXPECT_EQ(s.value().count, 8u);
  EXPECT_TRUE(parse_shard("0/1").ok());
  for (auto bad : {"3/3", "0/0", "1", "/2", "1/", "a/2", "1/100001"}) {
    EXPECT_FALSE(parse_shard(bad).ok()) << bad;
  }
}

TEST(swarm, the_shards_of_a_range_are_disjoint_and_together_the_range) {
  for (std::size_t n : {1u, 2u, 3u, 7u, 20u}) {
    std::set<std::uint64_t> all;
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      for (auto seed : shard_seeds({10, 24}, {i, n})) {
        all.insert(seed);
        ++total;
      }
    }
    EXPECT_EQ(total, 15u) << n;
    EXPECT_EQ(all.size(), 15u) << n;
    EXPECT_EQ(*all.begin(), 10u);
    EXPECT_EQ(*all.rbegin(), 24u);
  }
  // At the top of the range, no seed wraps round.
  const auto top = shard_seeds({UINT64_MAX - 4, UINT64_MAX}, {1, 2});
  EXPECT_EQ(top, (std::vector<std::uint64_t>{UINT64_MAX - 3, UINT64_MAX - 1}));
}

TEST(swarm, a_variant_mixes_only_the_optional_faults_and_replays_per_seed) {
  auto s = load_scenario(library("swarm")).value();
  std::set<std::string> kept_sets;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const auto v = swarm_variant(s, seed);
    const auto again = swarm_variant(s, seed);
    std::string kept;
    for (std::size_t l = 0; l < s.links.size(); ++l) {
      ASSERT_EQ(v.links[l].faults.size(), again.links[l].faults.size());
      for (std::size_t k = 0; k < v.links[l].faults.size(); ++k) {
        EXPECT_EQ(v.links[l].faults[k].spec.when.probability,
                  again.links[l].faults[k].spec.when.probability);
      }
      for (const auto& f : s.links[l].faults) {
        const link_fault* found = nullptr;
        for (const auto& g : v.links[l].faults) {
          if (g.spec.name == f.spec.name) found = &g;
        }
        if (!f.optional) {  // a fault the file requires is as written
          ASSERT_NE(found, nullptr) << f.spec.name;
          EXPECT_EQ(found->spec.when.probability, f.spec.when.probability);
          continue;
        }
        if (found == nullptr) continue;
        kept += f.spec.name + " ";
        const double p = f.spec.when.probability;
        EXPECT_GE(found->spec.when.probability, p / 4 - 1e-12) << f.spec.name;
        EXPECT_LE(found->spec.when.probability, std::min(1.0, p * 4) + 1e-12) << f.spec.name;
      }
    }
    kept_sets.insert(kept);
  }
  EXPECT_GE(kept_sets.size(), 4u);  // the seeds switch faults on and off
}

TEST(swarm, a_fault_an_event_or_expectation_names_stays_as_written) {
  auto s = load_scenario(library("swarm")).value();
  for (auto& l : s.links) {
    for (auto& f : l.faults) f.optional = true;
  }
  s.expect.faults["drop0"] = {};
  EXPECT_EQ(swarm_faults(s), 4u);  // five optional faults, one named
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::optional<double> probability;
    for (const auto& l : swarm_variant(s, seed).links) {
      for (const auto& f : l.faults) {
        if (f.spec.name == "drop0") probability = f.spec.when.probability;
      }
    }
    ASSERT_TRUE(probability) << seed;
    EXPECT_EQ(*probability, 0.02) << seed;
  }
  EXPECT_EQ(swarm_faults(load_scenario(library("lost_write_ack_dropped")).value()), 0u);
}

// Each way of naming a fault keeps it as written: an event's trigger
// (`fault:`), a `remove_fault` event's `fault_name`, and an expectation
// on one link (`LINK/NAME`).
TEST(swarm, a_fault_named_by_a_trigger_a_removal_or_a_link_expectation_stays) {
  auto s = load_scenario(library("swarm")).value();
  std::map<std::string, double> written;
  for (auto& l : s.links) {
    for (auto& f : l.faults) {
      f.optional = true;
      written[f.spec.name] = f.spec.when.probability;
    }
  }
  event_spec fired;
  fired.when = trigger_kind::fault_fired;
  fired.fault = "reset0";
  event_spec removed;
  removed.when = trigger_kind::phase_start;
  removed.phase = s.phases.front().name;
  removed.fault_name = "corrupt1";
  s.events = {fired, removed};
  s.expect.faults[s.links[0].name + "/drop0"] = {};
  const std::set<std::string> named{"reset0", "corrupt1", "drop0"};
  EXPECT_EQ(swarm_faults(s), written.size() - named.size());
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    std::set<std::string> kept;
    for (const auto& l : swarm_variant(s, seed).links) {
      for (const auto& f : l.faults) {
        if (!named.count(f.spec.name)) continue;
        kept.insert(f.spec.name);
        EXPECT_EQ(f.spec.when.probability, written[f.spec.name]) << f.spec.name << " " << seed;
      }
    }
    EXPECT_EQ(kept, named) << "seed " << seed;
  }
}

nlohmann::json without_wall_time(const std::string& path) {
  auto doc = nlohmann::json::parse(test::read_file(path), nullptr, false);
  if (doc.is_discarded()) return doc;
  for (auto& run : doc["runs"]) {
    for (auto key : {"seconds", "check_seconds", "wall_time_ms"}) run.erase(key);
  }
  return doc;
}

TEST(swarm, shard_reports_merged_equal_the_report_of_one_run) {
  const auto file = library("lost_write_ack_dropped");
  const auto whole = test::write_temp("swarm-whole.json", "");
  auto out = test::run_program(
      {"swarm", "--deterministic", file, "--seeds", "1..12", "--json", whole, "--jobs", "2"});
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("12 runs, 12 passed, 0 failed"), std::string::npos) << out.text;
  std::vector<std::string> merge_args{"merge"};
  for (int i = 0; i < 3; ++i) {
    const auto part = test::write_temp("swarm-shard-" + std::to_string(i) + ".json", "");
    out = test::run_program({"swarm", "--deterministic", file, "--seeds", "1..12", "--shard",
                             std::to_string(i) + "/3", "--json", part});
    ASSERT_EQ(out.code, 0) << out.text;
    EXPECT_NE(out.text.find("4 runs"), std::string::npos) << out.text;
    merge_args.push_back(part);
  }
  const auto merged = test::write_temp("swarm-merged.json", "");
  merge_args.insert(merge_args.end(), {"--json", merged});
  out = test::run_program(merge_args);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("merged 12 runs from 3 reports"), std::string::npos) << out.text;
  const auto a = without_wall_time(whole);
  const auto b = without_wall_time(merged);
  ASSERT_FALSE(a.is_discarded());
  EXPECT_EQ(a["runs"].size(), 12u);
  EXPECT_EQ(a["swarm"]["seeds"], "1..12");
  EXPECT_EQ(a, b);
  // Not every shard of one swarm: refused, naming the file.
  auto refused = [&](std::vector<std::string> inputs, const std::string& says) {
    std::vector<std::string> args{"merge"};
    args.insert(args.end(), inputs.begin(), inputs.end());
    args.insert(args.end(), {"--json", test::write_temp("swarm-refused.json", "")});
    const auto r = test::run_program(args);
    EXPECT_EQ(r.code, 2) << r.text;
    EXPECT_NE(r.text.find(says), std::string::npos) << r.text;
  };
  refused({merge_args[1], merge_args[1], merge_args[2], merge_args[3]}, "shard 0/3 again");
  refused({merge_args[1], merge_args[2]}, "shards missing of lost_write_ack_dropped: 2 (of 3)");
  refused({merge_args[1], merge_args[2], merge_args[3], whole}, "a shard of another swarm");
  const auto other = test::write_temp("swarm-other.json", "");
  out = test::run_program({"swarm", "--deterministic", library("refusing_target"), "--seeds",
                           "1..12", "--shard", "2/3", "--json", other});
  ASSERT_EQ(out.code, 0) << out.text;
  refused({merge_args[1], merge_args[2], other}, other + ": a shard of another swarm");
}

TEST(swarm, a_failing_seed_is_written_as_the_file_its_replay_line_runs_and_shrunk) {
  // The shrink test's schedule, with the planted replay bug: every seed fails.
  const auto text =
      test::read_file(std::string(FAULTLANE_SOURCE_DIR) + "/sim/tests/planted_replay.yaml");
  const auto file = test::write_temp("planted.yaml", text);
  const auto dir = std::filesystem::path(file).parent_path();
  const auto json = (dir / "planted-swarm.json").string();
  const auto out =
      test::run_program({"swarm", "--deterministic", file, "--seeds", "4..5", "--json", json});
  EXPECT_EQ(out.code, 1) << out.text;
  const auto variant = (dir / "planted.seed4.yaml").string();
  EXPECT_NE(out.text.find("FAILED planted seed 4: FAIL no_replay"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find(variant + " --seed 4"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("shrunk: " + (dir / "planted.seed4.min.yaml").string()),
            std::string::npos)
      << out.text;
  // The replay line runs the variant: the same run, digest for digest.
  const auto report = nlohmann::json::parse(test::read_file(json));
  const auto replay_json = (dir / "planted-replay.json").string();
  const auto again =
      test::run_program({"run", "--deterministic", variant, "--seed", "4", "--json", replay_json});
  EXPECT_EQ(again.code, 1) << again.text;
  const auto replayed = nlohmann::json::parse(test::read_file(replay_json));
  EXPECT_EQ(replayed["runs"][0]["digest"], report["runs"][0]["digest"]);
}

TEST(swarm, bad_input_is_exit_2_with_nothing_run_or_written) {
  const auto file = library("lost_write_ack_dropped");
  const auto dir = std::filesystem::path(test::write_temp("swarm-bad.keep", "")).parent_path();
  const auto json = (dir / "swarm-bad-never.json").string();
  struct bad_case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<bad_case> cases = {
      {{"--seeds", "9..2"}, "reversed"},
      {{"--seeds", "2.."}, "give a range A..B"},
      {{"--seeds", "1..4", "--shard", "4/4"}, "out of range"},
      {{"--seeds", "1..4", "--shard", "x"}, "give I/N"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"swarm", "--deterministic", file, "--json", json};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto out = test::run_program(args);
    EXPECT_EQ(out.code, 2) << out.text;
    EXPECT_NE(out.text.find(c.says), std::string::npos) << out.text;
    EXPECT_FALSE(std::filesystem::exists(json)) << c.says;
  }
  auto out = test::run_program({"merge", file, "--json", json});
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find(file + ": not a faultlane-sim --json report"), std::string::npos)
      << out.text;
  EXPECT_FALSE(std::filesystem::exists(json));
  // Outputs that cannot be written are found before anything runs.
  for (const auto& [path, says] : std::vector<std::pair<std::string, std::string>>{
           {"/proc/faultlane-never.json", "cannot write /proc/faultlane-never.json"},
           {dir.string(), "it is a directory"}}) {
    out = test::run_program({"swarm", "--deterministic", file, "--seeds", "1..2", "--json", path});
    EXPECT_EQ(out.code, 2) << out.text;
    EXPECT_NE(out.text.find(says), std::string::npos) << out.text;
    EXPECT_EQ(out.text.find("runs,"), std::string::npos) << out.text;  // nothing ran
  }
}

}  // namespace
}  // namespace faultlane::sim
