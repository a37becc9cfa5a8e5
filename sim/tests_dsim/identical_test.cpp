// One seed, one identical run: library scenarios × seeds 1..10 give the
// same run digest in two separate processes of faultlane-sim (ASLR places
// everything elsewhere: a container ordered by pointer would show) and in
// this process, twice: seeds in order, then another scenario's run and the
// seeds in reverse (a static or thread_local left over from an earlier run
// would show). Seeds give different runs. On a mismatch the test prints the first event where the
// two traces part.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../tests/program_run.hpp"
#include "faultlane/sim/runner.hpp"

namespace faultlane::sim {
namespace {

// Waiting-bound and busy ones, with kill, restart, unregister, failpoints,
// several rails and every kind of fault among them.
const std::vector<std::string> scenarios = {
    "lost_write_ack_dropped", "stalled_peer_healthy_peer", "corrupted_header",
    "truncated_read_payload", "refusing_target",           "reset_in_write_body",
    "half_closed_idle_lane",  "stale_ids_after_restart",   "unregister_during_reads",
    "slow_rail_two_rails",
};
constexpr std::uint64_t seeds = 10;

std::string path_of(const std::string& name) {
  return std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios/" + name + ".yaml";
}

using digests = std::map<std::pair<std::string, std::uint64_t>, std::string>;

run_result run_here(const scenario& s, std::uint64_t seed, std::size_t trace_events = 0) {
  run_options o;
  o.seed = seed;
  o.trace_events = trace_events;
  return run_scenario(s, o);
}

// The scenario's seeds in this process, in order or in reverse (each seed
// then follows another one).
digests in_this_process(const scenario& s, bool reverse) {
  digests out;
  for (std::uint64_t k = 1; k <= seeds; ++k) {
    const std::uint64_t seed = reverse ? seeds + 1 - k : k;
    auto r = run_here(s, seed);
    EXPECT_TRUE(r.deterministic);
    out[{s.name, seed}] = digest_text(r.digest);
  }
  return out;
}

digests in_a_process(const std::vector<std::string>& names, const std::string& json_path) {
  std::vector<std::string> args{"run",      "--deterministic",     "--seed", "1",
                                "--repeat", std::to_string(seeds), "--json", json_path};
  for (const auto& name : names) args.push_back(path_of(name));
  const auto out = test::run_program(args);
  // A failing scenario still has its digest: exit 1 is a verdict, not an error.
  EXPECT_TRUE(out.code == 0 || out.code == 1) << out.text;
  digests d;
  std::ifstream in(json_path);
  const auto report = nlohmann::json::parse(in, nullptr, false);
  if (report.is_discarded()) {
    ADD_FAILURE() << "no JSON report from faultlane-sim: " << out.text;
    return d;
  }
  for (const auto& run : report["runs"]) {
    d[{run["scenario"].get<std::string>(), run["seed"].get<std::uint64_t>()}] =
        run["digest"].get<std::string>();
  }
  return d;
}

// The first line where the two traces differ, with its neighbours.
std::string first_divergence(const std::string& a, const std::string& b) {
  std::istringstream ia(a), ib(b);
  std::string la, lb;
  std::size_t line = 0;
  while (true) {
    const bool more_a = static_cast<bool>(std::getline(ia, la));
    const bool more_b = static_cast<bool>(std::getline(ib, lb));
    ++line;
    if (!more_a && !more_b) return "the traces are the same (the difference is after them)";
    if (la != lb || more_a != more_b) {
      return "trace line " + std::to_string(line) + ":\n  first:  " + la + "\n  second: " + lb;
    }
  }
}

// Runs the scenario again with its trace here and in a process, and says
// where the two part.
std::string explain(const scenario& s, std::uint64_t seed) {
  constexpr std::size_t trace_events = 1u << 20;
  const auto here = run_here(s, seed, trace_events).trace;
  const auto trace_path = test::write_temp("identical-trace.txt", "");
  (void)test::run_program({"run", "--deterministic", "--seed", std::to_string(seed), "--trace",
                           trace_path, path_of(s.name)});
  return first_divergence(here, test::read_file(trace_path));
}

// One scenario a test, so that ctest spreads them over the cores and no one
// test holds much of the library (two at a time, one pair ran past its
// limit under load). In this process the second pass runs the next
// scenario's first seed before the scenario's seeds in reverse: what one
// run of another scenario, or of another seed, left behind would show.
class sim_on_world_identical : public ::testing::TestWithParam<std::size_t> {};

INSTANTIATE_TEST_SUITE_P(each, sim_on_world_identical,
                         ::testing::Range(std::size_t{0}, scenarios.size()));

TEST_P(sim_on_world_identical, scenarios_give_one_digest_per_seed_in_every_process_and_order) {
  const std::vector<std::string> names{scenarios[GetParam()]};
  auto loaded = load_scenario(path_of(names[0]));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  auto before = load_scenario(path_of(scenarios[(GetParam() + 1) % scenarios.size()]));
  ASSERT_TRUE(before.ok()) << before.error().message;
  const scenario& s = loaded.value();
  const auto tag = std::to_string(GetParam());
  const auto first = in_a_process(names, test::write_temp("identical-1-" + tag + ".json", ""));
  const auto second = in_a_process(names, test::write_temp("identical-2-" + tag + ".json", ""));
  const auto here = in_this_process(s, false);
  (void)run_here(before.value(), 1);
  const auto here_reversed = in_this_process(s, true);
  ASSERT_EQ(first.size(), names.size() * seeds);
  std::size_t mismatches = 0;
  std::set<std::string> distinct;
  for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
    const auto key = std::make_pair(s.name, seed);
    const auto& d = first.at(key);
    distinct.insert(d);
    const bool same = second.at(key) == d && here.at(key) == d && here_reversed.at(key) == d;
    if (!same && ++mismatches <= 3) {
      ADD_FAILURE() << s.name << " seed " << seed << ": digests " << d << " (process 1), "
                    << second.at(key) << " (process 2), " << here.at(key) << " (here), "
                    << here_reversed.at(key) << " (here, seeds in reverse)\n"
                    << explain(s, seed);
    }
  }
  EXPECT_GE(distinct.size(), 2u) << s.name << ": every seed gave the same run";
  EXPECT_EQ(mismatches, 0u);
}

TEST(sim_on_world, first_divergence_names_the_first_line_that_differs) {
  EXPECT_EQ(first_divergence("a\nb\nc\n", "a\nx\nc\n"), "trace line 2:\n  first:  b\n  second: x");
  EXPECT_EQ(first_divergence("a\n", "a\nb\n"), "trace line 2:\n  first:  \n  second: b");
}

}  // namespace
}  // namespace faultlane::sim
