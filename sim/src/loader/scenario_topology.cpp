// Reading a scenario's topology: `transports:`, `regions:` and `links:`
// with their fault chains. A transport's `config:` goes through the core's
// own config parsing and a link fault through the relays' parse_fault(), so
// a scenario accepts exactly what docs/configuration.md and docs/faults.md
// describe; this file only maps their errors onto file:line:col and a key.
#include <fmt/format.h>

#include <set>

#include "loader/scenario_reader.hpp"

namespace faultlane::sim::detail {
namespace {

namespace bounds = scenario_bounds;

// Keys of transport_config the runner sets itself.
constexpr std::string_view runner_config_keys[] = {
    "bind_address", "advertise_address", "port", "rail_addresses", "rpc_bind_address", "rpc_port"};

result<transport_config> read_config(const reader& rd, const YAML::Node& node,
                                     std::string_view path) {
  if (!node.IsMap()) return rd.fail(node, path, "expected a mapping of transport_config fields");
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return rd.fail(kv.first, path, "a key must be a plain name");
    for (auto key : runner_config_keys) {
      if (kv.first.Scalar() == key) {
        const bool control = key.substr(0, 4) == "rpc_";
        return rd.fail(kv.first, key_path(path, key),
                       control
                           ? "set by the runner (the control plane listens on 127.0.0.1, port 0)"
                           : "set by the runner (each transport listens on 127.0.0.(rail + 1), "
                             "port 0)");
      }
    }
  }
  return parse_config(node, rd, path);
}

result<transport_spec> read_transport(const builder& b, const YAML::Node& node,
                                      const std::string& path) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(node, path, {"name", "rails", "process", "config"}); !r) return r.error();
  transport_spec t;
  t.mark = rd.mark(node);
  auto name_node = rd.required(node, path, "name");
  if (!name_node.ok()) return name_node.error();
  auto name = rd.name(name_node.value(), key_path(path, "name"), 32);
  if (!name.ok()) return name.error();
  t.name = name.value();
  if (b.transport(t.name) != nullptr) {
    return rd.fail(name_node.value(), key_path(path, "name"),
                   fmt::format("duplicate transport name '{}'", t.name));
  }
  if (const auto p = node["process"]) {
    auto text = rd.text(p, key_path(path, "process"));
    if (!text.ok()) return text.error();
    if (text.value() == "local") t.process = process_kind::local;
    else if (text.value() == "child") t.process = process_kind::child;
    else return rd.fail(p, key_path(path, "process"), "must be local or child");
  }
  if (const auto c = node["config"]) {
    auto config = read_config(rd, c, key_path(path, "config"));
    if (!config.ok()) return config.error();
    t.config = config.value();
  }
  if (const auto r = node["rails"]) {
    auto rails = rd.integer(r, key_path(path, "rails"), 1, bounds::rails_max);
    if (!rails.ok()) return rails.error();
    t.rails = rails.value();
    if (t.rails > t.config.connections_per_peer) {
      return rd.fail(r, key_path(path, "rails"),
                     fmt::format("{} rails need config.connections_per_peer >= {} (it is {})",
                                 t.rails, t.rails, t.config.connections_per_peer));
    }
  }
  return t;
}

result<region_spec> read_region(const builder& b, const YAML::Node& node, const std::string& path) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(node, path, {"name", "transport", "size", "perm", "count"}); !r) {
    return r.error();
  }
  region_spec g;
  g.mark = rd.mark(node);
  auto name_node = rd.required(node, path, "name");
  if (!name_node.ok()) return name_node.error();
  auto name = rd.name(name_node.value(), key_path(path, "name"), 32);
  if (!name.ok()) return name.error();
  g.name = name.value();
  if (b.region(g.name) != nullptr) {
    return rd.fail(name_node.value(), key_path(path, "name"),
                   fmt::format("duplicate region name '{}'", g.name));
  }
  auto t_node = rd.required(node, path, "transport");
  if (!t_node.ok()) return t_node.error();
  auto t = b.transport_ref(t_node.value(), key_path(path, "transport"), false);
  if (!t.ok()) return t.error();
  g.transport = t.value()->name;
  auto size_node = rd.required(node, path, "size");
  if (!size_node.ok()) return size_node.error();
  auto size = rd.size(size_node.value(), key_path(path, "size"), 1, bounds::region_bytes_max);
  if (!size.ok()) return size.error();
  g.size = size.value();
  if (const auto p = node["perm"]) {
    auto text = rd.text(p, key_path(path, "perm"));
    if (!text.ok()) return text.error();
    auto perm = parse_permission(text.value());
    if (!perm) {
      return rd.fail(p, key_path(path, "perm"),
                     "must be local_only, remote_read or remote_read_write");
    }
    g.perm = *perm;
  }
  if (const auto c = node["count"]) {
    auto count = rd.integer(c, key_path(path, "count"), 1, bounds::region_count_max);
    if (!count.ok()) return count.error();
    g.count = count.value();
    if (g.count > 1 && t.value()->process == process_kind::child) {
      return rd.fail(c, key_path(path, "count"),
                     "a counted region needs a local transport (a child registers one region "
                     "per command)");
    }
    if (g.count * g.size > bounds::region_bytes_max) {
      return rd.fail(c, key_path(path, "count"),
                     fmt::format("{} x {} bytes is above {} bytes", g.count, g.size,
                                 bounds::region_bytes_max));
    }
  }
  return g;
}

}  // namespace

