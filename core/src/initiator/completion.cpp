// settlement; see completion.hpp.
#include "faultlane/core/completion.hpp"

#include "faultlane/core/failpoint.hpp"

namespace faultlane {

void settlement::merge(status code) noexcept {
  FL_ASSERT(static_cast<int>(code) < status_count);
  auto seen = status_.load(std::memory_order_relaxed);
  while (severity(code) > severity(static_cast<status>(seen)) &&
         !status_.compare_exchange_weak(seen, static_cast<std::uint16_t>(code),
                                        std::memory_order_acq_rel, std::memory_order_relaxed)) {
  }
}

bool settlement::retire(status code, std::uint64_t transferred_bytes) noexcept {
  merge(code);
  FAULTLANE_PERTURB("settle.merge");
  if (transferred_bytes != 0) transferred_.fetch_add(transferred_bytes, std::memory_order_acq_rel);
  // acq_rel: the last retirer sees every other retirer's status and bytes.
  auto before = references_.fetch_sub(1, std::memory_order_acq_rel);
  FL_ASSERT(before > 0);
  if (before != 1) return false;
  FAULTLANE_PERTURB("settle.finalize");
  FL_ASSERT(action_.armed());  // the last reference finalizes, once
  std::move(action_).finalize(current_status(), transferred_.load(std::memory_order_acquire));
  FL_ASSERT(!action_.armed());
  return true;
}

}  // namespace faultlane
