// checkers_control: what the `control:` callers saw, summarized for the
// reports and held to each caller's `allow:` list and `expect.control`.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "checkers/checkers_support.hpp"
#include "faultlane/sim/checkers.hpp"

namespace faultlane::sim {
namespace {

// Nearest rank: the smallest latency with at least p of the calls at or
// below it.
std::uint64_t percentile(const std::vector<std::uint64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto rank = static_cast<std::size_t>(p * static_cast<double>(sorted.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::string ms(std::uint64_t us) { return fmt::format("{:.3f} ms", static_cast<double>(us) / 1e3); }

}  // namespace

std::vector<caller_summary> summarize_callers(const scenario& s, const history& h) {
  std::vector<caller_summary> out;
  for (const auto& c : s.control) {
    caller_summary sum;
    sum.name = c.name;
    sum.method = std::string(to_string(c.method));
    std::vector<std::uint64_t> latency;
    std::set<std::uint64_t> incarnations;
    for (const auto& call : h.calls) {
      if (call.caller != c.name) continue;
      ++sum.calls;
      ++sum.by_status[call.outcome];
      latency.push_back(call.end_us - call.start_us);
      if (call.outcome == status::ok && call.incarnation != 0)
        incarnations.insert(call.incarnation);
      if (call.outcome == status::ok) sum.listed = std::max(sum.listed, call.listed);
    }
    std::sort(latency.begin(), latency.end());
    sum.p50_us = percentile(latency, 0.50);
    sum.p99_us = percentile(latency, 0.99);
    sum.max_us = latency.empty() ? 0 : latency.back();
    sum.incarnations = incarnations.size();
    out.push_back(std::move(sum));
  }
  return out;
}

std::string describe(const caller_summary& c) {
  std::string statuses;
  for (const auto& [code, n] : c.by_status) {
    statuses += fmt::format("{}{} {}", statuses.empty() ? "" : ", ", n, to_string(code));
  }
  std::string out =
      fmt::format("{} ({}): {} calls{}{}; p50 {}, p99 {}, max {}", c.name, c.method, c.calls,
                  statuses.empty() ? "" : ": ", statuses, ms(c.p50_us), ms(c.p99_us), ms(c.max_us));
  if (c.method == "describe" || c.method == "list_registrations") {
    out += fmt::format("; {} listed", c.listed);
  }
  if (c.method == "describe") out += fmt::format("; {} incarnations", c.incarnations);
  return out;
}

namespace detail {

void check_callers(const scenario& s, const history& h, checker_result& r) {
  for (const auto& call : h.calls) {
    const auto spec = std::find_if(s.control.begin(), s.control.end(),
                                   [&](const caller_spec& c) { return c.name == call.caller; });
    if (spec == s.control.end()) continue;
    ++r.checked;
    if (std::find(spec->allow.begin(), spec->allow.end(), call.outcome) != spec->allow.end()) {
      continue;
    }
    r.violations.push_back(violation{
        .checker = "expectations",
        .transport = spec->target,
        .evidence =
            fmt::format("caller {} (client {}): {} at {} us ended {} after {} us ({}), "
                        "which the caller does not allow",
                        call.caller, call.client, to_string(spec->method), call.start_us,
                        to_string(call.outcome), call.end_us - call.start_us, call.message)});
  }
  const auto summaries = summarize_callers(s, h);
  for (const auto& [key, range] : s.expect.control) {
    ++r.checked;
    const auto dot = key.find('.');
    const auto name = key.substr(0, dot);
    const auto what = key.substr(dot + 1);
    const auto sum = std::find_if(summaries.begin(), summaries.end(),
                                  [&](const caller_summary& c) { return c.name == name; });
    if (dot == std::string::npos || sum == summaries.end()) continue;  // the loader's to refuse
    std::uint64_t seen = 0;
    if (what == "done") seen = sum->calls;
    else if (what == "p50_us") seen = sum->p50_us;
    else if (what == "p99_us") seen = sum->p99_us;
    else if (what == "max_us") seen = sum->max_us;
    else if (what == "incarnations") seen = sum->incarnations;
    else if (what == "listed") seen = sum->listed;
    else if (auto code = status_named(what)) {
      auto it = sum->by_status.find(*code);
      seen = it == sum->by_status.end() ? 0 : it->second;
    }
    if (range.contains(seen)) continue;
    r.violations.push_back(
        violation{.checker = "expectations",
                  .evidence = fmt::format("expect.control {}: {}, expected {} ({})", key, seen,
                                          show(range), describe(*sum))});
  }
}

}  // namespace detail
}  // namespace faultlane::sim