result<link_fault> read_link_fault(const builder& b, const YAML::Node& node,
                                   std::string_view path) {
  const reader& rd = b.rd;
  if (!node.IsMap() || !node["type"].IsDefined()) {
    return rd.fail(node, path, "a fault is a mapping with a type (docs/faults.md)");
  }
  link_fault f;
  f.mark = rd.mark(node);
  YAML::Node relay_form(YAML::NodeType::Map);
  // relay_form holds one value a key: a repeated key is refused here, where
  // its place is known, rather than overwritten.
  std::set<std::string, std::less<>> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return rd.fail(kv.first, path, "a key must be a plain name");
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) return rd.fail(kv.first, key_path(path, key), "duplicate key");
    if (!kv.second.IsScalar()) {
      return rd.fail(kv.second, key_path(path, key), "expected a plain value");
    }
    if (key == "optional") {
      auto opt = rd.boolean(kv.second, key_path(path, key));
      if (!opt.ok()) return opt.error();
      f.optional = opt.value();
    } else if (key == "name") {
      auto name = rd.name(kv.second, key_path(path, key), 64, true);
      if (!name.ok()) return name.error();
      relay_form[key] = name.value();
    } else {
      relay_form[key] = kv.second.Scalar();
    }
  }
  auto spec = relays::parse_fault(relay_form);
  if (!spec.ok()) return relays::place_fault_error(rd, node, path, spec.error());
  f.spec = spec.value();
  return f;
}

namespace {

result<void> read_faults(builder& b, link_spec& l, const YAML::Node& node,
                         const std::string& path) {
  if (auto r = b.rd.sequence(node, path, 0, bounds::faults_per_link_max); !r) return r;
  auto& names = b.link_faults[l.name];
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string fpath = item_path(path, i);
    auto f = read_link_fault(b, node[i], fpath);
    if (!f.ok()) return f.error();
    if (!names.insert(f.value().spec.name).second) {
      return b.rd.fail(node[i], key_path(fpath, "name"),
                       fmt::format("the link already has a fault named '{}'; give this one a "
                                   "name:",
                                   f.value().spec.name));
    }
    b.fault_names.insert(f.value().spec.name);
    l.faults.push_back(std::move(f).value());
  }
  return {};
}

// initiator, target and rail, checked against the transports.
result<void> read_link_ends(const builder& b, link_spec& l, const YAML::Node& node,
                            const std::string& path) {
  const reader& rd = b.rd;
  auto i_node = rd.required(node, path, "initiator");
  if (!i_node.ok()) return i_node.error();
  auto initiator = b.transport_ref(i_node.value(), key_path(path, "initiator"), true);
  if (!initiator.ok()) return initiator.error();
  auto t_node = rd.required(node, path, "target");
  if (!t_node.ok()) return t_node.error();
  auto target = b.transport_ref(t_node.value(), key_path(path, "target"), false);
  if (!target.ok()) return target.error();
  if (initiator.value() == target.value()) {
    return rd.fail(t_node.value(), key_path(path, "target"),
                   "the initiator and the target are "
                   "the same transport");
  }
  l.initiator = initiator.value()->name;
  l.target = target.value()->name;
  if (const auto r = node["rail"]) {
    const std::size_t rails = std::min(initiator.value()->rails, target.value()->rails);
    auto rail = rd.integer(r, key_path(path, "rail"), 0, bounds::rails_max);
    if (!rail.ok()) return rail.error();
    if (rail.value() >= rails) {
      return rd.fail(
          r, key_path(path, "rail"),
          fmt::format("must be < {} (rails of '{}' and '{}')", rails, l.initiator, l.target));
    }
    l.rail = rail.value();
  }
  for (const auto& other : b.s.links) {
    if (other.control && other.initiator == l.initiator && other.target == l.target) {
      return rd.fail(node, path,
                     fmt::format("control link '{}' opens {}'s segment to {} by address: no data "
                                 "link joins them",
                                 other.name, l.initiator, l.target));
    }
    if (other.initiator == l.initiator && other.target == l.target && other.rail == l.rail) {
      return rd.fail(node, path,
                     fmt::format("link '{}' is already the relay {} -> {} on rail {}", other.name,
                                 l.initiator, l.target, l.rail));
    }
  }
  return {};
}

// `control: true`: a raw, untapped relay in front of the target's control
// endpoint, so the link takes no initiator, rail, protocol or tap.
result<bool> read_control_flag(const reader& rd, const YAML::Node& node, const std::string& path) {
  const auto c = node["control"];
  if (!c) return false;
  auto control = rd.boolean(c, key_path(path, "control"));
  if (!control.ok() || !control.value()) return control;
  for (const char* key : {"rail", "protocol", "tap"}) {
    if (node[key]) {
      return rd.fail(node[key], key_path(path, key),
                     "a control link relays raw bytes to the target's control endpoint; it has no "
                     "rail, protocol or tap");
    }
  }
  return true;
}

