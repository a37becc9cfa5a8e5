// Submitting work: every request is checked against its segment, the batch
// is admitted as a whole, and each task is dispatched as one frame exchange
// (or one per rail for a sliced READ); finalize_task publishes a task's one
// terminal status. transfer_batch is the caller's view of the tasks.
#include <fmt/format.h>

#include <array>
#include <memory>
#include <span>
#include <thread>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/core/slice_plan.hpp"
#include "transport_impl.hpp"

namespace faultlane {

using namespace std::chrono;

// --- transfer_batch ------------------------------------------------------------

transfer_batch::transfer_batch(state_ptr s, std::size_t size) : state_(std::move(s)), size_(size) {
  FL_ASSERT(state_ != nullptr && size_ > 0);
  FL_ASSERT(state_->size == size_);
}

transfer_batch::~transfer_batch() = default;

// The state and its tasks go back to the pool they came from; the pool
// itself goes once nothing holds it any more.
void transfer_batch::state_delete::operator()(state* s) const noexcept {
  auto memory = std::move(s->memory);
  auto* tasks = s->tasks;
  const std::size_t size = s->size;
  s->~state();
  if (tasks != nullptr) {
    std::destroy_n(tasks, size);
    memory->deallocate(tasks, size * sizeof(detail::task_state), alignof(detail::task_state));
  }
  memory->deallocate(s, sizeof(state), alignof(state));
}

namespace {

// A batch's state with `size` default tasks, in `memory`.
transfer_batch::state_ptr make_state(const std::shared_ptr<detail::batch_memory>& memory,
                                     std::size_t size) {
  // Each block goes back to the pool if what is built in it throws; once
  // the state exists its deleter frees it, and `tasks` is set only when
  // every task exists.
  auto built = [&memory](std::size_t bytes, std::size_t align, auto build) {
    void* block = memory->allocate(bytes, align);
    try {
      return build(block);
    } catch (...) {
      memory->deallocate(block, bytes, align);
      throw;
    }
  };
  transfer_batch::state_ptr state(
      built(sizeof(transfer_batch::state), alignof(transfer_batch::state),
            [](void* block) { return new (block) transfer_batch::state(); }));
  state->memory = memory;
  state->tasks =
      built(size * sizeof(detail::task_state), alignof(detail::task_state), [size](void* block) {
        auto* tasks = static_cast<detail::task_state*>(block);
        std::uninitialized_value_construct_n(tasks, size);
        return tasks;
      });
  state->size = size;
  return state;
}

}  // namespace

task_status transfer_batch::status(std::size_t index) const {
  FL_ASSERT(index < size_);
  const auto& t = state_->tasks[index];
  task_status out;
  out.done = t.done.load(std::memory_order_acquire);
  out.code = static_cast<faultlane::status>(t.code.load(std::memory_order_acquire));
  out.transferred_bytes = t.bytes.load(std::memory_order_acquire);
  return out;
}

std::size_t transfer_batch::completed() const {
  const auto done = state_->completed.load(std::memory_order_acquire);
  FL_ASSERT(done <= size_);
  return done;
}

bool transfer_batch::wait(milliseconds timeout) const {
  FL_ASSERT(timeout.count() >= 0);
  // Small batches on a fast path finish within microseconds; a short spin
  // saves the waiter a sleep and a wake-up, which would double a 4 KiB
  // READ's latency. Past it, the waiter blocks.
  // (Not in the dsim build: its clock moves only when the world steps.)
  constexpr auto spin = net::simulated ? microseconds(0) : microseconds(50);
  for (auto until = net::clock::now() + std::min<net::clock::duration>(spin, timeout);
       net::clock::now() < until;) {
    if (completed() == size_) return true;
    net::yield();
  }
  std::unique_lock lock(state_->mutex);
  return state_->all_done.wait_for(lock, timeout, [&] { return completed() == size_; });
}

// Checks every request against its segment; the caller holds groups_mutex.
result<std::uint64_t> transport::impl::check_batch(std::span<const transfer_request> requests,
                                                   std::span<detail::peer_group*> targets) const {
  FL_ASSERT(targets.size() == requests.size());
  std::uint64_t total_bytes = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    auto it = groups.find(r.segment);
    if (it == groups.end()) {
      return error{status::invalid_argument,
                   fmt::format("request {}: unknown or closed segment {}", i, r.segment)};
    }
    auto limit =
        std::min(rt.config.max_transfer_bytes, it->second->descriptor().max_transfer_bytes);
    if (r.local == nullptr || r.length == 0 || r.length > limit) {
      return error{status::invalid_argument,
                   fmt::format("request {}: needs a local buffer and 1 <= length <= {} (got {})", i,
                               limit, r.length)};
    }
    if (r.op != wire::opcode::read && r.op != wire::opcode::write) {
      return error{status::invalid_argument, fmt::format("request {}: unknown opcode", i)};
    }
    if (r.remote_offset > UINT64_MAX - r.length) {
      return error{status::invalid_argument, fmt::format("request {}: offset overflows", i)};
    }
    if (r.start_deadline_ms > limits::timeout_ms_max) {
      return error{status::invalid_argument,
                   fmt::format("request {}: start_deadline_ms must be at most {}, got {}", i,
                               limits::timeout_ms_max, r.start_deadline_ms)};
    }
    total_bytes += r.length;
    targets[i] = it->second.get();
  }
  return total_bytes;
}

