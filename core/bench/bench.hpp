// faultlane-bench: shared types of the benchmark tool.
//
// The tool measures the core and a raw-TCP baseline with the same block
// size, batch, submitting threads and connection count, in the same process
// and the same run, and reports both and their ratio.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane::bench {

enum class operation { read, write, mix };
enum class run_mode { loopback, target, initiator };
// How the raw-TCP baseline's receives below 1 MiB wait, at both ends: in
// the receive itself (blocking), or for readiness first and then a receive
// that cannot block, as any readiness-based event loop must
// (docs/benchmarks.md, "--raw-wait ready").
enum class raw_wait { block, ready };

struct options {
  operation op = operation::read;
  std::uint64_t block_bytes = 64u << 10;
  std::size_t batch = 32;
  std::size_t threads = 1;
  std::size_t workers = 1;
  std::size_t lanes = 1;
  // lane_inflight_max; the pipelining baseline keeps no more per connection.
  std::size_t lane_inflight = limits::lane_inflight_default;
  std::size_t rails = 1;  // 127.0.0.1 .. 127.0.0.<rails>
  std::uint32_t busy_poll_us = 0;
  std::uint32_t progress_timeout_ms = 0;  // 0: the core's default
  bool via_relay = false;                 // faultlane through a pass-through relay, against direct
  std::uint32_t relay_busy_poll_us = 0;   // --via-relay: the relays' relay_config::busy_poll_us
  double duration_s = 4.0;                // each side: faultlane, then the baseline
  double warmup_s = 0.2;                  // per round, before measuring
  std::size_t rounds = 4;                 // faultlane and baseline alternate this many times
  bool verify = false;
  bool skip_baseline = false;
  raw_wait baseline_wait = raw_wait::block;
  bool baseline_wait_given = false;  // --raw-wait on the command line, either value
  std::string json_path;
  run_mode mode = run_mode::loopback;
  std::string listen = "127.0.0.1:0";  // target mode
  std::string peer;                    // initiator mode: HOST:PORT
  std::uint64_t peer_registration = 0;
  std::uint64_t peer_incarnation = 0;
  bool rpc = false;             // --rpc: point RPCs, pooled against inline
  std::uint64_t rpc_keys = 0;   // --rpc-saturate N: ping under saturating scans
  std::size_t rpc_workers = 0;  // --rpc-workers: the pool's threads there (0: io threads)
  // --sweep: one run per point of workers x lanes x rails x block size,
  // each with its baseline (sweep.cpp); the lists replace the single flags.
  bool sweep = false;
  std::vector<std::uint64_t> sweep_workers, sweep_lanes, sweep_rails, sweep_blocks;
  std::string svg_path;  // --svg: the sweep's plot
};

// Parses argv; on a bad flag prints the problem and returns nullopt.
std::optional<options> parse_options(int argc, char** argv);
std::string describe(const options& o);
const char* to_string(operation op);
const char* to_string(raw_wait wait);
// The raw-TCP baseline's name in the output: "raw tcp", or "raw ready".
inline const char* baseline_name(const options& o) {
  return o.baseline_wait == raw_wait::ready ? "raw ready" : "raw tcp";
}

struct measurement {
  double seconds = 0;
  std::uint64_t bytes = 0;
  std::uint64_t ops = 0;
  std::uint64_t failures = 0;
  std::map<std::string, std::uint64_t> failures_by_status;  // "timeout": 3
  std::uint64_t mismatches = 0;
  std::vector<double> latency_us;  // one per op
  // In the measured window, whole process (both ends in loopback mode):
  // operator new calls, and user + system CPU seconds.
  std::optional<std::uint64_t> allocations = 0;  // none: not counted
  double cpu_seconds = 0;

  void failed(status code) {
    ++failures;
    ++failures_by_status[std::string(to_string(code))];
  }
};

struct summary {
  double bytes_per_s = 0;
  double ops_per_s = 0;
  double mean_us = 0, p50_us = 0, p99_us = 0, p999_us = 0;
  std::optional<double> allocations_per_op;  // none: not counted
  double cpu_s_per_gb = 0;
};
summary summarize(measurement& m);

// Runs the warm-up, then the measured window: `phase` goes 0 (warm-up) ->
// 1 (measuring) -> 2 (stop). Returns the window's length in seconds, and
// sets the window's allocations and CPU seconds in `m`.
double run_phases(const options& o, std::atomic<int>& phase, measurement& m);
// operator new calls so far, process-wide (alloc_count.cpp); nothing in a
// sanitizer build, which cannot count them.
std::optional<std::uint64_t> allocations() noexcept;
void merge(measurement& into, measurement m);

// From this block size on, a run with a baseline also measures the
// one-way TCP stream.
constexpr std::uint64_t stream_block_bytes_min = 1u << 20;

// One measured configuration: faultlane, its baseline and (bulk blocks) the
// one-way stream, in interleaved rounds.
struct outcome {
  measurement fl, raw, stream, block_stream;
  summary fs, bs, ss, bss;
  bool baseline = false;
  bool with_stream = false;  // bulk runs: plain TCP one way, both ways of buffering it
};
outcome measure(const options& o);
// The run's JSON document (docs/benchmarks.md); a sweep lists one per point.
std::string json_record(const options& o, const outcome& r);

measurement run_baseline(const options& o);
// Plain TCP one way with nothing to wait for, over `lanes` connections: the
// ceiling a request/response loop is held against. `step`: from and into
// one step's buffer, which stays in the caches (as iperf3's does); `block`:
// through buffers the block's size, the memory a transfer touches.
enum class stream_buffers { step, block };
std::size_t stream_footprint(const options& o, stream_buffers buffers);
measurement run_stream(const options& o, stream_buffers buffers);
measurement run_faultlane(const options& o);
int run_target(const options& o);  // serves until SIGINT/SIGTERM
int run_rpc_points(const options& o);
int run_rpc_saturate(const options& o);
int run_sweep(const options& o);  // --sweep (sweep.cpp)

// The slot the n-th op of submitter `thread` uses, within a region of
// `batch` blocks per thread; and the seed of the bytes a slot should hold.
inline std::uint64_t slot_offset(const options& o, std::size_t thread, std::size_t slot) {
  return (thread * o.batch + slot) * o.block_bytes;
}
inline std::uint64_t region_bytes(const options& o) { return o.threads * o.batch * o.block_bytes; }

// Room to reserve for the latencies of one of `loops` measuring loops, so
// that the log never grows (and allocates) inside the measured window: a
// million operations a second in all, at most 4 Mi entries (32 MiB) each.
inline std::size_t latency_log_entries(const options& o, std::size_t loops) {
  const double each = o.duration_s * 1e6 / static_cast<double>(std::max<std::size_t>(loops, 1));
  return static_cast<std::size_t>(std::clamp(each, 1024.0, 4.0 * (1u << 20)));
}

}  // namespace faultlane::bench
