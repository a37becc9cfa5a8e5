// Code probes on the world (docs/dsim.md, "Code probes"): a run records the
// probes it reached, the same for the same seed, and they move neither its
// digest nor its verdict; run, swarm and merge report them in --json, by
// name, with the probes no run reached, and merge sums its shards.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../tests/program_run.hpp"
#include "faultlane/base/probe.hpp"
#include "faultlane/sim/history.hpp"
#include "faultlane/sim/runner.hpp"

namespace faultlane::sim::probes_on_world {

std::string library_file(const std::string& name) {
  return std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios/" + name + ".yaml";
}

std::uint64_t hits_of(const run_result& r, probe_id id) {
  return r.probes[static_cast<std::size_t>(id)];
}

// A report's probe keys hold together: every declared probe by name, the
// never-reached list exactly those with 0, each run's probes summed.
void expect_probe_keys_agree(const nlohmann::json& report) {
  ASSERT_TRUE(report["probes"].is_object());
  EXPECT_TRUE(report["probes_counted"].get<bool>());
  EXPECT_EQ(report["probes"].size(), probes::count);
  std::map<std::string, std::uint64_t> summed;
  for (const auto& run : report["runs"]) {
    for (const auto& [name, hits] : run["probes"].items())
      summed[name] += hits.get<std::uint64_t>();
  }
  std::vector<std::string> never;
  for (const auto& row : probes::table) {
    const std::string name(row.name);
    ASSERT_TRUE(report["probes"].contains(name)) << name;
    const auto total = report["probes"][name].get<std::uint64_t>();
    EXPECT_EQ(total, summed[name]) << name;
    if (total == 0) never.push_back(name);
  }
  EXPECT_EQ(report["probes_never_reached"].get<std::vector<std::string>>(), never);
  EXPECT_LT(never.size(), probes::count);  // the scenario reaches some
}

TEST(probes_on_world, the_same_seed_gives_the_same_digest_and_the_same_probes) {
  const auto s = load_scenario(library_file("lost_write_ack_dropped")).value();
  run_options o;
  o.seed = 7;
  const auto first = run_scenario(s, o);
  // Counters that moved between the runs change no run's own hits.
  FAULTLANE_PROBE(relay_frame_dropped);
  const auto second = run_scenario(s, o);
  EXPECT_TRUE(first.passed) << failure_text(first);
  EXPECT_EQ(first.digest, second.digest);
  EXPECT_EQ(first.probes, second.probes);
  EXPECT_GE(hits_of(first, probe_id::relay_frame_dropped), 1u);
  EXPECT_GE(hits_of(first, probe_id::ambiguous_write), 1u);
  // Another seed's run reaches other states and has another digest; the
  // digest follows the run, never the probes.
  o.seed = 8;
  const auto other = run_scenario(s, o);
  EXPECT_NE(other.digest, first.digest);
}

// A shutdown event lets the streams go on, as a program's other threads
// do: what a stream submits once the shutdown began is refused by the core
// (shutting_down, submit_while_shutting_down), and recorded inside the
// shutdown; the run still passes every checker.
TEST(probes_on_world, a_stream_that_submits_during_a_shutdown_event_is_refused_by_the_core) {
  const auto s = load_scenario(library_file("shutdown_under_load_stalled_peer")).value();
  run_options o;
  o.seed = 1;
  const auto r = run_scenario(s, o);
  ASSERT_TRUE(r.passed) << failure_text(r);
  EXPECT_GE(hits_of(r, probe_id::submit_while_shutting_down), 1u);
  ASSERT_NE(r.hist, nullptr);
  const auto& h = *r.hist;
  const auto sd = std::find_if(h.shutdowns.begin(), h.shutdowns.end(),
                               [](const shutdown_record& x) { return x.transport == "client"; });
  ASSERT_NE(sd, h.shutdowns.end());
  const auto inside = std::count_if(h.ops.begin(), h.ops.end(), [&](const op_record& op) {
    return op.initiator == "client" && op.submit_failed && op.outcome == status::shutting_down &&
           op.submit_seq > sd->start_seq && op.submit_seq < sd->end_seq;
  });
  EXPECT_GE(inside, 1);
}

TEST(probes_on_world, run_reports_its_probes_by_name_and_those_never_reached) {
  const auto json = test::write_temp("probes-run.json", "");
  const auto out =
      test::run_program({"run", "--deterministic", library_file("lost_write_ack_dropped"), "--seed",
                         "7", "--repeat", "2", "--json", json});
  ASSERT_EQ(out.code, 0) << out.text;
  const auto report = nlohmann::json::parse(test::read_file(json));
  expect_probe_keys_agree(report);
  EXPECT_GE(report["probes"]["relay_frame_dropped"].get<std::uint64_t>(), 2u);
  EXPECT_NE(out.text.find("code probes: "), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("reached over 2 run(s)"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("never reached ("), std::string::npos) << out.text;
  for (const auto& name : report["probes_never_reached"]) {
    EXPECT_NE(out.text.find(name.get<std::string>()), std::string::npos) << name;
  }
}

TEST(probes_on_world, swarm_shards_report_their_probes_and_merge_sums_them) {
  const auto file = library_file("lost_write_ack_dropped");
  std::vector<nlohmann::json> shards;
  std::vector<std::string> merge_args{"merge"};
  for (const char* part : {"0/2", "1/2"}) {
    const auto json = test::write_temp(std::string("probes-shard-") + part[0] + ".json", "");
    const auto out = test::run_program(
        {"swarm", "--deterministic", file, "--seeds", "1..4", "--shard", part, "--json", json});
    ASSERT_EQ(out.code, 0) << out.text;
    EXPECT_NE(out.text.find("never reached ("), std::string::npos) << out.text;
    shards.push_back(nlohmann::json::parse(test::read_file(json)));
    expect_probe_keys_agree(shards.back());
    merge_args.push_back(json);
  }
  const auto merged_file = test::write_temp("probes-merged.json", "");
  merge_args.insert(merge_args.end(), {"--json", merged_file});
  const auto out = test::run_program(merge_args);
  ASSERT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("reached over 4 run(s)"), std::string::npos) << out.text;
  const auto merged = nlohmann::json::parse(test::read_file(merged_file));
  expect_probe_keys_agree(merged);
  for (const auto& row : probes::table) {
    const std::string name(row.name);
    EXPECT_EQ(merged["probes"][name].get<std::uint64_t>(),
              shards[0]["probes"][name].get<std::uint64_t>() +
                  shards[1]["probes"][name].get<std::uint64_t>())
        << name;
  }
}

}  // namespace faultlane::sim::probes_on_world