result<std::shared_ptr<transfer_batch>> transport::impl::submit(
    std::span<const transfer_request> requests, task_callback callback) {
  if (rt.failed.load(std::memory_order_acquire)) {
    FAULTLANE_PROBE(submit_after_runtime_failed);
    return error{status::runtime_failed, "transport runtime failed; new work is rejected"};
  }
  if (rt.closing.load(std::memory_order_acquire)) {
    FAULTLANE_PROBE(submit_while_shutting_down);
    return error{status::shutting_down, "transport is shutting down"};
  }
  if (requests.empty()) return error{status::invalid_argument, "submit: empty batch"};

  // Held until every op is dispatched, so close_segment() never misses one,
  // and no group named in `targets` goes away.
  std::shared_lock lock(groups_mutex);
  std::array<detail::peer_group*, 32> few{};
  std::vector<detail::peer_group*> many;  // only for larger batches
  if (requests.size() > few.size()) many.resize(requests.size());
  const std::span<detail::peer_group*> targets =
      many.empty() ? std::span(few).first(requests.size()) : std::span(many);
  auto checked = check_batch(requests, targets);
  if (!checked.ok()) return checked.error();
  const std::uint64_t total_bytes = checked.value();

  auto reserved = rt.admission_control.try_reserve(requests.size(), total_bytes);
  if (!reserved.ok()) return reserved.error();

  auto state = make_state(memory, requests.size());
  state->rt = &rt;
  state->callback = std::move(callback);
  auto* raw_state = state.get();
  auto batch = std::allocate_shared<transfer_batch>(
      detail::pooled_allocator<transfer_batch>(memory), std::move(state), requests.size());

  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    auto& task = raw_state->tasks[i];
    task.index = i;
    task.reservation = reserved->split(1, r.length);
    task.info = {rt.next_task_id.fetch_add(1, std::memory_order_relaxed),
                 r.op,
                 r.segment,
                 r.remote_registration,
                 r.remote_offset,
                 r.length};
    const bool sliced =
        r.op == wire::opcode::read && read_is_sliced(r.length, targets[i]->rail_count());
    const std::uint32_t references =
        sliced ? static_cast<std::uint32_t>(targets[i]->rail_count()) : 1;
    task.settle.emplace(terminal_action([this, raw_state, i](status code, std::uint64_t bytes) {
                          finalize_task(*raw_state, i, code, bytes);
                        }),
                        references);
    detail::bump(rt.stats.tasks_submitted);
    if (rt.observer) rt.observer->task_submitted(task.info);
  }
  if (rt.observer) {
    auto snap = rt.admission_control.snapshot();
    rt.observer->admission_changed(snap.tasks, snap.bytes);
  }
  detail::lane_handoff handoff(rt);
  for (std::size_t i = 0; i < requests.size(); ++i)
    dispatch(requests[i], raw_state->tasks[i], batch, *targets[i], handoff);
  handoff.flush();
  FL_ASSERT(batch->size() == requests.size());
  return batch;
}

