// faultlane-sim: runs, checks and lists scenario files (docs/scenarios.md).
//
//   faultlane-sim run PATH... [--seed S] [--repeat N] [--jobs J] [--json F]
//                     [--junit F] [--timeline F.html] [--shrink] [--shrink-runs K]
//                     [--deterministic] [--trace F]
//   faultlane-sim swarm FILE --seeds A..B [--shard I/N] [--jobs J] [--json F]
//                     [--junit F] [--deterministic]
//   faultlane-sim merge REPORT.json... --json F
//   faultlane-sim check PATH...
//   faultlane-sim list [PATH...]
//
// Exit status: 0 every run passed, 1 a violation (or a run error), 2 bad
// input (a flag, a file that does not load).
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "cli.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/sim/runner.hpp"
#include "faultlane/sim/shrink.hpp"

namespace fs = std::filesystem;
using namespace faultlane::sim;

namespace faultlane::sim::cli {
namespace {

// Prints progress: one rewritten line on a terminal, plain lines otherwise.
class progress_printer {
 public:
  // quiet: a passing run gets no line of its own (a swarm's thousands).
  progress_printer(std::size_t total, bool quiet)
      : total_(total), tty_(isatty(2) != 0), quiet_(quiet) {}
  void update(std::size_t k, const progress& p) {
    if (!tty_) return;
    std::lock_guard lock(mutex_);
    std::cerr << fmt::format("\r\033[K[{}/{}] {} {} ops {}/{} faults {} {:.1f}s", k, total_,
                             p.scenario, p.phase, p.ops_done, p.ops_total, p.faults_fired,
                             p.elapsed_s)
              << std::flush;
  }
  void done(std::size_t k, const run_result& r) {
    std::lock_guard lock(mutex_);
    if (tty_) std::cerr << "\r\033[K";
    if (quiet_ && r.passed) return;
    auto verdict = r.skipped ? "SKIP" : r.passed ? "PASS" : r.error.empty() ? "FAIL" : "ERROR";
    std::cerr << fmt::format("[{}/{}] {} seed {}: {} ({:.1f}s)\n", k, total_, r.scenario, r.seed,
                             verdict, r.seconds);
    if (!r.passed) std::cerr << failure_text(r) << "\n";
  }

 private:
  const std::size_t total_;
  const bool tty_;
  const bool quiet_;
  std::mutex mutex_;
};

}  // namespace

std::string self_program() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) std::cerr << "faultlane-sim: cannot write " << path << "\n";
  return static_cast<bool>(out);
}

// Events of the world's trace kept for --trace.
constexpr std::size_t trace_events_max = 1u << 20;

bool writable_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::cerr << "faultlane-sim: cannot write " << path << ": it is a directory\n";
    return false;
  }
  // Opened for appending, as the run will write it, then left as it was: a
  // file that did not exist is removed again.
  const bool existed = fs::exists(path, ec);
  const bool opened = static_cast<bool>(std::ofstream(path, std::ios::app));
  if (opened && !existed) fs::remove(path, ec);
  if (!opened) {
    std::cerr << "faultlane-sim: cannot write " << path << ": " << std::strerror(errno) << "\n";
  }
  return opened;
}

bool writable_dir(const fs::path& dir) {
  if (::access(dir.c_str(), W_OK) == 0) return true;
  std::cerr << "faultlane-sim: cannot write files in " << dir.string() << ": "
            << std::strerror(errno) << "\n";
  return false;
}

