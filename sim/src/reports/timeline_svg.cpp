// timeline_svg: the timeline's picture. Rows (timeline_rows.cpp) are laid
// out under a time axis in ms since the run started, the plot widened for
// dense rows; phases are shaded bands, the runner's marks dashed lines, and
// what violations name is outlined in red: an op's bars, or else a line at
// the history point nearest to the violation's seq. Every element is small
// (one rect or path with a <title>) so 10 000 ops stay a few megabytes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <set>

#include "reports/report_format.hpp"
#include "reports/timeline.hpp"

namespace faultlane::sim::timeline {
namespace {

using report_format::append_escaped;

constexpr double label_width = 240;
constexpr double axis_height = 36;
constexpr double row_height = 18;
constexpr double group_height = 22;
constexpr double bottom_margin = 8;
constexpr double right_margin = 48;  // room for the last axis label
constexpr double plot_width_min = 1200;
constexpr double plot_width_max = 16000;
constexpr double pixels_per_item = 3;  // widen the plot for dense rows
constexpr double axis_tick_spacing_px = 110;
constexpr std::size_t label_columns_max = 36;
constexpr std::size_t violation_lines_max = 1000;  // seq-named violations drawn

struct layout {
  std::uint64_t end_us = 1;
  double plot_width = plot_width_min;
  double height = axis_height;
  double x(std::uint64_t us) const {
    return label_width + plot_width * (static_cast<double>(us) / static_cast<double>(end_us));
  }
  double width() const { return label_width + plot_width + right_margin; }
};

layout layout_of(const model& m) {
  layout l;
  l.end_us = m.end_us;
  std::size_t densest = 0;
  l.height = axis_height + bottom_margin;
  for (const auto& g : m.groups) {
    if (g.rows.empty()) continue;
    l.height += group_height + row_height * static_cast<double>(g.rows.size());
    for (const auto& r : g.rows) densest = std::max(densest, r.items.size());
  }
  l.plot_width =
      std::clamp(pixels_per_item * static_cast<double>(densest), plot_width_min, plot_width_max);
  return l;
}

std::string_view fill_of(std::string_view css) {
  for (const auto& c : colours) {
    if (c.css == css) return c.fill;
  }
  return "#888";
}

highlights find_highlights(const run_result& r, const history& h,
                           const std::set<std::uint64_t>& ops_with_bar) {
  highlights out;
  for (const auto& c : r.checkers) {
    for (const auto& v : c.violations) {
      std::string text = c.name + ": " + report_format::violation_line(v);
      if (v.op_id != 0 && ops_with_bar.contains(v.op_id)) {
        auto& t = out.ops[v.op_id];
        t += (t.empty() ? "" : "\n") + text;
        continue;
      }
      std::uint64_t seq = v.seq;
      if (seq == 0 && v.op_id != 0 && v.op_id <= h.ops.size()) seq = h.ops[v.op_id - 1].submit_seq;
      if (seq != 0 && out.seqs.size() < violation_lines_max) out.seqs.emplace_back(seq, text);
    }
  }
  return out;
}

using seq_point = std::pair<std::uint64_t, std::uint64_t>;  // seq, time_us

std::vector<seq_point> seq_points(const history& h) {
  std::vector<seq_point> points;
  points.reserve(h.events.size() + 2 * h.ops.size() + h.marks.size());
  for (const auto& e : h.events) points.emplace_back(e.seq, e.time_us);
  for (const auto& op : h.ops) {
    if (op.submit_seq != 0) points.emplace_back(op.submit_seq, op.submit_us);
    if (op.complete_seq != 0) points.emplace_back(op.complete_seq, op.complete_us);
  }
  for (const auto& m : h.marks) points.emplace_back(m.seq, m.time_us);
  std::sort(points.begin(), points.end());
  return points;
}

// The time of the recorded point nearest to `seq` (the earlier on a tie).
std::uint64_t time_at_seq(const std::vector<seq_point>& points, std::uint64_t seq) {
  if (points.empty()) return 0;
  auto it = std::lower_bound(points.begin(), points.end(), seq_point{seq, 0});
  if (it == points.end()) return points.back().second;
  if (it == points.begin() || it->first == seq) return it->second;
  auto before = std::prev(it);
  return seq - before->first <= it->first - seq ? before->second : it->second;
}

double nice_step_us(std::uint64_t end_us, double plot_width) {
  double raw = static_cast<double>(end_us) / std::max(1.0, plot_width / axis_tick_spacing_px);
  double magnitude = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  for (double m : {1.0, 2.0, 5.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

void append_axis(std::string& out, const layout& l) {
  double step = nice_step_us(l.end_us, l.plot_width);
  auto it = std::back_inserter(out);
  for (double t = 0; t <= static_cast<double>(l.end_us); t += step) {
    double x = l.x(static_cast<std::uint64_t>(t));
    fmt::format_to(it, R"(<line class="grid" x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2:.0f}"/>)", x,
                   axis_height - 4, l.height);
    fmt::format_to(it, R"(<text x="{:.1f}" y="{}">{:g} ms</text>)", x + 2, axis_height - 8,
                   t / 1000.0);
    out += "\n";
  }
}

void append_phases(std::string& out, const history& h, const layout& l) {
  auto it = std::back_inserter(out);
  for (const auto& p : h.phases) {
    std::uint64_t end = p.end_us != 0 ? std::max(p.end_us, p.start_us) : l.end_us;
    std::string_view kind = p.heal ? "heal" : (p.liveness ? "liveness" : "phase");
    double x0 = l.x(p.start_us);
    fmt::format_to(it,
                   R"(<rect class="phase" data-kind="{}" x="{:.1f}" y="0" width="{:.1f}")"
                   R"( height="{:.0f}"><title>)",
                   kind, x0, std::max(l.x(end) - x0, 1.0), l.height);
    append_escaped(out, fmt::format("phase {} ({}): {} to {}", p.name, kind, time_text(p.start_us),
                                    time_text(end)));
    if (p.deadline_ms != 0) fmt::format_to(it, ", deadline {} ms", p.deadline_ms);
    fmt::format_to(it, R"(</title></rect><text x="{:.1f}" y="12">)", x0 + 3);
    append_escaped(out, p.name);
    out += "</text>\n";
  }
}

// Opens an item's element; the caller appends the title and closes it.
void open_item(std::string& out, const item& i, const layout& l, std::string_view cls) {
  auto it = std::back_inserter(out);
  double x0 = l.x(i.start_us);
  switch (i.kind) {
    case shape::bar:
      fmt::format_to(it, R"(<rect class="{}" x="{:.1f}" y="3" width="{:.1f}" height="12")", cls, x0,
                     std::max(l.x(i.end_us) - x0, 1.0));
      return;
    case shape::span:
      fmt::format_to(it, R"(<rect class="{}" x="{:.1f}" y="8" width="{:.1f}" height="2")", cls, x0,
                     std::max(l.x(i.end_us) - x0, 1.0));
      return;
    case shape::tick:
      fmt::format_to(it, R"(<rect class="{}" x="{:.1f}" y="2" width="1.5" height="14")", cls, x0);
      return;
    case shape::frame:
      fmt::format_to(it, R"(<rect class="{}" x="{:.1f}" y="5" width="1" height="8")", cls, x0);
      return;
    case shape::fault:
      fmt::format_to(it, R"(<path class="{}" d="M{:.1f},1l5,8l-5,8l-5,-8z")", cls, x0);
      return;
    case shape::decode_error:
      fmt::format_to(it, R"(<path class="{}" d="M{:.1f},2h8l-4,14z")", cls, x0 - 4);
      return;
  }
}

void append_item(std::string& out, const item& i, const layout& l, const highlights& marks,
                 std::set<std::uint64_t>& anchored) {
  auto flagged = i.op_id != 0 ? marks.ops.find(i.op_id) : marks.ops.end();
  if (flagged == marks.ops.end()) {
    open_item(out, i, l, i.css);
  } else {
    open_item(out, i, l, "violation");
    fmt::format_to(std::back_inserter(out), R"( style="fill:{}" data-op="{}")", fill_of(i.css),
                   i.op_id);
    // The first bar of the op is where the header's link goes.
    if (anchored.insert(i.op_id).second)
      fmt::format_to(std::back_inserter(out), R"( id="op-{}")", i.op_id);
  }
  std::string_view tag = i.kind == shape::fault || i.kind == shape::decode_error ? "path" : "rect";
  if (i.title.empty() && flagged == marks.ops.end()) {
    out += "/>";
    return;
  }
  out += "><title>";
  if (flagged != marks.ops.end()) {
    out += "VIOLATION ";
    append_escaped(out, flagged->second);
    out += "\n";
  }
  append_escaped(out, i.title);
  fmt::format_to(std::back_inserter(out), "</title></{}>", tag);
}

void append_rows(std::string& out, const model& m, const layout& l) {
  auto it = std::back_inserter(out);
  std::set<std::uint64_t> anchored;
  double y = axis_height;
  for (const auto& g : m.groups) {
    if (g.rows.empty()) continue;
    fmt::format_to(it, R"(<text class="group" x="4" y="{:.0f}">)", y + 15);
    append_escaped(out, g.name);
    out += "</text>\n";
    y += group_height;
    for (const auto& r : g.rows) {
      fmt::format_to(it, R"x(<g transform="translate(0,{:.0f})"><text x="12" y="13">)x", y);
      append_escaped(out, report_format::shortened(r.label, label_columns_max));
      out += "<title>";
      append_escaped(out, r.title);
      out += "</title></text>\n";
      // Outlined bars last, so a later bar on the lane does not cover the outline.
      for (bool outlined : {false, true}) {
        for (const auto& i : r.items) {
          if ((i.op_id != 0 && m.marks.ops.contains(i.op_id)) != outlined) continue;
          append_item(out, i, l, m.marks, anchored);
          out += "\n";
        }
      }
      out += "</g>\n";
      y += row_height;
    }
  }
}

void append_marks(std::string& out, const history& h, const layout& l) {
  auto it = std::back_inserter(out);
  for (const auto& mk : h.marks) {
    fmt::format_to(it,
                   R"(<line class="event-mark" data-kind="{0}" data-ok="{1}" x1="{2:.1f}")"
                   R"( x2="{2:.1f}" y1="{3}" y2="{4:.0f}"><title>)",
                   report_format::escaped(mk.kind, true), mk.ok, l.x(mk.time_us), axis_height,
                   l.height);
    append_escaped(out, fmt::format("{}: {} at {}{}", mk.kind, mk.text, time_text(mk.time_us),
                                    mk.ok ? "" : " (failed)"));
    out += "</title></line>\n";
  }
}

void append_violation_lines(std::string& out, const history& h, const model& m, const layout& l) {
  if (m.marks.seqs.empty()) return;
  auto points = seq_points(h);
  for (const auto& [seq, text] : m.marks.seqs) {
    fmt::format_to(std::back_inserter(out),
                   R"(<line class="violation" x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2:.0f}">)"
                   "<title>VIOLATION at seq {3}\n",
                   l.x(time_at_seq(points, seq)), axis_height, l.height, seq);
    append_escaped(out, text);
    out += "</title></line>\n";
  }
}

}  // namespace

model build_model(const run_result& r, const history& h) {
  model m;
  m.end_us = end_of(h);
  m.groups.push_back(lane_rows(h, m.end_us));
  m.groups.push_back(session_rows(h, m.end_us));
  m.groups.push_back(relay_rows(h, m.end_us));
  std::set<std::uint64_t> ops_with_bar;
  for (const auto& lane : m.groups.front().rows) {
    for (const auto& i : lane.items) {
      if (i.op_id != 0) ops_with_bar.insert(i.op_id);
    }
  }
  m.marks = find_highlights(r, h, ops_with_bar);
  return m;
}

void append_svg(std::string& out, const history& h, const model& m) {
  auto l = layout_of(m);
  fmt::format_to(std::back_inserter(out),
                 "<div class=\"plot\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\""
                 " height=\"{1:.0f}\" viewBox=\"0 0 {0:.0f} {1:.0f}\">\n",
                 l.width(), l.height);
  append_phases(out, h, l);
  append_axis(out, l);
  append_rows(out, m, l);
  append_marks(out, h, l);
  append_violation_lines(out, h, m, l);
  out += "</svg>\n</div>\n";
}

}  // namespace faultlane::sim::timeline
