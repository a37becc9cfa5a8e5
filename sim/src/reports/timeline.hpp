// timeline: the model behind timeline_html(). timeline_rows.cpp turns a
// history into rows of marks (one row per lane, per target incarnation and
// per relay connection); timeline_svg.cpp lays them out as inline SVG with
// the axis, phases, event marks and violation outlines; timeline.cpp wraps
// that in one HTML page with the header and legend.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/sim/history.hpp"
#include "faultlane/sim/report.hpp"

namespace faultlane::sim::timeline {

enum class shape : std::uint8_t {
  bar,           // an exchange: dispatch to completion
  span,          // a lane's or a relay connection's life, a thin line
  tick,          // a session opened, a request executed
  frame,         // a relayed frame, thinner
  fault,         // a fault the relay fired (class fault-mark)
  decode_error,  // a frame the relay's decoder rejected
};

struct item {
  shape kind = shape::tick;
  std::string_view css;  // colour class (see the page's style)
  std::uint64_t start_us = 0;
  std::uint64_t end_us = 0;  // bars and spans
  std::uint64_t op_id = 0;   // bars: the op it belongs to, for highlighting
  std::string title;         // hover text, unescaped
};

struct row {
  std::string label;  // short, shown
  std::string title;  // long, on hover
  std::vector<item> items;
};

struct row_group {
  std::string name;
  std::vector<row> rows;
};

// A colour class of the page's style, its fill and its legend entry.
struct colour {
  std::string_view css;
  std::string_view fill;
  std::string_view legend;
};

inline constexpr std::array<colour, 10> colours{{
    {"ok", "#2e9d48", "ok"},
    {"amb", "#f08c00", "ambiguous_write"},
    {"err", "#d62828", "timeout / connection error"},
    {"cxl", "#9e9e9e", "cancelled"},
    {"oth", "#8e44ad", "other status / not completed"},
    {"sess", "#1f6feb", "session opened"},
    {"fu", "#4a6fa5", "frame up (to target)"},
    {"fd", "#7fa7d9", "frame down"},
    {"fe", "#b5179e", "response with an error status"},
    {"span", "#b0b7c3", "lane / connection / incarnation alive"},
}};

// The colour class of an outcome: ok, amb (ambiguous_write), err (timeout,
// connection_failed), cxl (cancelled), oth (anything else).
std::string_view status_class(status s) noexcept;

// "READ" or "WRITE"
std::string_view op_name(wire::opcode op) noexcept;

// "12.345 ms"
std::string time_text(std::uint64_t us);

// The last time anything in the history happened, at least 1 µs.
std::uint64_t end_of(const history& h);

// One row per initiator lane (transport, incarnation, segment, lane): its
// connected spans and a bar per dispatched slice, up to the task's end
// (`end_us` for tasks that never settled).
row_group lane_rows(const history& h, std::uint64_t end_us);
// One row per target transport and incarnation: session_opened and
// server_executed ticks.
row_group session_rows(const history& h, std::uint64_t end_us);
// One row per relay connection of a tapped link: its open..close span,
// frames, faults and decode errors.
row_group relay_rows(const history& h, std::uint64_t end_us);

// What a run's violations point at: ops that have a bar (outlined), and
// history positions (a red line at the nearest recorded point's time).
struct highlights {
  std::map<std::uint64_t, std::string> ops;  // op id -> "checker: violation line"
  std::vector<std::pair<std::uint64_t, std::string>> seqs;
};

struct model {
  std::uint64_t end_us = 1;
  std::vector<row_group> groups;  // lanes, sessions, relay connections
  highlights marks;
};

model build_model(const run_result& r, const history& h);

// The <div class="plot"><svg ...>...</svg></div> of the page (timeline_svg.cpp).
void append_svg(std::string& out, const history& h, const model& m);

}  // namespace faultlane::sim::timeline
