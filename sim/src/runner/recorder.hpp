// recorder: the one writer of a run's history, shared by every thread of a
// run (stream threads, io threads through observers, a child's reader).
//
// Every record takes its seq from one counter, inside the same lock that
// appends it, so records of one kind are stored in seq order. Ops are the
// exception: an op takes its submit seq before submit() and its completion
// seq in the callback, and is updated in place by id.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "faultlane/core/net.hpp"
#include "faultlane/core/observer.hpp"
#include "faultlane/sim/history.hpp"

namespace faultlane::sim {

class recorder {
 public:
  explicit recorder(bool enabled) : enabled_(enabled) {}

  bool enabled() const noexcept { return enabled_; }
  std::uint64_t now_us() const;
  std::uint64_t next_seq() { return seq_.fetch_add(1, std::memory_order_acq_rel) + 1; }

  // Appends the op, assigning its id and submit seq/time.
  std::uint64_t add_op(op_record op);
  // Sets the outcome of op `id` (callback side).
  void complete_op(std::uint64_t id, status outcome, std::uint64_t bytes,
                   std::vector<std::byte> data);
  // submit() refused the batch the op was in.
  void fail_submit(std::uint64_t id, status why);
  void set_task_id(std::uint64_t id, std::uint64_t task_id);
  void set_batch_status(std::uint64_t id, status s);
  std::uint64_t ops_done() const { return ops_done_.load(std::memory_order_acquire); }
  // Core events past events_max are dropped (a runaway loop in the core
  // would otherwise fill memory); the runner makes that a run error.
  static constexpr std::size_t events_max = 1'000'000;
  bool overflowed() const { return overflowed_.load(std::memory_order_acquire); }

  void add_event(core_event e);  // assigns seq and time
  std::uint64_t add_mark(std::string kind, std::string text, bool ok = true);
  template <typename F>
  void edit(F&& f) {  // any other change, under the lock
    std::lock_guard lock(mutex_);
    f(history_);
  }

  history take();

 private:
  const bool enabled_;
  std::atomic<bool> overflowed_{false};
  // net::clock: virtual time in the dsim build, where the world must exist
  // before the recorder.
  const net::clock::time_point start_ = net::clock::now();
  std::atomic<std::uint64_t> seq_{0};
  std::atomic<std::uint64_t> ops_done_{0};
  mutable std::mutex mutex_;
  history history_;
};

// While alive on a thread, the task_submitted reports that thread's
// submit() makes are matched, in order, to these op ids (submit() reports
// its tasks synchronously, in request order): that is how an op learns its
// core task id without reading private state.
class submit_scope {
 public:
  explicit submit_scope(const std::vector<std::uint64_t>& op_ids);
  ~submit_scope();
  submit_scope(const submit_scope&) = delete;
  submit_scope& operator=(const submit_scope&) = delete;
};

// Turns one transport incarnation's observer calls into core_events: into
// the recorder, or (in a child process) into `sink`, which sends them to
// the runner.
class recording_observer final : public transport_observer {
 public:
  using sink_fn = std::function<void(core_event&&)>;
  recording_observer(recorder* r, std::string transport, std::uint32_t incarnation,
                     sink_fn sink = {})
      : recorder_(r),
        sink_(std::move(sink)),
        transport_(std::move(transport)),
        incarnation_(incarnation) {}

  void task_submitted(const task_event& e) override;
  void task_finalized(const task_event& e, status s, std::uint64_t bytes) override;
  void slice_dispatched(const slice_event& e) override;
  void lane_connected(const lane_event& e) override;
  void lane_closed(const lane_event& e, status why) override;
  void stale_handler_dropped(const lane_event& e) override;
  void server_executed(const served_event& e) override;
  void session_opened(const endpoint& local, const endpoint& remote) override;
  void lease_acquired(std::uint64_t registration) override;
  void lease_released(std::uint64_t registration) override;
  void admission_changed(std::uint64_t tasks, std::uint64_t bytes) override;

 private:
  core_event base(event_kind kind) const;
  void emit(core_event&& e);
  recorder* const recorder_;
  const sink_fn sink_;
  const std::string transport_;
  const std::uint32_t incarnation_;
};

}  // namespace faultlane::sim
