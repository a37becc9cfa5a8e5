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

// The benchmark's large buffers (regions, blocks, stream buffers; both
// sides alike) ask for transparent huge pages where the kernel gives them
// (THP "madvise" mode, Debian's default). Every round builds its buffers
// afresh, and with 4 KiB pages that first touch was most of a large run:
// --batch 32 of 64 MiB faulted 10.8 million pages, 60 s of system time in
// a 53 s run, outside the measured window but inside the wait. Buffers
// under 2 MiB come from operator new as before.
void* huge_page_allocate(std::size_t bytes);
void huge_page_free(void* p, std::size_t bytes) noexcept;

template <typename T>
struct huge_page_allocator {
  using value_type = T;
  huge_page_allocator() = default;
  template <typename U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(huge_page_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { huge_page_free(p, n * sizeof(T)); }
  friend bool operator==(const huge_page_allocator&, const huge_page_allocator&) = default;
};
template <typename T>
using block_vector = std::vector<T, huge_page_allocator<T>>;

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
  double duration_s = 5.0;                // each side: faultlane, then the baseline
  double warmup_s = 0.2;                  // per round, before measuring
  std::size_t rounds = 5;                 // faultlane and baseline alternate this many times
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
  // Rounds whose warm-up ended at warmup_wait_max_s with a driver that had
  // completed nothing: their window measured a side that had not started.
  std::uint64_t cold_rounds = 0;

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

// One side's measured window, shared by run_phases and that side's
// drivers (threads or callback loops). An op counts when it completes
// inside the window, whenever it started: a round begun in the warm-up adds
// what lands after the clock starts, and one still running at the stop adds
// nothing, so a round of any size measures what the window saw.
class window {
 public:
  bool measuring() const noexcept { return phase_.load(std::memory_order_relaxed) == 1; }
  bool stopping() const noexcept { return phase_.load(std::memory_order_relaxed) == 2; }
  // Each driver calls this at each completed op; the clock starts only
  // once every driver has completed one, so connecting, first touches and
  // the first round's latency stay in the warm-up.
  void completed(bool& seen_first) noexcept {
    if (seen_first) return;
    seen_first = true;
    warm_.fetch_add(1, std::memory_order_relaxed);
  }
  // The same, for a driver whose ops complete on several threads.
  void completed(std::atomic<bool>& seen_first) noexcept {
    if (!seen_first.exchange(true, std::memory_order_relaxed)) {
      warm_.fetch_add(1, std::memory_order_relaxed);
    }
  }

 private:
  friend double run_phases(const options& o, window& w, std::size_t drivers, measurement& m);
  std::atomic<int> phase_{0};  // 0 warm-up, 1 measuring, 2 stop
  std::atomic<std::size_t> warm_{0};
};

// A driver that ends (an error, the stop) counts as warm from then on: the
// warm-up waits for drivers that can still complete an op, never for one
// that is gone (a run whose ops all fail must not sit out the longest wait).
class warm_on_exit {
 public:
  warm_on_exit(window& w, bool& seen_first) : w_(w), seen_first_(seen_first) {}
  warm_on_exit(const warm_on_exit&) = delete;
  warm_on_exit& operator=(const warm_on_exit&) = delete;
  ~warm_on_exit() { w_.completed(seen_first_); }

 private:
  window& w_;
  bool& seen_first_;
};

// The longest warm-up: past it, a side whose drivers have not all
// completed an op is measured anyway and the round is counted in
// measurement::cold_rounds, which the output explains.
constexpr double warmup_wait_max_s = 60;

// Runs the warm-up (at least o.warmup_s, and until each of `drivers` has
// completed an op), then the measured window. Returns the window's length
// in seconds, and sets the window's allocations and CPU seconds in `m`.
double run_phases(const options& o, window& w, std::size_t drivers, measurement& m);
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
  // Each round's ratios (faultlane over its baseline in the same round):
  // their spread is how far the machine moved the result during the run.
  std::vector<double> round_throughput_ratio, round_latency_ratio;
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
