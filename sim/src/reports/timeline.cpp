// timeline: timeline_html(), one self-contained page about one run. The
// header says what ran and how it ended (the failing checker's evidence in
// a box, each violation linking to its outlined bar); under a legend, the
// SVG of timeline_svg.cpp. Hover text is SVG <title>, so the page needs no
// script and fetches nothing.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>

#include "faultlane/sim/report.hpp"
#include "reports/report_format.hpp"
#include "reports/timeline.hpp"

namespace faultlane::sim {
namespace {

using report_format::append_escaped;

constexpr std::size_t violations_listed_max = 10;

void append_style(std::string& out) {
  out += R"(<style>
body{font:13px/1.4 system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 4px}h2{font-size:14px;margin:0 0 4px}
.verdict{padding:1px 6px;border-radius:3px;color:#fff}
.v-pass{background:#2e9d48}.v-fail{background:#d62828}.v-skip{background:#777}
.v-error{background:#8e44ad}.meta{margin:2px 0;color:#444}code{font-size:12px}
.evidence{border:2px solid #d62828;background:#fff0f0;padding:6px 10px;margin:8px 0}
.evidence{max-width:1100px}
.evidence ul{margin:0;padding-left:18px}.evidence li{font-family:monospace;white-space:pre-wrap}
.legend{margin:8px 0}.key{margin-right:14px;white-space:nowrap;display:inline-block}
.sw{display:inline-block;width:12px;height:12px;vertical-align:middle;margin-right:4px}
.plot{overflow:auto;border:1px solid #ccc}
svg text{font:11px system-ui,sans-serif;fill:#222}text.group{font-weight:bold}
.grid{stroke:#e4e4e4}.phase{fill:#f4f1e4}.phase[data-kind=heal]{fill:#e5f4e8}
.phase[data-kind=liveness]{fill:#e4ecf8}
.fault-mark,.lg-fault{fill:#ffd60a;background:#ffd60a;stroke:#000;stroke-width:1}
.decode-error,.lg-decode{fill:#000;background:#000}
.event-mark{stroke:#1d3557;stroke-width:1.5;stroke-dasharray:4 3}
.event-mark[data-ok=false]{stroke:#d62828}.event-mark:hover{stroke-width:4}
.lg-event{background:#1d3557;width:3px}.lg-phase{background:#e5f4e8}
.violation{stroke:#e00000;stroke-width:3}
.lg-violation{border:3px solid #e00000;width:8px;height:8px}
)";
  for (const auto& c : timeline::colours) {
    fmt::format_to(std::back_inserter(out), ".{0}{{fill:{1}}}.sw.{0}{{background:{1}}}\n", c.css,
                   c.fill);
  }
  out += "</style>\n";
}

void append_legend(std::string& out) {
  out += "<div class=\"legend\">";
  for (const auto& c : timeline::colours) {
    fmt::format_to(std::back_inserter(out),
                   R"(<span class="key"><span class="sw {}"></span>{}</span>)", c.css, c.legend);
  }
  out += R"(<span class="key"><span class="sw lg-fault"></span>fault fired (relay)</span>)"
         R"(<span class="key"><span class="sw lg-decode"></span>decode error</span>)"
         R"(<span class="key"><span class="sw lg-event"></span>event / note</span>)"
         R"(<span class="key"><span class="sw lg-phase"></span>phase</span>)"
         R"(<span class="key"><span class="sw lg-violation"></span>named by a violation</span>)"
         "</div>\n";
}

void append_evidence(std::string& out, const run_result& r, const timeline::highlights& marks) {
  if (!r.error.empty()) {
    out += "<div class=\"evidence\"><h2>run error</h2><ul><li>";
    append_escaped(out, r.error);
    out += "</li></ul></div>\n";
    return;
  }
  const auto* failed = r.passed || r.skipped ? nullptr : first_failure(r);
  if (failed == nullptr) return;
  out += "<div class=\"evidence\"><h2>";
  append_escaped(out, fmt::format("{}: {} violation(s), {} checked", failed->name,
                                  failed->violations.size(), failed->checked));
  out += "</h2><ul>";
  std::size_t shown = std::min(failed->violations.size(), violations_listed_max);
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& v = failed->violations[i];
    bool linked = marks.ops.contains(v.op_id);
    out += linked ? fmt::format("<li><a href=\"#op-{}\">", v.op_id) : "<li>";
    append_escaped(out, report_format::violation_line(v));
    out += linked ? "</a></li>" : "</li>";
  }
  out += "</ul>";
  if (failed->violations.size() > shown) {
    out += fmt::format("<p>... and {} more</p>", failed->violations.size() - shown);
  }
  out += "</div>\n";
}

void append_header(std::string& out, const run_result& r, const timeline::highlights& marks) {
  static constexpr std::array<std::string_view, 4> verdict_class{"v-pass", "v-fail", "v-skip",
                                                                 "v-error"};
  out += "<header><h1>";
  append_escaped(out, r.scenario);
  fmt::format_to(std::back_inserter(out), " <span class=\"verdict {}\">",
                 verdict_class[static_cast<std::size_t>(outcome_of(r))]);
  append_escaped(out, verdict(r));
  out += "</span></h1>\n<p class=\"meta\">";
  append_escaped(
      out, fmt::format("seed {} | {} | ops {}/{} | faults fired {} | {:.2f} s", r.seed, r.file,
                       r.ops_done, r.ops_total, faults_fired_total(r), r.seconds));
  out += "</p>\n";
  if (!r.replay.empty()) {
    out += "<p class=\"meta\">replay: <code>";
    append_escaped(out, r.replay);
    out += "</code></p>\n";
  }
  append_evidence(out, r, marks);
  out += "</header>\n";
}

}  // namespace

std::string timeline_html(const run_result& r) {
  std::string out;
  timeline::model m;
  if (r.hist) {
    m = timeline::build_model(r, *r.hist);
    out.reserve(1024 + 256 * (r.hist->events.size() + r.hist->ops.size()));
  }
  out += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>";
  append_escaped(out, fmt::format("faultlane-sim timeline: {} seed {}", r.scenario, r.seed));
  out += "</title>\n";
  append_style(out);
  out += "</head>\n<body>\n";
  append_header(out, r, m.marks);
  if (r.hist) {
    append_legend(out);
    timeline::append_svg(out, *r.hist, m);
  } else {
    out += "<p>No history was recorded for this run, so there is no timeline.</p>\n";
  }
  out += "</body>\n</html>\n";
  return out;
}

}  // namespace faultlane::sim
