// swarm_command: faultlane-sim swarm and merge (cli.hpp; docs/dsim.md,
// "Swarm").
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include "cli.hpp"
#include "faultlane/sim/shrink.hpp"
#include "faultlane/sim/swarm.hpp"

namespace faultlane::sim::cli {

// Many seeds of one scenario, each with its fault mix (swarm_variant);
// each failure written as a file that replays it, and shrunk.
int swarm_command(swarm_flags& f) {
  if (!on_world) {
    std::cerr << "faultlane-sim: swarm runs on the simulated world, which this build does not "
                 "have: cmake --preset dsim && cmake --build build/dsim --target faultlane-sim, "
                 "then build/dsim/sim/faultlane-sim swarm --deterministic ... (docs/dsim.md)\n";
    return exit_bad_input;
  }
  auto range = parse_seed_range(f.seeds);
  if (!range) {
    std::cerr << "faultlane-sim: " << range.error().message << "\n";
    return exit_bad_input;
  }
  auto part = parse_shard(f.shard);
  if (!part) {
    std::cerr << "faultlane-sim: " << part.error().message << "\n";
    return exit_bad_input;
  }
  for (const auto* p : {&f.run.json, &f.run.junit}) {
    if (!p->empty() && !writable_path(*p)) return exit_bad_input;
  }
  auto loaded = load_scenario(f.path);
  if (!loaded) {
    std::cerr << loaded.error().message << "\n";
    return exit_bad_input;
  }
  const auto seeds = shard_seeds(range.value(), part.value());
  std::vector<scenario> variants;
  variants.reserve(seeds.size());
  for (auto seed : seeds) variants.push_back(swarm_variant(loaded.value(), seed));
  std::vector<job> jobs;
  for (std::size_t i = 0; i < seeds.size(); ++i) jobs.push_back({&variants[i], seeds[i]});
  f.run.quiet = true;
  const auto started = std::chrono::steady_clock::now();
  auto results = run_jobs(jobs, f.run);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::size_t failed = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& r = results[i];
    if (r.passed) continue;
    ++failed;
    // The variant, as a file the replay line runs.
    auto variant = variants[i];
    variant.name = fmt::format("{}.seed{}", loaded.value().name, r.seed);
    const auto file = (output_dir(f.run) / (variant.name + ".yaml")).string();
    if (!write_file(file, to_yaml(variant))) return exit_bad_input;
    r.replay = fmt::format("{} {} --seed {}", replay_prefix(), file, r.seed);
    std::cout << fmt::format("FAILED {} seed {}: {}\n  replay: {}\n", loaded.value().name, r.seed,
                             verdict(r), r.replay);
    if (!r.skipped) {
      if (auto shrunk = shrink_failure(r, variant, f.run); !shrunk.empty()) {
        std::cout << "  shrunk: " << shrunk << "\n";
      }
    }
  }
  std::cout << fmt::format(
      "swarm {}: seeds {}..{} shard {}/{}: {} runs, {} passed, {} failed; {:.1f} s wall, {:.0f} "
      "seeds/min\n",
      loaded.value().name, range.value().first, range.value().last, part.value().index,
      part.value().count, results.size(), results.size() - failed, failed, wall,
      wall > 0 ? static_cast<double>(results.size()) * 60 / wall : 0.0);
  if (!f.run.json.empty() && !write_file(f.run.json, to_json(results))) return exit_bad_input;
  if (!f.run.junit.empty() && !write_file(f.run.junit, to_junit(results))) return exit_bad_input;
  return failed == 0 ? 0 : exit_violation;
}

// Shard reports into one (merge_reports). JUnit files need no merge: CI
// tools read a shard's each, side by side.
int merge_command(const std::vector<std::string>& inputs, const std::string& json_out) {
  if (!writable_path(json_out)) return exit_bad_input;
  std::vector<std::string> texts;
  for (const auto& in : inputs) {
    std::ifstream file(in);
    if (!file) {
      std::cerr << "faultlane-sim: cannot read " << in << "\n";
      return exit_bad_input;
    }
    std::stringstream text;
    text << file.rdbuf();
    texts.push_back(text.str());
  }
  auto merged = merge_reports(texts);
  if (!merged) {
    std::cerr << "faultlane-sim: merge: " << merged.error().message << "\n";
    return exit_bad_input;
  }
  return write_file(json_out, merged.value()) ? 0 : exit_bad_input;
}

}  // namespace faultlane::sim::cli
