// The control plane's metrics; see rpc_metrics.hpp.
#include "faultlane/control/rpc_metrics.hpp"

#include <bit>

namespace faultlane::rpc {

// Values below sub_buckets get a bucket each; above, each power of two
// [2^k, 2^(k+1)) is cut into sub_buckets equal parts.
std::size_t latency_histogram::index_of(std::uint64_t us) noexcept {
  if (us < sub_buckets) return static_cast<std::size_t>(us);
  const auto k = static_cast<std::size_t>(std::bit_width(us) - 1);  // 2^k <= us
  const auto part = static_cast<std::size_t>((us >> (k - 4)) & (sub_buckets - 1));
  return (k - 3) * sub_buckets + part;
}

std::uint64_t latency_histogram::upper_bound_of(std::size_t index) noexcept {
  if (index < sub_buckets) return index;
  const std::size_t k = index / sub_buckets + 3;
  const std::uint64_t part = index % sub_buckets;
  if (k >= 63 && part == sub_buckets - 1) return UINT64_MAX;
  return (std::uint64_t{1} << k) + ((part + 1) << (k - 4)) - 1;
}

void latency_histogram::record(std::uint64_t us) noexcept {
  ++buckets_[index_of(us)];
  ++count_;
  if (us > max_) max_ = us;
}

std::uint64_t latency_histogram::percentile(double p) const noexcept {
  if (count_ == 0) return 0;
  auto rank = static_cast<std::uint64_t>(p / 100.0 * static_cast<double>(count_) + 0.999999);
  if (rank == 0) rank = 1;
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < bucket_count; ++i) {
    seen += buckets_[i];
    if (seen >= rank) return std::min(upper_bound_of(i), max_);
  }
  return max_;
}

namespace {

latency_summary summarise(const latency_histogram& h) {
  return {h.count(), h.percentile(50), h.percentile(99), h.max()};
}

}  // namespace

std::uint64_t metrics_snapshot::calls_of(const std::string& method, rpc_status s) const {
  auto it = calls.find({method, s});
  return it == calls.end() ? 0 : it->second;
}

std::uint64_t metrics_snapshot::calls_total() const {
  std::uint64_t total = 0;
  for (const auto& [key, n] : calls) total += n;
  return total;
}

std::vector<std::pair<std::string, std::uint64_t>> metrics_snapshot::flatten() const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& [key, n] : calls) {
    out.emplace_back("rpc.calls." + key.first + "." + std::string(to_string(key.second)), n);
  }
  out.emplace_back("rpc.busy_rejections", busy_rejections);
  out.emplace_back("rpc.queue_depth", queue_depth);
  out.emplace_back("rpc.queue_max", queue_max);
  out.emplace_back("rpc.workers", workers);
  out.emplace_back("rpc.connections_accepted", connections_accepted);
  out.emplace_back("rpc.connections_live", connections_live);
  out.emplace_back("rpc.malformed_frames", malformed_frames);
  for (const auto& [name, h] :
       {std::pair{"queue_wait_us", &queue_wait}, std::pair{"handler_time_us", &handler_time}}) {
    const std::string base = std::string("rpc.") + name;
    out.emplace_back(base + ".count", h->count);
    out.emplace_back(base + ".p50", h->p50_us);
    out.emplace_back(base + ".p99", h->p99_us);
    out.emplace_back(base + ".max", h->max_us);
  }
  return out;
}

void rpc_metrics::answered(const std::string& method, rpc_status s) {
  std::lock_guard lock(mutex_);
  auto key = std::pair{method, s};
  auto it = calls_.find(key);
  if (it != calls_.end()) {
    ++it->second;
    return;
  }
  // A client naming many methods that do not exist must not grow this map
  // without bound.
  if (s == rpc_status::unknown_method) {
    if (unknown_names_ >= other_names_max) {
      ++calls_[{"(other)", s}];
      return;
    }
    ++unknown_names_;
  }
  calls_.emplace(std::move(key), 1);
}

void rpc_metrics::busy_rejected() noexcept {
  std::lock_guard lock(mutex_);
  ++busy_;
}

void rpc_metrics::waited(std::uint64_t queue_wait_us) {
  std::lock_guard lock(mutex_);
  queue_wait_.record(queue_wait_us);
}

void rpc_metrics::handled(std::uint64_t handler_us) {
  std::lock_guard lock(mutex_);
  handler_time_.record(handler_us);
}

void rpc_metrics::accepted() {
  std::lock_guard lock(mutex_);
  ++accepted_;
  ++live_;
}

void rpc_metrics::closed() {
  std::lock_guard lock(mutex_);
  FL_ASSERT(live_ > 0);
  --live_;
}

void rpc_metrics::malformed() {
  std::lock_guard lock(mutex_);
  ++malformed_;
}

metrics_snapshot rpc_metrics::snapshot() const {
  std::lock_guard lock(mutex_);
  metrics_snapshot s;
  s.calls = calls_;
  s.busy_rejections = busy_;
  s.connections_accepted = accepted_;
  s.connections_live = live_;
  s.malformed_frames = malformed_;
  s.queue_wait = summarise(queue_wait_);
  s.handler_time = summarise(handler_time_);
  return s;
}

}  // namespace faultlane::rpc
