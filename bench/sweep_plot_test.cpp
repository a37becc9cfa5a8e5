// The --sweep plot: what the SVG shows must follow the numbers (a larger
// value sits higher, x follows the grid, gaps stay gaps, the axis holds
// every value), and text from the caller cannot break the document.
#include "sweep_plot.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <utility>
#include <vector>

namespace faultlane::bench {
namespace {

using points = std::vector<std::pair<double, double>>;

// Every polyline's points, in document order, with whether it is dashed.
std::vector<std::pair<points, bool>> polylines(const std::string& svg) {
  std::vector<std::pair<points, bool>> out;
  const std::regex line(R"re(<polyline ([^>]*)points="([^"]*)"/>)re");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line); it != std::sregex_iterator();
       ++it) {
    points p;
    const std::string text = (*it)[2];
    const std::regex pair(R"re(([-0-9.]+),([-0-9.]+))re");
    for (auto q = std::sregex_iterator(text.begin(), text.end(), pair); q != std::sregex_iterator();
         ++q) {
      p.emplace_back(std::stod((*q)[1]), std::stod((*q)[2]));
    }
    out.emplace_back(p, std::string((*it)[1]).find("stroke-dasharray") != std::string::npos);
  }
  return out;
}

struct box {
  double x, y, w, h;
};
std::vector<box> panel_frames(const std::string& svg) {
  std::vector<box> out;
  const std::string number = "([-0-9.]+)";
  const std::regex frame("<rect x=\"" + number + "\" y=\"" + number + "\" width=\"" + number +
                         "\" height=\"" + number + "\" fill=\"none\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), frame); it != std::sregex_iterator();
       ++it) {
    out.push_back(
        {std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])});
  }
  return out;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const double gap = std::numeric_limits<double>::quiet_NaN();

TEST(sweep_plot, axis_tops_are_round_numbers_at_or_above_the_largest_value) {
  EXPECT_EQ(round_up_for_axis(0), 1);
  EXPECT_EQ(round_up_for_axis(-3), 1);
  EXPECT_EQ(round_up_for_axis(gap), 1);
  EXPECT_EQ(round_up_for_axis(1), 1);
  EXPECT_EQ(round_up_for_axis(1.01), 2);
  EXPECT_EQ(round_up_for_axis(2), 2);
  EXPECT_EQ(round_up_for_axis(2.2), 5);
  EXPECT_EQ(round_up_for_axis(7), 10);
  EXPECT_DOUBLE_EQ(round_up_for_axis(0.3), 0.5);
  EXPECT_DOUBLE_EQ(round_up_for_axis(123), 200);
  EXPECT_DOUBLE_EQ(round_up_for_axis(2.5e9), 5e9);
}

TEST(sweep_plot, a_larger_value_sits_higher_and_x_follows_the_grid) {
  plot_figure f;
  f.x_ticks = {"1", "2", "4"};
  f.columns = 1;
  f.panels.push_back(
      {"throughput",
       {{"lanes 1: faultlane", 0, false, {1, 2, 4}}, {"lanes 1: raw tcp", 0, true, {0, 4, 3}}}});
  const auto svg = render_svg(f);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_FALSE(lines[0].second);
  EXPECT_TRUE(lines[1].second);
  const auto& solid = lines[0].first;
  ASSERT_EQ(solid.size(), 3u);
  EXPECT_LT(solid[0].first, solid[1].first);
  EXPECT_LT(solid[1].first, solid[2].first);
  EXPECT_GT(solid[0].second, solid[1].second);  // 1 below 2
  EXPECT_GT(solid[1].second, solid[2].second);  // 2 below 4
  // The axis runs 0..5 (4 rounded up): 0 on the frame's bottom edge, 4 at
  // four fifths of its height, both lines on the same scale.
  const auto frames = panel_frames(svg);
  ASSERT_EQ(frames.size(), 1u);
  const auto& fr = frames[0];
  const auto& dashed = lines[1].first;
  EXPECT_NEAR(dashed[0].second, fr.y + fr.h, 0.1);
  EXPECT_NEAR(solid[2].second, fr.y + fr.h - fr.h * 4 / 5, 0.1);
  EXPECT_NEAR(dashed[1].second, solid[2].second, 0.1);
  for (const auto& [x, y] : solid) {
    EXPECT_GT(x, fr.x);
    EXPECT_LT(x, fr.x + fr.w);
    EXPECT_GE(y, fr.y);
  }
  // The same ticks put both lines' points at the same x.
  EXPECT_NEAR(dashed[2].first, solid[2].first, 0.1);
}

TEST(sweep_plot, a_skipped_point_breaks_the_line_instead_of_joining_across_it) {
  plot_figure f;
  f.x_ticks = {"1", "2", "4", "8"};
  f.panels.push_back({"p99", {{"lanes 2 rails 2: faultlane", 1, false, {1, gap, 3, 4}}}});
  const auto svg = render_svg(f);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].first.size(), 1u);
  EXPECT_EQ(lines[1].first.size(), 2u);
  EXPECT_EQ(count(svg, "<circle"), 3u);  // a lone point still shows
}

TEST(sweep_plot, one_grid_value_is_centred_and_panels_fill_rows_then_columns) {
  plot_figure f;
  f.x_ticks = {"2"};
  f.columns = 2;
  for (int i = 0; i < 4; ++i) f.panels.push_back({"panel", {{"a", 0, false, {1}}}});
  const auto svg = render_svg(f);
  const auto frames = panel_frames(svg);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_GT(frames[1].x, frames[0].x);
  EXPECT_NEAR(frames[1].y, frames[0].y, 0.1);
  EXPECT_NEAR(frames[2].x, frames[0].x, 0.1);
  EXPECT_GT(frames[2].y, frames[0].y);
  const auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NEAR(lines[0].first[0].first, frames[0].x + frames[0].w / 2, 0.1);
}

TEST(sweep_plot, the_legend_names_each_line_once_and_text_is_escaped) {
  plot_figure f;
  f.title = "op <read> & more";
  f.x_ticks = {"1", "2"};
  plot_line line{"lanes 1 \"a\" <b>: faultlane", 0, false, {1, 2}};
  f.panels.push_back({"throughput", {line}});
  f.panels.push_back({"p99", {line}});
  const auto svg = render_svg(f);
  EXPECT_EQ(svg.find("<read>"), std::string::npos);
  EXPECT_NE(svg.find("op &lt;read&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(count(svg, ">lanes 1 &quot;a&quot; &lt;b&gt;: faultlane</text>"), 1u);
  EXPECT_EQ(count(svg, R"(data-label="lanes 1 &quot;a&quot; &lt;b&gt;: faultlane")"), 2u);
  EXPECT_EQ(svg.rfind("</svg>\n"), svg.size() - 7);
}

}  // namespace
}  // namespace faultlane::bench