std::vector<run_result> run_jobs(const std::vector<job>& jobs, const run_flags& f) {
  std::vector<run_result> results(jobs.size());
  progress_printer printer(jobs.size(), f.quiet);
  std::atomic<std::size_t> next{0};
  // Failpoints are process-wide, and a timing scenario measures latency:
  // either runs alone.
  auto worker = [&](bool alone_jobs) {
    for (std::size_t i; (i = next.fetch_add(1)) < jobs.size();) {
      if (jobs[i].s->runs_alone() != alone_jobs) continue;
      run_options o;
      o.seed = jobs[i].seed;
      o.child_program = self_program();
      o.record = !f.no_record;
      o.replay_command = self_program() + " run";
      if (on_world) o.replay_command += " --deterministic";
      if (!f.trace.empty()) o.trace_events = trace_events_max;
      if (f.lane_inflight) o.replay_command += fmt::format(" --lane-inflight {}", *f.lane_inflight);
      o.on_progress = [&, i](const progress& p) { printer.update(i + 1, p); };
      results[i] = run_scenario(*jobs[i].s, o);
      printer.done(i + 1, results[i]);
      // A history is tens of MiB: a swarm of hundreds of seeds kept every
      // one until a 200-seed swarm ran out of memory.
      const bool keep = results[i].passed ? !f.timeline.empty() && i + 1 == jobs.size()
                                          : f.keep_failing_histories;
      if (!keep) results[i].hist.reset();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < std::max<std::size_t>(1, f.jobs); ++t)
    threads.emplace_back(worker, false);
  for (auto& t : threads) t.join();
  next = 0;
  worker(true);
  return results;
}

fs::path output_dir(const run_flags& f) {
  fs::path dir = ".";
  for (const auto* p : {&f.json, &f.junit, &f.timeline}) {
    if (!p->empty()) dir = fs::path(*p).parent_path().empty() ? "." : fs::path(*p).parent_path();
  }
  return dir;
}

std::string replay_prefix() {
  return self_program() + (on_world ? " run --deterministic" : " run");
}

std::string shrink_failure(const run_result& r, const scenario& s, const run_flags& f) {
  shrink_options o;
  o.checker = first_failing_checker(r);
  if (o.checker.empty()) return {};
  for (const auto& c : r.checkers) {
    if (c.name == o.checker) o.evidence = c.violations.front().evidence;
  }
  o.runs_per_candidate = f.shrink_runs;
  o.run.seed = r.seed;
  o.run.child_program = self_program();
  o.log = [](const std::string& line) { std::cerr << "  shrink: " << line << "\n"; };
  std::cerr << fmt::format("shrinking {} (checker {}, {} run(s) per candidate)\n", s.name,
                           o.checker, o.runs_per_candidate);
  auto out = shrink(s, o);
  auto path = (output_dir(f) / (s.name + ".min.yaml")).string();
  if (!write_file(path, to_yaml(out.minimal))) return {};
  std::cerr << fmt::format("shrunk in {} runs to {} ({}); replay: {} {} --seed {}\n",
                           out.candidates_run, path,
                           out.confirmed ? "still fails" : "did NOT fail again: nondeterministic",
                           replay_prefix(), path, r.seed);
  return path;
}

std::string world_build_needed(std::string_view what, std::string_view command) {
  return fmt::format(
      "faultlane-sim: {} runs on the simulated world, which this build does not have; the "
      "optimized build that does: cmake --preset dsim-release && cmake --build "
      "build/dsim-release --target faultlane-sim, then build/dsim-release/sim/faultlane-sim {} "
      "... (docs/dsim.md)\n",
      what, command);
}

}  // namespace faultlane::sim::cli

