// checkers_slices: the slice-coverage checker.
//
// A READ is split over rails by plan_read_slices(), the same function the
// core dispatches with, so the expected slices are computed, not guessed.
// The checker holds the core's slice_dispatched events and the relay taps
// of every tapped rail to that plan: nothing off-plan is sent, and an ok
// READ sent every planned slice on its rail.
#include <fmt/format.h>

#include <map>
#include <set>
#include <unordered_map>

#include "checkers/checkers_support.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/slice_plan.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

using detail::hex;

constexpr std::string_view slices_name = checker_name(check_slice_coverage);

struct tapped_read {
  const link_record* link = nullptr;
  const relays::tap_record* frame = nullptr;
};

// A READ below the slicing threshold is one exchange of the whole length
// on whichever lane, and so rail, the peer's rotation picks
// (docs/architecture.md): its plan slice matches any rail.
constexpr std::size_t any_rail = SIZE_MAX;

bool on_rail(const slice& planned, std::size_t rail) {
  return planned.rail == any_rail || planned.rail == rail;
}

std::vector<slice> planned_slices(const history& h, const detail::history_index& index,
                                  const op_record& op) {
  const auto* inc = index.incarnation(op.initiator, op.initiator_incarnation);
  std::size_t rails = inc != nullptr ? inc->rails : 1;
  auto step = h.slice_step_bytes != 0 ? h.slice_step_bytes : limits::slice_step_bytes;
  if (!read_is_sliced(op.length, rails, step)) return {slice{any_rail, 0, op.length}};
  auto plan = plan_read_slices(op.length, rails, step);
  return {plan.begin(), plan.end()};
}

std::string show(const std::vector<slice>& plan, std::uint64_t base) {
  std::string out;
  for (const auto& s : plan) {
    auto rail = s.rail == any_rail ? std::string("any") : std::to_string(s.rail);
    out += fmt::format("{}rail {} [{}, {})", out.empty() ? "" : ", ", rail, base + s.offset,
                       base + s.offset + s.length);
  }
  return out;
}

class slice_check {
 public:
  slice_check(const history& h, const detail::history_index& index, checker_result& r)
      : h_(h), index_(index), r_(r) {
    for (const auto& link : h.links) {
      if (!link.tapped) continue;
      tapped_links_[{link.initiator, link.target}].insert(link.rail);
      for (const auto& t : link.tap) {
        if (t.kind == relays::record_kind::frame && t.dir == relays::direction::up && t.request &&
            t.op == wire::opcode::read) {
          reads_[t.request_id].push_back({&link, &t});
        }
      }
    }
  }

  void run() {
    for (const auto& op : h_.ops) {
      if (op.op != wire::opcode::read || op.submit_failed || op.length == 0) continue;
      ++r_.checked;
      auto plan = planned_slices(h_, index_, op);
      check_dispatches(op, plan);
      check_taps(op, plan);
    }
  }

 private:
  void add(const op_record& op, std::string evidence, std::uint64_t seq = 0) {
    r_.violations.push_back(
        detail::op_violation(slices_name, index_, op, std::move(evidence), seq));
  }
  static bool ended_ok(const op_record& op) {
    return op.complete_seq != 0 && op.outcome == status::ok;
  }
  void check_dispatches(const op_record& op, const std::vector<slice>& plan);
  void check_taps(const op_record& op, const std::vector<slice>& plan);

  const history& h_;
  const detail::history_index& index_;
  checker_result& r_;
  std::map<std::pair<std::string, std::string>, std::set<std::size_t>> tapped_links_;
  std::unordered_map<std::uint64_t, std::vector<tapped_read>> reads_;
};

void slice_check::check_dispatches(const op_record& op, const std::vector<slice>& plan) {
  const auto* t = index_.trace(op);
  std::vector<bool> sent(plan.size(), false);
  for (const auto* d : t != nullptr ? t->slices : std::vector<const core_event*>{}) {
    bool planned = false;
    for (std::size_t i = 0; i < plan.size(); ++i) {
      if (on_rail(plan[i], d->rail) && plan[i].offset == d->offset && plan[i].length == d->length) {
        planned = sent[i] = true;
      }
    }
    if (planned) continue;
    auto v = detail::op_violation(
        slices_name, index_, op,
        fmt::format("READ of {} bytes dispatched request {} on rail {} for task bytes [{}, {}), "
                    "which is not in the plan: {}",
                    op.length, hex(d->request_id), d->rail, d->offset, d->offset + d->length,
                    show(plan, 0)),
        d->seq);
    v.request_id = d->request_id;
    r_.violations.push_back(std::move(v));
  }
  if (!ended_ok(op)) return;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (sent[i]) continue;
    add(op, fmt::format("READ of {} bytes ended ok but planned slice {} of the task was never "
                        "dispatched (plan: {})",
                        op.length, show({plan[i]}, 0), show(plan, 0)));
  }
}

void slice_check::check_taps(const op_record& op, const std::vector<slice>& plan) {
  const auto* t = index_.trace(op);
  if (t == nullptr) return;
  std::map<std::uint64_t, std::size_t> rail_of;  // request id -> the rail it was dispatched on
  for (const auto* d : t->slices) rail_of.emplace(d->request_id, d->rail);
  std::vector<bool> seen(plan.size(), false);
  for (const auto& [id, dispatched_rail] : rail_of) {
    auto it = reads_.find(id);
    if (it == reads_.end()) continue;
    // An unsliced READ may take any rail, but its frames travel on the rail
    // its own dispatch named.
    auto here = plan;
    for (auto& s : here) s.rail = s.rail == any_rail ? dispatched_rail : s.rail;
    for (const auto& [link, frame] : it->second) {
      bool planned = false;
      for (std::size_t i = 0; i < here.size(); ++i) {
        if (here[i].rail == link->rail && op.offset + here[i].offset == frame->remote_offset &&
            here[i].length == frame->length) {
          planned = seen[i] = true;
        }
      }
      if (planned) continue;
      auto v = detail::op_violation(
          slices_name, index_, op,
          fmt::format("tap of link {} (rail {}) saw READ request {} for region bytes [{}, {}), "
                      "which is not in the plan: {}",
                      link->name, link->rail, hex(id), frame->remote_offset,
                      frame->remote_offset + frame->length, show(here, op.offset)));
      v.request_id = id;
      r_.violations.push_back(std::move(v));
    }
  }
  if (!ended_ok(op)) return;
  auto tapped = tapped_links_.find({op.initiator, op.target});
  if (tapped == tapped_links_.end()) return;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    // An unsliced READ is looked for on the rail it was dispatched on.
    auto rail = plan[i].rail;
    if (rail == any_rail) rail = t->slices.empty() ? any_rail : t->slices.front()->rail;
    if (seen[i] || tapped->second.count(rail) == 0) continue;
    add(op, fmt::format("READ ended ok but the tapped link of rail {} never saw its planned "
                        "slice [{}, {}) (plan: {})",
                        rail, op.offset + plan[i].offset,
                        op.offset + plan[i].offset + plan[i].length, show(plan, op.offset)));
  }
}

}  // namespace

checker_result detail::slice_coverage_by_index(const history& h,
                                               const detail::history_index& index) {
  checker_result r{.name = std::string(slices_name)};
  slice_check(h, index, r).run();
  return r;
}

checker_result check_slice_coverage(const history& h) {
  return detail::slice_coverage_by_index(h, detail::history_index(h));
}

}  // namespace faultlane::sim
