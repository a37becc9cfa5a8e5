// Command-line parsing for faultlane-bench.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "bench.hpp"
#include "faultlane/core/limits.hpp"

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

namespace {

// Bounds of the benchmark's own (not the core's) flags.
constexpr std::uint64_t batch_max = limits::outstanding_tasks_default;
constexpr std::uint64_t threads_max = 64;
constexpr std::uint64_t rounds_max = 1000;
constexpr double seconds_max = 3600;
constexpr std::uint64_t region_bytes_max = 8ull << 30;

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

// The two-process modes and the control-plane runs, none of which goes
// with --via-relay.
void define_other_modes(CLI::App& app, options& o, CLI::Option* relay) {
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
  relay->excludes(mode);
  relay->excludes(rpc);
  relay->excludes(saturate);
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
  count(app, "--block-size", o.block_bytes, 1, limits::transfer_bytes_default,
        "bytes per operation, with K, M or G (default 64K)");
  count(app, "--batch", o.batch, 1, batch_max, "operations submitted together (default 32)");
  count(app, "--threads", o.threads, 1, threads_max, "submitting threads (default 1)");
  count(app, "--workers", o.workers, limits::worker_count_min, limits::worker_count_max,
        "faultlane io threads (default 1)");
  count(app, "--lanes", o.lanes, 1, limits::lane_count_max,
        "connections per peer; the baseline uses as many (default 1)");
  count(app, "--lane-inflight", o.lane_inflight, 1, limits::lane_inflight_max,
        fmt::format("exchanges in flight per lane; the baseline keeps no more per connection "
                    "(default {})",
                    limits::lane_inflight_default));
  count(app, "--rails", o.rails, 1, limits::rail_count_max,
        "rails 127.0.0.1..127.0.0.N on loopback (default 1)");
  count(app, "--busy-poll-us", o.busy_poll_us, 0, limits::busy_poll_us_max,
        "io threads poll N us before blocking (default 0)");
  count(app, "--progress-timeout-ms", o.progress_timeout_ms, 1, limits::timeout_ms_max,
        "a started request that moves no byte for this long fails (default: the core's)");
  seconds(app, "--duration", o.duration_s, "seconds measured for each side (default 4)");
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
        "faultlane and the baseline alternate N times (default 4)");
  app.add_flag("--verify", o.verify, "check every byte moved, on both sides");
  app.add_flag("--no-baseline", o.skip_baseline,
               "measure faultlane only (ratios are null in the JSON)");
  auto* relay = app.add_flag("--via-relay", o.via_relay,
                             "faultlane through a pass-through relay, against faultlane direct");
  app.add_option("--json", o.json_path, "write the results as JSON");
  define_other_modes(app, o, relay);
}

std::optional<std::string> check_combination(const options& o) {
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
  if (auto wrong = check_combination(o)) {
    std::fprintf(stderr, "faultlane-bench: %s\n", wrong->c_str());
    return std::nullopt;
  }
  return o;
}

std::string describe(const options& o) {
  return fmt::format(
      "op={} block={} batch={} threads={} workers={} lanes={} inflight={} rails={} duration={}s "
      "rounds={}",
      to_string(o.op), o.block_bytes, o.batch, o.threads, o.workers, o.lanes, o.lane_inflight,
      o.rails, o.duration_s, o.rounds);
}

}  // namespace faultlane::bench
