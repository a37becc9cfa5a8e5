// What the control plane measures: calls by method and status, busy
// rejections, queue depth, and queue wait and handler time as histograms
// that report p50, p99 and max. control::metrics_of() and the `stats`
// method report the same snapshot.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "faultlane/control/rpc_frame.hpp"

namespace faultlane::rpc {

// Microsecond latencies in log-linear buckets: 16 per power of two, so a
// percentile is within 1/16 (6.25%) of the truth; the max is exact.
class latency_histogram {
 public:
  void record(std::uint64_t us) noexcept;
  std::uint64_t count() const noexcept { return count_; }
  std::uint64_t max() const noexcept { return max_; }
  // The smallest bucket bound at or above the p-th percentile (0 < p <= 100);
  // 0 when empty.
  std::uint64_t percentile(double p) const noexcept;

 private:
  static constexpr std::size_t sub_buckets = 16;
  static constexpr std::size_t bucket_count = 64 * sub_buckets;
  static std::size_t index_of(std::uint64_t us) noexcept;
  static std::uint64_t upper_bound_of(std::size_t index) noexcept;
  std::array<std::uint64_t, bucket_count> buckets_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

struct latency_summary {
  std::uint64_t count = 0;
  std::uint64_t p50_us = 0;
  std::uint64_t p99_us = 0;
  std::uint64_t max_us = 0;
};

struct metrics_snapshot {
  // (method, status) -> calls answered. Unknown methods count under the
  // name they were called by only while there are few such names; the rest
  // count as "(other)".
  std::map<std::pair<std::string, rpc_status>, std::uint64_t> calls;
  std::uint64_t busy_rejections = 0;
  std::uint64_t queue_depth = 0;  // gauge
  std::uint64_t queue_max = 0;
  std::uint64_t workers = 0;  // 0: every handler runs inline
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_live = 0;  // gauge
  std::uint64_t malformed_frames = 0;  // each closed its connection
  latency_summary queue_wait;
  latency_summary handler_time;

  std::uint64_t calls_of(const std::string& method, rpc_status s) const;
  std::uint64_t calls_total() const;
  // Flat (key, value) pairs, as the `stats` method sends them:
  // rpc.calls.<method>.<status>, rpc.queue_wait_us.p50, ...
  std::vector<std::pair<std::string, std::uint64_t>> flatten() const;
};

class rpc_metrics {
 public:
  void answered(const std::string& method, rpc_status s);
  void busy_rejected() noexcept;
  void waited(std::uint64_t queue_wait_us);
  void handled(std::uint64_t handler_us);
  void accepted();
  void closed();
  void malformed();
  metrics_snapshot snapshot() const;

 private:
  static constexpr std::size_t other_names_max = 16;
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, rpc_status>, std::uint64_t> calls_;
  std::size_t unknown_names_ = 0;
  std::uint64_t busy_ = 0;
  std::uint64_t accepted_ = 0;
  std::uint64_t live_ = 0;
  std::uint64_t malformed_ = 0;
  latency_histogram queue_wait_;
  latency_histogram handler_time_;
};

}  // namespace faultlane::rpc
