// probe_report: the code probes a set of runs reached (docs/dsim.md, "Code
// probes"), summed by name, and the short table the commands print.
#include <fmt/format.h>

#include "faultlane/sim/report.hpp"

namespace faultlane::sim {

namespace {
constexpr std::size_t text_columns_max = 100;
}  // namespace

probe_summary summarize_probes(const std::vector<run_result>& runs) {
  probe_summary out;
  out.runs = runs.size();
  for (const auto& row : probes::table) out.hits[std::string(row.name)] = 0;
  for (const auto& r : runs) {
    for (std::size_t i = 0; i < probes::count; ++i) {
      out.hits[std::string(probes::table[i].name)] += r.probes[i];
    }
  }
  return out;
}

std::vector<std::string> never_reached(const probe_summary& p) {
  std::vector<std::string> out;
  for (const auto& row : probes::table) {
    auto it = p.hits.find(std::string(row.name));
    if (it == p.hits.end() || it->second == 0) out.emplace_back(row.name);
  }
  return out;
}

std::string probes_text(const probe_summary& p) {
  if (!p.counted) {
    return "code probes: not counted in this build (failpoints compiled out)\n";
  }
  const auto missing = never_reached(p);
  std::size_t width = 5;  // "probe"
  for (const auto& [name, hits] : p.hits) {
    if (hits > 0) width = std::max(width, name.size());
  }
  std::string out = fmt::format("code probes: {} of {} reached over {} run(s)\n",
                                probes::count - missing.size(), probes::count, p.runs);
  if (missing.size() < probes::count) {
    out += fmt::format("  {:<{}}  {:>10}\n", "probe", width, "hits");
    for (const auto& [name, hits] : p.hits) {
      if (hits > 0) out += fmt::format("  {:<{}}  {:>10}\n", name, width, hits);
    }
  }
  if (missing.empty()) return out;
  std::string line = fmt::format("never reached ({}):", missing.size());
  for (std::size_t i = 0; i < missing.size(); ++i) {
    const std::string word = " " + missing[i] + (i + 1 < missing.size() ? "," : "");
    if (line.size() + word.size() > text_columns_max) {
      out += line + "\n";
      line = "  " + word.substr(1);
    } else {
      line += word;
    }
  }
  return out + line + "\n";
}

}  // namespace faultlane::sim
