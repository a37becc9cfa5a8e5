// to_yaml(): a scenario written back in the file form parse_scenario()
// reads to an equal scenario. The shrinker writes NAME.min.yaml with it, so
// the output is meant to be read by a person too: the summary comes first
// as the opening comment, defaults are left out where the reader restores
// them, and a transport's config lists only the fields that differ from
// the core's defaults.
#include <fmt/format.h>

#include <sstream>

#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {
namespace {

using out_lines = std::vector<std::string>;

std::string config_block(const transport_config& c) {
  const transport_config d;
  std::string out;
  auto add = [&](std::string_view key, auto value, auto fallback) {
    if (value != fallback) out += fmt::format("{}{}: {}", out.empty() ? "" : ", ", key, value);
  };
  for_each_transport_setting(
      [&](const auto& setting) { add(setting.name, c.*setting.field, setting.initial); });
  if (c.rpc_inline) out += fmt::format("{}rpc_worker_count: inline", out.empty() ? "" : ", ");
  else add("rpc_worker_count", c.rpc_worker_count, d.rpc_worker_count);
  return out;
}

// A double-quoted YAML string: escapes what would end or break it.
std::string quoted(const std::string& text) {
  std::string escaped;
  for (char c : text) {
    if (c == '"' || c == '\\') escaped += '\\';
    if (c == '\n') escaped += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) escaped += fmt::format("\\x{:02x}", c);
    else escaped += c;
  }
  return fmt::format("\"{}\"", escaped);
}

// {type: KIND, dir: D, key: value, ..., name: N[, optional: true]} from
// relays::fault_fields(), every key that differs from a default.
std::string fault_flow(const link_fault& f) {
  std::string out = fmt::format("{{type: {}", relays::to_string(f.spec.kind));
  for (const auto& [key, value] : relays::fault_fields(f.spec)) {
    out += fmt::format(", {}: {}", key, value);
  }
  if (!f.spec.name.empty()) out += fmt::format(", name: {}", f.spec.name);
  if (f.optional) out += ", optional: true";
  return out + "}";
}

std::string quoted_range(const count_range& r) { return fmt::format("\"{}\"", to_string(r)); }

std::string sizes(const size_dist& d) {
  if (d.range) return fmt::format("\"{}..{}\"", d.lo, d.hi);
  if (d.values.size() == 1) return fmt::format("{}", d.values[0]);
  return fmt::format("[{}]", fmt::join(d.values, ", "));
}

std::string ops(const stream_spec& s) {
  if (s.read_weight == 1 && s.write_weight == 0) return "read";
  if (s.read_weight == 0 && s.write_weight == 1) return "write";
  return fmt::format("{{read: {}, write: {}}}", s.read_weight, s.write_weight);
}

void write_topology(const scenario& s, out_lines& out) {
  out.emplace_back("transports:");
  for (const auto& t : s.transports) {
    std::string line = fmt::format("  - {{name: {}, rails: {}, process: {}", t.name, t.rails,
                                   to_string(t.process));
    if (auto c = config_block(t.config); !c.empty()) line += fmt::format(", config: {{{}}}", c);
    out.push_back(line + "}");
  }
  out.emplace_back(fmt::format("regions:{}", s.regions.empty() ? " []" : ""));
  for (const auto& g : s.regions) {
    out.push_back(fmt::format("  - {{name: {}, transport: {}, size: {}, perm: {}, count: {}}}",
                              g.name, g.transport, g.size, to_string(g.perm), g.count));
  }
  out.emplace_back(fmt::format("links:{}", s.links.empty() ? " []" : ""));
  for (const auto& l : s.links) {
    out.push_back(fmt::format("  - name: {}", l.name));
    if (l.control) {
      out.emplace_back("    control: true");
      if (!l.initiator.empty()) out.push_back(fmt::format("    initiator: {}", l.initiator));
    } else {
      out.push_back(fmt::format("    initiator: {}", l.initiator));
      out.push_back(fmt::format("    rail: {}", l.rail));
      out.push_back(
          fmt::format("    protocol: {}", l.proto == relays::protocol::raw ? "raw" : "faultlane"));
      out.push_back(fmt::format("    tap: {}", l.tap));
    }
    out.push_back(fmt::format("    target: {}", l.target));
    out.push_back(fmt::format("    faults:{}", l.faults.empty() ? " []" : ""));
    for (const auto& f : l.faults) out.push_back(fmt::format("      - {}", fault_flow(f)));
  }
}

