// The plot of a faultlane-bench --sweep: small multiples (one panel per
// block size and metric), the grid's io threads along x, one line per
// lanes x rails setting, faultlane solid and its baseline dashed. Plain SVG
// text, so a CI job can keep it as an artifact and a browser shows it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace faultlane::bench {

struct plot_line {
  std::string label;  // in the legend, once per (label, dashed)
  std::size_t color = 0;
  bool dashed = false;
  std::vector<double> y;  // one per x tick; NaN where the point did not run
};

struct plot_panel {
  std::string title;
  std::vector<plot_line> lines;
};

struct plot_figure {
  std::string title;
  std::string x_label;
  std::vector<std::string> x_ticks;
  std::size_t columns = 2;
  std::vector<plot_panel> panels;  // row by row
};

// Each panel's y axis runs from 0 to a round number at or above its largest
// value; a run of points without a gap is one polyline.
std::string render_svg(const plot_figure& figure);

// 1, 2 or 5 times a power of ten, at or above `v` (1 for nothing above 0).
double round_up_for_axis(double v);

}  // namespace faultlane::bench
