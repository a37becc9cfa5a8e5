// Command-line parsing for faultlane-bench.
#include <fmt/format.h>

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

std::optional<std::uint64_t> parse_count(std::string_view text, std::uint64_t low,
                                         std::uint64_t high) {
  auto v = parse_size(text);
  if (!v || *v < low || *v > high) return std::nullopt;
  return v;
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

std::string usage() {
  return R"(usage: faultlane-bench [flags]
  --op read|write|mix     operation (default read; mix alternates)
  --block-size N[K|M|G]   bytes per operation (default 64K)
  --batch N               operations submitted together (default 32)
  --threads N             submitting threads (default 1)
  --workers N             faultlane io threads, 1..32 (default 1)
  --lanes N               connections per peer; the baseline uses as many (default 1)
  --rails N               rails 127.0.0.1..127.0.0.N on loopback, 1..16 (default 1)
  --busy-poll-us N        io threads poll N us before blocking (default 0)
  --duration S            seconds measured for each side (default 4)
  --rounds N              faultlane and the baseline alternate N times (default 4)
  --warmup S              seconds run before measuring, each round (default 0.2)
  --verify                check every byte moved
  --no-baseline           measure faultlane only
  --via-relay             run faultlane through a pass-through faultlane-relay and
                          compare with faultlane direct (instead of raw TCP)
  --json PATH             write the results as JSON
  --mode loopback|target|initiator
  --listen HOST:PORT      target mode address (default 127.0.0.1:0)
  --peer HOST:PORT --registration ID --incarnation N   initiator mode target
  --rpc                   control plane: a pooled method against the same method
                          inline and the inline ping (uses --threads as clients,
                          --workers as io threads and pool workers)
  --rpc-saturate N        control plane: ping every 20 ms while 4 clients scan N
                          registrations and 2 call describe; pooled, then inline
  --rpc-workers N         the pool's threads for --rpc-saturate (default 0: as many
                          as io threads, the transport's default)
)";
}

namespace {

// Bounds of the benchmark's own (not the core's) flags.
constexpr std::uint64_t batch_max = limits::outstanding_tasks_default;
constexpr std::uint64_t threads_max = 64;
constexpr std::uint64_t rounds_max = 1000;
constexpr double seconds_max = 3600;
constexpr std::uint64_t region_bytes_max = 8ull << 30;

// A numeric flag and its bounds; core settings use the core's limits.
struct count_flag {
  std::string_view name;
  std::uint64_t low;
  std::uint64_t high;
  void (*store)(options&, std::uint64_t);
};

constexpr count_flag count_flags[] = {
    {"--block-size", 1, limits::transfer_bytes_default,
     [](options& o, std::uint64_t v) { o.block_bytes = v; }},
    {"--batch", 1, batch_max, [](options& o, std::uint64_t v) { o.batch = v; }},
    {"--threads", 1, threads_max, [](options& o, std::uint64_t v) { o.threads = v; }},
    {"--workers", limits::worker_count_min, limits::worker_count_max,
     [](options& o, std::uint64_t v) { o.workers = v; }},
    {"--lanes", 1, limits::lane_count_max, [](options& o, std::uint64_t v) { o.lanes = v; }},
    {"--rails", 1, limits::rail_count_max, [](options& o, std::uint64_t v) { o.rails = v; }},
    {"--busy-poll-us", 0, limits::busy_poll_us_max,
     [](options& o, std::uint64_t v) { o.busy_poll_us = static_cast<std::uint32_t>(v); }},
    {"--rounds", 1, rounds_max, [](options& o, std::uint64_t v) { o.rounds = v; }},
    {"--registration", 1, UINT64_MAX, [](options& o, std::uint64_t v) { o.peer_registration = v; }},
    {"--incarnation", 1, UINT64_MAX, [](options& o, std::uint64_t v) { o.peer_incarnation = v; }},
    {"--rpc-saturate", 1, 10'000'000, [](options& o, std::uint64_t v) { o.rpc_keys = v; }},
    {"--rpc-workers", 0, 256, [](options& o, std::uint64_t v) { o.rpc_workers = v; }},
};

// Flags with a word or text value. False for a value the flag does not take.
bool parse_word(options& o, std::string_view flag, std::string_view value, bool& known) {
  known = true;
  if (flag == "--op") {
    if (value == "read") o.op = operation::read;
    else if (value == "write") o.op = operation::write;
    else if (value == "mix") o.op = operation::mix;
    else return false;
  } else if (flag == "--mode") {
    if (value == "loopback") o.mode = run_mode::loopback;
    else if (value == "target") o.mode = run_mode::target;
    else if (value == "initiator") o.mode = run_mode::initiator;
    else return false;
  } else if (flag == "--duration" || flag == "--warmup") {
    char* end = nullptr;
    std::string text(value);
    double seconds = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || seconds < 0 || seconds > seconds_max) return false;
    (flag == "--duration" ? o.duration_s : o.warmup_s) = seconds;
  } else if (flag == "--json") {
    o.json_path = value;
  } else if (flag == "--listen") {
    o.listen = value;
  } else if (flag == "--peer") {
    o.peer = value;
  } else {
    known = false;
  }
  return true;
}

std::optional<std::string> check_combination(const options& o) {
  if (o.duration_s <= 0) return "--duration must be positive";
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
  options o;
  auto fail = [](const std::string& what) -> std::optional<options> {
    std::fprintf(stderr, "faultlane-bench: %s\n%s", what.c_str(), usage().c_str());
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage().c_str(), stdout);
      std::exit(0);
    }
    if (flag == "--verify") {
      o.verify = true;
      continue;
    }
    if (flag == "--no-baseline") {
      o.skip_baseline = true;
      continue;
    }
    if (flag == "--rpc") {
      o.rpc = true;
      continue;
    }
    if (flag == "--via-relay") {
      o.via_relay = true;
      continue;
    }
    if (i + 1 >= argc) return fail(fmt::format("{} needs a value", flag));
    std::string_view value = argv[++i];
    auto counted = std::find_if(std::begin(count_flags), std::end(count_flags),
                                [&](const count_flag& f) { return f.name == flag; });
    if (counted != std::end(count_flags)) {
      auto v = parse_count(value, counted->low, counted->high);
      if (!v) {
        return fail(fmt::format("bad value '{}' for {} (expected {}..{})", value, flag,
                                counted->low, counted->high));
      }
      counted->store(o, *v);
      continue;
    }
    bool known = false;
    if (!parse_word(o, flag, value, known))
      return fail(fmt::format("bad value '{}' for {}", value, flag));
    if (!known) return fail(fmt::format("unknown flag {}", flag));
  }
  if (auto wrong = check_combination(o)) return fail(*wrong);
  return o;
}

std::string describe(const options& o) {
  return fmt::format(
      "op={} block={} batch={} threads={} workers={} lanes={} rails={} duration={}s rounds={}",
      to_string(o.op), o.block_bytes, o.batch, o.threads, o.workers, o.lanes, o.rails, o.duration_s,
      o.rounds);
}

}  // namespace faultlane::bench
