// Command-line parsing for faultlane-bench.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "bench.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/relays/limits.hpp"

namespace faultlane::bench {
namespace {

std::optional<std::uint64_t> parse_size(std::string_view text) {
  if (text.empty()) return std::nullopt;
  std::uint64_t scale = 1;
  char last = text.back();
  if (last == 'K' || last == 'k') scale = 1ull << 10;
  if (last == 'M' || last == 'm') scale = 1ull << 20;
  if (last == 'G' || last == 'g') scale = 1ull << 30;
  if (scale != 1) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  std::uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (value > (UINT64_MAX - 9) / 10) return std::nullopt;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (value > UINT64_MAX / scale) return std::nullopt;
  return value * scale;
}

}  // namespace

const char* to_string(operation op) {
  switch (op) {
    case operation::read: return "read";
    case operation::write: return "write";
    case operation::mix: return "mix";
  }
  return "?";
}

const char* to_string(raw_wait wait) { return wait == raw_wait::ready ? "ready" : "block"; }

namespace {

// Bounds of the benchmark's own (not the core's) flags.
constexpr std::uint64_t batch_max = limits::outstanding_tasks_default;
constexpr std::uint64_t threads_max = 64;
constexpr std::uint64_t rounds_max = 1000;
constexpr double seconds_max = 3600;
constexpr std::uint64_t region_bytes_max = 8ull << 30;
// Without --batch: 32 operations, or as many blocks as fit in this many
// bytes when they do not, so a default run of any block size completes many
// batches in a round (32 x 64 MiB, 2 GiB a batch, once measured nothing).
constexpr std::uint64_t batch_bytes_default = 64ull << 20;
constexpr std::size_t batch_default = 32;

std::string batch_help() {
  return fmt::format(
      "operations submitted together (default {}, or as many blocks as fit in {} MiB when "
      "fewer do)",
      batch_default, batch_bytes_default >> 20);
}

std::size_t default_batch(std::uint64_t block_bytes) {
  return static_cast<std::size_t>(
      std::clamp<std::uint64_t>(batch_bytes_default / block_bytes, 1, batch_default));
}

// A CLI11 option taking a count with K/M/G suffixes (powers of 1024),
// checked against [low, high] with the range in the error.
template <typename T>
CLI::Option* count(CLI::App& app, const std::string& name, T& into, std::uint64_t low,
                   std::uint64_t high, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&into, name, low, high](const std::string& text) {
            auto v = parse_size(text);
            if (!v || *v < low || *v > high) {
              throw CLI::ValidationError(
                  name, fmt::format("'{}' is not a whole number from {} to {}", text, low, high));
            }
            into = static_cast<T>(*v);
          },
          help)
      ->type_name("N");
}

CLI::Option* seconds(CLI::App& app, const std::string& name, double& into,
                     const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&into, name](const std::string& text) {
            char* end = nullptr;
            double v = std::strtod(text.c_str(), &end);
            if (end == text.c_str() || *end != '\0' || !(v > 0) || v > seconds_max) {
              throw CLI::ValidationError(
                  name, fmt::format("'{}' is not a number of seconds above 0 and up to {}", text,
                                    seconds_max));
            }
            into = v;
          },
          help)
      ->type_name("S");
}

// A comma-separated list of counts (K/M/G allowed), each in [low, high],
// none twice.
CLI::Option* count_list(CLI::App& app, const std::string& name, std::vector<std::uint64_t>& into,
                        std::uint64_t low, std::uint64_t high, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name,
          [&into, name, low, high](const std::string& text) {
            into.clear();
            std::string_view rest = text;
            while (true) {
              const auto comma = rest.find(',');
              const auto item = rest.substr(0, comma);
              auto v = parse_size(item);
              if (!v || *v < low || *v > high) {
                throw CLI::ValidationError(
                    name, fmt::format("'{}' in '{}' is not a whole number from {} to {}", item,
                                      text, low, high));
              }
              if (std::find(into.begin(), into.end(), *v) != into.end()) {
                throw CLI::ValidationError(name, fmt::format("'{}' lists {} twice", text, item));
              }
              into.push_back(*v);
              if (comma == std::string_view::npos) break;
              rest.remove_prefix(comma + 1);
            }
          },
          help)
      ->type_name("LIST");
}

CLI::Option* define_sweep(CLI::App& app, options& o) {
  auto* sweep = app.add_flag("--sweep", o.sweep,
                             "run every point of a grid (the --sweep-* lists), each against its "
                             "baseline; one JSON, and an SVG plot with --svg");
  count_list(app, "--sweep-workers", o.sweep_workers, limits::worker_count_min,
             limits::worker_count_max, "io threads per point (default 1,2,4,.. up to the cores)")
      ->needs(sweep);
  count_list(app, "--sweep-lanes", o.sweep_lanes, 1, limits::lane_count_max,
             "connections per peer (default 1,4)")
      ->needs(sweep);
  count_list(app, "--sweep-rails", o.sweep_rails, 1, limits::rail_count_max,
             "rails; points with more rails than lanes are skipped (default 1)")
      ->needs(sweep);
  count_list(app, "--sweep-block-sizes", o.sweep_blocks, 1, limits::transfer_bytes_default,
             "bytes per operation (default 4K,64K,1M)")
      ->needs(sweep);
  app.add_option("--svg", o.svg_path, "with --sweep: plot throughput and p99 over the grid")
      ->needs(sweep);
  return sweep;
}

