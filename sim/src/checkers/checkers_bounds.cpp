// checkers_bounds: the stale-rejection and bounds checkers.
//
// Stale rejection: a target moves data only for a registration id that is
// live in its current incarnation. Bounds: admission, sessions and leases
// stay within the limits of the incarnation that reported them, at every
// point the history observed.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "checkers/checkers_support.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

using detail::hex;
using detail::name_of;

constexpr std::string_view stale_name = checker_name(check_stale_rejection);
constexpr std::string_view bounds_name = checker_name(check_bounds);

std::string_view op_name(wire::opcode op) { return op == wire::opcode::write ? "WRITE" : "READ"; }

// Why registration `e.registration_id` was not live at `e`, or empty.
std::string stale_reason(const history& h, const core_event& e) {
  const registration_record* here = nullptr;
  const registration_record* elsewhere = nullptr;
  for (const auto& reg : h.registrations) {
    if (reg.transport != e.transport || reg.id != e.registration_id) continue;
    if (reg.incarnation != e.incarnation) {
      elsewhere = &reg;
      continue;
    }
    bool live =
        reg.registered_seq < e.seq && (reg.unregistered_seq == 0 || e.seq < reg.unregistered_seq);
    if (live) return {};
    here = &reg;
  }
  auto id = hex(e.registration_id);
  if (here != nullptr && here->registered_seq >= e.seq) {
    return fmt::format("registration {} ({}) was registered only at seq {}", id, here->region,
                       here->registered_seq);
  }
  if (here != nullptr) {
    return fmt::format("registration {} ({}) was unregistered at seq {}", id, here->region,
                       here->unregistered_seq);
  }
  if (elsewhere != nullptr) {
    return fmt::format("registration {} ({}) belongs to incarnation {}, not {}", id,
                       elsewhere->region, elsewhere->incarnation, e.incarnation);
  }
  return fmt::format("registration {} was never registered on {}", id, e.transport);
}

}  // namespace

checker_result detail::stale_rejection_by_index(const history& h,
                                                const detail::history_index& index) {
  checker_result r{.name = std::string(stale_name)};
  for (const auto& e : h.events) {
    if (e.kind != event_kind::server_executed || e.outcome != status::ok) continue;
    ++r.checked;
    auto why = stale_reason(h, e);
    if (why.empty()) continue;
    r.violations.push_back(
        detail::event_violation(stale_name, index, e,
                                fmt::format("{} executed {} [{}, {}) with a stale id: {}",
                                            name_of(e.transport, e.incarnation), op_name(e.op),
                                            e.remote_offset, e.remote_offset + e.length, why)));
  }
  return r;
}

checker_result check_stale_rejection(const history& h) {
  return detail::stale_rejection_by_index(h, detail::history_index(h));
}

namespace {

void add_bound(checker_result& r, std::string transport, std::uint64_t seq, std::string evidence) {
  r.violations.push_back(violation{.checker = std::string(bounds_name),
                                   .transport = std::move(transport),
                                   .seq = seq,
                                   .evidence = std::move(evidence)});
}

void check_admission(const history& h, const detail::history_index& index, checker_result& r) {
  for (const auto& e : h.events) {
    if (e.kind != event_kind::admission_changed) continue;
    ++r.checked;
    const auto* inc = index.incarnation(e.transport, e.incarnation);
    if (inc == nullptr) continue;
    auto who = name_of(e.transport, e.incarnation);
    if (e.tasks > inc->max_outstanding_tasks) {
      add_bound(r, e.transport, e.seq,
                fmt::format("{} admitted {} tasks, over max_outstanding_tasks {}", who, e.tasks,
                            inc->max_outstanding_tasks));
    }
    if (e.admitted_bytes > inc->max_outstanding_bytes) {
      add_bound(r, e.transport, e.seq,
                fmt::format("{} admitted {} bytes, over max_outstanding_bytes {}", who,
                            e.admitted_bytes, inc->max_outstanding_bytes));
    }
  }
}

void check_stats(const history& h, const detail::history_index& index, checker_result& r) {
  for (const auto& s : h.stats) {
    ++r.checked;
    const auto* inc = index.incarnation(s.transport, s.incarnation);
    if (inc == nullptr) continue;
    auto who = name_of(s.transport, s.incarnation);
    auto over = [&](std::string_view what, std::uint64_t seen, std::string_view limit,
                    std::uint64_t bound) {
      if (seen <= bound) return;
      add_bound(r, s.transport, s.seq,
                fmt::format("stats of {}: {} {}, over {} {}", who, what, seen, limit, bound));
    };
    over("sessions_live", s.stats.sessions_live, "max_connections", inc->max_connections);
    over("tasks_admitted_now", s.stats.tasks_admitted_now, "max_outstanding_tasks",
         inc->max_outstanding_tasks);
    over("bytes_admitted_now", s.stats.bytes_admitted_now, "max_outstanding_bytes",
         inc->max_outstanding_bytes);
  }
}

// Leases per transport incarnation: never more released than acquired, and
// none left after a clean shutdown.
void check_leases(const history& h, checker_result& r) {
  std::vector<const core_event*> leases;
  for (const auto& e : h.events) {
    if (e.kind == event_kind::lease_acquired || e.kind == event_kind::lease_released) {
      leases.push_back(&e);
    }
  }
  std::stable_sort(leases.begin(), leases.end(),
                   [](const core_event* a, const core_event* b) { return a->seq < b->seq; });
  std::map<std::pair<std::string, std::uint32_t>, std::int64_t> live;
  std::set<std::pair<std::string, std::uint32_t>> reported;  // the first underflow says it all
  for (const auto* e : leases) {
    ++r.checked;
    auto& n = live[{e->transport, e->incarnation}];
    n += e->kind == event_kind::lease_acquired ? 1 : -1;
    if (n >= 0 || !reported.insert({e->transport, e->incarnation}).second) continue;
    add_bound(r, e->transport, e->seq,
              fmt::format("{} released a lease of registration {} with none held ({} live)",
                          name_of(e->transport, e->incarnation), hex(e->registration_id), n));
  }
  for (const auto& s : h.shutdowns) {
    if (s.result != status::ok) continue;
    auto it = live.find({s.transport, s.incarnation});
    if (it == live.end() || it->second <= 0) continue;
    add_bound(r, s.transport, s.end_seq,
              fmt::format("{} shut down cleanly with {} leases acquired and never released",
                          name_of(s.transport, s.incarnation), it->second));
  }
}

}  // namespace

// A relay never had more lasting fault effects in force than its cap.
void check_relay_effects(const history& h, checker_result& r) {
  for (const auto& l : h.links) {
    ++r.checked;
    if (l.active_faults_peak <= l.active_faults_max) continue;
    add_bound(r, l.initiator, 0,
              fmt::format("relay {} had {} lasting fault effects in force at once, over its "
                          "active_faults_max of {}",
                          l.name, l.active_faults_peak, l.active_faults_max));
  }
}

checker_result detail::bounds_by_index(const history& h, const detail::history_index& index) {
  checker_result r{.name = std::string(bounds_name)};
  check_admission(h, index, r);
  check_stats(h, index, r);
  check_leases(h, r);
  check_relay_effects(h, r);
  return r;
}

checker_result check_bounds(const history& h) {
  return detail::bounds_by_index(h, detail::history_index(h));
}

}  // namespace faultlane::sim
