// parse_scenario() and load_scenario(): the top level of a scenario file.
//
// YAML syntax errors, an empty file and a top level that is not a mapping
// are reported here; every section is then read in dependency order
// (transports, regions, links, phases, workload, control, events, expect) so that
// each reference is checked against names already read. Nothing runs
// before the whole file is accepted.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "loader/scenario_reader.hpp"

namespace faultlane::sim {
namespace {

namespace bounds = scenario_bounds;
using detail::builder;

// The opening comment block, each line without its "#" and one space.
std::string opening_comment(std::string_view text) {
  std::string out;
  std::istringstream in{std::string(text)};
  std::string line;
  bool started = false;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() && !started) continue;
    if (line.empty() || line[0] != '#') break;
    std::string_view body(line);
    body.remove_prefix(1);
    if (!body.empty() && body[0] == ' ') body.remove_prefix(1);
    if (started) out += '\n';
    out += body;
    started = true;
  }
  return out;
}

result<load_spec> read_load(const detail::reader& rd, const YAML::Node& n) {
  if (auto r = rd.mapping(n, "load", {"cost_us", "hiccup_probability", "hiccup_ms"}); !r) {
    return r.error();
  }
  load_spec load;
  if (const auto v = n["cost_us"]) {
    auto us = rd.integer(v, "load.cost_us", 0, bounds::load_cost_us_max);
    if (!us.ok()) return us.error();
    load.cost_us = static_cast<std::uint32_t>(us.value());
  }
  if (const auto v = n["hiccup_probability"]) {
    auto p = rd.number(v, "load.hiccup_probability", 0, 1);
    if (!p.ok()) return p.error();
    load.hiccup_probability = p.value();
  }
  if (const auto v = n["hiccup_ms"]) {
    auto ms = rd.integer(v, "load.hiccup_ms", 0, bounds::load_hiccup_ms_max);
    if (!ms.ok()) return ms.error();
    load.hiccup_ms = static_cast<std::uint32_t>(ms.value());
  }
  // Half a hiccup is a mistake: one that never comes, or one of no length.
  if ((load.hiccup_probability > 0) != (load.hiccup_ms > 0)) {
    return rd.fail(n, "load",
                   "hiccup_probability and hiccup_ms go together: give both above 0, or neither");
  }
  return load;
}

result<void> read_header(builder& b, const YAML::Node& root) {
  const detail::reader& rd = b.rd;
  scenario& s = b.s;
  if (const auto n = root["name"]) {
    auto name = rd.name(n, "name", 64, true);
    if (!name.ok()) return name.error();
    s.name = name.value();
  } else {
    s.name = std::filesystem::path(s.file).stem().string();
    auto name = rd.name(YAML::Node(s.name), "name", 64, true);
    if (!name.ok()) {
      return rd.fail(root, "name",
                     fmt::format("the file name '{}' is not a scenario name: give name: "
                                 "([a-z0-9_.-], 1..64 characters)",
                                 s.name));
    }
  }
  if (const auto n = root["tags"]) {
    if (auto r = rd.sequence(n, "tags", 0, 32); !r) return r;
    for (std::size_t i = 0; i < n.size(); ++i) {
      auto tag = rd.name(n[i], detail::item_path("tags", i), 32, true);
      if (!tag.ok()) return tag.error();
      s.tags.push_back(tag.value());
    }
  }
  if (const auto n = root["seed"]) {
    auto seed = rd.integer(n, "seed", 0, UINT64_MAX);
    if (!seed.ok()) return seed.error();
    s.seed = seed.value();
  }
  if (const auto n = root["timeout_ms"]) {
    auto ms = rd.integer(n, "timeout_ms", bounds::timeout_ms_min, bounds::timeout_ms_max);
    if (!ms.ok()) return ms.error();
    s.timeout_ms = static_cast<std::uint32_t>(ms.value());
  }
  if (const auto n = root["timing"]) {
    auto timing = rd.boolean(n, "timing");
    if (!timing.ok()) return timing.error();
    s.timing = timing.value();
  }
  if (const auto n = root["perturb"]) {
    if (auto r = rd.mapping(n, "perturb", {"probability", "max_us"}); !r) return r;
    perturb_spec p;
    if (const auto v = n["probability"]) {
      auto prob = rd.number(v, "perturb.probability", 0, 1);
      if (!prob.ok()) return prob.error();
      p.probability = prob.value();
    }
    if (const auto v = n["max_us"]) {
      auto us = rd.integer(v, "perturb.max_us", 0, bounds::perturb_max_us);
      if (!us.ok()) return us.error();
      p.max_us = static_cast<std::uint32_t>(us.value());
    }
    s.perturb = p;
  }
  if (const auto n = root["load"]) {
    auto load = read_load(rd, n);
    if (!load.ok()) return load.error();
    s.load = load.value();
  }
  return {};
}