namespace {

using namespace faultlane::sim::cli;

// Files named on the command line; a directory stands for its *.yaml files
// (NAME.min.yaml, the shrinker's output, excluded), sorted.
std::vector<std::string> expand(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (!fs::is_directory(p)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> dir;
    for (const auto& e : fs::directory_iterator(p)) {
      const auto name = e.path().filename().string();
      if (e.path().extension() == ".yaml" && !name.ends_with(".min.yaml")) {
        dir.push_back(e.path().string());
      }
    }
    std::sort(dir.begin(), dir.end());
    out.insert(out.end(), dir.begin(), dir.end());
  }
  return out;
}

bool load_all(const std::vector<std::string>& files, std::vector<scenario>& out) {
  if (files.empty()) {
    std::cerr << "faultlane-sim: no scenario files (a directory stands for its *.yaml files)\n";
    return false;
  }
  bool ok = true;
  for (const auto& f : files) {
    auto s = load_scenario(f);
    if (!s) {
      std::cerr << s.error().message << "\n";
      ok = false;
      continue;
    }
    out.push_back(std::move(s.value()));
  }
  return ok;
}

int run_command(const run_flags& f) {
  if ((f.deterministic || !f.trace.empty()) && !on_world) {
    std::cerr << world_build_needed(f.deterministic ? "--deterministic" : "--trace (its trace)",
                                    "run --deterministic");
    return exit_bad_input;
  }
  for (const auto* p : {&f.json, &f.junit, &f.timeline, &f.trace}) {
    if (!p->empty() && !writable_path(*p)) return exit_bad_input;
  }
  std::vector<scenario> scenarios;
  if (!load_all(expand(f.paths), scenarios)) return exit_bad_input;
  for (auto& s : scenarios) {
    for (auto& t : s.transports) {
      if (f.lane_inflight) t.config.lane_inflight_max = *f.lane_inflight;
    }
  }
  std::vector<job> jobs;
  std::random_device entropy;
  for (const auto& s : scenarios) {
    for (std::size_t k = 0; k < f.repeat; ++k) {
      std::uint64_t seed = f.seed         ? *f.seed + k
                           : f.repeat > 1 ? (std::uint64_t{entropy()} << 32 | entropy())
                                          : s.seed;
      jobs.push_back({&s, seed});
    }
  }
  auto results = run_jobs(jobs, f);
  if (auto callers = callers_text(results); !callers.empty()) {
    std::cout << "control-plane callers (latency over every call):\n" << callers << "\n";
  }
  std::cout << summary_table(results);
  std::cout << deterministic_text(results);
  std::cout << probes_text(summarize_probes(results));
  if (!results.empty() &&
      std::all_of(results.begin(), results.end(), [](const run_result& r) { return r.skipped; })) {
    std::cout << "every run skipped\n";
  }
  bool ok = true;
  const run_result* shown = results.empty() ? nullptr : &results.back();
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].passed) continue;
    if (ok) shown = &results[i];
    ok = false;
    std::cout << "\nFAILED " << results[i].scenario << " seed " << results[i].seed << "\n"
              << failure_text(results[i]) << "\n";
  }
  if (!f.json.empty() && !write_file(f.json, to_json(results))) return exit_bad_input;
  if (!f.junit.empty() && !write_file(f.junit, to_junit(results))) return exit_bad_input;
  if (!f.trace.empty() && shown) {
    if (!write_file(f.trace, shown->trace)) return exit_bad_input;
    std::cout << "trace: " << f.trace << " (" << shown->scenario << " seed " << shown->seed
              << ")\n";
  }
  if (!f.timeline.empty() && shown && shown->hist) {
    if (!write_file(f.timeline, timeline_html(*shown))) return exit_bad_input;
    std::cout << "timeline: " << f.timeline << " (" << shown->scenario << " seed " << shown->seed
              << ")\n";
  }
  if (f.shrink) {
    for (std::size_t i = 0; i < results.size(); ++i) {
      if (!results[i].passed && !results[i].skipped) shrink_failure(results[i], *jobs[i].s, f);
    }
  }
  return ok ? 0 : exit_violation;
}

int check_command(const std::vector<std::string>& paths) {
  std::vector<scenario> scenarios;
  auto files = expand(paths);
  bool ok = load_all(files, scenarios);
  for (const auto& s : scenarios) std::cout << "ok  " << s.file << "\n";
  return ok ? 0 : exit_bad_input;
}

int list_command(const std::vector<std::string>& paths) {
  std::vector<scenario> scenarios;
  bool ok = load_all(expand(paths), scenarios);
  for (const auto& s : scenarios) {
    std::string tags;
    for (const auto& t : s.tags) tags += (tags.empty() ? "" : ",") + t;
    auto first_line = s.summary.substr(0, s.summary.find('\n'));
    std::cout << fmt::format("{:<34} {:<28} {}\n", s.name, "[" + tags + "]", first_line);
  }
  return ok ? 0 : exit_bad_input;
}

}  // namespace

namespace {

// Runs one after another in this process allocate the same large buffers
// (regions of MiBs, every READ's bytes, the taps' records) and free them.
// By default glibc hands such memory back to the kernel (a block over 128
// KiB is its own mapping; a freed heap top over 128 KiB is trimmed), and
// the next run faults every page of it in again: on a VM, where a page
// fault is dear, a swarm of swarm.yaml spent 40% of its CPU time there.
// Kept in the process, the next run reuses it: twice the seeds per minute
// (docs/benchmarks.md, "Seeds per minute"). The sanitizers' allocators
// ignore mallopt.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest: a bigger block is still mapped
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
#endif
}

}  // namespace

