// swarm_command: faultlane-sim swarm and merge (cli.hpp; docs/dsim.md,
// "Swarm").
#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "cli.hpp"
#include "faultlane/sim/shrink.hpp"
#include "faultlane/sim/swarm.hpp"

namespace faultlane::sim::cli {

namespace {

// Each variant is named for the file a failure writes it to, so that every
// replay line, the ones printed while it runs included, runs it.
std::vector<scenario> swarm_variants(const scenario& original,
                                     const std::vector<std::uint64_t>& seeds,
                                     const std::filesystem::path& dir) {
  std::vector<scenario> variants;
  variants.reserve(seeds.size());
  for (auto seed : seeds) {
    variants.push_back(swarm_variant(original, seed));
    variants.back().file = (dir / fmt::format("{}.seed{}.yaml", original.name, seed)).string();
  }
  return variants;
}

// Writes each failing seed's variant and shrinks it; a pass's replay line
// is the swarm of its one seed. The count of failures; nullopt when a
// variant could not be written.
std::optional<std::size_t> report_failures(std::vector<run_result>& results,
                                           const std::vector<scenario>& variants,
                                           const scenario& original, const swarm_flags& f) {
  std::size_t failed = 0;
  for (std::size_t i = 0; i < results.size(); ++i) {
    auto& r = results[i];
    if (r.passed) {
      // No file for a pass: the swarm itself replays its seed.
      r.replay = fmt::format("{} swarm --deterministic {} --seeds {}..{}", self_program(), f.path,
                             r.seed, r.seed);
      continue;
    }
    ++failed;
    auto variant = variants[i];
    variant.name = fmt::format("{}.seed{}", original.name, r.seed);
    if (!write_file(variant.file, to_yaml(variant))) return std::nullopt;
    std::cout << fmt::format("FAILED {} seed {}: {}\n  replay: {}\n", original.name, r.seed,
                             verdict(r), r.replay);
    if (!r.skipped) {
      if (auto shrunk = shrink_failure(r, variant, f.run); !shrunk.empty()) {
        std::cout << "  shrunk: " << shrunk << "\n";
      }
    }
  }
  return failed;
}

}  // namespace

// Many seeds of one scenario, each with its fault mix (swarm_variant);
// each failure written as a file that replays it, and shrunk.
int swarm_command(swarm_flags& f) {
  if (!on_world) {
    std::cerr << world_build_needed("swarm", "swarm --deterministic");
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
  const auto dir = output_dir(f.run);  // where a failing seed's variant goes
  if (!writable_dir(dir)) return exit_bad_input;
  auto loaded = load_scenario(f.path);
  if (!loaded) {
    std::cerr << loaded.error().message << "\n";
    return exit_bad_input;
  }
  const auto& original = loaded.value();
  if (swarm_faults(original) == 0) {
    std::cout << fmt::format(
        "note: {} marks no fault optional (or names each in an event or expectation): every "
        "seed runs its faults as written, only the seed differs\n",
        f.path);
  }
  const auto seeds = shard_seeds(range.value(), part.value());
  if (seeds.empty()) {
    std::cout << fmt::format("note: shard {} of seeds {} has no seed\n", f.shard, f.seeds);
  }
  auto variants = swarm_variants(original, seeds, dir);
  std::vector<job> jobs;
  for (std::size_t i = 0; i < seeds.size(); ++i) jobs.push_back({&variants[i], seeds[i]});
  f.run.quiet = true;
  // Each failure's text is printed as it ends; JUnit writes it again at
  // the end, from the run's history.
  f.run.keep_failing_histories = !f.run.junit.empty();
  const auto started = std::chrono::steady_clock::now();
  auto results = run_jobs(jobs, f.run);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const auto failed = report_failures(results, variants, original, f);
  if (!failed) return exit_bad_input;
  const double per_minute = wall > 0 ? static_cast<double>(results.size()) * 60 / wall : 0.0;
  std::cout << fmt::format(
      "swarm {}: seeds {}..{} shard {}/{}: {} runs, {} passed, {} failed; {:.1f} s wall, {:.0f} "
      "seeds/min\n",
      original.name, range.value().first, range.value().last, part.value().index,
      part.value().count, results.size(), results.size() - *failed, *failed, wall, per_minute);
  std::cout << probes_text(summarize_probes(results));
  const swarm_meta meta{original.name, range.value(), part.value()};
  if (!f.run.json.empty() && !write_file(f.run.json, swarm_report(results, meta))) {
    return exit_bad_input;
  }
  if (!f.run.junit.empty() && !write_file(f.run.junit, to_junit(results))) return exit_bad_input;
  return *failed == 0 ? 0 : exit_violation;
}

// Shard reports into one (merge_reports). JUnit files need no merge: CI
// tools read a shard's each, side by side.
int merge_command(const std::vector<std::string>& inputs, const std::string& json_out) {
  if (!writable_path(json_out)) return exit_bad_input;
  std::vector<named_report> reports;
  for (const auto& in : inputs) {
    std::ifstream file(in);
    if (!file) {
      std::cerr << "faultlane-sim: cannot read " << in << "\n";
      return exit_bad_input;
    }
    std::stringstream text;
    text << file.rdbuf();
    reports.push_back({in, text.str()});
  }
  auto merged = merge_reports(reports);
  if (!merged) {
    std::cerr << "faultlane-sim: merge: " << merged.error().message << "\n";
    return exit_bad_input;
  }
  if (!write_file(json_out, merged.value().text)) return exit_bad_input;
  std::cout << fmt::format("merged {} runs from {} reports into {}\n", merged.value().runs,
                           reports.size(), json_out);
  std::cout << probes_text(merged.value().probes);
  return 0;
}

}  // namespace faultlane::sim::cli
