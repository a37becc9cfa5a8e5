// admission and admission_reservation; see admission.hpp.
//
// One mutex guards both counters: a batch must see tasks and bytes together,
// and it is taken once per batch and once per retired task, never per byte.
#include "faultlane/core/admission.hpp"

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"

#include <string>
#include <utility>

namespace faultlane {

admission_reservation::admission_reservation(admission_reservation&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      tasks_(std::exchange(other.tasks_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

admission_reservation& admission_reservation::operator=(admission_reservation&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    tasks_ = std::exchange(other.tasks_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  FL_ASSERT(other.owner_ == nullptr || this == &other);
  return *this;
}

admission_reservation admission_reservation::split(std::uint64_t tasks, std::uint64_t bytes) {
  FL_ASSERT(owner_ != nullptr);
  FL_ASSERT(tasks <= tasks_);
  FL_ASSERT(bytes <= bytes_);
  tasks_ -= tasks;
  bytes_ -= bytes;
  return admission_reservation(owner_, tasks, bytes);
}

void admission_reservation::release() noexcept {
  if (owner_ == nullptr) return;
  auto tasks = std::exchange(tasks_, 0);
  auto bytes = std::exchange(bytes_, 0);
  // Test seam (compiled out in release): plants an accounting bug, one task
  // (key 0) or one byte (key 1) too many, to show the fail-closed path.
  if (FAULTLANE_FAILPOINT_KEY("admission.release_extra", 0)) ++tasks;
  if (FAULTLANE_FAILPOINT_KEY("admission.release_extra", 1)) ++bytes;
  FAULTLANE_PERTURB("admission.release");
  std::exchange(owner_, nullptr)->release(tasks, bytes);
}

admission::admission(admission_limits limits) : limits_(limits) {
  FL_ASSERT(limits_.tasks_max > 0);
  FL_ASSERT(limits_.bytes_max > 0);
}

admission::~admission() {
  std::lock_guard lock(mutex_);
  // Every reservation points back here; destroying admission first is a
  // lifetime bug in the owner (shutdown drains admission before this).
  FL_ASSERT(state_.tasks == 0 || state_.failed);
}

result<admission_reservation> admission::try_reserve(std::uint64_t tasks, std::uint64_t bytes) {
  FL_ASSERT(tasks > 0);
  std::lock_guard lock(mutex_);
  if (state_.failed) {
    return error{status::admission_underflow, "admission accounting failed; new work rejected"};
  }
  if (state_.closed) return error{status::shutting_down, "admission is closed"};
  bool fits =
      tasks <= limits_.tasks_max - state_.tasks && bytes <= limits_.bytes_max - state_.bytes;
  if (!fits) {
    FAULTLANE_PROBE(admission_answered_busy);
    ++state_.rejected_busy;
    return error{status::busy, "over admission bound: " + std::to_string(state_.tasks) + "+" +
                                   std::to_string(tasks) + " tasks (max " +
                                   std::to_string(limits_.tasks_max) + "), " +
                                   std::to_string(state_.bytes) + "+" + std::to_string(bytes) +
                                   " bytes (max " + std::to_string(limits_.bytes_max) + ")"};
  }
  state_.tasks += tasks;
  state_.bytes += bytes;
  ++state_.admitted_batches;
  return admission_reservation(this, tasks, bytes);
}

void admission::release(std::uint64_t tasks, std::uint64_t bytes) noexcept {
  std::lock_guard lock(mutex_);
  if (state_.failed || tasks > state_.tasks || bytes > state_.bytes) {
    state_.failed = true;  // fail-closed: keep the counters, refuse new work
    drained_.notify_all();
    return;
  }
  FL_ASSERT(tasks <= state_.tasks && bytes <= state_.bytes);  // checked just above
  state_.tasks -= tasks;
  state_.bytes -= bytes;
  if (state_.tasks == 0 && state_.bytes == 0) drained_.notify_all();
}

void admission::close() {
  std::lock_guard lock(mutex_);
  state_.closed = true;
  FL_ASSERT(state_.tasks <= limits_.tasks_max && state_.bytes <= limits_.bytes_max);
}

result<void> admission::wait_drained(std::chrono::milliseconds timeout) {
  FL_ASSERT(timeout.count() >= 0);
  std::unique_lock lock(mutex_);
  auto done = [&] { return state_.failed || (state_.tasks == 0 && state_.bytes == 0); };
  if (!drained_.wait_for(lock, timeout, done)) {
    return error{status::timeout, std::to_string(state_.tasks) + " task(s) and " +
                                      std::to_string(state_.bytes) +
                                      " byte(s) still admitted after timeout"};
  }
  if (state_.failed) {
    return error{
        status::admission_underflow,
        "admission release underflow; " + std::to_string(state_.tasks) + " task(s) still counted"};
  }
  return {};
}

admission_snapshot admission::snapshot() const {
  std::lock_guard lock(mutex_);
  return state_;
}

}  // namespace faultlane
