// checkers_support: what the checkers share when they read a history.
//
// The indexes every checker needs (a task's observer events, the op that a
// request id belongs to, an incarnation's limits) and the small formatting
// helpers that keep their messages alike: request ids in hex, transports as
// "name#incarnation", byte values as two hex digits. Private to the
// checkers library.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "faultlane/sim/checkers.hpp"
#include "faultlane/sim/history.hpp"

namespace faultlane::sim::detail {

// A task as the core knows it: task ids are unique per transport
// incarnation, not across restarts.
struct task_key {
  std::string transport;
  std::uint32_t incarnation = 0;
  std::uint64_t task_id = 0;
  friend auto operator<=>(const task_key&, const task_key&) = default;
};

task_key key_of(const op_record& op);
task_key key_of(const core_event& e);

// The observer events of one task, each list in seq order.
struct task_trace {
  std::vector<const core_event*> submitted;
  std::vector<const core_event*> finalized;
  std::vector<const core_event*> slices;
};

// Tasks, request ids and ops, cross-referenced once per checker run:
// run_checkers builds one and every checker below reads it (a checker
// called alone builds its own).
class history_index {
 public:
  explicit history_index(const history& h);
  // Indexes built in this process so far (a test counts run_checkers' one).
  static std::uint64_t built();

  const task_trace* trace(const task_key& k) const;
  const task_trace* trace(const op_record& op) const;
  // The op whose task dispatched `request_id`, or null.
  const op_record* op_of_request(std::uint64_t request_id) const;
  // The op that carries task `k`, or null.
  const op_record* op_of_task(const task_key& k) const;
  const incarnation_record* incarnation(std::string_view transport, std::uint32_t index) const;
  // server_executed events for a request id (any target), in seq order.
  const std::vector<const core_event*>& executions(std::uint64_t request_id) const;
  const std::map<task_key, task_trace>& traces() const { return traces_; }

 private:
  const history& h_;
  std::map<task_key, task_trace> traces_;
  std::map<task_key, const op_record*> op_by_task_;
  std::unordered_map<std::uint64_t, const op_record*> op_by_request_;
  std::unordered_map<std::uint64_t, std::vector<const core_event*>> executions_;
};

// Each checker over an index its caller built: check_X(h) builds one and
// calls X_by_index; run_checkers builds one for them all. The table is
// checker_table's, row for row (checkers.cpp asserts it).
checker_result exactly_once_by_index(const history& h, const history_index& index);
checker_result data_integrity_by_index(const history& h, const history_index& index);
checker_result no_replay_by_index(const history& h, const history_index& index);
checker_result slice_coverage_by_index(const history& h, const history_index& index);
checker_result stale_rejection_by_index(const history& h, const history_index& index);
checker_result bounds_by_index(const history& h, const history_index& index);
checker_result drained_shutdown_by_index(const history& h, const history_index& index);
checker_result liveness_by_index(const history& h, const history_index& index);
checker_result expectations_by_index(const scenario& s, const history& h,
                                     const history_index& index);

struct indexed_checker {
  checker_result (*check)(const history&);
  checker_result (*by_index)(const history&, const history_index&);
};
inline constexpr indexed_checker indexed_checkers[] = {
    {check_exactly_once, exactly_once_by_index},
    {check_data_integrity, data_integrity_by_index},
    {check_no_replay, no_replay_by_index},
    {check_slice_coverage, slice_coverage_by_index},
    {check_stale_rejection, stale_rejection_by_index},
    {check_bounds, bounds_by_index},
    {check_drained_shutdown, drained_shutdown_by_index},
    {check_liveness, liveness_by_index},
};

std::string hex(std::uint64_t v);
// A status by its to_string() name.
std::optional<status> status_named(std::string_view text);
// A count range for a message: "3", ">=1", "<=2", "2..5".
std::string show(const count_range& c);
// `control:` callers: outcomes against `allow:`, and `expect.control`.
void check_callers(const scenario& s, const history& h, checker_result& r);
std::string name_of(std::string_view transport, std::uint32_t incarnation);  // "server#1"

// A violation about an op: op id, task, its first request id, initiator,
// and `seq` (the op's completion, else its submit, unless given).
violation op_violation(std::string_view checker, const history_index& index, const op_record& op,
                       std::string evidence, std::uint64_t seq = 0);
// A violation about one observer event (its transport, seq, task and
// request id, and the op when the index knows it).
violation event_violation(std::string_view checker, const history_index& index, const core_event& e,
                          std::string evidence);

// The first request id a task dispatched, 0 if none.
std::uint64_t first_request_id(const history_index& index, const op_record& op);

}  // namespace faultlane::sim::detail
