// Internal state shared by the transport's target side (server.cpp), its
// initiator side (client.cpp) and its front (transport.cpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <vector>

#include "faultlane/core/admission.hpp"
#include "faultlane/core/completion.hpp"
#include "faultlane/core/config.hpp"
#include "faultlane/core/io_pool.hpp"
#include "faultlane/core/observer.hpp"
#include "faultlane/core/registry.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane::detail {

struct counters {
  std::atomic<std::uint64_t> tasks_submitted{0};
  std::atomic<std::uint64_t> tasks_completed{0};
  std::atomic<std::uint64_t> bytes_completed{0};
  std::atomic<std::uint64_t> lanes_connected{0};
  std::atomic<std::uint64_t> lanes_connecting{0};
  std::atomic<std::uint64_t> lanes_idle_closed{0};
  std::atomic<std::uint64_t> connects{0};
  std::atomic<std::uint64_t> connect_failures{0};
  std::atomic<std::uint64_t> reconnects{0};
  std::atomic<std::uint64_t> sessions_live{0};
  std::atomic<std::uint64_t> sessions_accepted{0};
  std::atomic<std::uint64_t> sessions_rejected_limit{0};
  std::atomic<std::uint64_t> sessions_timed_out{0};
  std::atomic<std::uint64_t> stale_handlers_dropped{0};
  std::atomic<std::uint64_t> stale_refreshes{0};
  std::atomic<std::uint64_t> timeouts{0};
  std::atomic<std::uint64_t> server_reads{0};
  std::atomic<std::uint64_t> server_writes{0};
  std::atomic<std::uint64_t> server_rejects{0};
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

  std::atomic<bool> closing{false};
  std::atomic<bool> failed{false};
  std::atomic<std::uint64_t> next_request_id{1};
  std::atomic<std::uint64_t> next_task_id{1};

  // An exception escaped a handler: refuse new work from now on. The loops
  // keep running to retire what was committed; shutdown reports the failure.
  void mark_failed() noexcept { failed.store(true, std::memory_order_release); }
  bool accepting_work() const noexcept {
    return !closing.load(std::memory_order_acquire) && !failed.load(std::memory_order_acquire);
  }
};

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
