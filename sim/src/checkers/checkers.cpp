// checkers: describe(), run_checkers() and the exactly-once checker.
//
// The other checkers live in checkers_*.cpp, one concern per file; they
// share the history index of checkers_support.hpp.
#include "faultlane/sim/checkers.hpp"

#include <fmt/format.h>

#include <functional>
#include <future>
#include <set>

#include "checkers/checkers_support.hpp"
#include "faultlane/base/assert.hpp"

namespace faultlane::sim {

using detail::hex;
using detail::name_of;

std::string describe(const violation& v) {
  std::string where;
  if (v.op_id != 0) {
    where = fmt::format(" op {} (task {}, request {})", v.op_id, v.task_id, hex(v.request_id));
  } else if (v.task_id != 0 || v.request_id != 0) {
    where = fmt::format(" task {}, request {}", v.task_id, hex(v.request_id));
  }
  if (!v.transport.empty()) where += " on " + v.transport;
  if (v.seq != 0) where += fmt::format(" at seq {}", v.seq);
  return v.checker + (where.empty() ? "" : ":" + where) + ": " + v.evidence;
}

namespace {

constexpr std::string_view exactly_once_name = checker_name(check_exactly_once);

// The op-side half: one callback, a completion, a settled batch, and one
// task_submitted and one task_finalized with the op's outcome.
void check_op_once(const detail::history_index& index, const op_record& op, checker_result& r) {
  auto add = [&](std::string evidence) {
    r.violations.push_back(detail::op_violation(exactly_once_name, index, op, std::move(evidence)));
  };
  if (op.callbacks != 1) add(fmt::format("callback ran {} times, expected 1", op.callbacks));
  if (op.complete_seq == 0) add("never completed: no terminal status by the end of the run");
  // Only a WRITE can have run without the initiator knowing.
  if (op.op == wire::opcode::read && op.outcome == status::ambiguous_write) {
    add("a READ ended ambiguous_write");
  }
  if (op.batch_status != op.outcome) {
    add(fmt::format("batch status {} but task outcome {}", to_string(op.batch_status),
                    to_string(op.outcome)));
  }
  const auto* t = index.trace(op);
  std::size_t submitted = t == nullptr ? 0 : t->submitted.size();
  std::size_t finalized = t == nullptr ? 0 : t->finalized.size();
  auto task = name_of(op.initiator, op.initiator_incarnation);
  if (submitted != 1) {
    add(fmt::format("task_submitted seen {} times on {}, expected 1", submitted, task));
  }
  if (finalized != 1) {
    add(fmt::format("task_finalized seen {} times on {}, expected 1", finalized, task));
  }
  if (t != nullptr && !t->finalized.empty() && t->finalized.front()->outcome != op.outcome) {
    add(fmt::format("task_finalized says {} but the callback saw {}",
                    to_string(t->finalized.front()->outcome), to_string(op.outcome)));
  }
}

}  // namespace

checker_result detail::exactly_once_by_index(const history& h, const detail::history_index& index) {
  checker_result r{.name = std::string(exactly_once_name)};
  std::set<detail::task_key> known;
  for (const auto& op : h.ops) {
    if (op.task_id != 0) known.insert(detail::key_of(op));
    if (op.submit_failed) continue;
    ++r.checked;
    check_op_once(index, op, r);
  }
  // Finalizes no op accounts for: a task the runner never submitted.
  for (const auto& [key, t] : index.traces()) {
    if (known.count(key) != 0) continue;
    for (const auto* e : t.finalized) {
      r.violations.push_back(detail::event_violation(
          exactly_once_name, index, *e,
          fmt::format("task_finalized ({}) on {} for task {} that no op submitted",
                      to_string(e->outcome), name_of(key.transport, key.incarnation),
                      key.task_id)));
    }
  }
  return r;
}

checker_result check_exactly_once(const history& h) {
  return detail::exactly_once_by_index(h, detail::history_index(h));
}

// detail::indexed_checkers is checker_table, row for row, with each
// checker's version that reads an index its caller built.
static_assert([] {
  if (std::size(detail::indexed_checkers) != std::size(checker_table)) return false;
  for (std::size_t i = 0; i < std::size(checker_table); ++i) {
    const auto& c = detail::indexed_checkers[i];
    if (c.check != checker_table[i].check || c.by_index == nullptr) return false;
  }
  return true;
}());

std::vector<checker_result> run_checkers(const scenario& s, const history& h) {
  // One index for every checker (it outlives the futures that read it).
  const detail::history_index index(h);
  // Checkers only read the finished history, so each runs on its own
  // thread; the run's verdict waits for the slowest (the data checker).
  std::vector<std::future<checker_result>> running(std::size(checker_table));
  for (std::size_t i = 0; i < std::size(checker_table); ++i) {
    if (s.expect.checkers_off.count(std::string(checker_table[i].name)) != 0) continue;
    running[i] = std::async(std::launch::async, detail::indexed_checkers[i].by_index,
                            std::cref(h), std::cref(index));
  }
  auto expectations = detail::expectations_by_index(s, h, index);
  std::vector<checker_result> results;
  for (std::size_t i = 0; i < std::size(checker_table); ++i) {
    std::string name(checker_table[i].name);
    auto off = s.expect.checkers_off.find(name);
    if (off != s.expect.checkers_off.end()) {
      results.push_back(checker_result{.name = name, .ran = false, .reason_off = off->second});
      continue;
    }
    results.push_back(running[i].get());
    FL_ASSERT(results.back().name == name);  // a checker reports under its table name
  }
  results.push_back(std::move(expectations));
  return results;
}

}  // namespace faultlane::sim