// The cores this process may run on (taskset, cgroup cpusets), not the
// machine's.
std::uint64_t usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return static_cast<std::uint64_t>(CPU_COUNT(&set));
  return std::thread::hardware_concurrency();
}

// The grid a --sweep runs when a list is not given: io threads doubling up
// to the machine's cores, so the same command shows how far the pool scales
// wherever it runs.
void default_sweep(options& o) {
  if (o.sweep_workers.empty()) {
    const std::uint64_t cores =
        std::clamp<std::uint64_t>(usable_cores(), 1, limits::worker_count_max);
    for (std::uint64_t w = 1; w < cores; w *= 2) o.sweep_workers.push_back(w);
    o.sweep_workers.push_back(cores);
  }
  if (o.sweep_lanes.empty()) o.sweep_lanes = {1, 4};
  if (o.sweep_rails.empty()) o.sweep_rails = {1};
  if (o.sweep_blocks.empty()) o.sweep_blocks = {4u << 10, 64u << 10, 1u << 20};
}

// The two-process modes and the control-plane runs, none of which goes
// with --via-relay or --sweep.
void define_other_modes(CLI::App& app, options& o, CLI::Option* relay, CLI::Option* sweep) {
  auto* mode = app.add_option_function<std::string>(
                      "--mode",
                      [&o](const std::string& v) {
                        o.mode = v == "target"      ? run_mode::target
                                 : v == "initiator" ? run_mode::initiator
                                                    : run_mode::loopback;
                      },
                      "loopback (default), target, or initiator")
                   ->check(CLI::IsMember({"loopback", "target", "initiator"}));
  app.add_option("--listen", o.listen, "target mode address (default 127.0.0.1:0)");
  app.add_option("--peer", o.peer, "initiator mode: the target's HOST:PORT");
  count(app, "--registration", o.peer_registration, 1, UINT64_MAX,
        "initiator mode: the target's registration id");
  count(app, "--incarnation", o.peer_incarnation, 1, UINT64_MAX,
        "initiator mode: the target's incarnation");
  auto* rpc = app.add_flag("--rpc", o.rpc,
                           "control plane: a pooled method against the same method inline and "
                           "the inline ping (--threads clients, --workers io threads)");
  auto* saturate = count(app, "--rpc-saturate", o.rpc_keys, 1, 10'000'000,
                         "control plane: ping every 20 ms while 4 clients scan N registrations "
                         "and 2 call describe; pooled, then inline");
  count(app, "--rpc-workers", o.rpc_workers, 0, 256,
        "the pool's threads for --rpc-saturate (default 0: as many as io threads)");
  rpc->excludes(saturate);
  for (auto* other : {mode, rpc, saturate}) {
    relay->excludes(other);
    sweep->excludes(other);
  }
}

void define(CLI::App& app, options& o) {
  app.set_version_flag("--version", std::string("faultlane-bench ") + FAULTLANE_VERSION);
  app.add_option_function<std::string>(
         "--op",
         [&o](const std::string& v) {
           o.op = v == "write" ? operation::write : v == "mix" ? operation::mix : operation::read;
         },
         "read, write, or mix (alternating); default read")
      ->check(CLI::IsMember({"read", "write", "mix"}));
  auto* block = count(app, "--block-size", o.block_bytes, 1, limits::transfer_bytes_default,
                      "bytes per operation, with K, M or G (default 64K)");
  count(app, "--batch", o.batch, 1, batch_max, batch_help());
  count(app, "--threads", o.threads, 1, threads_max, "submitting threads (default 1)");
  auto* workers = count(app, "--workers", o.workers, limits::worker_count_min,
                        limits::worker_count_max, "faultlane io threads (default 1)");
  auto* lanes = count(app, "--lanes", o.lanes, 1, limits::lane_count_max,
                      "connections per peer; the baseline uses as many (default 1)");
  count(app, "--lane-inflight", o.lane_inflight, 1, limits::lane_inflight_max,
        fmt::format("exchanges in flight per lane; the baseline keeps no more per connection "
                    "(default {})",
                    limits::lane_inflight_default));
  auto* rails = count(app, "--rails", o.rails, 1, limits::rail_count_max,
                      "rails 127.0.0.1..127.0.0.N on loopback (default 1)");
  count(app, "--busy-poll-us", o.busy_poll_us, 0, limits::busy_poll_us_max,
        "io threads poll N us before blocking (default 0)");
  count(app, "--progress-timeout-ms", o.progress_timeout_ms, 1, limits::timeout_ms_max,
        "a started request that moves no byte for this long fails (default: the core's)");
  seconds(app, "--duration", o.duration_s,
          "seconds measured for each side, over all rounds (default 5)");
  app.add_option_function<std::string>(
         "--warmup",
         [&o](const std::string& text) {
           char* end = nullptr;
           double v = std::strtod(text.c_str(), &end);
           if (end == text.c_str() || *end != '\0' || !(v >= 0) || v > seconds_max) {
             throw CLI::ValidationError(
                 "--warmup", fmt::format("'{}' is not 0 to {} seconds", text, seconds_max));
           }
           o.warmup_s = v;
         },
         "seconds run before measuring, each round (default 0.2)")
      ->type_name("S");
  count(app, "--rounds", o.rounds, 1, rounds_max,
        "faultlane and the baseline alternate N times; the output gives the spread of "
        "the rounds' ratios (default 5)");
  app.add_flag("--verify", o.verify, "check every byte moved, on both sides");
  auto* alone = app.add_flag("--no-baseline", o.skip_baseline,
                             "measure faultlane only (ratios are null in the JSON)");
  auto* wait = app.add_option_function<std::string>(
                      "--raw-wait",
                      [&o](const std::string& v) {
                        o.baseline_wait = v == "ready" ? raw_wait::ready : raw_wait::block;
                        o.baseline_wait_given = true;
                      },
                      "every baseline receive below 1 MiB, at both ends: block in recv, or "
                      "ready: wait in poll(2), then a recv that cannot block, as an event "
                      "loop does (default block); also refused with --mode target|initiator, "
                      "--rpc and --rpc-saturate")
                   ->check(CLI::IsMember({"block", "ready"}));
  wait->excludes(alone);
  auto* relay = app.add_flag("--via-relay", o.via_relay,
                             "faultlane through a pass-through relay, against faultlane direct");
  count(app, "--relay-busy-poll-us", o.relay_busy_poll_us, 0, relays::busy_poll_us_max,
        "the relay's thread polls N us before blocking (default 0)")
      ->needs(relay);
  app.add_option("--json", o.json_path, "write the results as JSON");
  auto* sweep = define_sweep(app, o);
  for (auto* single : {block, workers, lanes, rails, relay}) sweep->excludes(single);
  wait->excludes(relay);
  define_other_modes(app, o, relay, sweep);
}

