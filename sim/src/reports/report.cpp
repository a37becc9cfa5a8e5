// report: the terminal side of `faultlane-sim run` (the failure text and the
// summary table) and the text pieces every report shares (report_format.hpp).
// JSON and JUnit are in report_export.cpp, the HTML timeline in timeline*.cpp.
#include "faultlane/sim/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <map>
#include <utility>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/stats.hpp"
#include "reports/report_format.hpp"

namespace faultlane::sim {

namespace report_format {

std::string violation_line(const violation& v) {
  std::string ids;
  auto add = [&ids](const std::string& part) {
    if (part.empty()) return;
    ids += ids.empty() ? "" : ", ";
    ids += part;
  };
  if (v.task_id != 0) add(fmt::format("task {}", v.task_id));
  if (v.request_id != 0) add(fmt::format("request {:#x}", v.request_id));
  add(v.transport);
  if (v.seq != 0) add(fmt::format("seq {}", v.seq));
  std::string head = v.op_id != 0 ? fmt::format("op {}", v.op_id) : std::string{};
  if (!ids.empty()) head += head.empty() ? ids : fmt::format(" ({})", ids);
  if (head.empty()) return v.evidence;
  return fmt::format("{}: {}", head, v.evidence);
}

namespace {

// The length of the well-formed UTF-8 sequence at text[i], 0 if none is.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto byte = [text](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned lead = byte(i);
  std::size_t n = 0;
  if (lead >= 0xc2 && lead <= 0xdf) n = 2;
  if (lead >= 0xe0 && lead <= 0xef) n = 3;
  if (lead >= 0xf0 && lead <= 0xf4) n = 4;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  // Overlong forms, surrogates and code points past U+10FFFF.
  unsigned second = byte(i + 1);
  if ((lead == 0xe0 && second < 0xa0) || (lead == 0xed && second > 0x9f)) return 0;
  if ((lead == 0xf0 && second < 0x90) || (lead == 0xf4 && second > 0x8f)) return 0;
  return n;
}

std::string_view entity_of(char c, bool attribute) {
  switch (c) {
    case '&': return "&amp;";
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '"': return "&quot;";
    case '\'': return "&#39;";
    case '\t': return attribute ? "&#9;" : "\t";
    case '\n': return attribute ? "&#10;" : "\n";
    default: return {};
  }
}

}  // namespace

void append_escaped(std::string& out, std::string_view text, bool attribute) {
  constexpr std::string_view replacement = "\xef\xbf\xbd";  // U+FFFD
  for (std::size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    auto byte = static_cast<unsigned char>(c);
    if (auto entity = entity_of(c, attribute); !entity.empty()) {
      out += entity;
    } else if (byte >= 0x80) {
      // Bytes that are not UTF-8 would make the whole document unreadable.
      std::size_t n = utf8_length(text, i);
      out += n == 0 ? replacement : text.substr(i, n);
      i += n == 0 ? 0 : n - 1;
    } else if (byte >= 0x20 && byte != 0x7f) {
      out += c;  // C0 controls and DEL are dropped: XML 1.0 has no place for them
    }
  }
}

std::string escaped(std::string_view text, bool attribute) {
  std::string out;
  out.reserve(text.size());
  append_escaped(out, text, attribute);
  return out;
}

namespace {

// Byte offsets of each UTF-8 character's start, so shortening never splits
// a character.
std::vector<std::size_t> character_starts(std::string_view text) {
  std::vector<std::size_t> starts;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) starts.push_back(i);
  }
  return starts;
}

}  // namespace

std::size_t columns(std::string_view text) { return character_starts(text).size(); }

std::string shortened(std::string_view text, std::size_t width) {
  auto starts = character_starts(text);
  if (starts.size() <= width) return std::string(text);
  constexpr std::string_view dots = "...";
  if (width <= dots.size()) return std::string(dots.substr(0, width));
  std::size_t keep = width - dots.size();
  std::size_t head = (keep + 1) / 2;
  std::size_t tail = keep - head;
  std::string out(text.substr(0, starts[head]));
  out += dots;
  out += text.substr(starts[starts.size() - tail]);
  return out;
}

}  // namespace report_format

run_outcome outcome_of(const run_result& r) noexcept {
  if (!r.error.empty()) return run_outcome::error;
  if (r.skipped) return run_outcome::skipped;
  return r.passed ? run_outcome::passed : run_outcome::failed;
}

const checker_result* first_failure(const run_result& r) noexcept {
  for (const auto& c : r.checkers) {
    if (!c.passed()) return &c;
  }
  return nullptr;
}