std::string allowed(const std::vector<status>& allow) {
  std::vector<std::string_view> names;
  for (auto st : allow) names.push_back(to_string(st));
  return fmt::format("[{}]", fmt::join(names, ", "));
}

void write_control(const scenario& s, out_lines& out) {
  if (s.control.empty()) return;
  out.emplace_back("control:");
  for (const auto& c : s.control) {
    out.push_back(fmt::format("  - name: {}", c.name));
    out.push_back(fmt::format("    target: {}", c.target));
    out.push_back(fmt::format("    method: {}", to_string(c.method)));
    if (c.method == control_method::list_registrations) {
      out.push_back(fmt::format("    pattern: {}", quoted(c.pattern)));
    }
    if (!c.link.empty()) out.push_back(fmt::format("    link: {}", c.link));
    out.push_back(fmt::format("    clients: {}", c.clients));
    if (c.count != 0) out.push_back(fmt::format("    count: {}", c.count));
    else out.push_back(fmt::format("    duration_ms: {}", c.duration_ms));
    out.push_back(fmt::format("    interval_ms: {}", c.interval_ms));
    out.push_back(fmt::format("    call_timeout_ms: {}", c.call_timeout_ms));
    out.push_back(fmt::format("    phase: {}", c.phase));
    out.push_back(fmt::format("    allow: {}", allowed(c.allow)));
  }
}

void write_streams(const scenario& s, out_lines& out) {
  out.emplace_back(fmt::format("workload:{}", s.streams.empty() ? " []" : ""));
  for (const auto& w : s.streams) {
    out.push_back(fmt::format("  - name: {}", w.name));
    out.push_back(fmt::format("    from: {}", w.from));
    out.push_back(fmt::format("    region: {}", w.region));
    out.push_back(fmt::format("    ops: {}", ops(w)));
    out.push_back(fmt::format("    size: {}", sizes(w.size)));
    if (w.count != 0) out.push_back(fmt::format("    count: {}", w.count));
    else out.push_back(fmt::format("    duration_ms: {}", w.duration_ms));
    out.push_back(fmt::format("    depth: {}", w.depth));
    out.push_back(fmt::format("    batch: {}", w.batch));
    out.push_back(fmt::format("    offsets: {}", to_string(w.offsets)));
    out.push_back(fmt::format("    start_deadline_ms: {}", w.start_deadline_ms));
    out.push_back(fmt::format("    phase: {}", w.phase));
    out.push_back(fmt::format("    allow: {}", allowed(w.allow)));
  }
}

std::string failpoint_flow(const event_spec& e) {
  const failpoint::config& c = e.failpoint_config;
  const failpoint::config d;
  std::string out = fmt::format("{{name: {}, action: {}", e.failpoint, failpoint::to_string(c.act));
  if (c.error != d.error) out += fmt::format(", error: {}", to_string(c.error));
  if (c.delay_ms != d.delay_ms) out += fmt::format(", delay_ms: {}", c.delay_ms);
  if (c.count != d.count) out += fmt::format(", count: {}", c.count);
  if (c.probability != d.probability) out += fmt::format(", probability: {}", c.probability);
  if (c.only_key) out += fmt::format(", key: {}", *c.only_key);
  if (c.seed != d.seed) out += fmt::format(", seed: {}", c.seed);
  if (e.failpoint_optional) out += ", optional: true";
  return out + "}";
}