std::optional<std::string> check_sweep(const options& o) {
  const auto most = [](const std::vector<std::uint64_t>& v) {
    return *std::max_element(v.begin(), v.end());
  };
  const auto least = [](const std::vector<std::uint64_t>& v) {
    return *std::min_element(v.begin(), v.end());
  };
  if (least(o.sweep_rails) > most(o.sweep_lanes)) {
    return "--sweep: every point has more rails than lanes (each rail needs a lane)";
  }
  if (o.threads * o.batch * most(o.sweep_blocks) > region_bytes_max) {
    return "threads x batch x the largest sweep block size must stay under 8 GiB";
  }
  return std::nullopt;
}

std::optional<std::string> check_combination(const options& o) {
  if (o.baseline_wait_given && (o.mode != run_mode::loopback || o.rpc || o.rpc_keys > 0)) {
    return "--raw-wait applies to the raw-TCP baseline of a loopback transfer run, not to "
           "--mode target|initiator, --rpc or --rpc-saturate";
  }
  if (o.sweep) return check_sweep(o);
  if (o.rails > o.lanes) return "--rails must not exceed --lanes (each rail needs a lane)";
  if (o.mode == run_mode::initiator &&
      (o.peer.empty() || o.peer_registration == 0 || o.peer_incarnation == 0)) {
    return "--mode initiator needs --peer, --registration and --incarnation";
  }
  if (region_bytes(o) > region_bytes_max)
    return "threads x batch x block-size must stay under 8 GiB";
  return std::nullopt;
}

}  // namespace

std::optional<options> parse_options(int argc, char** argv) {
  CLI::App app{
      "faultlane-bench: the transfer core against raw TCP in the same run "
      "(docs/benchmarks.md)"};
  options o;
  define(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    std::fprintf(stderr, "faultlane-bench: unknown flag or argument: %s (see --help)\n",
                 fmt::format("{}", fmt::join(app.remaining(), " ")).c_str());
    return std::nullopt;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) std::exit(app.exit(e));  // --help, --version
    std::fprintf(stderr, "faultlane-bench: %s (see --help)\n", e.what());
    return std::nullopt;
  }
  if (o.sweep) default_sweep(o);
  if (app.get_option("--batch")->count() == 0) {
    o.batch = default_batch(o.sweep ? *std::max_element(o.sweep_blocks.begin(),
                                                        o.sweep_blocks.end())
                                    : o.block_bytes);
  }
  if (auto wrong = check_combination(o)) {
    std::fprintf(stderr, "faultlane-bench: %s\n", wrong->c_str());
    return std::nullopt;
  }
  return o;
}

std::string describe(const options& o) {
  return fmt::format(
      "op={} block={} batch={} threads={} workers={} lanes={} inflight={} rails={} duration={}s "
      "rounds={}{}",
      to_string(o.op), o.block_bytes, o.batch, o.threads, o.workers, o.lanes, o.lane_inflight,
      o.rails, o.duration_s, o.rounds, o.baseline_wait == raw_wait::ready ? " raw-wait=ready" : "");
}

}  // namespace faultlane::bench
