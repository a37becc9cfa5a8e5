// cli: what faultlane-sim's commands share. faultlane_sim.cpp has run,
// check and list and the helpers below; swarm_command.cpp has swarm and
// merge (docs/scenarios.md, docs/dsim.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/net.hpp"
#include "faultlane/sim/runner.hpp"

namespace faultlane::sim::cli {

constexpr int exit_violation = 1;
constexpr int exit_bad_input = 2;

// The dsim build runs every scenario on the simulated world.
constexpr bool on_world = faultlane::net::simulated;

struct run_flags {
  std::vector<std::string> paths;
  std::optional<std::uint64_t> seed;
  std::size_t repeat = 1;
  std::size_t jobs = 1;
  std::string json, junit, timeline;
  bool shrink = false;
  // On the world a candidate fails the same way every time: one run is enough.
  int shrink_runs = on_world ? 1 : 3;
  bool no_record = false;
  // Every transport's lane_inflight_max, whatever its file says.
  std::optional<std::size_t> lane_inflight;
  // On the simulated world (only this program built with the dsim preset
  // can); the world's trace of the shown run to `trace`.
  bool deterministic = false;
  std::string trace;
  bool quiet = false;  // no line per passing run
  // Keep a failing run's history after its line is printed (run prints
  // each failure's text again at the end, and its timeline). A passing
  // run's goes, but for the last run's when a timeline is asked for.
  bool keep_failing_histories = true;
};

struct job {
  const scenario* s = nullptr;
  std::uint64_t seed = 0;
};

struct swarm_flags {
  std::string path;
  std::string seeds;
  std::string shard = "0/1";
  run_flags run;
};

bool write_file(const std::string& path, const std::string& text);
// A file the run will write: false (and why, on stderr) when it cannot be
// opened for writing, so a bad path wastes no run; tried and left as it was.
bool writable_path(const std::string& path);
// A folder the run may write files in (a swarm's failing variants).
bool writable_dir(const std::filesystem::path& dir);
std::vector<run_result> run_jobs(const std::vector<job>& jobs, const run_flags& f);
// The folder a run's files go to: the one of --json, --junit or --timeline.
std::filesystem::path output_dir(const run_flags& f);
// This program's path.
std::string self_program();
// What a command that needs the simulated world says in the real-time build:
// `what` runs there, and the optimized build that has it runs `command`.
std::string world_build_needed(std::string_view what, std::string_view command);
// "PROGRAM run" (with --deterministic on the world): a replay line's start.
std::string replay_prefix();
// Shrinks a failed run to NAME.min.yaml in output_dir; its path, or empty.
std::string shrink_failure(const run_result& r, const scenario& s, const run_flags& f);

int swarm_command(swarm_flags& f);
int merge_command(const std::vector<std::string>& inputs, const std::string& json_out);

}  // namespace faultlane::sim::cli
