// Internal state shared by the transport's target side (server.cpp), its
// initiator side (client.cpp) and its front (transport.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include <asio/post.hpp>

#include "faultlane/core/admission.hpp"
#include "faultlane/core/completion.hpp"
#include "faultlane/core/config.hpp"
#include "faultlane/core/io_pool.hpp"
#include "faultlane/core/observer.hpp"
#include "faultlane/core/registry.hpp"
#include "faultlane/core/stats.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane::detail {

// The atomics behind transport_stats, one per entry of the declared-once
// list in faultlane/core/stats.hpp.
struct counters {
// NOLINTNEXTLINE(bugprone-macro-parentheses): the argument is a member name
#define FAULTLANE_COUNTER_ATOMIC(name, meaning) std::atomic<std::uint64_t> name{0};
  FAULTLANE_TRANSPORT_COUNTERS(FAULTLANE_COUNTER_ATOMIC)
#undef FAULTLANE_COUNTER_ATOMIC
  std::atomic<std::uint64_t> failures_by_status[status_count] = {};
};

inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  c.fetch_add(n, std::memory_order_relaxed);
}

struct runtime {
  explicit runtime(const transport_config& c)
      : config(c),
        admission_control({c.max_outstanding_tasks, c.max_outstanding_bytes}),
        observer(c.observer),
        incarnation(os_random_u64() | 1) {}

  const transport_config config;
  std::unique_ptr<io_pool> pool;
  registry buffers;
  admission admission_control;
  counters stats;
  transport_observer* const observer;
  const std::uint64_t incarnation;

  std::atomic<bool> closing{false};  // shutdown began: no new work, no new connects
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> next_request_id{1};
  std::atomic<std::uint64_t> next_task_id{1};

  // An exception escaped a handler: refuse new work from now on. The loops
  // keep running to retire what was committed; shutdown reports the failure.
  void mark_failed() noexcept {
    bump(stats.handler_exceptions);
    failed.store(true, std::memory_order_release);
  }
  bool accepting_work() const noexcept {
    return !closing.load(std::memory_order_acquire) && !failed.load(std::memory_order_acquire);
  }
};

// The one handler guard. Every handler the core runs (socket and timer
// completions, hops between shards, the user's completion callback) runs
// through it: an exception escaping `fn` marks the runtime failed, then
// `recover` (which must not throw) leaves the handler's owner consistent.
template <typename Fn, typename Recover>
void run_guarded(runtime& rt, Fn&& fn, Recover&& recover) noexcept {
  try {
    fn();
  } catch (...) {
    rt.mark_failed();
    recover();
  }
}

template <typename Fn>
void run_guarded(runtime& rt, Fn&& fn) noexcept {
  run_guarded(rt, std::forward<Fn>(fn), [] {});
}

// Posts `fn` to `shard` behind the guard.
template <typename Fn>
void post_guarded(runtime& rt, std::size_t shard, Fn fn) {
  asio::post(rt.pool->context(shard), [&rt, fn = std::move(fn)]() mutable { run_guarded(rt, fn); });
}

// Runs `fn` on every shard and waits, until `deadline`, for all of them to
// have run it. False when the deadline passed first (a shard was blocked, or
// its loop already stopped): `fn` may still run later, so it owns what it
// uses. Never called on a pool thread, which would wait on itself.
bool run_on_every_shard(runtime& rt, std::function<void(std::size_t)> fn,
                        std::chrono::steady_clock::time_point deadline);

// --- tasks and their frame exchanges -------------------------------------------

class lane;

struct task_state {
  std::atomic<std::uint16_t> code{static_cast<std::uint16_t>(status::ok)};
  // Set when a slice failed: siblings not yet started are skipped, and
  // siblings in flight are cancelled on their lanes.
  std::atomic<bool> cancelled{false};
  // The lanes running this task's slices (empty unless the READ is sliced).
  std::vector<std::shared_ptr<lane>> slice_lanes;
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<bool> done{false};
  std::optional<settlement> settle;
  admission_reservation reservation;
  task_event info;
  std::size_t index = 0;
};

}  // namespace faultlane::detail

namespace faultlane {

struct transfer_batch::state {
  detail::runtime* rt = nullptr;
  std::size_t size = 0;
  task_callback callback;
  std::unique_ptr<detail::task_state[]> tasks;
  std::atomic<std::size_t> completed{0};
  mutable std::mutex mutex;
  mutable std::condition_variable all_done;
};

}  // namespace faultlane

namespace faultlane::detail {

// One frame exchange on one lane: a whole task, or one slice of a READ.
struct transfer_op {
  task_state* task = nullptr;
  std::shared_ptr<transfer_batch> batch;  // keeps `task` alive
  wire::opcode op = wire::opcode::read;
  std::byte* local = nullptr;
  std::uint64_t length = 0;
  registration_id remote_registration = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t slice_offset = 0;  // within the task
  std::uint64_t request_id = 0;
  static constexpr std::size_t any_rail = SIZE_MAX;
  std::size_t rail = any_rail;  // a slice stays on its rail, even when retried
  bool refreshed = false;       // one descriptor refresh and retry at most
  // When the request must have started to leave (start_deadline_ms), or
  // the epoch for none.
  std::chrono::steady_clock::time_point start_by{};
  bool retired = false;

  transfer_op() = default;
  transfer_op(const transfer_op&) = delete;
  transfer_op& operator=(const transfer_op&) = delete;
  // Normally every op is retired by the lane that ran it. An op destroyed
  // unretired can only be one whose handler never ran because shutdown gave
  // up waiting and the io threads are already joined; nothing can touch its
  // buffers any more, so it settles as shutting_down.
  ~transfer_op();
};

// Retires the op's reference on its task (the last one publishes) and
// frees the op.
void retire(std::unique_ptr<transfer_op> op, status code, std::uint64_t bytes) noexcept;

}  // namespace faultlane::detail
