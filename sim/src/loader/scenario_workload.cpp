// Reading a scenario's `phases:` and `workload:` streams. Phases come
// first (a stream names its phase); a stream is checked against its
// transports and region as it is read: a local initiator, a target other
// than itself with as many rails, sizes that fit the region and both
// transports' max_transfer_bytes, a batch within the depth, and in a
// liveness phase an `allow:` of ok alone.
#include <fmt/format.h>

#include <algorithm>

#include "loader/scenario_reader.hpp"

namespace faultlane::sim::detail {
namespace {

namespace bounds = scenario_bounds;

result<phase_spec> read_phase(const builder& b, const YAML::Node& node, const std::string& path) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(node, path, {"name", "heal", "liveness", "deadline_ms", "settle_ms"});
      !r) {
    return r.error();
  }
  phase_spec p;
  p.mark = rd.mark(node);
  auto name_node = rd.required(node, path, "name");
  if (!name_node.ok()) return name_node.error();
  auto name = rd.name(name_node.value(), key_path(path, "name"), 32);
  if (!name.ok()) return name.error();
  p.name = name.value();
  if (b.phase(p.name) != nullptr) {
    return rd.fail(name_node.value(), key_path(path, "name"),
                   fmt::format("duplicate phase name '{}'", p.name));
  }
  if (const auto h = node["heal"]) {
    auto heal = rd.boolean(h, key_path(path, "heal"));
    if (!heal.ok()) return heal.error();
    p.heal = heal.value();
  }
  if (const auto l = node["liveness"]) {
    auto liveness = rd.boolean(l, key_path(path, "liveness"));
    if (!liveness.ok()) return liveness.error();
    p.liveness = liveness.value();
  }
  if (const auto d = node["deadline_ms"]) {
    auto deadline = rd.integer(d, key_path(path, "deadline_ms"), 1, bounds::duration_ms_max);
    if (!deadline.ok()) return deadline.error();
    p.deadline_ms = static_cast<std::uint32_t>(deadline.value());
  }
  if (const auto d = node["settle_ms"]) {
    auto settle = rd.integer(d, key_path(path, "settle_ms"), 0, bounds::duration_ms_max);
    if (!settle.ok()) return settle.error();
    p.settle_ms = static_cast<std::uint32_t>(settle.value());
  }
  return p;
}

result<void> read_ops(const reader& rd, stream_spec& s, const YAML::Node& node,
                      const std::string& path) {
  if (node.IsScalar() && node.Scalar() == "read") {
    s.read_weight = 1;
    s.write_weight = 0;
    return {};
  }
  if (node.IsScalar() && node.Scalar() == "write") {
    s.read_weight = 0;
    s.write_weight = 1;
    return {};
  }
  if (!node.IsMap()) return rd.fail(node, path, "must be read, write or {read: W, write: W}");
  if (auto r = rd.mapping(node, path, {"read", "write"}); !r) return r;
  s.read_weight = 0;
  s.write_weight = 0;
  for (auto [key, out] : {std::pair{"read", &s.read_weight}, std::pair{"write", &s.write_weight}}) {
    if (const auto w = node[key]) {
      auto weight = rd.number(w, key_path(path, key), 0, 1e9);
      if (!weight.ok()) return weight.error();
      *out = weight.value();
    }
  }
  if (s.read_weight + s.write_weight <= 0) return rd.fail(node, path, "the weights sum to 0");
  return {};
}

// One size of a stream, within what its region and transports allow.
result<std::uint64_t> read_one_size(const reader& rd, const YAML::Node& node,
                                    const std::string& path, std::uint64_t most,
                                    std::string_view why) {
  auto n = rd.size(node, path, 1, UINT64_MAX);
  if (!n.ok()) return n;
  if (n.value() > most) {
    return rd.fail(node, path, fmt::format("{} is above {} ({})", n.value(), most, why));
  }
  return n;
}

result<size_dist> read_sizes(const reader& rd, const YAML::Node& node, const std::string& path,
                             std::uint64_t most, std::string_view why) {
  size_dist d;
  if (node.IsSequence()) {
    if (auto r = rd.sequence(node, path, 1, bounds::size_values_max); !r) return r.error();
    for (std::size_t i = 0; i < node.size(); ++i) {
      auto v = read_one_size(rd, node[i], item_path(path, i), most, why);
      if (!v.ok()) return v.error();
      d.values.push_back(v.value());
    }
    return d;
  }
  if (!node.IsScalar()) return rd.fail(node, path, "expected a size, a range \"A..B\" or a list");
  const std::string& text = node.Scalar();
  const auto dots = text.find("..");
  if (dots == std::string::npos) {
    auto v = read_one_size(rd, node, path, most, why);
    if (!v.ok()) return v.error();
    d.values.push_back(v.value());
    return d;
  }
  auto lo = parse_size(text.substr(0, dots));
  auto hi = parse_size(text.substr(dots + 2));
  if (!lo.ok()) return rd.fail(node, path, lo.error().message);
  if (!hi.ok()) return rd.fail(node, path, hi.error().message);
  if (lo.value() < 1 || lo.value() > hi.value()) {
    return rd.fail(node, path, fmt::format("'{}' is not a range 1 <= A <= B", text));
  }
  if (hi.value() > most) {
    return rd.fail(node, path, fmt::format("{} is above {} ({})", hi.value(), most, why));
  }
  d.range = true;
  d.lo = lo.value();
  d.hi = hi.value();
  return d;
}