std::string verdict(const run_result& r) {
  switch (outcome_of(r)) {
    case run_outcome::error: return "ERROR";
    case run_outcome::skipped: return r.skip_reason.empty() ? "SKIP" : "SKIP " + r.skip_reason;
    case run_outcome::passed: return "PASS";
    case run_outcome::failed: break;
  }
  const auto* failed = first_failure(r);
  return failed == nullptr ? "FAIL" : "FAIL " + failed->name;
}

std::uint64_t faults_fired_total(const run_result& r) noexcept {
  std::uint64_t total = 0;
  for (const auto& [name, count] : r.faults_fired) total += count;
  return total;
}

namespace {

constexpr std::size_t violations_shown_max = 10;

void append_checker_text(std::string& out, const checker_result& c) {
  out += fmt::format("checker {} failed: {} violation{} ({} checked)\n", c.name,
                     c.violations.size(), c.violations.size() == 1 ? "" : "s", c.checked);
  std::size_t shown = std::min(c.violations.size(), violations_shown_max);
  for (std::size_t i = 0; i < shown; ++i) {
    out += "  " + report_format::violation_line(c.violations[i]) + "\n";
  }
  if (c.violations.size() > shown) {
    out += fmt::format("  ... and {} more\n", c.violations.size() - shown);
  }
}

// "outcomes: writes: connection_failed 44, ok 74": each stream's ops by
// how they ended (in name order), so a failed count says what the others
// became.
void append_outcomes(std::string& out, const history& h) {
  std::map<std::string, std::map<std::string, std::uint64_t>> by_stream;
  for (const auto& op : h.ops) ++by_stream[op.stream][std::string(ending_name(op))];
  for (const auto& [stream, outcomes] : by_stream) {
    std::string line;
    for (const auto& [outcome, n] : outcomes) {
      line += fmt::format("{}{} {}", line.empty() ? "" : ", ", outcome, n);
    }
    out += fmt::format("outcomes: {}: {}\n", stream, line);
  }
}

// The counters that say why ops failed, where not zero, from the latest
// snapshot of each transport incarnation: a failed connect starts the
// reconnect cooldown, in which a lane that must connect fails its ops at
// once; a deadline ends an exchange. Names come from the core's table.
void append_failure_counters(std::string& out, const history& h) {
  static constexpr std::array<std::uint64_t transport_stats::*, 7> shown{
      &transport_stats::connect_failures,   &transport_stats::timeouts,
      &transport_stats::lanes_found_closed, &transport_stats::stale_refresh_attempts,
      &transport_stats::stale_refreshes,    &transport_stats::sessions_timed_out,
      &transport_stats::server_rejects};
  auto name_of_field = [](std::uint64_t transport_stats::*field) {
    const auto* info = std::find_if(transport_counters.begin(), transport_counters.end(),
                                    [field](const counter_info& c) { return c.field == field; });
    FL_ASSERT(info != transport_counters.end());
    return info->name;
  };
  std::map<std::pair<std::string, std::uint32_t>, const stats_record*> latest;
  for (const auto& s : h.stats) {
    auto& at = latest[{s.transport, s.incarnation}];
    if (at == nullptr || s.seq > at->seq) at = &s;
  }
  for (const auto& [key, s] : latest) {
    std::string line;
    for (auto field : shown) {
      if (s->stats.*field == 0) continue;
      line +=
          fmt::format("{}{} {}", line.empty() ? "" : ", ", name_of_field(field), s->stats.*field);
    }
    if (!line.empty()) out += fmt::format("counters: {}#{}: {}\n", key.first, key.second, line);
  }
}

}  // namespace

std::string failure_text(const run_result& r) {
  auto outcome = outcome_of(r);
  if (outcome == run_outcome::passed || outcome == run_outcome::skipped) return {};
  std::string out = r.scenario;
  if (!r.file.empty()) out += fmt::format(" ({})", r.file);
  out += fmt::format(": {}\n", verdict(r));
  if (outcome == run_outcome::error) {
    out += "error: " + r.error + "\n";
  } else if (const auto* failed = first_failure(r); failed != nullptr) {
    append_checker_text(out, *failed);
    std::string others;
    for (const auto& c : r.checkers) {
      if (&c != failed && !c.passed()) {
        others += fmt::format("{}{} ({})", others.empty() ? "" : ", ", c.name, c.violations.size());
      }
    }
    if (!others.empty()) out += "also failed: " + others + "\n";
  } else {
    out += "no checker reported a violation, but the run did not pass\n";
  }
  if (r.hist) {
    append_outcomes(out, *r.hist);
    append_failure_counters(out, *r.hist);
    // What the runner noted (a stream that stopped early, ops left in
    // flight): why a count came out short.
    for (const auto& m : r.hist->marks) {
      if (m.kind == "note") out += "note: " + m.text + "\n";
    }
  }
  out += fmt::format("seed: {}\n", r.seed);
  if (!r.replay.empty()) out += "replay: " + r.replay + "\n";
  return out;
}

