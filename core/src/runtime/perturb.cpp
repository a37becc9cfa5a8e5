// Schedule perturbation; see failpoint.hpp.
//
// Each named point keeps its own pass counter, and a pass's decision is a
// hash of (seed, point, counter): which thread gets there first still
// varies, but the n-th pass through a point is perturbed the same way for
// one seed, which is what makes a perturbed failure worth replaying. Off,
// a pass costs one relaxed load.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <iterator>
#include <thread>

#include "faultlane/base/hash.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::failpoint {
namespace {

constexpr std::size_t point_count = std::size(perturbation_points);

struct perturb_state {
  std::atomic<std::uint64_t> seed{0};
  std::atomic<std::uint64_t> threshold{0};  // a draw below it perturbs
  std::atomic<std::uint32_t> max_us{0};
  std::atomic<std::uint64_t> passes[point_count + 1]{};  // the last: unknown names
  std::atomic<std::uint64_t> perturbed{0};
};

perturb_state& state() {
  static perturb_state s;
  return s;
}

std::size_t index_of(std::string_view point) noexcept {
  auto it = std::find(std::begin(perturbation_points), std::end(perturbation_points), point);
  return static_cast<std::size_t>(it - std::begin(perturbation_points));
}

}  // namespace

void perturb_on(const perturbation& p) {
  FL_ASSERT(p.probability >= 0 && p.probability <= 1);
  auto& s = state();
  perturb_active.store(false, std::memory_order_release);
  for (auto& n : s.passes) n.store(0, std::memory_order_relaxed);
  s.perturbed.store(0, std::memory_order_relaxed);
  s.seed.store(p.seed, std::memory_order_relaxed);
  // probability 1 must perturb every pass: the top of the range saturates.
  const double scaled = p.probability * 18446744073709551615.0;
  s.threshold.store(p.probability >= 1 ? UINT64_MAX : static_cast<std::uint64_t>(scaled),
                    std::memory_order_relaxed);
  s.max_us.store(p.max_us, std::memory_order_relaxed);
  perturb_active.store(true, std::memory_order_release);
}

void perturb_off() { perturb_active.store(false, std::memory_order_release); }

bool perturbing() noexcept { return perturb_active.load(std::memory_order_acquire); }

std::uint64_t perturbed() noexcept { return state().perturbed.load(std::memory_order_relaxed); }

void perturb(std::string_view point) noexcept {
  auto& s = state();
  if (!perturb_active.load(std::memory_order_relaxed)) return;
  const std::size_t index = index_of(point);
  const std::uint64_t pass = s.passes[index].fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t draw =
      stable_hash(s.seed.load(std::memory_order_relaxed) ^ stable_hash(point) ^ stable_hash(pass));
  if (draw >= s.threshold.load(std::memory_order_relaxed)) return;
  s.perturbed.fetch_add(1, std::memory_order_relaxed);
  const std::uint32_t max_us = s.max_us.load(std::memory_order_relaxed);
  // One pass in four only yields: a preemption point, not a delay.
  if (max_us == 0 || (draw & 3) == 0) {
    net::yield();
    return;
  }
  net::sleep_for(std::chrono::microseconds(1 + stable_hash(draw) % max_us));
}

}  // namespace faultlane::failpoint
