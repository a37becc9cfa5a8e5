// task: one submitted transfer and its frame exchanges. A task_state is
// settled once (settlement) when its last exchange retires; a transfer_op
// is one exchange on one lane (a whole task, or one slice of a sliced
// READ); transfer_batch::state is what a batch's caller polls.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "batch_memory.hpp"
#include "faultlane/core/admission.hpp"
#include "faultlane/core/completion.hpp"
#include "faultlane/core/observer.hpp"
#include "faultlane/core/transport.hpp"
#include "runtime.hpp"

namespace faultlane::detail {

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
  std::shared_ptr<detail::batch_memory> memory;  // holds this state and `tasks`
  detail::runtime* rt = nullptr;
  std::size_t size = 0;
  task_callback callback;
  detail::task_state* tasks = nullptr;  // `size` of them, in `memory`; freed by state_delete
  std::atomic<std::size_t> completed{0};
  mutable std::mutex mutex;
  mutable std::condition_variable all_done;
};

}  // namespace faultlane

namespace faultlane::detail {

// One frame exchange on one lane: a whole task, or one slice of a READ.
// Made by make_pooled in the transport's batch_memory (op_ptr).
struct transfer_op {
  std::shared_ptr<batch_memory> memory;
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
  bool request_left = false;    // a byte of its request left on the current connection
  // When the request must have started to leave (start_deadline_ms), or
  // the epoch for none.
  std::chrono::steady_clock::time_point start_by{};
  bool retired = false;

  transfer_op() = default;
  transfer_op(const transfer_op&) = delete;
  transfer_op& operator=(const transfer_op&) = delete;
  // Normally every op is retired by the lane that ran it. An op destroyed
  // unretired is one whose handler never ran because shutdown gave up
  // waiting and the io threads are already joined, or one a throwing
  // observer dropped while its lane settled; nothing can touch its buffers
  // any more, so it settles as shutting_down, or ambiguous_write for a
  // WRITE with a byte on the wire.
  ~transfer_op();
};

using op_ptr = pooled_ptr<transfer_op>;

// Retires the op's reference on its task (the last one publishes) and
// frees the op.
void retire(op_ptr op, status code, std::uint64_t bytes) noexcept;

}  // namespace faultlane::detail
