// Running an end-to-end property; see e2e_check.hpp.
#include "e2e_check.hpp"

#include <fmt/format.h>
#include <rapidcheck/detail/Configuration.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "faultlane/sim/runner.hpp"
#include "faultlane/sim/shrink.hpp"

namespace faultlane::props {
namespace {

std::mutex coverage_mutex;
coverage totals;

// "stall up header_byte": what a fired fault was, for the coverage table.
std::string fault_key(const relays::fault_spec& f) {
  std::string trigger = "first_byte";
  const auto& w = f.when;
  if (w.header_byte) trigger = "header_byte";
  else if (w.frame) trigger = "frame";
  else if (w.status) trigger = "status";
  else if (w.opcode) trigger = "opcode";
  else if (w.after_bytes || f.kind == relays::fault_kind::truncate) trigger = "bytes";
  else if (const auto c = relays::traits(f.kind).category;
           c != relays::fault_class::positional && c != relays::fault_class::frame) {
    trigger = "-";  // rate-shaping, close and connection faults take no trigger here
  }
  return fmt::format("{} {} {}", relays::to_string(f.kind), relays::to_string(f.dir), trigger);
}

void record(const sim::scenario& sc, const sim::run_result& r) {
  std::lock_guard lock(coverage_mutex);
  ++totals.cases;
  if (!r.error.empty()) ++totals.run_errors;
  for (const auto& c : r.checkers) totals.violations += c.violations.size();
  for (const auto& link : sc.links) {
    for (const auto& f : link.faults) {
      const auto key = fault_key(f.spec);
      ++totals.faults_drawn[key];
      auto it = r.faults_fired.find(f.spec.name);
      if (it != r.faults_fired.end() && it->second > 0) totals.faults_fired[key] += it->second;
    }
  }
  if (!r.hist) return;
  totals.ops += r.hist->ops.size();
  for (const auto& op : r.hist->ops) {
    ++totals.outcomes[fmt::format("{} {}", op.op == wire::opcode::read ? "read" : "write",
                                  ending_name(op))];
  }
  for (const auto& m : r.hist->marks) {
    if (m.kind != "event" || !m.ok) continue;
    auto word = m.text.substr(0, m.text.find_first_of(" :"));
    ++totals.events[word];
  }
  for (const auto& [name, n] : r.hist->failpoints_fired) {
    if (n > 0) totals.events["failpoint " + name] += n;
  }
}

struct case_state {
  const property_spec& p;
  bool failing = false;  // a case failed: rapidcheck is shrinking now
  property_outcome out;
  // rapidcheck evaluates a case again when it shrinks from it and when it
  // prints the result, and expects the same answer: each scenario's verdict
  // is kept (its failure text, or empty for a pass) and given again.
  std::map<std::string, std::string> verdicts;
};

void write_counterexample(case_state& st, const schedule& sch, const sim::scenario& sc,
                          const sim::run_result& r) {
  const auto dir = std::filesystem::path(counterexample_dir());
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const auto yaml = std::filesystem::absolute(dir / (st.p.name + ".yaml"), ec);
  const auto html = std::filesystem::absolute(dir / (st.p.name + ".html"), ec);
  std::ofstream(yaml) << sim::to_yaml(sc);
  std::ofstream(html) << sim::timeline_html(r);
  st.out.counterexample = sch;
  st.out.failing_checkers.clear();
  for (const auto& c : r.checkers) {
    if (!c.passed()) st.out.failing_checkers.push_back(c.name);
  }
  st.out.yaml_path = yaml.string();
  st.out.timeline_path = html.string();
}

void run_case(case_state& st, const schedule& sch) {
  const auto generated = to_scenario(sch, st.p.name);
  // What runs is the file a user replays: written and read back.
  auto loaded = sim::parse_scenario(sim::to_yaml(generated), generated.file);
  if (!loaded.ok()) {
    RC_FAIL("the generator made a scenario the loader rejects: " + loaded.error().message + "\n" +
            sim::to_yaml(generated));
  }
  // Before the first failure a case runs once. After it, rapidcheck only
  // shrinks, and a candidate counts as failing only if it fails in every
  // one of runs_per_candidate runs: a smaller schedule that failed by luck
  // cannot pass for the counterexample.
  // FAULTLANE_E2E_TRACE=1: the case about to run is in NAME.running.yaml,
  // for a run that hangs or is killed before it can report.
  if (const char* trace = std::getenv("FAULTLANE_E2E_TRACE"); trace && *trace == '1') {
    const auto dir = std::filesystem::path(counterexample_dir());
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    std::ofstream(dir / (st.p.name + ".running.yaml")) << sim::to_yaml(loaded.value());
  }
  const auto key = sim::to_yaml(loaded.value());
  if (auto seen = st.verdicts.find(key); seen != st.verdicts.end()) {
    if (seen->second.empty()) return;
    RC_FAIL(seen->second);
  }
  const int runs = st.failing ? st.p.runs_per_candidate : 1;
  std::optional<sim::run_result> failed;
  for (int i = 0; i < runs; ++i) {
    sim::run_options o;
    o.seed = sch.seed;
    auto r = sim::run_scenario(loaded.value(), o);
    ++st.out.cases;
    record(loaded.value(), r);
    if (r.skipped) RC_DISCARD(r.skip_reason);
    if (sim::outcome_of(r) == sim::run_outcome::passed) {
      st.verdicts[key] = "";
      return;
    }
    failed = std::move(r);
  }
  st.failing = true;
  write_counterexample(st, sch, loaded.value(), *failed);
  auto text = fmt::format(
      "{}\ncounterexample ({} fault(s), events and failpoints): {}\n"
      "timeline: {}\nreplay: faultlane-sim run {} --seed {}",
      sim::failure_text(*failed), fault_count(sch), st.out.yaml_path, st.out.timeline_path,
      st.out.yaml_path, sch.seed);
  st.verdicts[key] = text;
  RC_FAIL(text);
}

}  // namespace

std::string counterexample_dir() {
  if (const char* dir = std::getenv("FAULTLANE_COUNTEREXAMPLE_DIR"); dir && *dir) return dir;
  return "props-counterexamples";
}

bool check_with_defaults(const std::string& id, int cases, int max_size,
                         const std::function<void()>& property, std::optional<std::uint64_t> seed) {
  auto params = rc::detail::configuration().testParams;
  const std::string env = std::getenv("RC_PARAMS") ? std::getenv("RC_PARAMS") : "";
  if (env.find("max_success") == std::string::npos) params.maxSuccess = cases;
  if (env.find("max_size") == std::string::npos) params.maxSize = max_size;
  if (seed) params.seed = *seed;
  rc::detail::TestMetadata metadata;
  metadata.id = id;
  metadata.description = id;
  std::cerr << "\n- " << id << "\n";
  const auto result =
      rc::detail::checkProperty(rc::detail::toProperty([&] { property(); }), metadata, params);
  rc::detail::printResultMessage(result, std::cerr);
  std::cerr << "\n";
  return result.template is<rc::detail::SuccessResult>();
}

property_outcome check_property(const property_spec& p) {
  gen_options g = p.gen;
  if (!sim::failpoints_available()) g.failpoints_max = 0;
  case_state st{p};
  st.out.passed = check_with_defaults(
      "e2e." + p.name, p.cases, p.max_size,
      [&] {
        auto sch = *gen_schedule(g);
        sch.planted = p.planted;
        run_case(st, sch);
      },
      p.seed);
  return st.out;
}

coverage coverage_so_far() {
  std::lock_guard lock(coverage_mutex);
  return totals;
}

}  // namespace faultlane::props
