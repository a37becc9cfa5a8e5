// swarm: many seeds of one scenario, each with its own fault mix
// (TigerBeetle's swarm testing), split into shards across machines and
// merged back (docs/dsim.md, "Swarm").
//
//   auto seeds = parse_seed_range("1..1000").value();      // inclusive
//   auto part = parse_shard("2/8").value();                // shard 2 of 8
//   for (auto seed : shard_seeds(seeds, part)) {
//     scenario variant = swarm_variant(s, seed);           // its fault mix
//     run_options o; o.seed = seed;
//     auto r = run_scenario(variant, o);
//   }
//   auto merged = merge_reports({json_of_shard_0, ...});   // = one run's report
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/sim/report.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

// "A..B": seeds A to B, both included, A <= B.
struct seed_range {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
};
result<seed_range> parse_seed_range(std::string_view text);

// "I/N": shard I (from 0) of N, 0 <= I < N, 1 <= N <= shards_max.
struct shard {
  std::size_t index = 0;
  std::size_t count = 1;
};
inline constexpr std::size_t shards_max = 100000;
result<shard> parse_shard(std::string_view text);

// The seeds of `range` that belong to `part`: seed A + k goes to shard
// k mod N, so the N shards' seeds are disjoint and together the range.
std::vector<std::uint64_t> shard_seeds(seed_range range, shard part);

// The scenario as seed `seed` runs it in a swarm: every fault its file
// marks `optional: true` is left out with probability 1/2 and otherwise
// has its probability drawn log-uniformly between a quarter and four
// times the file's (at most 1). A fault an event or `expect.faults` names
// stays as written, and so do the faults the file requires: the
// scenario's expectations hold for them. The same (scenario, seed) gives
// the same variant everywhere.
scenario swarm_variant(const scenario& s, std::uint64_t seed);
// The faults swarm_variant may change: optional ones no event or
// expectation names.
std::size_t swarm_faults(const scenario& s);

// What a swarm report says about the swarm that wrote it, so that merge
// can tell whether its inputs are the shards of one swarm.
struct swarm_meta {
  std::string scenario;
  seed_range seeds;
  shard part;
};
// The --json report of a swarm: its runs, and the swarm (scenario, seeds,
// shard).
std::string swarm_report(const std::vector<run_result>& runs, const swarm_meta& meta);

// Shard reports (faultlane-sim swarm --json) merged into one, its runs in
// (scenario, seed) order: equal, wall-clock fields aside, to the report of
// one swarm over every seed. The inputs must be every shard of one swarm
// (the same scenario, seeds and shard count, each shard once); reports
// without a swarm (faultlane-sim run --json) merge with no such check. An
// error names the input: not a report, a shard of another swarm, a shard
// given twice or missing, a run two inputs both have.
struct named_report {
  std::string name;  // a file name, for errors
  std::string text;
};
struct merged_report {
  std::string text;
  std::size_t runs = 0;
  probe_summary probes;  // the merged runs' code probes, as the report has them
};
result<merged_report> merge_reports(const std::vector<named_report>& reports);

}  // namespace faultlane::sim
