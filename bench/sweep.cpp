// faultlane-bench --sweep: every point of workers x lanes x rails x block
// size, each measured against its own baseline in interleaved rounds, as a
// single run is. One JSON document lists the points (each the record a
// single run writes); the SVG plots throughput and p99 over the grid.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <utility>

#include "bench.hpp"
#include "sweep_plot.hpp"

namespace faultlane::bench {
namespace {

using json = nlohmann::ordered_json;

std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{}M", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{}K", bytes >> 10);
  return std::to_string(bytes);
}

std::string rate(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
  return fmt::format("{:.1f} MB/s", bytes_per_s / 1e6);
}

struct point {
  std::uint64_t block, lanes, rails, workers;
  outcome r;
};

bool clean(const outcome& r) {
  return r.fl.ops > 0 && r.fl.failures == 0 && r.fl.mismatches == 0 && r.raw.mismatches == 0;
}

void print_point(const options& o, const point& p) {
  std::string line = fmt::format(
      "  block {:>5}  workers {:>2}  lanes {:>2}  rails {:>2}   faultlane {:>11} p99 "
      "{:>8.1f} us",
      size_text(p.block), p.workers, p.lanes, p.rails, rate(p.r.fs.bytes_per_s), p.r.fs.p99_us);
  if (p.r.baseline) {
    line += fmt::format("   {} {:>11} p99 {:>8.1f} us   {:.3f} x", baseline_name(o),
                        rate(p.r.bs.bytes_per_s), p.r.bs.p99_us,
                        p.r.fs.bytes_per_s / std::max(p.r.bs.bytes_per_s, 1e-9));
  }
  if (p.r.fl.failures > 0) line += fmt::format("   failed {}", p.r.fl.failures);
  std::printf("%s\n", line.c_str());
}

json grid_json(const options& o) {
  return json{{"op", to_string(o.op)},
              {"batch", o.batch},
              {"threads", o.threads},
              {"lane_inflight", o.lane_inflight},
              {"duration_s", o.duration_s},
              {"warmup_s", o.warmup_s},
              {"rounds", o.rounds},
              {"verify", o.verify},
              {"baseline", !o.skip_baseline},
              {"raw_wait", to_string(o.baseline_wait)},
              {"busy_poll_us", o.busy_poll_us},
              {"progress_timeout_ms", o.progress_timeout_ms},
              {"workers", o.sweep_workers},
              {"lanes", o.sweep_lanes},
              {"rails", o.sweep_rails},
              {"block_sizes", o.sweep_blocks}};
}