int main(int argc, char** argv) {
  signal(SIGPIPE, SIG_IGN);  // a peer that hangs up is an error, not an exit
  keep_freed_memory();
  if (argc == 2 && std::string_view(argv[1]) == "child") return run_child_process();
  CLI::App app{"faultlane-sim: YAML fault scenarios against the faultlane core"};
  app.require_subcommand(1);
  run_flags f;
  auto* run = app.add_subcommand("run", "run scenario files (or directories of them)");
  run->add_option("paths", f.paths, "scenario files or directories")->required();
  run->add_option("--seed", f.seed, "the seed (default: each file's seed:)")
      ->check(CLI::NonNegativeNumber);  // "-1" would otherwise wrap to 2^64 - 1
  run->add_option("--repeat", f.repeat, "runs per scenario; without --seed, fresh seeds")
      ->check(CLI::Range(1, 100000));
  run->add_option("--jobs", f.jobs, "scenarios run at once (default 1)")->check(CLI::Range(1, 64));
  run->add_option("--json", f.json, "write results as JSON");
  run->add_option("--junit", f.junit, "write results as JUnit XML");
  run->add_option("--timeline", f.timeline, "write the first failing (or last) run as HTML");
  run->add_flag("--shrink", f.shrink, "shrink each failing scenario to NAME.min.yaml");
  run->add_option("--shrink-runs", f.shrink_runs,
                  on_world ? "runs per shrink candidate (default 1: one seed, one run)"
                           : "runs per shrink candidate (default 3)")
      ->check(CLI::Range(1, 100));
  run->add_flag("--no-record", f.no_record, "no observer, taps or checkers (speed baseline)");
  run->add_option("--lane-inflight", f.lane_inflight,
                  "every transport's lane_inflight_max, whatever the file says")
      ->check(CLI::Range(std::size_t{1}, faultlane::limits::lane_inflight_max));
  run->add_flag("--deterministic", f.deterministic,
                "on the simulated network and clock: one seed, one identical run (the dsim "
                "build; docs/dsim.md)");
  run->add_option("--trace", f.trace, "write the simulated world's trace of the shown run");
  swarm_flags sw;
  auto* swarm_cmd = app.add_subcommand(
      "swarm", "many seeds of one scenario, each with its own mix of the file's optional faults");
  swarm_cmd->add_option("path", sw.path, "the scenario file")->required();
  swarm_cmd->add_option("--seeds", sw.seeds, "seeds A..B, both included")->required();
  swarm_cmd->add_option("--shard", sw.shard, "run shard I (from 0) of N: seeds A+I, A+I+N, ...");
  swarm_cmd->add_option("--jobs", sw.run.jobs, "runs at once (default 1)")
      ->check(CLI::Range(1, 64));
  swarm_cmd->add_option("--json", sw.run.json, "write every run as JSON");
  swarm_cmd->add_option("--junit", sw.run.junit, "write every run as JUnit XML");
  swarm_cmd->add_flag("--deterministic", sw.run.deterministic,
                      "on the simulated world (the only way a swarm runs; the dsim build)");
  std::vector<std::string> merge_inputs;
  std::string merge_json;
  auto* merge_cmd =
      app.add_subcommand("merge", "merge shard reports (--json) into the report of one run");
  merge_cmd->add_option("reports", merge_inputs, "the shards' --json reports")->required();
  merge_cmd->add_option("--json", merge_json, "write the merged report here")->required();
  std::vector<std::string> check_paths;
  auto* check = app.add_subcommand("check", "validate scenario files without running them");
  check->add_option("paths", check_paths, "scenario files or directories")->required();
  // The library of this source tree when run from elsewhere.
  std::vector<std::string> list_paths{fs::exists("sim/scenarios") ? "sim/scenarios"
                                                                  : FAULTLANE_SCENARIO_DIR};
  auto* list = app.add_subcommand("list", "list scenarios with their tags and summaries");
  list->add_option("paths", list_paths, "files or directories (default: the library)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    std::cerr << "faultlane-sim: " << e.what() << " (see --help)\n";
    return exit_bad_input;
  }
  if (*run) return run_command(f);
  if (*swarm_cmd) return swarm_command(sw);
  if (*merge_cmd) return merge_command(merge_inputs, merge_json);
  if (*check) return check_command(check_paths);
  return list_command(list_paths);
}
