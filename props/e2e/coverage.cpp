// The soak's coverage table; see e2e_check.hpp.
#include <fmt/format.h>

#include <vector>

#include "e2e_check.hpp"

namespace faultlane::props {
namespace {

// Every (type, direction, trigger) cell the generator can draw.
std::vector<std::string> drawable_cells() {
  std::vector<std::string> cells;
  const char* dirs[] = {"up", "down"};
  for (const char* kind : {"reset", "stall", "blackhole", "half_close"}) {
    for (const char* dir : dirs) {
      for (const char* t : {"first_byte", "bytes", "frame", "header_byte", "opcode"}) {
        cells.push_back(fmt::format("{} {} {}", kind, dir, t));
      }
    }
    cells.push_back(fmt::format("{} down status", kind));
  }
  for (const char* kind : {"drop_frame", "corrupt"}) {
    for (const char* dir : dirs) {
      for (const char* t : {"frame", "header_byte", "opcode"}) {
        cells.push_back(fmt::format("{} {} {}", kind, dir, t));
      }
    }
    cells.push_back(fmt::format("{} down status", kind));
  }
  for (const char* dir : dirs) {
    cells.push_back(fmt::format("truncate {} bytes", dir));
    for (const char* kind : {"latency", "bandwidth", "slicer", "slow_close"}) {
      cells.push_back(fmt::format("{} {} -", kind, dir));
    }
  }
  cells.push_back("refuse up -");
  return cells;
}

std::uint64_t at(const std::map<std::string, std::uint64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

std::string coverage_table(const coverage& c) {
  std::string out = fmt::format(
      "cases {}, ops {}, violations {}, run errors {}\n\n"
      "| fault | direction | trigger | drawn | fired |\n|---|---|---|---:|---:|\n",
      c.cases, c.ops, c.violations, c.run_errors);
  std::vector<std::string> never;
  for (const auto& cell : drawable_cells()) {
    auto first = cell.find(' ');
    auto second = cell.find(' ', first + 1);
    out += fmt::format("| {} | {} | {} | {} | {} |\n", cell.substr(0, first),
                       cell.substr(first + 1, second - first - 1), cell.substr(second + 1),
                       at(c.faults_drawn, cell), at(c.faults_fired, cell));
    if (at(c.faults_fired, cell) == 0) never.push_back(cell);
  }
  out += "\n| event or failpoint | fired |\n|---|---:|\n";
  for (const auto& [name, n] : c.events) out += fmt::format("| {} | {} |\n", name, n);
  out += "\n| op outcome | ops |\n|---|---:|\n";
  for (const auto& [name, n] : c.outcomes) out += fmt::format("| {} | {} |\n", name, n);
  out += never.empty()
             ? "\nevery drawable fault cell fired\n"
             : fmt::format("\nnever fired ({}): {}\n", never.size(), fmt::join(never, ", "));
  return out;
}

}  // namespace faultlane::props
