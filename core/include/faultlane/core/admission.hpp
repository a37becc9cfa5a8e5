// admission: process-wide bounds on outstanding tasks and bytes.
//
// A batch reserves its tasks and bytes in one atomic step at submit time; a
// batch that does not fit is refused at once with status::busy, and nothing
// is queued silently. The reservation is a move-only object that gives its
// share back exactly once, in its destructor, when the last of its work has
// retired. A batch reservation is split into one reservation per task.
//
// Accounting is fail-closed: a release larger than what is outstanding (a
// bug somewhere) keeps the counters as they were, rejects all new work and
// makes drain report the error, rather than treating live work as done.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "faultlane/core/net.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane {

class admission;

class admission_reservation {
 public:
  admission_reservation() = default;
  admission_reservation(admission_reservation&& other) noexcept;
  admission_reservation& operator=(admission_reservation&& other) noexcept;
  admission_reservation(const admission_reservation&) = delete;
  admission_reservation& operator=(const admission_reservation&) = delete;
  ~admission_reservation() { release(); }

  // Moves `tasks` and `bytes` of this reservation into a new one.
  admission_reservation split(std::uint64_t tasks, std::uint64_t bytes);

  std::uint64_t tasks() const noexcept { return tasks_; }
  std::uint64_t bytes() const noexcept { return bytes_; }
  explicit operator bool() const noexcept { return owner_ != nullptr; }
  void release() noexcept;

 private:
  friend class admission;
  admission_reservation(admission* owner, std::uint64_t tasks, std::uint64_t bytes) noexcept
      : owner_(owner), tasks_(tasks), bytes_(bytes) {}

  admission* owner_ = nullptr;
  std::uint64_t tasks_ = 0;
  std::uint64_t bytes_ = 0;
};

struct admission_limits {
  std::uint64_t tasks_max = 0;
  std::uint64_t bytes_max = 0;
};

struct admission_snapshot {
  std::uint64_t tasks = 0;
  std::uint64_t bytes = 0;
  std::uint64_t admitted_batches = 0;
  std::uint64_t rejected_busy = 0;
  bool closed = false;
  bool failed = false;
};

class admission {
 public:
  explicit admission(admission_limits limits);
  admission(const admission&) = delete;
  admission& operator=(const admission&) = delete;
  ~admission();

  // Reserves the whole batch or nothing: busy when it does not fit,
  // shutting_down after close(), admission_underflow after a failed release.
  result<admission_reservation> try_reserve(std::uint64_t tasks, std::uint64_t bytes);

  // No new reservations; outstanding ones still release normally.
  void close();
  // Waits until every reservation released. timeout if some remain;
  // admission_underflow if the accounting broke.
  result<void> wait_drained(std::chrono::milliseconds timeout);

  admission_snapshot snapshot() const;
  const admission_limits& limits() const noexcept { return limits_; }

 private:
  friend class admission_reservation;
  void release(std::uint64_t tasks, std::uint64_t bytes) noexcept;

  const admission_limits limits_;
  mutable std::mutex mutex_;
  net::condition_variable drained_;
  admission_snapshot state_;
};

}  // namespace faultlane