// from, region (and so the target), with the checks that join them.
result<void> read_stream_ends(const builder& b, stream_spec& s, const YAML::Node& node,
                              const std::string& path) {
  const reader& rd = b.rd;
  auto from_node = rd.required(node, path, "from");
  if (!from_node.ok()) return from_node.error();
  auto from = b.transport_ref(from_node.value(), key_path(path, "from"), true);
  if (!from.ok()) return from.error();
  s.from = from.value()->name;
  auto region_node = rd.required(node, path, "region");
  if (!region_node.ok()) return region_node.error();
  auto region = rd.text(region_node.value(), key_path(path, "region"));
  if (!region.ok()) return region.error();
  const region_spec* g = b.region(region.value());
  if (g == nullptr) {
    return rd.fail(region_node.value(), key_path(path, "region"),
                   fmt::format("no region '{}'", region.value()));
  }
  s.region = g->name;
  if (g->count > 1) {
    return rd.fail(region_node.value(), key_path(path, "region"),
                   fmt::format("region '{}' has count {}: a counted region is for the control "
                               "plane to list, not for streams",
                               g->name, g->count));
  }
  const transport_spec* target = b.transport(g->transport);
  if (target == from.value()) {
    return rd.fail(region_node.value(), key_path(path, "region"),
                   fmt::format("region '{}' belongs to '{}' itself; a stream's target must be "
                               "another transport",
                               g->name, s.from));
  }
  if (target->rails != from.value()->rails) {
    return rd.fail(region_node.value(), key_path(path, "region"),
                   fmt::format("'{}' has {} rails but the target '{}' has {}; they must be equal",
                               s.from, from.value()->rails, target->name, target->rails));
  }
  return {};
}

}  // namespace

result<void> read_amount(const reader& rd, std::uint64_t& count_out, std::uint32_t& duration_out,
                         const YAML::Node& node, const std::string& path) {
  const auto count = node["count"];
  const auto duration = node["duration_ms"];
  if (count.IsDefined() == duration.IsDefined()) {
    return rd.fail(count.IsDefined() ? count : node, key_path(path, "count"),
                   "give exactly one of count and duration_ms");
  }
  if (count) {
    auto n = rd.integer(count, key_path(path, "count"), 1, bounds::stream_ops_max);
    if (!n.ok()) return n.error();
    count_out = n.value();
  } else {
    auto n = rd.integer(duration, key_path(path, "duration_ms"), 1, bounds::duration_ms_max);
    if (!n.ok()) return n.error();
    duration_out = static_cast<std::uint32_t>(n.value());
  }
  return {};
}

namespace {

result<void> read_flow(const reader& rd, stream_spec& s, const YAML::Node& node,
                       const std::string& path) {
  if (const auto d = node["depth"]) {
    auto depth = rd.integer(d, key_path(path, "depth"), 1, bounds::depth_max);
    if (!depth.ok()) return depth.error();
    s.depth = depth.value();
  }
  if (const auto bn = node["batch"]) {
    auto batch = rd.integer(bn, key_path(path, "batch"), 1, bounds::batch_max);
    if (!batch.ok()) return batch.error();
    s.batch = batch.value();
    if (s.batch > s.depth) {
      return rd.fail(bn, key_path(path, "batch"),
                     fmt::format("{} is above the depth {}", s.batch, s.depth));
    }
  }
  if (const auto o = node["offsets"]) {
    auto text = rd.text(o, key_path(path, "offsets"));
    if (!text.ok()) return text.error();
    if (text.value() == "random") s.offsets = offset_mode::random;
    else if (text.value() == "sequential") s.offsets = offset_mode::sequential;
    else return rd.fail(o, key_path(path, "offsets"), "must be random or sequential");
  }
  if (const auto d = node["start_deadline_ms"]) {
    auto ms = rd.integer(d, key_path(path, "start_deadline_ms"), 0, bounds::duration_ms_max);
    if (!ms.ok()) return ms.error();
    s.start_deadline_ms = static_cast<std::uint32_t>(ms.value());
  }
  return {};
}

}  // namespace

