// checkers_support: the history indexes and message helpers the checkers
// share (see checkers_support.hpp).
#include "checkers/checkers_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <utility>

namespace faultlane::sim::detail {

task_key key_of(const op_record& op) {
  return task_key{op.initiator, op.initiator_incarnation, op.task_id};
}

task_key key_of(const core_event& e) { return task_key{e.transport, e.incarnation, e.task_id}; }

namespace {
std::atomic<std::uint64_t> indexes_built{0};
}  // namespace

std::uint64_t history_index::built() { return indexes_built.load(std::memory_order_relaxed); }

history_index::history_index(const history& h) : h_(h) {
  indexes_built.fetch_add(1, std::memory_order_relaxed);
  for (const auto& e : h.events) {
    switch (e.kind) {
      case event_kind::task_submitted: traces_[key_of(e)].submitted.push_back(&e); break;
      case event_kind::task_finalized: traces_[key_of(e)].finalized.push_back(&e); break;
      case event_kind::slice_dispatched: traces_[key_of(e)].slices.push_back(&e); break;
      case event_kind::server_executed: executions_[e.request_id].push_back(&e); break;
      default: break;
    }
  }
  auto by_seq = [](const core_event* a, const core_event* b) { return a->seq < b->seq; };
  for (auto& [key, t] : traces_) {
    std::stable_sort(t.submitted.begin(), t.submitted.end(), by_seq);
    std::stable_sort(t.finalized.begin(), t.finalized.end(), by_seq);
    std::stable_sort(t.slices.begin(), t.slices.end(), by_seq);
  }
  for (auto& [id, list] : executions_) std::stable_sort(list.begin(), list.end(), by_seq);
  for (const auto& op : h.ops) {
    if (op.task_id == 0) continue;
    op_by_task_.emplace(key_of(op), &op);
    if (const auto* t = trace(op)) {
      for (const auto* s : t->slices) op_by_request_.emplace(s->request_id, &op);
    }
  }
}

const task_trace* history_index::trace(const task_key& k) const {
  auto it = traces_.find(k);
  return it == traces_.end() ? nullptr : &it->second;
}

const task_trace* history_index::trace(const op_record& op) const {
  return op.task_id == 0 ? nullptr : trace(key_of(op));
}

const op_record* history_index::op_of_request(std::uint64_t request_id) const {
  auto it = op_by_request_.find(request_id);
  return it == op_by_request_.end() ? nullptr : it->second;
}

const op_record* history_index::op_of_task(const task_key& k) const {
  auto it = op_by_task_.find(k);
  return it == op_by_task_.end() ? nullptr : it->second;
}

const incarnation_record* history_index::incarnation(std::string_view transport,
                                                     std::uint32_t index) const {
  for (const auto& r : h_.incarnations) {
    if (r.transport == transport && r.index == index) return &r;
  }
  return nullptr;
}

const std::vector<const core_event*>& history_index::executions(std::uint64_t request_id) const {
  static const std::vector<const core_event*> none;
  auto it = executions_.find(request_id);
  return it == executions_.end() ? none : it->second;
}

std::string hex(std::uint64_t v) { return fmt::format("{:#x}", v); }

std::optional<status> status_named(std::string_view text) {
  for (int i = 0; i < status_count; ++i) {
    auto s = static_cast<status>(i);
    if (to_string(s) == text) return s;
  }
  return std::nullopt;
}

std::string show(const count_range& c) {
  if (c.min == c.max) return fmt::format("{}", c.min);
  if (c.max == UINT64_MAX) return fmt::format(">={}", c.min);
  if (c.min == 0) return fmt::format("<={}", c.max);
  return fmt::format("{}..{}", c.min, c.max);
}

std::string name_of(std::string_view transport, std::uint32_t incarnation) {
  return fmt::format("{}#{}", transport, incarnation);
}

std::uint64_t first_request_id(const history_index& index, const op_record& op) {
  const auto* t = index.trace(op);
  return t == nullptr || t->slices.empty() ? 0 : t->slices.front()->request_id;
}

violation op_violation(std::string_view checker, const history_index& index, const op_record& op,
                       std::string evidence, std::uint64_t seq) {
  violation v;
  v.checker = std::string(checker);
  v.op_id = op.id;
  v.task_id = op.task_id;
  v.request_id = first_request_id(index, op);
  v.transport = op.initiator;
  v.seq = seq != 0 ? seq : (op.complete_seq != 0 ? op.complete_seq : op.submit_seq);
  v.evidence = std::move(evidence);
  return v;
}

violation event_violation(std::string_view checker, const history_index& index, const core_event& e,
                          std::string evidence) {
  violation v;
  v.checker = std::string(checker);
  v.task_id = e.task_id;
  v.request_id = e.request_id;
  v.transport = e.transport;
  v.seq = e.seq;
  v.evidence = std::move(evidence);
  const op_record* op = e.request_id != 0 ? index.op_of_request(e.request_id) : nullptr;
  if (op == nullptr && e.task_id != 0) op = index.op_of_task(key_of(e));
  if (op != nullptr) {
    v.op_id = op->id;
    v.task_id = op->task_id;
  }
  return v;
}

}  // namespace faultlane::sim::detail
