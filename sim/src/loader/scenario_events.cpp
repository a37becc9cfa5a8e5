// Reading a scenario's `events:`: a trigger (`at:`) and an action (`do:`)
// with the keys that action takes. Every reference is checked, and every
// trigger must be able to fire: a stream's op count within its count, a
// fault some link declares or some add_fault event adds, a phase that
// exists. Fault triggers are checked after all events are read, because an
// event may wait for a fault that a later event in the file adds.
#include <fmt/format.h>

#include "loader/scenario_reader.hpp"

namespace faultlane::sim::detail {
namespace {

namespace bounds = scenario_bounds;

constexpr std::uint64_t trigger_times_max = 1000000;

struct pending_fault_trigger {
  YAML::Node node;
  std::string path;
  std::string name;
};

result<event_action> read_action(const reader& rd, const YAML::Node& node,
                                 const std::string& path) {
  auto text = rd.text(node, path);
  if (!text.ok()) return text.error();
  std::string known;
  for (const auto& row : event_action_rows) {
    if (text.value() == row.spelling) return row.action;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", row.spelling);
  }
  return rd.fail(node, path, fmt::format("'{}' is not an action ({})", text.value(), known));
}

// {caller: NAME, calls: N}: after the N-th call of a `control:` caller
// ended (any of its clients), whatever it ended with.
result<void> read_caller_trigger(const builder& b, event_spec& e, const YAML::Node& node,
                                 const std::string& path) {
  const reader& rd = b.rd;
  const auto c = node["caller"];
  if (!c) {
    if (node["calls"]) return rd.fail(node["calls"], key_path(path, "calls"), "only with caller:");
    return {};
  }
  e.when = trigger_kind::caller_calls;
  auto name = rd.text(c, key_path(path, "caller"));
  if (!name.ok()) return name.error();
  const caller_spec* caller = b.caller(name.value());
  if (caller == nullptr) {
    return rd.fail(c, key_path(path, "caller"), fmt::format("no caller '{}'", name.value()));
  }
  e.caller = caller->name;
  auto calls_node = rd.required(node, path, "calls");
  if (!calls_node.ok()) return calls_node.error();
  auto calls = rd.integer(calls_node.value(), key_path(path, "calls"), 1, UINT64_MAX);
  if (!calls.ok()) return calls.error();
  const std::uint64_t most =
      (caller->count != 0 ? caller->count : bounds::caller_calls_max) * caller->clients;
  if (calls.value() > most) {
    return rd.fail(calls_node.value(), key_path(path, "calls"),
                   fmt::format("{} is above the {} calls caller '{}' makes, so this never "
                               "triggers",
                               calls.value(), most, caller->name));
  }
  e.calls = calls.value();
  return {};
}

result<void> read_trigger(const builder& b, event_spec& e, const YAML::Node& node,
                          const std::string& path, std::vector<pending_fault_trigger>& pending) {
  const reader& rd = b.rd;
  if (auto r = rd.mapping(
          node, path,
          {"stream", "ops", "fault", "times", "phase", "after_phase", "caller", "calls"});
      !r) {
    return r;
  }
  const int forms = int(node["stream"].IsDefined()) + int(node["fault"].IsDefined()) +
                    int(node["phase"].IsDefined()) + int(node["after_phase"].IsDefined()) +
                    int(node["caller"].IsDefined());
  if (forms != 1) {
    return rd.fail(node, path,
                   "needs exactly one of {stream, ops}, {fault, times}, {phase}, {after_phase}, "
                   "{caller, calls}");
  }
  if (auto r = read_caller_trigger(b, e, node, path); !r) return r;
  if (const auto s = node["stream"]) {
    e.when = trigger_kind::stream_ops;
    auto name = rd.text(s, key_path(path, "stream"));
    if (!name.ok()) return name.error();
    const stream_spec* stream = b.stream(name.value());
    if (stream == nullptr) {
      return rd.fail(s, key_path(path, "stream"), fmt::format("no stream '{}'", name.value()));
    }
    e.stream = stream->name;
    auto ops_node = rd.required(node, path, "ops");
    if (!ops_node.ok()) return ops_node.error();
    const std::uint64_t most = stream->count != 0 ? stream->count : bounds::stream_ops_max;
    auto ops = rd.integer(ops_node.value(), key_path(path, "ops"), 1, UINT64_MAX);
    if (!ops.ok()) return ops.error();
    if (ops.value() > most) {
      return rd.fail(ops_node.value(), key_path(path, "ops"),
                     fmt::format("{} is above the {} ops stream '{}' submits, so this never "
                                 "triggers",
                                 ops.value(), most, stream->name));
    }
    e.ops = ops.value();
  } else if (node["ops"]) {
    return rd.fail(node["ops"], key_path(path, "ops"), "only with stream:");
  }
  if (const auto f = node["fault"]) {
    e.when = trigger_kind::fault_fired;
    auto name = rd.text(f, key_path(path, "fault"));
    if (!name.ok()) return name.error();
    e.fault = name.value();
    pending.push_back({f, key_path(path, "fault"), e.fault});
    if (const auto t = node["times"]) {
      auto times = rd.integer(t, key_path(path, "times"), 1, trigger_times_max);
      if (!times.ok()) return times.error();
      e.times = times.value();
    }
  } else if (node["times"]) {
    return rd.fail(node["times"], key_path(path, "times"), "only with fault:");
  }
  for (auto [key, kind] : {std::pair{"phase", trigger_kind::phase_start},
                           std::pair{"after_phase", trigger_kind::phase_end}}) {
    if (const auto p = node[key]) {
      e.when = kind;
      auto name = rd.text(p, key_path(path, key));
      if (!name.ok()) return name.error();
      if (b.phase(name.value()) == nullptr) {
        return rd.fail(p, key_path(path, key),
                       fmt::format("no phase '{}', so this never triggers", name.value()));
      }
      e.phase = name.value();
    }
  }
  return {};
}

// A failpoint the core has (failpoint::known_names): a misspelled name
// would arm nothing and test nothing.
result<void> known_failpoint(const reader& rd, const YAML::Node& node, const std::string& path,
                             const std::string& name) {
  if (failpoint::is_known(name)) return {};
  std::string names;
  for (auto known : failpoint::known_names)
    names += (names.empty() ? "" : ", ") + std::string(known);
  for (auto planted : failpoint::planted_names) names += ", " + std::string(planted);
  return rd.fail(node, path, fmt::format("unknown failpoint '{}' (the core has: {})", name, names));
}

result<void> read_failpoint(const reader& rd, event_spec& e, const YAML::Node& node,
                            const std::string& path) {
  if (auto r = rd.mapping(node, path,
                          {"name", "action", "error", "count", "probability", "delay_ms", "key",
                           "seed", "optional"});
      !r) {
    return r;
  }
  auto name_node = rd.required(node, path, "name");
  if (!name_node.ok()) return name_node.error();
  auto name = rd.name(name_node.value(), key_path(path, "name"), 64, true);
  if (!name.ok()) return name.error();
  if (auto r = known_failpoint(rd, name_node.value(), key_path(path, "name"), name.value()); !r) {
    return r;
  }
  e.failpoint = name.value();
  auto act_node = rd.required(node, path, "action");
  if (!act_node.ok()) return act_node.error();
  auto act_text = rd.text(act_node.value(), key_path(path, "action"));
  if (!act_text.ok()) return act_text.error();
  auto act = failpoint::parse_action(act_text.value());
  if (!act || *act == failpoint::action::off) {
    return rd.fail(act_node.value(), key_path(path, "action"),
                   "must be return_error, delay, throw or pause");
  }
  failpoint::config& c = e.failpoint_config;
  c.act = *act;
  if (const auto n = node["error"]) {
    if (c.act != failpoint::action::return_error) {
      return rd.fail(n, key_path(path, "error"), "only with action: return_error");
    }
    auto st = rd.status_name(n, key_path(path, "error"));
    if (!st.ok()) return st.error();
    if (st.value() == status::ok) return rd.fail(n, key_path(path, "error"), "cannot be ok");
    c.error = st.value();
  }
  if (const auto n = node["optional"]) {
    auto optional = rd.boolean(n, key_path(path, "optional"));
    if (!optional.ok()) return optional.error();
    e.failpoint_optional = optional.value();
  }
  if (const auto n = node["delay_ms"]) {
    auto ms = rd.integer(n, key_path(path, "delay_ms"), 0, bounds::failpoint_delay_ms_max);
    if (!ms.ok()) return ms.error();
    c.delay_ms = static_cast<std::uint32_t>(ms.value());
  }
  if (const auto n = node["count"]) {
    auto count = rd.integer(n, key_path(path, "count"), 1, INT32_MAX);
    if (!count.ok()) return count.error();
    c.count = static_cast<std::int64_t>(count.value());
  }
  if (const auto n = node["probability"]) {
    auto p = rd.number(n, key_path(path, "probability"), 0, 1);
    if (!p.ok()) return p.error();
    c.probability = p.value();
  }
  if (const auto n = node["key"]) {
    auto key = rd.integer(n, key_path(path, "key"), 0, UINT64_MAX);
    if (!key.ok()) return key.error();
    c.only_key = key.value();
  }
  if (const auto n = node["seed"]) {
    auto seed = rd.integer(n, key_path(path, "seed"), 0, UINT64_MAX);
    if (!seed.ok()) return seed.error();
    c.seed = seed.value();
  }
  return {};
}

result<std::string> read_link_ref(const builder& b, const YAML::Node& node,
                                  const std::string& path) {
  auto n = b.rd.required(node, path, "link");
  if (!n.ok()) return n.error();
  auto name = b.rd.text(n.value(), key_path(path, "link"));
  if (!name.ok()) return name;
  if (b.link(name.value()) == nullptr) {
    return b.rd.fail(n.value(), key_path(path, "link"), fmt::format("no link '{}'", name.value()));
  }
  return name;
}

result<void> read_fault_change(builder& b, event_spec& e, const YAML::Node& node,
                               const std::string& path) {
  auto link = read_link_ref(b, node, path);
  if (!link.ok()) return link.error();
  e.link = link.value();
  auto f_node = b.rd.required(node, path, "fault");
  if (!f_node.ok()) return f_node.error();
  auto& names = b.link_faults[e.link];
  if (e.action == event_action::add_fault) {
    auto f = read_link_fault(b, f_node.value(), key_path(path, "fault"));
    if (!f.ok()) return f.error();
    e.added = std::move(f).value();
    if (!names.insert(e.added.spec.name).second) {
      return b.rd.fail(f_node.value(), key_path(path, "fault"),
                       fmt::format("link '{}' already has a fault named '{}'; give this one a "
                                   "name:",
                                   e.link, e.added.spec.name));
    }
    b.fault_names.insert(e.added.spec.name);
    return {};
  }
  auto name = b.rd.text(f_node.value(), key_path(path, "fault"));
  if (!name.ok()) return name.error();
  if (names.count(name.value()) == 0) {
    return b.rd.fail(f_node.value(), key_path(path, "fault"),
                     fmt::format("link '{}' has no fault '{}' (declared, or added by an earlier "
                                 "event)",
                                 e.link, name.value()));
  }
  e.fault_name = name.value();
  return {};
}

result<void> read_region_ref(const builder& b, event_spec& e, const YAML::Node& node,
                             const std::string& path) {
  auto n = b.rd.required(node, path, "region");
  if (!n.ok()) return n.error();
  auto name = b.rd.text(n.value(), key_path(path, "region"));
  if (!name.ok()) return name.error();
  const region_spec* g = b.region(name.value());
  if (g == nullptr) {
    return b.rd.fail(n.value(), key_path(path, "region"),
                     fmt::format("no region '{}'", name.value()));
  }
  if (g->count > 1) {
    return b.rd.fail(n.value(), key_path(path, "region"),
                     fmt::format("region '{}' has count {}: a counted region stays registered "
                                 "for the whole run",
                                 g->name, g->count));
  }
  e.region = name.value();
  return {};
}

// The keys of one action, after `do:` named it.
result<void> read_action_keys(builder& b, event_spec& e, const YAML::Node& node,
                              const std::string& path) {
  const reader& rd = b.rd;
  using A = event_action;
  switch (e.action) {
    case A::restart:
    case A::shutdown:
    case A::kill:
    case A::drop_connections: {
      auto t_node = rd.required(node, path, "transport");
      if (!t_node.ok()) return t_node.error();
      const bool local = e.action == A::drop_connections;
      auto t = b.transport_ref(t_node.value(), key_path(path, "transport"), local);
      if (!t.ok()) return t.error();
      e.transport = t.value()->name;
      if (e.action == A::kill && t.value()->process != process_kind::child) {
        return rd.fail(t_node.value(), key_path(path, "transport"),
                       fmt::format("'{}' is local; only a process: child transport can be killed",
                                   e.transport));
      }
      if (e.action != A::drop_connections) return {};
      auto target_node = rd.required(node, path, "target");
      if (!target_node.ok()) return target_node.error();
      auto target = b.transport_ref(target_node.value(), key_path(path, "target"), false);
      if (!target.ok()) return target.error();
      if (target.value() == t.value()) {
        return rd.fail(target_node.value(), key_path(path, "target"), "is the transport itself");
      }
      e.target = target.value()->name;
      return {};
    }
    case A::unregister:
    case A::register_region: return read_region_ref(b, e, node, path);
    case A::add_fault:
    case A::remove_fault: return read_fault_change(b, e, node, path);
    case A::arm: {
      auto f = rd.required(node, path, "failpoint");
      if (!f.ok()) return f.error();
      return read_failpoint(rd, e, f.value(), key_path(path, "failpoint"));
    }
    case A::disarm: {
      auto f = rd.required(node, path, "failpoint");
      if (!f.ok()) return f.error();
      YAML::Node name_node = f.value();
      std::string name_path = key_path(path, "failpoint");
      if (f.value().IsMap()) {
        if (auto r = rd.mapping(f.value(), name_path, {"name"}); !r) return r;
        auto n = rd.required(f.value(), name_path, "name");
        if (!n.ok()) return n.error();
        name_node.reset(n.value());
        name_path = key_path(name_path, "name");
      }
      auto name = rd.name(name_node, name_path, 64, true);
      if (!name.ok()) return name.error();
      if (auto r = known_failpoint(rd, name_node, name_path, name.value()); !r) return r;
      e.failpoint = name.value();
      return {};
    }
  }
  return {};
}

// at:, do: and the action's own keys (its row of FAULTLANE_EVENT_ACTIONS).
std::vector<std::string_view> action_keys(event_action a) {
  std::vector<std::string_view> keys{"at", "do"};
  for (const auto& row : event_action_rows) {
    if (row.action != a) continue;
    for (std::string_view rest = row.keys; !rest.empty();) {
      const auto space = rest.find(' ');
      keys.push_back(rest.substr(0, space));
      rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
    }
  }
  return keys;
}

result<event_spec> read_event(builder& b, const YAML::Node& node, const std::string& path,
                              std::vector<pending_fault_trigger>& pending) {
  const reader& rd = b.rd;
  if (!node.IsMap()) return rd.fail(node, path, "expected a mapping with at: and do:");
  event_spec e;
  e.mark = rd.mark(node);
  auto do_node = rd.required(node, path, "do");
  if (!do_node.ok()) return do_node.error();
  auto action = read_action(rd, do_node.value(), key_path(path, "do"));
  if (!action.ok()) return action.error();
  e.action = action.value();
  if (auto r = rd.mapping(node, path, action_keys(e.action)); !r) return r.error();
  auto at_node = rd.required(node, path, "at");
  if (!at_node.ok()) return at_node.error();
  if (auto r = read_trigger(b, e, at_node.value(), key_path(path, "at"), pending); !r) {
    return r.error();
  }
  if (auto r = read_action_keys(b, e, node, path); !r) return r.error();
  return e;
}

}  // namespace

result<void> read_events(builder& b, const YAML::Node& node) {
  if (auto r = b.rd.sequence(node, "events", 0, bounds::events_max); !r) return r;
  std::vector<pending_fault_trigger> pending;
  for (std::size_t i = 0; i < node.size(); ++i) {
    auto e = read_event(b, node[i], item_path("events", i), pending);
    if (!e.ok()) return e.error();
    b.s.events.push_back(std::move(e).value());
  }
  for (const auto& p : pending) {
    if (b.fault_names.count(p.name) == 0) {
      return b.rd.fail(p.node, p.path,
                       fmt::format("no link declares a fault '{}' and no add_fault event adds "
                                   "one, so this never triggers",
                                   p.name));
    }
  }
  return {};
}

}  // namespace faultlane::sim::detail