std::string trigger_flow(const event_spec& e) {
  switch (e.when) {
    case trigger_kind::stream_ops: return fmt::format("{{stream: {}, ops: {}}}", e.stream, e.ops);
    case trigger_kind::fault_fired:
      return fmt::format("{{fault: {}, times: {}}}", e.fault, e.times);
    case trigger_kind::phase_start: return fmt::format("{{phase: {}}}", e.phase);
    case trigger_kind::phase_end: return fmt::format("{{after_phase: {}}}", e.phase);
    case trigger_kind::caller_calls:
      return fmt::format("{{caller: {}, calls: {}}}", e.caller, e.calls);
  }
  return "{}";
}

std::string action_keys(const event_spec& e) {
  using A = event_action;
  switch (e.action) {
    case A::restart:
    case A::kill:
    case A::shutdown: return fmt::format("transport: {}", e.transport);
    case A::drop_connections:
      return fmt::format("transport: {}, target: {}", e.transport, e.target);
    case A::unregister:
    case A::register_region: return fmt::format("region: {}", e.region);
    case A::add_fault: return fmt::format("link: {}, fault: {}", e.link, fault_flow(e.added));
    case A::remove_fault: return fmt::format("link: {}, fault: {}", e.link, e.fault_name);
    case A::arm: return fmt::format("failpoint: {}", failpoint_flow(e));
    case A::disarm: return fmt::format("failpoint: {}", e.failpoint);
  }
  return "";
}

void write_events_and_phases(const scenario& s, out_lines& out) {
  out.emplace_back(fmt::format("events:{}", s.events.empty() ? " []" : ""));
  for (const auto& e : s.events) {
    out.push_back(fmt::format("  - {{at: {}, do: {}, {}}}", trigger_flow(e), to_string(e.action),
                              action_keys(e)));
  }
  out.emplace_back("phases:");
  for (const auto& p : s.phases) {
    out.push_back(
        fmt::format("  - {{name: {}, heal: {}, liveness: {}, deadline_ms: {}, settle_ms: {}}}",
                    p.name, p.heal, p.liveness, p.deadline_ms, p.settle_ms));
  }
}

void write_expect(const expectations& x, out_lines& out) {
  out.emplace_back("expect:");
  for (auto [key, map] : {std::pair{"counts", &x.counts}, std::pair{"faults", &x.faults},
                          std::pair{"stats", &x.stats}, std::pair{"control", &x.control}}) {
    out.push_back(fmt::format("  {}:{}", key, map->empty() ? " {}" : ""));
    for (const auto& [name, range] : *map) {
      out.push_back(fmt::format("    \"{}\": {}", name, quoted_range(range)));
    }
  }
  out.emplace_back(fmt::format("  checkers:{}", x.checkers_off.empty() ? " {}" : ""));
  for (const auto& [name, reason] : x.checkers_off) {
    out.push_back(fmt::format("    {}: {{run: false, reason: {}}}", name, quoted(reason)));
  }
}

}  // namespace

std::string to_yaml(const scenario& s) {
  out_lines out;
  std::istringstream summary(s.summary);
  for (std::string line; std::getline(summary, line);) {
    out.push_back(line.empty() ? "#" : "# " + line);
  }
  out.push_back(fmt::format("name: {}", s.name));
  std::vector<std::string> tags(s.tags.begin(), s.tags.end());
  out.push_back(fmt::format("tags: [{}]", fmt::join(tags, ", ")));
  out.push_back(fmt::format("seed: {}", s.seed));
  out.push_back(fmt::format("timeout_ms: {}", s.timeout_ms));
  if (s.timing) out.emplace_back("timing: true");
  if (s.perturb) {
    out.push_back(fmt::format("perturb: {{probability: {}, max_us: {}}}", s.perturb->probability,
                              s.perturb->max_us));
  }
  if (s.load) {
    out.push_back(fmt::format("load: {{cost_us: {}, hiccup_probability: {}, hiccup_ms: {}}}",
                              s.load->cost_us, s.load->hiccup_probability, s.load->hiccup_ms));
  }
  write_topology(s, out);
  write_streams(s, out);
  write_control(s, out);
  write_events_and_phases(s, out);
  write_expect(s.expect, out);
  return fmt::format("{}\n", fmt::join(out, "\n"));
}

}  // namespace faultlane::sim