// One frame exchange per task, or for a sliced READ one per rail: each
// slice goes to the next lane of its rail, and all complete as one task.
// A whole task joins `handoff`, which gives each lane its share of the
// batch at once; slices go out one by one (see submit.before_slice).
void transport::impl::dispatch(const transfer_request& r, detail::task_state& task,
                               const std::shared_ptr<transfer_batch>& batch,
                               detail::peer_group& group, detail::lane_handoff& handoff) {
  const auto start_by = net::clock::now() + milliseconds(r.start_deadline_ms);
  auto make_op = [&](std::uint64_t offset, std::uint64_t length) {
    FL_ASSERT(length > 0 && offset <= r.length && length <= r.length - offset);
    auto op = detail::make_pooled<detail::transfer_op>(memory);
    op->task = &task;
    op->batch = batch;
    op->op = r.op;
    op->local = static_cast<std::byte*>(r.local) + offset;
    op->length = length;
    op->remote_registration = r.remote_registration;
    op->remote_offset = r.remote_offset + offset;
    op->slice_offset = offset;
    if (r.start_deadline_ms > 0) op->start_by = start_by;
    op->request_id = rt.next_request_id.fetch_add(1, std::memory_order_relaxed);
    return op;
  };
  if (r.op != wire::opcode::read || !read_is_sliced(r.length, group.rail_count())) {
    return handoff.add(group.next_lane(), make_op(0, r.length));
  }
  // Whatever the batch handed to lanes before this task leaves first, so
  // each lane still sees the batch's work in submit order.
  handoff.flush();
  auto plan = plan_read_slices(r.length, group.rail_count());
  FL_ASSERT(plan.size() == group.rail_count());
  FL_ASSERT(task.slice_lanes.empty());
  // All lanes are chosen before any slice starts, so a failing slice always
  // finds the full list of siblings to cancel.
  for (const auto& s : plan) task.slice_lanes.push_back(group.lane_for_rail(s.rail));
  for (std::size_t k = 0; k < plan.size(); ++k) {
    // Schedule perturbation: a delay here lets the first slice run, and
    // fail, before its siblings even reach their lanes.
    if (k > 0) (void)FAULTLANE_FAILPOINT("submit.before_slice");
    auto op = make_op(plan[k].offset, plan[k].length);
    op->rail = plan[k].rail;
    detail::peer_group::dispatch(rt, task.slice_lanes[k], std::move(op));
  }
}

void transport::impl::finalize_task(transfer_batch::state& batch, std::size_t index, status code,
                                    std::uint64_t bytes) {
  FL_ASSERT(index < batch.size);
  auto& task = batch.tasks[index];
  FL_ASSERT(!task.done.load(std::memory_order_acquire));  // exactly once
  // Every slice retired: drop the lane references, so a batch the caller
  // keeps never keeps lanes (and their sockets) alive.
  task.slice_lanes.clear();
  task.reservation.release();
  task.code.store(static_cast<std::uint16_t>(code), std::memory_order_release);
  task.bytes.store(bytes, std::memory_order_release);
  detail::bump(rt.stats.tasks_completed);
  if (code == status::ok) detail::bump(rt.stats.bytes_completed, bytes);
  detail::bump(rt.stats.failures_by_status[static_cast<int>(code)]);
  if (rt.observer) {
    rt.observer->task_finalized(task.info, code, bytes);
    auto snap = rt.admission_control.snapshot();
    rt.observer->admission_changed(snap.tasks, snap.bytes);
  }
  // A throwing callback marks the runtime failed; the task is still done.
  if (batch.callback) detail::run_guarded(rt, [&] { batch.callback(index, code, bytes); });
  task.done.store(true, std::memory_order_release);
  if (batch.completed.fetch_add(1, std::memory_order_acq_rel) + 1 != batch.size) return;
  std::lock_guard lock(batch.mutex);
  batch.all_done.notify_all();
}

}  // namespace faultlane
