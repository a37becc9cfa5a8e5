// report_export: the files CI reads about a set of runs: JSON (every field
// and the counters) and JUnit XML (one testcase per scenario x seed).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "faultlane/sim/report.hpp"
#include "reports/report_format.hpp"

namespace faultlane::sim {
namespace {

using json = nlohmann::json;

std::string_view outcome_name(run_outcome o) noexcept {
  switch (o) {
    case run_outcome::passed: return "passed";
    case run_outcome::failed: return "failed";
    case run_outcome::skipped: return "skipped";
    case run_outcome::error: return "error";
  }
  return "error";
}

json checker_json(const checker_result& c) {
  json violations = json::array();
  for (const auto& v : c.violations) {
    violations.push_back({{"checker", v.checker},
                          {"op_id", v.op_id},
                          {"task_id", v.task_id},
                          // Hex text: ids pass 2^53, beyond a JSON number's precision.
                          {"request_id", fmt::format("{:#x}", v.request_id)},
                          {"transport", v.transport},
                          {"seq", v.seq},
                          {"evidence", v.evidence}});
  }
  return {{"name", c.name},       {"ran", c.ran},         {"reason_off", c.reason_off},
          {"checked", c.checked}, {"passed", c.passed()}, {"violations", std::move(violations)}};
}

json counters_json(const run_counts& c) {
  json links = json::object();
  for (const auto& link : c.links) {
    links[link.name] = {{"initiator", link.initiator}, {"target", link.target},
                        {"rail", link.rail},           {"tapped", link.tapped},
                        {"counters", link.counters},   {"tap_records", link.tap_records}};
  }
  return {{"ops_by_status", c.ops_by_status}, {"links", std::move(links)}};
}

json run_json(const run_result& r) {
  json checkers = json::array();
  for (const auto& c : r.checkers) checkers.push_back(checker_json(c));
  json out = {{"scenario", r.scenario}, {"file", r.file},
              {"seed", r.seed},         {"outcome", outcome_name(outcome_of(r))},
              {"verdict", verdict(r)},  {"passed", r.passed},
              {"skipped", r.skipped},   {"skip_reason", r.skip_reason},
              {"error", r.error},       {"ops_total", r.ops_total},
              {"ops_done", r.ops_done}, {"faults_fired", r.faults_fired},
              {"seconds", r.seconds},   {"check_seconds", r.check_seconds},
              {"replay", r.replay},     {"checkers", std::move(checkers)}};
  // A run with its history counts it (a caller may have built the result
  // by hand); one let go kept its counts; one that never ran has neither.
  if (r.hist) {
    out["counters"] = counters_json(count_history(*r.hist));
  } else if (!r.counts.ops_by_status.empty() || !r.counts.links.empty()) {
    out["counters"] = counters_json(r.counts);
  } else {
    out["counters"] = json::object();
  }
  if (r.deterministic) {
    out["digest"] = digest_text(r.digest);
    out["virtual_time_ms"] = r.virtual_seconds * 1e3;
    out["wall_time_ms"] = r.seconds * 1e3;
  }
  json callers = json::array();
  for (const auto& c : r.callers) {
    json by_status = json::object();
    for (const auto& [code, n] : c.by_status) by_status[std::string(to_string(code))] = n;
    callers.push_back({{"name", c.name},
                       {"method", c.method},
                       {"calls", c.calls},
                       {"by_status", std::move(by_status)},
                       {"p50_us", c.p50_us},
                       {"p99_us", c.p99_us},
                       {"max_us", c.max_us},
                       {"incarnations", c.incarnations},
                       {"listed", c.listed}});
  }
  out["callers"] = std::move(callers);
  json reached = json::object();
  for (std::size_t i = 0; i < probes::count; ++i) {
    if (r.probes[i] > 0) reached[std::string(probes::table[i].name)] = r.probes[i];
  }
  out["probes"] = std::move(reached);
  return out;
}

}  // namespace

run_counts count_history(const history& h) {
  run_counts c;
  for (const auto& op : h.ops) ++c.ops_by_status[std::string(ending_name(op))];
  for (const auto& link : h.links) {
    link_counts l{link.name,   link.initiator, link.target, link.rail,
                  link.tapped, link.counters,  {}};
    for (const auto& record : link.tap)
      ++l.tap_records[std::string(relays::record_kind_name(record.kind))];
    c.links.push_back(std::move(l));
  }
  return c;
}

std::string to_json(const std::vector<run_result>& runs) {
  json list = json::array();
  for (const auto& r : runs) list.push_back(run_json(r));
  const auto p = summarize_probes(runs);
  json out{{"runs", std::move(list)},
           {"probes", p.hits},
           {"probes_never_reached", never_reached(p)},
           {"probes_counted", p.counted}};
  // Replace invalid UTF-8 (a name or evidence quoting raw bytes) rather than throw.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

std::string attr(std::string_view text) { return report_format::escaped(text, true); }

void append_testcase(std::string& out, const run_result& r) {
  out +=
      fmt::format(R"(    <testcase classname="faultlane-sim.{}" name="{} seed={}" time="{:.3f}")",
                  attr(r.scenario), attr(r.scenario), r.seed, r.seconds);
  switch (outcome_of(r)) {
    case run_outcome::passed: out += "/>\n"; return;
    case run_outcome::skipped:
      out += fmt::format(">\n      <skipped message=\"{}\"/>\n", attr(r.skip_reason));
      break;
    case run_outcome::error:
      out += fmt::format(">\n      <error message=\"{}\" type=\"run_error\">", attr(r.error));
      out += report_format::escaped(failure_text(r)) + "</error>\n";
      break;
    case run_outcome::failed: {
      const auto* failed = first_failure(r);
      std::string message = failed == nullptr ? "the run did not pass" : failed->name;
      if (failed != nullptr && !failed->violations.empty()) {
        message += ": " + failed->violations.front().evidence;
      }
      std::string type = failed == nullptr ? "failed" : failed->name;
      out +=
          fmt::format(">\n      <failure message=\"{}\" type=\"{}\">", attr(message), attr(type));
      out += report_format::escaped(failure_text(r)) + "</failure>\n";
      break;
    }
  }
  if (!r.replay.empty()) {
    out += "      <system-out>replay: " + report_format::escaped(r.replay) + "</system-out>\n";
  }
  out += "    </testcase>\n";
}

}  // namespace

std::string to_junit(const std::vector<run_result>& runs) {
  std::size_t failures = 0;
  std::size_t errors = 0;
  std::size_t skipped = 0;
  double seconds = 0;
  for (const auto& r : runs) {
    auto o = outcome_of(r);
    failures += o == run_outcome::failed ? 1 : 0;
    errors += o == run_outcome::error ? 1 : 0;
    skipped += o == run_outcome::skipped ? 1 : 0;
    seconds += r.seconds;
  }
  auto counts = fmt::format(R"(tests="{}" failures="{}" errors="{}" skipped="{}" time="{:.3f}")",
                            runs.size(), failures, errors, skipped, seconds);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"faultlane-sim\" {}>\n", counts);
  out += fmt::format("  <testsuite name=\"faultlane-sim\" {}>\n", counts);
  for (const auto& r : runs) append_testcase(out, r);
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

}  // namespace faultlane::sim
