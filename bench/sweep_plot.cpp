// SVG rendering of a --sweep (sweep_plot.hpp).
#include "sweep_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

namespace faultlane::bench {
namespace {

constexpr double panel_w = 380, panel_h = 230;
constexpr double pad_left = 64, pad_right = 16, pad_top = 28, pad_bottom = 46;
constexpr double header_h = 40, legend_row_h = 18;
constexpr const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd",
                                   "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string color_of(std::size_t i) { return palette[i % std::size(palette)]; }

// Where tick i of n sits across a plot `width` wide (one tick: the middle).
double x_at(std::size_t i, std::size_t n, double width) {
  if (n <= 1) return width / 2;
  const double margin = width * 0.06;
  return margin + (width - 2 * margin) * static_cast<double>(i) / static_cast<double>(n - 1);
}

std::string tick_text(double v) {
  return v >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

void render_panel(std::string& out, const plot_figure& f, const plot_panel& p, double ox,
                  double oy) {
  const double w = panel_w - pad_left - pad_right;
  const double h = panel_h - pad_top - pad_bottom;
  double most = 0;
  for (const auto& l : p.lines) {
    for (double v : l.y) {
      if (std::isfinite(v)) most = std::max(most, v);
    }
  }
  const double top = round_up_for_axis(most);
  const double x0 = ox + pad_left, y0 = oy + pad_top;
  out += fmt::format(
      R"(<g class="panel"><text x="{:.1f}" y="{:.1f}" font-size="13" font-weight="bold">{}</text>)"
      "\n",
      x0, oy + 18, escape(p.title));
  out += fmt::format(
      R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="none" stroke="#999"/>)"
      "\n",
      x0, y0, w, h);
  constexpr int y_ticks = 4;
  for (int t = 0; t <= y_ticks; ++t) {
    const double v = top * t / y_ticks;
    const double y = y0 + h - h * t / y_ticks;
    out += fmt::format(R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="#eee"/>)"
                       R"(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="end">{}</text>)"
                       "\n",
                       x0, y, x0 + w, y, x0 - 6, y + 4, tick_text(v));
  }
  for (std::size_t i = 0; i < f.x_ticks.size(); ++i) {
    const double x = x0 + x_at(i, f.x_ticks.size(), w);
    out +=
        fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="middle">{}</text>)"
                    "\n",
                    x, y0 + h + 16, escape(f.x_ticks[i]));
  }
  out += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" font-size="11" text-anchor="middle">{}</text>)"
                     "\n",
                     x0 + w / 2, y0 + h + 34, escape(f.x_label));
  for (const auto& l : p.lines) {
    const auto color = color_of(l.color);
    const char* dash = l.dashed ? R"( stroke-dasharray="6 4")" : "";
    out += fmt::format(R"(<g class="line" data-label="{}" data-dashed="{}">)", escape(l.label),
                       l.dashed ? "true" : "false");
    std::string run;
    auto flush = [&] {
      if (!run.empty()) {
        out += fmt::format(R"(<polyline fill="none" stroke="{}" stroke-width="2"{} points="{}"/>)",
                           color, dash, run);
      }
      run.clear();
    };
    for (std::size_t i = 0; i < l.y.size() && i < f.x_ticks.size(); ++i) {
      if (!std::isfinite(l.y[i])) {
        flush();
        continue;
      }
      const double x = x0 + x_at(i, f.x_ticks.size(), w);
      const double y = y0 + h - h * std::max(l.y[i], 0.0) / top;
      run += fmt::format("{}{:.1f},{:.1f}", run.empty() ? "" : " ", x, y);
      out += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", x, y, color);
    }
    flush();
    out += "</g>\n";
  }
  out += "</g>\n";
}

}  // namespace

double round_up_for_axis(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 1;
  const double power = std::pow(10.0, std::floor(std::log10(v)));
  for (double step : {1.0, 2.0, 5.0, 10.0}) {
    if (step * power >= v * (1 - 1e-12)) return step * power;
  }
  return 10 * power;
}

std::string render_svg(const plot_figure& f) {
  const std::size_t columns = std::max<std::size_t>(f.columns, 1);
  const std::size_t rows = (f.panels.size() + columns - 1) / columns;
  // The legend: each (label, dashed) once, in first-seen order.
  std::vector<const plot_line*> legend;
  std::set<std::pair<std::string, bool>> seen;
  for (const auto& p : f.panels) {
    for (const auto& l : p.lines) {
      if (seen.insert({l.label, l.dashed}).second) legend.push_back(&l);
    }
  }
  const std::size_t per_row = 3;
  const double legend_h =
      legend_row_h * static_cast<double>((legend.size() + per_row - 1) / per_row);
  const double width = panel_w * static_cast<double>(columns) + 20;
  const double height = header_h + legend_h + panel_h * static_cast<double>(rows) + 10;
  std::string out =
      fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{:.0f}" height="{:.0f}" )"
                  R"(viewBox="0 0 {:.0f} {:.0f}" font-family="sans-serif">)"
                  "\n"
                  R"(<rect width="100%" height="100%" fill="white"/>)"
                  "\n"
                  R"(<text x="10" y="24" font-size="15" font-weight="bold">{}</text>)"
                  "\n",
                  width, height, width, height, escape(f.title));
  for (std::size_t i = 0; i < legend.size(); ++i) {
    const double x = 10 + static_cast<double>(i % per_row) * 250;
    const double y = header_h + static_cast<double>(i / per_row) * legend_row_h + 8;
    out += fmt::format(
        R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}" stroke-width="2"{}/>)"
        R"(<text x="{:.1f}" y="{:.1f}" font-size="12">{}</text>)"
        "\n",
        x, y, x + 28, y, color_of(legend[i]->color),
        legend[i]->dashed ? R"( stroke-dasharray="6 4")" : "", x + 34, y + 4,
        escape(legend[i]->label));
  }
  for (std::size_t i = 0; i < f.panels.size(); ++i) {
    const double ox = 10 + panel_w * static_cast<double>(i % columns);
    const double oy = header_h + legend_h + panel_h * static_cast<double>(i / columns);
    render_panel(out, f, f.panels[i], ox, oy);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace faultlane::bench