#if defined(FAULTLANE_DSIM)
// What the simulated world cannot run, refused where the file asks for it
// rather than run wrongly (docs/dsim.md, "What runs on the world").
result<void> refuse_unsimulated(const builder& b, const YAML::Node& root) {
  if (b.s.timing) {
    return b.rd.fail(root["timing"], "timing",
                     "its latency bounds are real time; the simulated world's time is virtual: "
                     "this scenario runs in the real-time build (docs/dsim.md)");
  }
  return {};
}
#endif

result<void> read_sections(builder& b, const YAML::Node& root) {
  if (auto r = b.rd.mapping(
          root, "",
          {"name", "tags", "seed", "timeout_ms", "timing", "perturb", "load", "transports",
           "regions", "links", "workload", "control", "events", "phases", "expect"});
      !r) {
    return r;
  }
  if (auto r = read_header(b, root); !r) return r;
#if defined(FAULTLANE_DSIM)
  if (auto r = refuse_unsimulated(b, root); !r) return r;
#endif
  auto transports = b.rd.required(root, "", "transports");
  if (!transports.ok()) return transports.error();
  if (auto r = read_transports(b, transports.value()); !r) return r;
  if (const auto n = root["regions"]) {
    if (auto r = read_regions(b, n); !r) return r;
  }
  if (const auto n = root["links"]) {
    if (auto r = read_links(b, n); !r) return r;
  }
  if (auto r = read_phases(b, root["phases"]); !r) return r;
  // A file gives work: streams, control-plane callers, or both.
  const bool callers = root["control"].IsDefined();
  if (!callers || root["workload"].IsDefined()) {
    auto workload = b.rd.required(root, "", "workload");
    if (!workload.ok()) return workload.error();
    if (auto r = read_streams(b, workload.value(), callers ? 0 : 1); !r) return r;
  }
  if (callers) {
    if (auto r = read_control(b, root["control"]); !r) return r;
  }
  if (const auto n = root["events"]) {
    if (auto r = read_events(b, n); !r) return r;
  }
  if (const auto n = root["expect"]) {
    if (auto r = read_expect(b, n); !r) return r;
  }
  for (const auto& e : b.s.events) {
    if (e.action == event_action::arm) b.s.needs_failpoints = true;
  }
  return {};
}

// Lines of the file that start a document ("---" in column 1) after some
// content, and the first line of content: YAML::LoadAll() loops forever on
// some malformed input in yaml-cpp 0.7 (a leading ','), so the file is read
// with YAML::Load() and these two questions answered from the text.
struct text_shape {
  int first_content_line = 0;  // 0: only comments and blank lines
  int second_document_line = 0;
};

text_shape shape_of(std::string_view text) {
  text_shape out;
  std::istringstream in{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const bool marker =
        line.rfind("---", 0) == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '\r');
    if (marker && out.first_content_line != 0) {
      out.second_document_line = number;
      return out;
    }
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#' || marker) continue;
    if (out.first_content_line == 0) out.first_content_line = number;
  }
  return out;
}

result<void> read_document(builder& b, std::string_view text) {
  const text_shape shape = shape_of(text);
  const YAML::Node root = YAML::Load(std::string(text));
  const std::string& file = b.rd.file();
  if (shape.second_document_line != 0) {
    return error{status::invalid_argument,
                 fmt::format("{}:{}:1: yaml: more than one YAML document (a scenario is one "
                             "mapping)",
                             file, shape.second_document_line)};
  }
  if (root.IsNull() && shape.first_content_line != 0) {
    return error{status::invalid_argument,
                 fmt::format("{}:{}:1: yaml: not a YAML mapping", file, shape.first_content_line)};
  }
  if (root.IsNull()) return b.rd.fail(root, "", "the file is empty (a scenario is a mapping)");
  if (!root.IsMap()) {
    return b.rd.fail(root, "", "the top level must be a mapping (name:, transports:, ...)");
  }
  return read_sections(b, root);
}

}  // namespace

result<scenario> parse_scenario(std::string_view text, const std::string& file) {
  builder b{detail::reader(file), scenario{}, {}, {}};
  b.s.file = file;
  b.s.summary = opening_comment(text);
  try {
    if (auto r = read_document(b, text); !r) return r.error();
  } catch (const YAML::Exception& e) {
    return b.rd.syntax_error(e);
  }
  return std::move(b.s);
}

result<scenario> load_scenario(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return error{status::invalid_argument, fmt::format("{}:1:1: (file): cannot open it", path)};
  }
  std::stringstream text;
  text << in.rdbuf();
  return parse_scenario(text.str(), path);
}

}  // namespace faultlane::sim
