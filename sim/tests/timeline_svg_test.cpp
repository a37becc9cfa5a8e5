// The timeline's picture, rule by rule (timeline_svg.cpp; docs/scenarios.md,
// "Timeline"): the time axis ticked to its end, the plot widened for dense
// rows, every row and item drawn once with the ops a violation names
// outlined on top, phases as bands to their end, the runner's marks, and a
// violation without a bar as a line at the nearest recorded point.
// timeline.hpp is private to sim/src.
#include <gtest/gtest.h>

#include "report_fixtures.hpp"
#include "reports/timeline.hpp"

namespace faultlane::sim {
namespace {

using namespace report_fixtures;
namespace tl = timeline;

std::string svg_of(const tl::model& m, const history& h = {}) {
  std::string out;
  tl::append_svg(out, h, m);
  return out;
}

// Rule: the time axis has a tick and its label at every step from 0 to the
// end of the run, the end included when a step lands on it.
TEST(timeline_svg, the_axis_is_ticked_and_labelled_to_its_end) {
  tl::model m;
  m.end_us = 10'000;  // 10 ms in steps of 1 ms on the narrowest plot
  const auto svg = svg_of(m);
  EXPECT_EQ(count_of(svg, "<line class=\"grid\""), 11u) << svg;
  EXPECT_EQ(count_of(svg, " ms</text>"), 11u) << svg;
  for (int ms = 0; ms <= 10; ++ms) {
    EXPECT_NE(svg.find(">" + std::to_string(ms) + " ms</text>"), std::string::npos) << ms;
  }
  EXPECT_NE(svg.find(R"(<line class="grid" x1="1440.0")"), std::string::npos) << svg;
  m.end_us = 9'999;  // the last step is past the end: no tick at 10 ms
  EXPECT_EQ(count_of(svg_of(m), "<line class=\"grid\""), 10u);
}

// Rule: the axis step is 1, 2 or 5 times a power of ten, the least such
// step that keeps ticks 110 px apart: on the narrowest plot (1200 px) every
// run below has eleven ticks, 0 to its end.
TEST(timeline_svg, the_axis_step_is_1_2_or_5_times_a_power_of_ten) {
  const std::vector<std::pair<std::uint64_t, std::string>> runs = {
      {5'000, "0.5"}, {20'000, "2"}, {50'000, "5"}, {100'000, "10"}};
  for (const auto& [end_us, step] : runs) {
    tl::model m;
    m.end_us = end_us;
    const auto svg = svg_of(m);
    EXPECT_EQ(count_of(svg, "<line class=\"grid\""), 11u) << end_us << "\n" << svg;
    EXPECT_NE(svg.find(">" + step + " ms</text>"), std::string::npos) << end_us << "\n" << svg;
  }
}

// The model of a run 1 ms long, with `groups`.
tl::model one_ms_model(std::vector<tl::row_group> groups = {}) {
  tl::model m;
  m.end_us = 1000;
  m.groups = std::move(groups);
  return m;
}

tl::item bar(std::uint64_t op, std::uint64_t start_us, std::string title) {
  return {tl::shape::bar, "ok", start_us, start_us + 10, op, std::move(title)};
}

// Rule: every row of every group is drawn with its label, and every item of
// a row once; an op a violation names is outlined, and drawn after the
// row's other items so that none of them covers the outline.
TEST(timeline_svg, outlined_ops_are_drawn_last_and_every_item_once) {
  auto m = one_ms_model({{"lanes",
                          {{"lane A",
                            "lane A long",
                            {bar(1, 0, "first"), bar(2, 100, "second"), bar(0, 200, "third")}}}},
                         {"empty", {}},
                         {"sessions", {{"row B", "b", {}}, {"row C", "c", {}}}}});
  m.marks.ops[1] = "no_replay: op 1 ran twice";
  const auto svg = svg_of(m);
  for (const char* text : {">lanes</text>", ">lane A<title>lane A long</title>", ">sessions</text>",
                           ">row B<title>", ">row C<title>"}) {
    EXPECT_EQ(count_of(svg, text), 1u) << text << "\n" << svg;
  }
  EXPECT_EQ(count_of(svg, ">empty</text>"), 0u);
  EXPECT_EQ(count_of(svg, "<title>VIOLATION no_replay: op 1 ran twice\nfirst</title>"), 1u);
  EXPECT_EQ(count_of(svg, "<title>second</title>"), 1u);
  EXPECT_EQ(count_of(svg, "<title>third</title>"), 1u);
  const auto outlined = tags_with(svg, "class=\"violation\"");
  ASSERT_EQ(outlined.size(), 1u) << svg;
  EXPECT_NE(outlined[0].find("data-op=\"1\""), std::string::npos) << outlined[0];
  EXPECT_GT(svg.find(outlined[0]), svg.find("<title>second</title>"));
  EXPECT_GT(svg.find(outlined[0]), svg.find("<title>third</title>"));
}

// Rule: a violation names an op's bar when the op has one; else a line at
// its seq, or at its op's submit when it gives no seq; with neither (no
// seq, no op, or an op the history does not have) nothing is drawn.
TEST(timeline_svg, a_violation_points_at_its_bar_else_its_seq_else_its_submit) {
  history h;
  h.ops = {op_of(1, 101, status::ok, 300), op_of(2, 102, status::ok, 400)};
  h.ops[0].submit_seq = 5;
  auto slice = event_of(20, 210, "client#0", event_kind::slice_dispatched);
  slice.task_id = 102;  // op 2 has a bar, op 1 none
  h.events.push_back(slice);
  run_result r;
  r.checkers.push_back({"no_replay", true, "", 2, {}});
  auto& v = r.checkers[0].violations;
  v.push_back({.checker = "no_replay", .op_id = 1, .evidence = "by submit"});
  v.push_back({.checker = "no_replay", .op_id = 2, .evidence = "by bar"});
  v.push_back({.checker = "no_replay", .op_id = 1, .seq = 9, .evidence = "by seq"});
  v.push_back({.checker = "no_replay", .op_id = 3, .evidence = "op unknown"});
  v.push_back({.checker = "no_replay", .evidence = "nothing"});
  const auto m = tl::build_model(r, h);
  ASSERT_EQ(m.marks.ops.size(), 1u);
  EXPECT_NE(m.marks.ops.at(2).find("by bar"), std::string::npos);
  ASSERT_EQ(m.marks.seqs.size(), 2u);
  EXPECT_EQ(m.marks.seqs[0].first, 5u);
  EXPECT_NE(m.marks.seqs[0].second.find("by submit"), std::string::npos);
  EXPECT_EQ(m.marks.seqs[1].first, 9u);
  EXPECT_NE(m.marks.seqs[1].second.find("by seq"), std::string::npos);
}

tl::item tick(std::uint64_t us) { return {tl::shape::tick, "sess", us, us, 0, {}}; }

// Rule: the plot is 3 px per item of its densest row, 1200 px at least and
// 16000 at most, beside 240 px of labels and a 48 px margin; its height is
// the axis, each group that has rows with its rows, and a margin.
TEST(timeline_svg, the_plot_widens_for_its_densest_row_within_bounds) {
  auto size_of = [](std::size_t items, std::size_t rows) {
    tl::model m;
    m.end_us = 100'000;
    tl::row dense{"dense", "", {}};
    for (std::size_t i = 0; i < items; ++i) dense.items.push_back(tick(i));
    m.groups.push_back({"g", {dense}});
    for (std::size_t r = 1; r < rows; ++r) m.groups[0].rows.push_back({"r", "", {tick(1)}});
    m.groups.push_back({"none", {}});
    const auto svg = svg_of(m);
    const auto at = svg.find("<svg ");
    return svg.substr(at, svg.find('>', at) - at);
  };
  EXPECT_NE(size_of(1000, 1).find(R"(width="3288" height="84")"), std::string::npos)
      << size_of(1000, 1);
  EXPECT_NE(size_of(399, 2).find(R"(width="1488" height="102")"), std::string::npos)
      << size_of(399, 2);
  EXPECT_NE(size_of(401, 1).find(R"(width="1491" height="84")"), std::string::npos)
      << size_of(401, 1);
  EXPECT_NE(size_of(6000, 1).find(R"(width="16288" height="84")"), std::string::npos)
      << size_of(6000, 1);
}

// Rule: an item is drawn in its shape (a fault and a decode error as a
// path, the rest as a rect); one without a title closes at once.
TEST(timeline_svg, each_shape_is_its_element) {
  const auto svg =
      svg_of(one_ms_model({{"g",
                            {{"r",
                              "",
                              {{tl::shape::fault, "fault-mark", 100, 100, 0, "a fault"},
                               {tl::shape::decode_error, "decode-error", 200, 200, 0, "bad frame"},
                               {tl::shape::span, "span", 0, 500, 0, {}}}}}}}));
  EXPECT_NE(svg.find(R"(<path class="fault-mark" d="M360.0,1l5,8l-5,8l-5,-8z"><title>a fault)"
                     R"(</title></path>)"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(R"(<path class="decode-error" d="M476.0,2h8l-4,14z"><title>bad frame)"
                     R"(</title></path>)"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(R"(<rect class="span" x="240.0" y="8" width="600.0" height="2"/>)"),
            std::string::npos)
      << svg;
}

// Rule: a phase is a band from its start to its end (to the axis end while
// it had none), named by its kind, its deadline in its title, its name on
// a label at its start.
TEST(timeline_svg, a_phase_is_a_band_to_its_end) {
  history h;
  h.phases = {{"f", false, false, 0, 1, 2, 100, 300},
              {"h", true, false, 0, 2, 3, 300, 350},
              {"live", false, true, 5000, 3, 0, 350, 0}};
  const auto svg = svg_of(one_ms_model(), h);
  EXPECT_NE(svg.find(R"(<rect class="phase" data-kind="phase" x="360.0" y="0" width="240.0")"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(R"(data-kind="heal" x="600.0" y="0" width="60.0")"), std::string::npos);
  EXPECT_NE(svg.find(R"(data-kind="liveness" x="660.0" y="0" width="780.0")"), std::string::npos);
  EXPECT_NE(svg.find("<title>phase live (liveness): 0.350 ms to 1.000 ms, deadline 5000 ms"
                     "</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>phase f (phase): 0.100 ms to 0.300 ms</title>"), std::string::npos);
  // Each band is labelled with its phase's name at its start.
  for (const char* label :
       {R"(<text x="363.0" y="12">f</text>)", R"(<text x="603.0" y="12">h</text>)",
        R"(<text x="663.0" y="12">live</text>)"}) {
    EXPECT_NE(svg.find(label), std::string::npos) << label << "\n" << svg;
  }
}

// Rule: each runner mark is a line at its time, saying its kind, whether
// it went well, and its text.
TEST(timeline_svg, a_mark_is_a_line_at_its_time) {
  history h;
  h.marks = {{5, 500, "event", "restart b", false}, {6, 700, "phase", "heal begins", true}};
  const auto svg = svg_of(one_ms_model(), h);
  EXPECT_NE(svg.find(R"(<line class="event-mark" data-kind="event" data-ok="false" x1="840.0")"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find("<title>event: restart b at 0.500 ms (failed)</title>"), std::string::npos);
  EXPECT_NE(svg.find(R"(data-kind="phase" data-ok="true" x1="1080.0")"), std::string::npos);
  EXPECT_NE(svg.find("<title>phase: heal begins at 0.700 ms</title>"), std::string::npos);
}

// Rule: a violation line stands at the recorded point nearest its seq, the
// earlier on a tie; before the first point at the first, past the last at
// the last.
TEST(timeline_svg, a_violation_line_stands_at_the_nearest_point) {
  history h;
  h.events.push_back(event_of(10, 100, "c", event_kind::lane_connected));
  h.events.push_back(event_of(20, 200, "c", event_kind::lane_closed));
  auto m = one_ms_model();
  const std::pair<std::uint64_t, const char*> cases[] = {
      {14, "360.0"}, {15, "360.0"}, {16, "480.0"}, {20, "480.0"}, {25, "480.0"}, {5, "360.0"}};
  for (const auto& [seq, x] : cases) {
    m.marks.seqs = {{seq, "v"}};
    const auto svg = svg_of(m, h);
    EXPECT_NE(svg.find(std::string(R"(<line class="violation" x1=")") + x + "\""),
              std::string::npos)
        << seq << "\n"
        << svg;
    EXPECT_NE(svg.find("<title>VIOLATION at seq " + std::to_string(seq) + "\nv</title>"),
              std::string::npos);
  }
}

// Rule: an op's first outlined bar carries its anchor (the header links to
// it) and the outline keeps the bar's outcome colour.
TEST(timeline_svg, an_outlined_op_is_anchored_once_in_its_colour) {
  tl::item first{tl::shape::bar, "amb", 100, 200, 4, "a"};
  tl::item second{tl::shape::bar, "amb", 300, 400, 4, "b"};
  auto m = one_ms_model({{"g", {{"r1", "", {first}}, {"r2", "", {second}}}}});
  m.marks.ops[4] = "no_replay: twice";
  const auto svg = svg_of(m);
  EXPECT_EQ(count_of(svg, R"(id="op-4")"), 1u) << svg;
  EXPECT_EQ(count_of(svg, R"(style="fill:#f08c00" data-op="4")"), 2u) << svg;
  EXPECT_LT(svg.find(R"(id="op-4")"), svg.find("VIOLATION no_replay: twice\nb"));
}

}  // namespace
}  // namespace faultlane::sim