result<void> read_phase_and_allow(const builder& b, std::string& phase_out,
                                  std::vector<status>& allow, const YAML::Node& node,
                                  const std::string& path) {
  const reader& rd = b.rd;
  const phase_spec* phase = &b.s.phases.front();
  if (const auto p = node["phase"]) {
    auto name = rd.text(p, key_path(path, "phase"));
    if (!name.ok()) return name.error();
    phase = b.phase(name.value());
    if (phase == nullptr) {
      return rd.fail(p, key_path(path, "phase"), fmt::format("no phase '{}'", name.value()));
    }
  }
  phase_out = phase->name;
  YAML::Node allow_node = node;
  if (const auto a = node["allow"]) {
    allow_node.reset(a);
    if (auto r = rd.sequence(a, key_path(path, "allow"), 1, status_count); !r) return r;
    allow.clear();
    for (std::size_t i = 0; i < a.size(); ++i) {
      auto st = rd.status_name(a[i], item_path(key_path(path, "allow"), i));
      if (!st.ok()) return st.error();
      if (std::find(allow.begin(), allow.end(), st.value()) != allow.end()) {
        return rd.fail(a[i], item_path(key_path(path, "allow"), i), "listed twice");
      }
      allow.push_back(st.value());
    }
  }
  if (phase->liveness && allow != std::vector<status>{status::ok}) {
    return rd.fail(allow_node, key_path(path, "allow"),
                   fmt::format("phase '{}' is a liveness phase, which demands ok: allow only ok",
                               phase->name));
  }
  return {};
}

namespace {

result<stream_spec> read_stream(const builder& b, const YAML::Node& node, const std::string& path) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(node, path,
                          {"name", "from", "region", "ops", "size", "count", "duration_ms", "depth",
                           "batch", "offsets", "start_deadline_ms", "phase", "allow"});
      !r) {
    return r.error();
  }
  stream_spec s;
  s.mark = rd.mark(node);
  auto name_node = rd.required(node, path, "name");
  if (!name_node.ok()) return name_node.error();
  auto name = rd.name(name_node.value(), key_path(path, "name"), 32);
  if (!name.ok()) return name.error();
  s.name = name.value();
  if (b.stream(s.name) != nullptr) {
    return rd.fail(name_node.value(), key_path(path, "name"),
                   fmt::format("duplicate stream name '{}'", s.name));
  }
  if (auto r = read_stream_ends(b, s, node, path); !r) return r.error();
  auto ops = rd.required(node, path, "ops");
  if (!ops.ok()) return ops.error();
  if (auto r = read_ops(rd, s, ops.value(), key_path(path, "ops")); !r) return r.error();
  const region_spec& g = *b.region(s.region);
  const transport_spec& from = *b.transport(s.from);
  const transport_spec& target = *b.transport(g.transport);
  const std::uint64_t transfer_max =
      std::min(from.config.max_transfer_bytes, target.config.max_transfer_bytes);
  const bool region_bound = g.size <= transfer_max;
  const std::string why =
      region_bound ? fmt::format("the size of region '{}'", g.name)
                   : fmt::format("max_transfer_bytes of '{}' and '{}'", from.name, target.name);
  auto size_node = rd.required(node, path, "size");
  if (!size_node.ok()) return size_node.error();
  auto sizes = read_sizes(rd, size_node.value(), key_path(path, "size"),
                          std::min(g.size, transfer_max), why);
  if (!sizes.ok()) return sizes.error();
  s.size = sizes.value();
  if (auto r = read_amount(rd, s.count, s.duration_ms, node, path); !r) return r.error();
  if (auto r = read_flow(rd, s, node, path); !r) return r.error();
  if (auto r = read_phase_and_allow(b, s.phase, s.allow, node, path); !r) return r.error();
  return s;
}

}  // namespace

// Time past the longest cooldown before a default liveness phase begins.
constexpr std::uint32_t heal_margin_ms = 100;

result<void> read_phases(builder& b, const YAML::Node& node) {
  if (!node.IsDefined()) {
    b.s.phases.resize(3);
    b.s.phases[0].name = "fault";
    b.s.phases[1].name = "heal";
    b.s.phases[1].heal = true;
    // The default heal waits out every reconnect cooldown, so the liveness
    // phase meets lanes that may connect again rather than ones still
    // refusing to after a fault (docs/scenarios.md).
    for (const auto& t : b.s.transports) {
      b.s.phases[1].settle_ms =
          std::max(b.s.phases[1].settle_ms, t.config.reconnect_cooldown_ms + heal_margin_ms);
    }
    b.s.phases[2].name = "liveness";
    b.s.phases[2].liveness = true;
    return {};
  }
  if (auto r = b.rd.sequence(node, "phases", 1, bounds::phases_max); !r) return r;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto p = read_phase(b, node[i], item_path("phases", i));
    if (!p.ok()) return p.error();
    b.s.phases.push_back(std::move(p).value());
  }
  return {};
}

result<void> read_streams(builder& b, const YAML::Node& node, std::size_t least) {
  if (auto r = b.rd.sequence(node, "workload", least, bounds::streams_max); !r) return r;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto s = read_stream(b, node[i], item_path("workload", i));
    if (!s.ok()) return s.error();
    b.s.streams.push_back(std::move(s).value());
  }
  return {};
}

}  // namespace faultlane::sim::detail
