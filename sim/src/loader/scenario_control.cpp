// Reading `control:`: callers of a transport's control plane. Each names a
// transport (local or child), a method of docs/control-plane.md, and
// optionally a control link to call through; the loader checks the
// pattern compiles as the server will compile it, so a caller never fails
// on a typo only at run time.
#include <fmt/format.h>

#include <regex>

#include "loader/scenario_reader.hpp"

namespace faultlane::sim::detail {
namespace {

namespace bounds = scenario_bounds;

constexpr std::pair<std::string_view, control_method> methods[] = {
    {"ping", control_method::ping},
    {"service_ready", control_method::service_ready},
    {"describe", control_method::describe},
    {"list_registrations", control_method::list_registrations},
    {"stats", control_method::stats}};

result<void> read_method(const reader& rd, caller_spec& c, const YAML::Node& node,
                         const std::string& path) {
  auto m_node = rd.required(node, path, "method");
  if (!m_node.ok()) return m_node.error();
  auto text = rd.text(m_node.value(), key_path(path, "method"));
  if (!text.ok()) return text.error();
  const auto* found = std::find_if(std::begin(methods), std::end(methods),
                                   [&](const auto& m) { return m.first == text.value(); });
  if (found == std::end(methods)) {
    return rd.fail(m_node.value(), key_path(path, "method"),
                   "must be ping, service_ready, describe, list_registrations or stats");
  }
  c.method = found->second;
  const auto p = node["pattern"];
  if (c.method != control_method::list_registrations) {
    if (p) return rd.fail(p, key_path(path, "pattern"), "only list_registrations takes a pattern");
    return {};
  }
  if (!p) return rd.fail(node, key_path(path, "pattern"), "list_registrations needs a pattern");
  auto pattern = rd.text(p, key_path(path, "pattern"));
  if (!pattern.ok()) return pattern.error();
  if (pattern.value().size() > bounds::pattern_bytes_max) {
    return rd.fail(
        p, key_path(path, "pattern"),
        fmt::format("{} bytes is above {}", pattern.value().size(), bounds::pattern_bytes_max));
  }
  try {
    // As the service compiles it (control/src/control_plane.cpp): the polynomial
    // matcher, which refuses back-references.
    std::regex compiled(pattern.value(),
                        std::regex::ECMAScript | std::regex_constants::__polynomial);
    (void)compiled;
  } catch (const std::regex_error& e) {
    return rd.fail(p, key_path(path, "pattern"),
                   fmt::format("not an ECMAScript regex: {}", e.what()));
  }
  c.pattern = pattern.value();
  return {};
}

result<void> read_caller_ends(const builder& b, caller_spec& c, const YAML::Node& node,
                              const std::string& path) {
  const reader& rd = b.rd;
  auto t_node = rd.required(node, path, "target");
  if (!t_node.ok()) return t_node.error();
  auto target = b.transport_ref(t_node.value(), key_path(path, "target"), false);
  if (!target.ok()) return target.error();
  c.target = target.value()->name;
  if (!target.value()->config.rpc_enabled) {
    return rd.fail(
        t_node.value(), key_path(path, "target"),
        fmt::format("'{}' has config.rpc_enabled false: no control plane to call", c.target));
  }
  if (const auto l = node["link"]) {
    auto name = rd.text(l, key_path(path, "link"));
    if (!name.ok()) return name.error();
    const link_spec* link = b.link(name.value());
    if (link == nullptr || !link->control) {
      return rd.fail(l, key_path(path, "link"),
                     fmt::format("no control link '{}' (a link with control: true)", name.value()));
    }
    if (link->target != c.target) {
      return rd.fail(
          l, key_path(path, "link"),
          fmt::format("link '{}' leads to '{}', not to '{}'", link->name, link->target, c.target));
    }
    c.link = link->name;
  }
  return {};
}

result<void> read_pace(const reader& rd, caller_spec& c, const YAML::Node& node,
                       const std::string& path) {
  if (const auto n = node["clients"]) {
    auto clients = rd.integer(n, key_path(path, "clients"), 1, bounds::caller_clients_max);
    if (!clients.ok()) return clients.error();
    c.clients = clients.value();
  }
  if (const auto n = node["interval_ms"]) {
    auto ms = rd.integer(n, key_path(path, "interval_ms"), 0, bounds::duration_ms_max);
    if (!ms.ok()) return ms.error();
    c.interval_ms = static_cast<std::uint32_t>(ms.value());
  }
  if (const auto n = node["call_timeout_ms"]) {
    auto ms = rd.integer(n, key_path(path, "call_timeout_ms"), 1, bounds::duration_ms_max);
    if (!ms.ok()) return ms.error();
    c.call_timeout_ms = static_cast<std::uint32_t>(ms.value());
  }
  return read_amount(rd, c.count, c.duration_ms, node, path);
}

result<caller_spec> read_caller(const builder& b, const YAML::Node& node, const std::string& path) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(node, path,
                          {"name", "target", "method", "pattern", "link", "clients", "count",
                           "duration_ms", "interval_ms", "call_timeout_ms", "phase", "allow"});
      !r) {
    return r.error();
  }
  caller_spec c;
  c.mark = rd.mark(node);
  auto name_node = rd.required(node, path, "name");
  if (!name_node.ok()) return name_node.error();
  auto name = rd.name(name_node.value(), key_path(path, "name"), 32);
  if (!name.ok()) return name.error();
  c.name = name.value();
  if (b.caller(c.name) != nullptr || b.stream(c.name) != nullptr) {
    return rd.fail(name_node.value(), key_path(path, "name"),
                   fmt::format("duplicate name '{}' (streams and callers share names)", c.name));
  }
  if (auto r = read_caller_ends(b, c, node, path); !r) return r.error();
  if (auto r = read_method(rd, c, node, path); !r) return r.error();
  if (auto r = read_pace(rd, c, node, path); !r) return r.error();
  if (auto r = read_phase_and_allow(b, c.phase, c.allow, node, path); !r) return r.error();
  return c;
}

}  // namespace

result<void> read_control(builder& b, const YAML::Node& node) {
  if (auto r = b.rd.sequence(node, "control", 1, bounds::callers_max); !r) return r;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto c = read_caller(b, node[i], item_path("control", i));
    if (!c.ok()) return c.error();
    b.s.control.push_back(std::move(c).value());
  }
  return {};
}

}  // namespace faultlane::sim::detail
