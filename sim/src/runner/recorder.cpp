// recorder: see recorder.hpp.
#include "runner/recorder.hpp"

#include "faultlane/base/assert.hpp"

namespace faultlane::sim {
namespace {
thread_local const std::vector<std::uint64_t>* submitting_ops = nullptr;
thread_local std::size_t submitting_next = 0;
}  // namespace

submit_scope::submit_scope(const std::vector<std::uint64_t>& op_ids) {
  submitting_ops = &op_ids;
  submitting_next = 0;
}

submit_scope::~submit_scope() { submitting_ops = nullptr; }

std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::task_submitted: return "task_submitted";
    case event_kind::task_finalized: return "task_finalized";
    case event_kind::slice_dispatched: return "slice_dispatched";
    case event_kind::lane_connected: return "lane_connected";
    case event_kind::lane_closed: return "lane_closed";
    case event_kind::stale_handler_dropped: return "stale_handler_dropped";
    case event_kind::server_executed: return "server_executed";
    case event_kind::session_opened: return "session_opened";
    case event_kind::lease_acquired: return "lease_acquired";
    case event_kind::lease_released: return "lease_released";
    case event_kind::admission_changed: return "admission_changed";
  }
  return "unknown";
}

std::uint64_t recorder::now_us() const {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                        net::clock::now() - start_)
                                        .count());
}

std::uint64_t recorder::add_op(op_record op) {
  std::lock_guard lock(mutex_);
  op.id = history_.ops.size() + 1;
  op.submit_seq = next_seq();
  op.submit_us = now_us();
  history_.ops.push_back(std::move(op));
  return history_.ops.back().id;
}

void recorder::complete_op(std::uint64_t id, status outcome, std::uint64_t bytes,
                           std::vector<std::byte> data) {
  std::lock_guard lock(mutex_);
  FL_ASSERT(id >= 1 && id <= history_.ops.size());
  auto& op = history_.ops[id - 1];
  if (++op.callbacks == 1) ops_done_.fetch_add(1, std::memory_order_acq_rel);
  op.complete_seq = next_seq();
  op.complete_us = now_us();
  op.outcome = outcome;
  op.bytes = bytes;
  if (enabled_ && op.callbacks == 1) op.data = std::move(data);  // a second callback has none
}

void recorder::fail_submit(std::uint64_t id, status why) {
  std::lock_guard lock(mutex_);
  auto& op = history_.ops[id - 1];
  FL_ASSERT(op.complete_seq == 0);  // a refused op never ran
  op.submit_failed = true;
  op.outcome = op.batch_status = why;
  op.complete_seq = next_seq();
  op.complete_us = now_us();
  ops_done_.fetch_add(1, std::memory_order_acq_rel);
}

void recorder::set_task_id(std::uint64_t id, std::uint64_t task_id) {
  std::lock_guard lock(mutex_);
  history_.ops[id - 1].task_id = task_id;
}

void recorder::set_batch_status(std::uint64_t id, status s) {
  std::lock_guard lock(mutex_);
  history_.ops[id - 1].batch_status = s;
}

void recorder::add_event(core_event e) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (history_.events.size() >= events_max) {
    overflowed_.store(true, std::memory_order_release);
    return;
  }
  e.seq = next_seq();
  e.time_us = now_us();
  history_.events.push_back(std::move(e));
}

std::uint64_t recorder::add_mark(std::string kind, std::string text, bool ok) {
  std::lock_guard lock(mutex_);
  auto seq = next_seq();
  history_.marks.push_back({seq, now_us(), std::move(kind), std::move(text), ok});
  return seq;
}

history recorder::take() {
  std::lock_guard lock(mutex_);
  return std::move(history_);
}

void recording_observer::emit(core_event&& e) {
  if (sink_) {
    sink_(std::move(e));
  } else if (recorder_) {
    recorder_->add_event(std::move(e));
  }
}

core_event recording_observer::base(event_kind kind) const {
  core_event e;
  e.transport = transport_;
  e.incarnation = incarnation_;
  e.kind = kind;
  return e;
}

namespace {
core_event& fill_task(core_event& e, const task_event& t) {
  e.task_id = t.task_id;
  e.op = t.op;
  e.segment = t.segment;
  e.registration_id = t.registration_id;
  e.remote_offset = t.remote_offset;
  e.length = t.length;
  return e;
}
}  // namespace

void recording_observer::task_submitted(const task_event& t) {
  auto e = base(event_kind::task_submitted);
  fill_task(e, t);
  if (recorder_ && submitting_ops != nullptr && submitting_next < submitting_ops->size()) {
    recorder_->set_task_id((*submitting_ops)[submitting_next++], t.task_id);
  }
  emit(std::move(e));
}

void recording_observer::task_finalized(const task_event& t, status s, std::uint64_t bytes) {
  auto e = base(event_kind::task_finalized);
  fill_task(e, t);
  e.outcome = s;
  e.bytes = bytes;
  emit(std::move(e));
}

void recording_observer::slice_dispatched(const slice_event& s) {
  auto e = base(event_kind::slice_dispatched);
  e.task_id = s.task_id;
  e.request_id = s.request_id;
  e.segment = s.segment;
  e.lane = s.lane;
  e.rail = s.rail;
  e.offset = s.offset;
  e.length = s.length;
  emit(std::move(e));
}

namespace {
core_event& fill_lane(core_event& e, const lane_event& l) {
  e.segment = l.segment;
  e.lane = l.lane;
  e.rail = l.rail;
  e.epoch = l.epoch;
  return e;
}
}  // namespace

void recording_observer::lane_connected(const lane_event& l) {
  auto e = base(event_kind::lane_connected);
  fill_lane(e, l);
  e.local = l.local.str();
  e.remote = l.remote.str();
  emit(std::move(e));
}

void recording_observer::lane_closed(const lane_event& l, status why) {
  auto e = base(event_kind::lane_closed);
  fill_lane(e, l).outcome = why;
  emit(std::move(e));
}

void recording_observer::stale_handler_dropped(const lane_event& l) {
  auto e = base(event_kind::stale_handler_dropped);
  emit(std::move(fill_lane(e, l)));
}

void recording_observer::server_executed(const served_event& s) {
  auto e = base(event_kind::server_executed);
  e.op = s.op;
  e.request_id = s.request_id;
  e.registration_id = s.registration_id;
  e.remote_offset = s.remote_offset;
  e.length = s.length;
  e.outcome = s.outcome;
  emit(std::move(e));
}

void recording_observer::session_opened(const endpoint& local, const endpoint& remote) {
  auto e = base(event_kind::session_opened);
  e.local = local.str();
  e.remote = remote.str();
  emit(std::move(e));
}

void recording_observer::lease_acquired(std::uint64_t registration) {
  auto e = base(event_kind::lease_acquired);
  e.registration_id = registration;
  emit(std::move(e));
}

void recording_observer::lease_released(std::uint64_t registration) {
  auto e = base(event_kind::lease_released);
  e.registration_id = registration;
  emit(std::move(e));
}

void recording_observer::admission_changed(std::uint64_t tasks, std::uint64_t bytes) {
  auto e = base(event_kind::admission_changed);
  e.tasks = tasks;
  e.admitted_bytes = bytes;
  emit(std::move(e));
}

}  // namespace faultlane::sim
