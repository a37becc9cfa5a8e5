// runtime: what every part of a transport shares: its configuration, io
// pool, registry, admission, counters and run state, and the one handler
// guard every handler runs behind. Tasks and their frame exchanges are in
// task.hpp; the target side in server.hpp, the initiator side in
// lane.hpp and peer_group.hpp, the front in transport_impl.hpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <vector>

#include <asio/post.hpp>

#include "faultlane/core/admission.hpp"
#include "faultlane/core/config.hpp"
#include "faultlane/core/io_pool.hpp"
#include "faultlane/core/net.hpp"
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
        incarnation(net::os_random_u64() | 1),
        next_request_id(first_request_id(incarnation)) {}

  // Request ids start at a random base per transport (bits 32..62 of its
  // incarnation), so ids in taps and target-side logs never collide between
  // initiators: a target can tell two peers' requests apart by id alone,
  // which is what the no-replay checker relies on. 2^32 requests fit before
  // a transport's range could reach another's.
  static std::uint64_t first_request_id(std::uint64_t incarnation) noexcept {
    return ((incarnation >> 1) & 0x7fffffff00000000ull) | 1;
  }

  const transport_config config;
  std::unique_ptr<io_pool> pool;
  registry buffers;
  admission admission_control;
  counters stats;
  transport_observer* const observer;
  const std::uint64_t incarnation;

  std::atomic<bool> closing{false};  // shutdown began: no new work, no new connects
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> next_request_id;
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
  io_pool::handler_ran();
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
                        net::clock::time_point deadline);

}  // namespace faultlane::detail
