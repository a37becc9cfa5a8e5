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
#include <utility>
#include <vector>

#include "faultlane/core/admission.hpp"
#include "faultlane/core/completion.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/core/observer.hpp"
#include "faultlane/core/transport.hpp"
#include "memory/batch_memory.hpp"
#include "runtime/runtime.hpp"

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
  mutable net::condition_variable all_done;
};

}  // namespace faultlane

namespace faultlane::detail {

struct transfer_op;
using op_ptr = pooled_ptr<transfer_op>;

// One frame exchange on one lane: a whole task, or one slice of a READ.
// Made by make_pooled in the transport's batch_memory (op_ptr).
struct transfer_op {
  std::shared_ptr<batch_memory> memory;
  op_ptr next;  // the op after this one in an op_chain
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
  std::size_t rail = any_rail;   // a slice stays on its rail, even when retried
  bool refreshed = false;        // one descriptor refresh and retry at most
  bool request_left = false;     // a byte of its request left on the current connection
  wire::request_bytes header{};  // its request header, encoded as it leaves
  // When the request must have started to leave (start_deadline_ms), or
  // the epoch for none.
  net::clock::time_point start_by{};
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

// Ops handed to one lane together, oldest first: a submit posts one chain
// per lane rather than one hand-off per op, so a lane sees a batch's ops
// at once and can send their requests together (docs/architecture.md,
// "The hot path"). Linked through transfer_op::next, so building one
// allocates nothing; an op the chain still holds when it goes (a hand-off
// dropped unrun at shutdown) settles as any dropped op does.
class op_chain {
 public:
  op_chain() = default;
  explicit op_chain(op_ptr op) { push_back(std::move(op)); }
  op_chain(op_chain&& other) noexcept
      : head_(std::move(other.head_)), last_(std::exchange(other.last_, nullptr)) {}
  op_chain& operator=(op_chain&&) = delete;
  ~op_chain() {
    // One at a time: letting `head_` go would free the chain recursively.
    while (head_) (void)pop_front();
  }

  bool empty() const noexcept { return head_ == nullptr; }
  transfer_op& front() const noexcept { return *head_; }
  void push_back(op_ptr op) noexcept {
    FL_ASSERT(op && !op->next);
    transfer_op* added = op.get();
    if (last_ == nullptr) head_ = std::move(op);
    else last_->next = std::move(op);
    last_ = added;
  }
  op_ptr pop_front() noexcept {
    FL_ASSERT(head_);
    auto op = std::move(head_);
    head_ = std::move(op->next);
    if (!head_) last_ = nullptr;
    return op;
  }

 private:
  op_ptr head_;
  transfer_op* last_ = nullptr;
};

// Retires the op's reference on its task (the last one publishes) and
// frees the op.
void retire(op_ptr op, status code, std::uint64_t bytes) noexcept;

}  // namespace faultlane::detail
