// checkers_expect: the scenario's own expectations, as one more checker.
//
// Outcomes each stream allows, counts of outcomes, fault counters, final
// stats, and the rule that every declared fault fires at least once unless
// marked optional or given an explicit range: a scenario whose faults never
// fired tested nothing and must not pass.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "checkers/checkers_support.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

using detail::name_of;

constexpr std::string_view expect_name = expectations_name;

void add(checker_result& r, std::string evidence, std::string transport = {}) {
  r.violations.push_back(violation{.checker = std::string(expect_name),
                                   .transport = std::move(transport),
                                   .evidence = std::move(evidence)});
}

using detail::show;

void check_allowed(const scenario& s, const history& h, const detail::history_index& index,
                   checker_result& r) {
  for (const auto& op : h.ops) {
    if (op.liveness || !ended(op)) continue;
    auto stream = std::find_if(s.streams.begin(), s.streams.end(),
                               [&](const stream_spec& st) { return st.name == op.stream; });
    if (stream == s.streams.end()) continue;
    ++r.checked;
    if (std::find(stream->allow.begin(), stream->allow.end(), op.outcome) != stream->allow.end()) {
      continue;
    }
    std::string allowed;
    for (auto a : stream->allow)
      allowed += fmt::format("{}{}", allowed.empty() ? "" : " | ", to_string(a));
    r.violations.push_back(detail::op_violation(
        expect_name, index, op,
        fmt::format("stream {}: {}{} ended {}, which the stream does not allow ({})", op.stream,
                    op.op == wire::opcode::write ? "WRITE" : "READ",
                    op.submit_failed ? " refused by submit()" : "", to_string(op.outcome),
                    allowed)));
  }
}

void check_counts(const scenario& s, const history& h, checker_result& r) {
  for (const auto& [key, range] : s.expect.counts) {
    ++r.checked;
    auto dot = key.rfind('.');
    if (dot == std::string::npos) {
      add(r, fmt::format("expect.counts key {} is not STREAM.STATUS or STREAM.done", key));
      continue;
    }
    auto stream = key.substr(0, dot);
    auto what = key.substr(dot + 1);
    auto code = detail::status_named(what);
    if (what != "done" && !code) {
      add(r, fmt::format("expect.counts key {}: {} is neither a status nor done", key, what));
      continue;
    }
    std::uint64_t n = 0;
    for (const auto& op : h.ops) {
      if (op.stream != stream || !ended(op)) continue;
      if (!code || op.outcome == *code) ++n;
    }
    if (!range.contains(n)) {
      add(r, fmt::format("expect.counts {}: {} ops, expected {}", key, n, show(range)));
    }
  }
}

std::uint64_t counter(const link_record& link, const std::string& name) {
  auto it = link.counters.find(name);
  return it == link.counters.end() ? 0 : it->second;
}

void check_fault_counts(const scenario& s, const history& h, checker_result& r) {
  for (const auto& [key, range] : s.expect.faults) {
    ++r.checked;
    std::uint64_t n = 0;
    auto slash = key.find('/');
    if (slash == std::string::npos) {
      for (const auto& link : h.links) n += counter(link, key);
    } else {
      for (const auto& link : h.links) {
        if (link.name == key.substr(0, slash)) n += counter(link, key.substr(slash + 1));
      }
    }
    if (!range.contains(n)) {
      add(r, fmt::format("expect.faults {}: fired {} times, expected {}", key, n, show(range)));
    }
  }
}

std::string counter_name(const relays::fault_spec& f) {
  if (!f.name.empty()) return f.name;
  return fmt::format("{}.{}", relays::to_string(f.kind), relays::to_string(f.dir));
}

// A fault declared in a link (or added by an event) that is neither
// optional nor given a range in expect.faults must fire at least once.
void check_declared_fired(const scenario& s, const history& h, checker_result& r) {
  auto check = [&](const std::string& link_name, const link_fault& f) {
    if (f.optional) return;
    auto name = counter_name(f.spec);
    if (s.expect.faults.count(name) != 0 || s.expect.faults.count(link_name + "/" + name) != 0) {
      return;
    }
    ++r.checked;
    std::uint64_t n = 0;
    for (const auto& link : h.links) {
      if (link.name == link_name) n += counter(link, name);
    }
    if (n == 0) {
      add(r, fmt::format("declared fault {} on link {} never fired: the scenario tested nothing",
                         name, link_name));
    }
  };
  for (const auto& link : s.links) {
    for (const auto& f : link.faults) check(link.name, f);
  }
  for (const auto& e : s.events) {
    if (e.action == event_action::add_fault) check(e.link, e.added);
  }
  // The same holds for an armed failpoint: one that never fired (a call
  // site the scenario never reached) tested nothing.
  for (const auto& e : s.events) {
    if (e.action != event_action::arm || e.failpoint_optional) continue;
    ++r.checked;
    auto it = h.failpoints_fired.find(e.failpoint);
    if (it == h.failpoints_fired.end() || it->second == 0) {
      add(r,
          fmt::format("armed failpoint {} never fired: the scenario tested nothing", e.failpoint));
    }
  }
}

std::optional<std::uint64_t> stats_field(const transport_stats& st, std::string_view field) {
  for (const auto& c : transport_counters) {
    if (c.name == field) return st.*c.field;
  }
  if (field == "tasks_admitted_now") return st.tasks_admitted_now;
  if (field == "bytes_admitted_now") return st.bytes_admitted_now;
  if (field == "rejected_busy") return st.rejected_busy;
  if (field == "leases_live") return st.leases_live;
  return std::nullopt;
}

void check_stats(const scenario& s, const history& h, checker_result& r) {
  for (const auto& [key, range] : s.expect.stats) {
    ++r.checked;
    auto dot = key.find('.');
    auto transport = key.substr(0, dot);
    auto field = dot == std::string::npos ? std::string() : key.substr(dot + 1);
    const stats_record* last = nullptr;
    for (const auto& st : h.stats) {
      if (st.transport == transport && (last == nullptr || st.seq > last->seq)) last = &st;
    }
    if (last == nullptr) {
      add(r, fmt::format("expect.stats {}: no stats of transport {} were taken", key, transport),
          transport);
      continue;
    }
    auto v = stats_field(last->stats, field);
    if (!v) {
      add(r, fmt::format("expect.stats {}: {} is not a stats field", key, field), transport);
    } else if (!range.contains(*v)) {
      add(r,
          fmt::format("expect.stats {}: {} at the end (stats of {} at seq {}), expected {}", key,
                      *v, name_of(last->transport, last->incarnation), last->seq, show(range)),
          transport);
    }
  }
}

}  // namespace

checker_result detail::expectations_by_index(const scenario& s, const history& h,
                                             const detail::history_index& index) {
  checker_result r{.name = std::string(expect_name)};
  check_allowed(s, h, index, r);
  check_counts(s, h, r);
  check_fault_counts(s, h, r);
  check_declared_fired(s, h, r);
  check_stats(s, h, r);
  detail::check_callers(s, h, r);
  return r;
}

checker_result check_expectations(const scenario& s, const history& h) {
  return detail::expectations_by_index(s, h, detail::history_index(h));
}

}  // namespace faultlane::sim
