// The soak's coverage table; see e2e_check.hpp.
#include <fmt/format.h>

#include <vector>

#include "e2e_check.hpp"

namespace faultlane::props {
namespace {

// The names of the kinds of relays::fault_kinds that `keep` keeps, in order.
template <typename Keep>
std::vector<std::string_view> kinds(Keep keep) {
  std::vector<std::string_view> out;
  for (const auto& t : relays::fault_kinds) {
    if (keep(t)) out.push_back(t.name);
  }
  return out;
}

bool in(const relays::fault_kind_traits& t, relays::fault_class c) { return t.category == c; }

// Every (type, direction, trigger) cell the generator can draw: positional
// and frame faults take the drawn trigger (truncate fires at its bytes),
// the others none.
std::vector<std::string> drawable_cells() {
  using relays::fault_class;
  using relays::fault_kind;
  std::vector<std::string> cells;
  const char* dirs[] = {"up", "down"};
  auto positional = kinds([](const auto& t) {
    return in(t, fault_class::positional) && t.kind != fault_kind::truncate;
  });
  for (auto kind : positional) {
    for (const char* dir : dirs) {
      for (const char* t : {"first_byte", "bytes", "frame", "header_byte", "opcode"}) {
        cells.push_back(fmt::format("{} {} {}", kind, dir, t));
      }
    }
    cells.push_back(fmt::format("{} down status", kind));
  }
  for (auto kind : kinds([](const auto& t) { return in(t, fault_class::frame); })) {
    for (const char* dir : dirs) {
      for (const char* t : {"frame", "header_byte", "opcode"}) {
        cells.push_back(fmt::format("{} {} {}", kind, dir, t));
      }
    }
    cells.push_back(fmt::format("{} down status", kind));
  }
  for (const char* dir : dirs) {
    cells.push_back(fmt::format("truncate {} bytes", dir));
    for (auto kind : kinds([](const auto& t) { return slowing(t.kind); })) {
      cells.push_back(fmt::format("{} {} -", kind, dir));
    }
  }
  for (auto kind : kinds([](const auto& t) { return in(t, fault_class::connection); })) {
    cells.push_back(fmt::format("{} up -", kind));
  }
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
