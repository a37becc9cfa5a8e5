// The small value forms of a scenario file: count ranges ("2..5", ">=1"),
// sizes ("4KiB", "2MiB+1") and the YAML spellings of the scenario enums.
// They carry no place in their errors; the loader adds file:line:col.
#include <fmt/format.h>

#include <array>

#include "faultlane/sim/scenario.hpp"
#include "loader/scenario_reader.hpp"

namespace faultlane::sim {
namespace {

error bad(std::string what) { return error{status::invalid_argument, std::move(what)}; }

result<std::uint64_t> count_number(std::string_view text, std::string_view whole) {
  auto n = detail::parse_decimal(text);
  if (!n) {
    return bad(
        fmt::format("'{}' is not a count range (3, \">=1\", \">0\", \"<=2\", \"<3\", "
                    "\"2..5\")",
                    whole));
  }
  return *n;
}

struct unit {
  std::string_view suffix;
  int shift;
};
// Longest suffixes first, so "KiB" is not read as "B".
constexpr std::array<unit, 7> units{
    {{"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"K", 10}, {"M", 20}, {"G", 30}, {"B", 0}}};

// "4KiB", "17", "3B": a number with an optional binary unit.
result<std::uint64_t> scaled(std::string_view text, std::string_view whole) {
  int shift = 0;
  for (const auto& u : units) {
    if (text.size() > u.suffix.size() && text.substr(text.size() - u.suffix.size()) == u.suffix) {
      shift = u.shift;
      text.remove_suffix(u.suffix.size());
      break;
    }
  }
  auto n = detail::parse_decimal(text);
  if (!n) {
    return bad(
        fmt::format("'{}' is not a size (4096, 4KiB, \"1MiB-1\", \"2MiB+1\"; units B, "
                    "KiB/K, MiB/M, GiB/G)",
                    whole));
  }
  if (*n > (UINT64_MAX >> shift)) return bad(fmt::format("'{}' is too large", whole));
  return *n << shift;
}

}  // namespace

std::string to_string(const count_range& r) {
  if (r.min == r.max) return fmt::format("{}", r.min);
  if (r.max == UINT64_MAX) return fmt::format(">={}", r.min);
  if (r.min == 0) return fmt::format("<={}", r.max);
  return fmt::format("{}..{}", r.min, r.max);
}

result<count_range> parse_count_range(std::string_view text) {
  auto number = [&](std::string_view part) { return count_number(part, text); };
  count_range r;
  if (auto dots = text.find(".."); dots != std::string_view::npos) {
    auto lo = number(text.substr(0, dots));
    auto hi = number(text.substr(dots + 2));
    if (!lo.ok()) return lo.error();
    if (!hi.ok()) return hi.error();
    if (lo.value() > hi.value()) return bad(fmt::format("'{}' is an empty range", text));
    return count_range{lo.value(), hi.value()};
  }
  const bool ge = text.substr(0, 2) == ">=";
  const bool le = text.substr(0, 2) == "<=";
  const bool gt = !ge && text.substr(0, 1) == ">";
  const bool lt = !le && text.substr(0, 1) == "<";
  auto n = number(text.substr(ge || le ? 2 : (gt || lt ? 1 : 0)));
  if (!n.ok()) return n.error();
  const std::uint64_t v = n.value();
  if ((gt && v == UINT64_MAX) || (lt && v == 0)) {
    return bad(fmt::format("'{}' is an empty range", text));
  }
  if (ge) r.min = v;
  else if (gt) r.min = v + 1;
  else if (le) r.max = v;
  else if (lt) r.max = v - 1;
  else r = count_range{v, v};
  return r;
}

result<std::uint64_t> parse_size(std::string_view text) {
  // The last '+' or '-' after the first character is the offset ("1MiB-1").
  auto sign = text.find_last_of("+-");
  if (sign == 0 || sign == std::string_view::npos) return scaled(text, text);
  auto base = scaled(text.substr(0, sign), text);
  if (!base.ok()) return base;
  auto offset = detail::parse_decimal(text.substr(sign + 1));
  if (!offset)
    return bad(
        fmt::format("'{}' is not a size: the offset after '{}' is not a number", text, text[sign]));
  if (text[sign] == '-') {
    if (*offset > base.value()) return bad(fmt::format("'{}' is negative", text));
    return base.value() - *offset;
  }
  if (*offset > UINT64_MAX - base.value()) return bad(fmt::format("'{}' is too large", text));
  return base.value() + *offset;
}

std::uint64_t size_dist::max() const noexcept {
  if (range) return hi;
  std::uint64_t out = 0;
  for (auto v : values) out = std::max(out, v);
  return out;
}

std::string_view to_string(event_action a) noexcept {
  for (const auto& row : event_action_rows) {
    if (row.action == a) return row.spelling;
  }
  return "unknown";
}

std::string_view to_string(trigger_kind k) noexcept {
  switch (k) {
    case trigger_kind::stream_ops: return "stream";
    case trigger_kind::fault_fired: return "fault";
    case trigger_kind::phase_start: return "phase";
    case trigger_kind::phase_end: return "after_phase";
    case trigger_kind::caller_calls: return "caller";
  }
  return "unknown";
}

std::string_view to_string(offset_mode m) noexcept {
  return m == offset_mode::random ? "random" : "sequential";
}

std::string_view to_string(process_kind p) noexcept {
  return p == process_kind::local ? "local" : "child";
}

std::string counted_name(std::string_view region, std::uint64_t k) {
  return fmt::format("{}/{:07}", region, k);
}

std::string_view to_string(control_method m) noexcept {
  switch (m) {
    case control_method::ping: return "ping";
    case control_method::service_ready: return "service_ready";
    case control_method::describe: return "describe";
    case control_method::list_registrations: return "list_registrations";
    case control_method::stats: return "stats";
  }
  return "unknown";
}

}  // namespace faultlane::sim