// A control link's optional initiator opens its segment by the link's
// address, so no data link may join the same two transports.
result<void> read_control_ends(const builder& b, link_spec& l, const YAML::Node& node,
                               const std::string& path) {
  const reader& rd = b.rd;
  auto t_node = rd.required(node, path, "target");
  if (!t_node.ok()) return t_node.error();
  auto target = b.transport_ref(t_node.value(), key_path(path, "target"), false);
  if (!target.ok()) return target.error();
  l.target = target.value()->name;
  if (!target.value()->config.rpc_enabled) {
    return rd.fail(
        t_node.value(), key_path(path, "target"),
        fmt::format("'{}' has config.rpc_enabled false: no control plane to relay", l.target));
  }
  l.proto = relays::protocol::raw;
  l.tap = false;
  l.name = l.target + "-control";
  const auto i_node = node["initiator"];
  if (!i_node) return {};
  auto initiator = b.transport_ref(i_node, key_path(path, "initiator"), true);
  if (!initiator.ok()) return initiator.error();
  l.initiator = initiator.value()->name;
  if (l.initiator == l.target) {
    return rd.fail(i_node, key_path(path, "initiator"), "the initiator is the target");
  }
  for (const auto& other : b.s.links) {
    if (other.initiator == l.initiator && other.target == l.target) {
      return rd.fail(
          i_node, key_path(path, "initiator"),
          fmt::format("link '{}' already joins {} to {}{}", other.name, l.initiator, l.target,
                      other.control ? ""
                                    : " (a segment opened by address has no data "
                                      "link)"));
    }
  }
  return {};
}

result<link_spec> read_link(builder& b, const YAML::Node& node, const std::string& path) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(
          node, path,
          {"initiator", "target", "rail", "name", "protocol", "tap", "faults", "control"});
      !r) {
    return r.error();
  }
  link_spec l;
  l.mark = rd.mark(node);
  auto control = read_control_flag(rd, node, path);
  if (!control.ok()) return control.error();
  l.control = control.value();
  if (l.control) {
    if (auto r = read_control_ends(b, l, node, path); !r) return r.error();
  } else {
    if (auto r = read_link_ends(b, l, node, path); !r) return r.error();
    l.name = fmt::format("{}-{}-r{}", l.initiator, l.target, l.rail);
  }
  YAML::Node name_node = node;
  if (const auto n = node["name"]) {
    auto name = rd.name(n, key_path(path, "name"), 64, true);
    if (!name.ok()) return name.error();
    l.name = name.value();
    name_node.reset(n);
  }
  if (b.link(l.name) != nullptr) {
    return rd.fail(name_node, key_path(path, "name"),
                   fmt::format("duplicate link name '{}'", l.name));
  }
  if (const auto p = node["protocol"]) {
    auto text = rd.text(p, key_path(path, "protocol"));
    if (!text.ok()) return text.error();
    if (text.value() == "faultlane") l.proto = relays::protocol::faultlane;
    else if (text.value() == "raw") l.proto = relays::protocol::raw;
    else return rd.fail(p, key_path(path, "protocol"), "must be faultlane or raw");
  }
  if (const auto t = node["tap"]) {
    auto tap = rd.boolean(t, key_path(path, "tap"));
    if (!tap.ok()) return tap.error();
    l.tap = tap.value();
  }
  if (const auto f = node["faults"]) {
    if (auto r = read_faults(b, l, f, key_path(path, "faults")); !r) return r.error();
    // A raw link decodes no frames, so a frame fault there would never fire.
    for (std::size_t i = 0; l.proto == relays::protocol::raw && i < l.faults.size(); ++i) {
      if (!l.faults[i].spec.frame_aware()) continue;
      return rd.fail(f[i], item_path(key_path(path, "faults"), i),
                     "a frame fault or frame trigger needs protocol: faultlane (a raw link "
                     "decodes no frames)");
    }
  }
  return l;
}

}  // namespace

result<void> read_transports(builder& b, const YAML::Node& node) {
  if (auto r = b.rd.sequence(node, "transports", 1, bounds::transports_max); !r) return r;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto t = read_transport(b, node[i], item_path("transports", i));
    if (!t.ok()) return t.error();
    b.s.transports.push_back(std::move(t).value());
  }
  return {};
}

result<void> read_regions(builder& b, const YAML::Node& node) {
  if (auto r = b.rd.sequence(node, "regions", 0, bounds::regions_max); !r) return r;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto g = read_region(b, node[i], item_path("regions", i));
    if (!g.ok()) return g.error();
    b.s.regions.push_back(std::move(g).value());
  }
  return {};
}

result<void> read_links(builder& b, const YAML::Node& node) {
  if (auto r = b.rd.sequence(node, "links", 0, bounds::links_max); !r) return r;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto l = read_link(b, node[i], item_path("links", i));
    if (!l.ok()) return l.error();
    b.s.links.push_back(std::move(l).value());
  }
  return {};
}

}  // namespace faultlane::sim::detail