namespace {

constexpr std::size_t table_columns_max = 100;
constexpr std::size_t name_columns_min = 12;  // scenario and verdict, when shortened
constexpr std::size_t column_gap = 2;
constexpr std::size_t column_count = 7;

using table_row = std::array<std::string, column_count>;

table_row row_of(const run_result& r) {
  std::size_t ran = 0;
  std::size_t passed = 0;
  for (const auto& c : r.checkers) {
    if (!c.ran) continue;
    ++ran;
    if (c.passed()) ++passed;
  }
  return {r.scenario,
          fmt::format("{}", r.seed),
          fmt::format("{}/{}", r.ops_done, r.ops_total),
          fmt::format("{}", faults_fired_total(r)),
          fmt::format("{}/{}", passed, ran),
          verdict(r),
          fmt::format("{:.2f}", r.seconds)};
}

// Column widths: the widest cell, with the scenario (0) and verdict (5)
// columns shortened until the row fits table_columns_max.
std::array<std::size_t, column_count> widths_of(const std::vector<table_row>& rows) {
  std::array<std::size_t, column_count> w{};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < column_count; ++i) {
      w[i] = std::max(w[i], report_format::columns(row[i]));
    }
  }
  std::size_t fixed = column_gap * (column_count - 1);
  for (std::size_t i : {1, 2, 3, 4, 6}) fixed += w[i];
  std::size_t room = table_columns_max > fixed + 2 * name_columns_min ? table_columns_max - fixed
                                                                      : 2 * name_columns_min;
  if (w[0] + w[5] <= room) return w;
  std::size_t verdict_w = std::min(w[5], std::max(name_columns_min, room / 2));
  w[0] = std::min(w[0], std::max(name_columns_min, room - verdict_w));
  w[5] = std::min(w[5], std::max(name_columns_min, room - w[0]));
  return w;
}

std::string totals_line(const std::vector<run_result>& runs) {
  std::array<std::size_t, 4> n{};
  for (const auto& r : runs) ++n[static_cast<std::size_t>(outcome_of(r))];
  auto count = [&n](run_outcome o) { return n[static_cast<std::size_t>(o)]; };
  std::string out = fmt::format("{} passed, {} failed, {} skipped", count(run_outcome::passed),
                                count(run_outcome::failed), count(run_outcome::skipped));
  if (auto errors = count(run_outcome::error); errors != 0) {
    out += fmt::format(", {} error{}", errors, errors == 1 ? "" : "s");
  }
  return out + "\n";
}

}  // namespace

std::string summary_table(const std::vector<run_result>& runs) {
  std::vector<table_row> rows;
  rows.reserve(runs.size() + 1);
  rows.push_back({"scenario", "seed", "ops", "faults", "checkers", "verdict", "seconds"});
  for (const auto& r : runs) rows.push_back(row_of(r));
  auto w = widths_of(rows);
  // Numbers are right-aligned, names left-aligned; the last column ends the line.
  constexpr std::array<bool, column_count> right{false, true, true, true, true, false, true};
  std::string out;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    std::string line;
    for (std::size_t i = 0; i < column_count; ++i) {
      if (i != 0) line.append(column_gap, ' ');
      auto cell = report_format::shortened(rows[k][i], w[i]);
      std::string pad(w[i] - report_format::columns(cell), ' ');
      line += right[i] ? pad + cell : cell + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
    if (k == 0) out += std::string(line.size(), '-') + "\n";
  }
  return out + totals_line(runs);
}

std::string digest_text(std::uint64_t digest) { return fmt::format("{:016x}", digest); }

std::string deterministic_text(const std::vector<run_result>& runs) {
  std::string out;
  for (const auto& r : runs) {
    if (!r.deterministic) continue;
    const double ratio = r.seconds > 0 ? r.virtual_seconds / r.seconds : 0;
    // Whole numbers from 10x up; below, one decimal (a byte-bound run may
    // take longer than the virtual time it covers).
    out += fmt::format("{} seed {}: digest {}, virtual {:.3f} s in {:.3f} s wall ({:.{}f}x)\n",
                       r.scenario, r.seed, digest_text(r.digest), r.virtual_seconds, r.seconds,
                       ratio, ratio < 10 ? 1 : 0);
  }
  return out;
}

std::string callers_text(const std::vector<run_result>& runs) {
  std::string out;
  for (const auto& r : runs) {
    for (const auto& c : r.callers) {
      out += fmt::format("{} seed {}: {}\n", r.scenario, r.seed, describe(c));
    }
  }
  return out;
}

}  // namespace faultlane::sim