// Rows are block sizes; columns throughput and p99. Along x the io threads;
// a line per lanes x rails, faultlane solid and raw TCP dashed in its colour.
plot_figure figure_for(const options& o, const std::vector<point>& points) {
  plot_figure f;
  f.title = fmt::format(
      "faultlane-bench --sweep: {}, batch {}, threads {}, lane inflight {}, {} s x {} rounds{}",
      to_string(o.op), o.batch, o.threads, o.lane_inflight, o.duration_s, o.rounds,
      o.baseline_wait == raw_wait::ready ? ", raw-wait ready" : "");
  f.x_label = "io threads (--workers)";
  for (auto w : o.sweep_workers) f.x_ticks.push_back(std::to_string(w));
  f.columns = 2;
  const double missing = std::numeric_limits<double>::quiet_NaN();
  const auto find = [&](std::uint64_t block, std::uint64_t lanes, std::uint64_t rails,
                        std::uint64_t workers) -> const point* {
    for (const auto& p : points) {
      if (p.block == block && p.lanes == lanes && p.rails == rails && p.workers == workers) {
        return &p;
      }
    }
    return nullptr;
  };
  for (auto block : o.sweep_blocks) {
    plot_panel throughput{fmt::format("{} blocks: throughput, GB/s", size_text(block)), {}};
    plot_panel p99{fmt::format("{} blocks: p99 latency, us", size_text(block)), {}};
    std::size_t color = 0;
    for (auto lanes : o.sweep_lanes) {
      for (auto rails : o.sweep_rails) {
        const auto label = fmt::format("lanes {} rails {}", lanes, rails);
        plot_line fl_rate{label + ": faultlane", color, false, {}};
        plot_line raw_rate{label + ": " + baseline_name(o), color, true, {}};
        plot_line fl_p99 = fl_rate, raw_p99 = raw_rate;
        bool any = false;
        for (auto workers : o.sweep_workers) {
          const point* p = find(block, lanes, rails, workers);
          any = any || p != nullptr;
          const bool base = p != nullptr && p->r.baseline;
          fl_rate.y.push_back(p ? p->r.fs.bytes_per_s / 1e9 : missing);
          fl_p99.y.push_back(p ? p->r.fs.p99_us : missing);
          raw_rate.y.push_back(base ? p->r.bs.bytes_per_s / 1e9 : missing);
          raw_p99.y.push_back(base ? p->r.bs.p99_us : missing);
        }
        ++color;
        if (!any) continue;  // more rails than lanes: skipped everywhere
        throughput.lines.push_back(std::move(fl_rate));
        p99.lines.push_back(std::move(fl_p99));
        if (!o.skip_baseline) {
          throughput.lines.push_back(std::move(raw_rate));
          p99.lines.push_back(std::move(raw_p99));
        }
      }
    }
    f.panels.push_back(std::move(throughput));
    f.panels.push_back(std::move(p99));
  }
  return f;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) std::fprintf(stderr, "faultlane-bench: cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

// Points that run, and about how long they take: each side (faultlane, the
// baseline, and for bulk blocks the two streams) measures --duration plus a
// warm-up per round.
std::pair<std::size_t, double> plan(const options& o) {
  std::size_t settings = 0;
  for (auto lanes : o.sweep_lanes) {
    for (auto rails : o.sweep_rails) settings += rails <= lanes ? 1 : 0;
  }
  const std::size_t per_block = settings * o.sweep_workers.size();
  const double per_side = o.duration_s + o.warmup_s * static_cast<double>(o.rounds);
  double seconds = 0;
  for (auto block : o.sweep_blocks) {
    const double sides = o.skip_baseline ? 1 : block >= stream_block_bytes_min ? 4 : 2;
    seconds += static_cast<double>(per_block) * sides * per_side;
  }
  return {per_block * o.sweep_blocks.size(), seconds};
}

}  // namespace

int run_sweep(const options& o) {
  const auto [planned, seconds] = plan(o);
  std::printf(
      "faultlane-bench --sweep: %zu points, about %.*f s (op=%s batch=%zu threads=%zu "
      "inflight=%zu duration=%gs rounds=%zu%s)\n",
      planned, seconds < 10 ? 1 : 0, seconds, to_string(o.op), o.batch, o.threads, o.lane_inflight,
      o.duration_s, o.rounds, o.baseline_wait == raw_wait::ready ? " raw-wait=ready" : "");
  std::vector<point> points;
  json skipped = json::array();
  bool all_clean = true;
  for (auto block : o.sweep_blocks) {
    for (auto lanes : o.sweep_lanes) {
      for (auto rails : o.sweep_rails) {
        for (auto workers : o.sweep_workers) {
          if (rails > lanes) {
            skipped.push_back({{"block_size", block},
                               {"workers", workers},
                               {"lanes", lanes},
                               {"rails", rails},
                               {"why", "more rails than lanes"}});
            continue;
          }
          options at = o;
          at.sweep = false;
          at.block_bytes = block;
          at.lanes = lanes;
          at.rails = rails;
          at.workers = workers;
          points.push_back({block, lanes, rails, workers, measure(at)});
          print_point(o, points.back());
          all_clean = all_clean && clean(points.back().r);
        }
      }
    }
  }
  if (!skipped.empty()) {
    std::printf("  skipped %zu points with more rails than lanes\n", skipped.size());
  }
  bool written = true;
  if (!o.json_path.empty()) {
    json records = json::array();
    for (const auto& p : points) {
      options at = o;
      at.block_bytes = p.block;
      at.lanes = p.lanes;
      at.rails = p.rails;
      at.workers = p.workers;
      records.push_back(json::parse(json_record(at, p.r)));
    }
    json doc{{"sweep", grid_json(o)}, {"skipped", skipped}, {"points", records}};
    written = write_file(o.json_path, doc.dump(1) + "\n") && written;
  }
  if (!o.svg_path.empty())
    written = write_file(o.svg_path, render_svg(figure_for(o, points))) && written;
  if (!all_clean) {
    std::fprintf(stderr, "faultlane-bench --sweep: a point failed operations or measured none\n");
  }
  return all_clean && written ? 0 : 1;
}

}  // namespace faultlane::bench
