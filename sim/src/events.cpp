// events: what a scenario does to its system at logical points (restart,
// SIGKILL, unregister, drop connections, faults, failpoints, shutdown), and
// the triggers that decide when. One event runs at a time; each runs once,
// and is recorded as a timeline mark with its result.
#include <fmt/format.h>

#include "faultlane/core/failpoint.hpp"
#include "run_state.hpp"

namespace faultlane::sim {
namespace {

std::string describe_event(const event_spec& e) {
  std::string what(to_string(e.action));
  for (const auto* arg :
       {&e.transport, &e.target, &e.region, &e.link, &e.fault_name, &e.failpoint}) {
    if (!arg->empty()) what += " " + *arg;
  }
  if (e.action == event_action::add_fault) what += " " + relays::describe(e.added.spec);
  return what;
}

}  // namespace

std::uint64_t scenario_run::fault_fired(const std::string& name) const {
  std::uint64_t n = 0;
  each_relay([&](const relay_slot& rail) { n += rail.r->counter(name); });
  return n;
}

void scenario_run::fire_stream_events(const std::string& stream, std::uint64_t from,
                                      std::uint64_t to) {
  for (std::size_t i = 0; i < s_.events.size(); ++i) {
    const auto& e = s_.events[i];
    if (e.when != trigger_kind::stream_ops || e.stream != stream) continue;
    if (e.ops > from && e.ops <= to) fire(e);
  }
}

void scenario_run::fire_phase_events(trigger_kind kind, const std::string& phase) {
  for (const auto& e : s_.events) {
    if (e.when == kind && e.phase == phase) fire(e);
  }
}

void scenario_run::caller_call_ended(const caller_spec& caller) {
  const auto index = static_cast<std::size_t>(&caller - s_.control.data());
  // Each count is reached by exactly one call, whichever client made it.
  const auto ended = calls_ended_.at(index).fetch_add(1, std::memory_order_acq_rel) + 1;
  for (const auto& e : s_.events) {
    if (e.when == trigger_kind::caller_calls && e.caller == caller.name && e.calls == ended) {
      fire(e);
    }
  }
}

void scenario_run::poll_fault_events() {
  for (const auto& e : s_.events) {
    if (e.when == trigger_kind::fault_fired && fault_fired(e.fault) >= e.times) fire(e);
  }
}

void scenario_run::heal() {
  std::lock_guard lock(events_mutex_);
  each_relay([](relay_slot& rail) {
    for (const auto& [name, id] : rail.faults) rail.r->remove_fault(id);
    rail.faults.clear();
  });
  disarm_and_count({});
  healed_ = true;
  rec_.add_mark("event", "heal: every relay fault removed, every failpoint disarmed");
}

void scenario_run::fire(const event_spec& e) {
  std::lock_guard lock(events_mutex_);
  const auto index = static_cast<std::size_t>(&e - s_.events.data());
  if (fired_[index]) return;
  fired_[index] = true;
  auto r = apply(e);
  rec_.add_mark("event", describe_event(e) + (r ? "" : ": failed: " + r.error().message), r.ok());
  // An event that could not act leaves a run that tested less than it
  // says: a run error, unless it removed a fault a heal already removed.
  const bool healed_away = e.action == event_action::remove_fault && r.code() == status::cancelled;
  if (!r && !healed_away && error_.empty()) {
    error_ = fmt::format("event {} failed: {}", describe_event(e), r.error().message);
  }
}

result<void> scenario_run::restart(transport_slot& t, bool sigkill) {
  if (t.shut_down) return error{status::shutting_down, "it was shut down for the rest of the run"};
  // One exclusive section: no stream submits to the transport before its
  // segments are open again and it is marked up.
  std::unique_lock lock(t.lock);
  stop_transport(t, sigkill ? "kill" : "restart", !sigkill);
  if (auto r = start_transport(t, t.incarnation + 1, true); !r) {
    t.p->stop();  // nothing half started stays behind
    return r;
  }
  publish_descriptor(t.spec->name);
  // A segment opened by address names the old incarnation's ports: its
  // initiator opens it again by the same address, as a program would.
  for (auto& [key, p] : pairs_) {
    if (key.second != t.spec->name || p->opened_by.empty()) continue;
    auto& initiator = *transports_.at(key.first);
    std::shared_lock initiator_lock(initiator.lock);
    if (!initiator.up) continue;
    const auto old = p->segment.load();
    if (auto r = open_segment(*p); !r) {
      t.p->stop();
      return r;
    }
    (void)initiator.p->local()->close_segment(old);
  }
  if (t.p->local() != nullptr) {
    if (auto r = open_segments(t.spec->name); !r) {
      t.p->stop();
      return r;
    }
  }
  t.up = true;
  return {};
}

result<void> scenario_run::apply(const event_spec& e) {
  switch (e.action) {
    case event_action::restart: return restart(*transports_.at(e.transport), false);
    case event_action::kill: return restart(*transports_.at(e.transport), true);
    case event_action::shutdown: {
      auto& t = *transports_.at(e.transport);
      std::unique_lock lock(t.lock);
      stop_transport(t, "shutdown", true);
      t.shut_down = true;
      return {};
    }
    case event_action::unregister: {
      const auto& region = *regions_.at(e.region);
      auto& t = *transports_.at(region.transport);
      auto id = t.ids[region.name];
      if (!t.up || id == 0) return error{status::invalid_argument, "not registered"};
      auto r = t.p->unregister_region(region.name, id);
      if (!r) return r;  // still registered: nothing changes
      const auto seq = rec_.next_seq();
      t.ids[region.name] = 0;
      rec_.edit([&](history& h) {
        for (auto& reg : h.registrations) {
          if (reg.id == id && reg.unregistered_seq == 0) reg.unregistered_seq = seq;
        }
      });
      publish_descriptor(region.transport);
      return r;
    }
    case event_action::register_region: {
      const auto& region = *regions_.at(e.region);
      auto& t = *transports_.at(region.transport);
      if (!t.up) return error{status::shutting_down, "transport is down"};
      auto r = register_region(t, t.incarnation.load(), region, false);
      publish_descriptor(region.transport);
      return r;
    }
    case event_action::drop_connections: {
      auto& t = *transports_.at(e.transport);
      auto it = pairs_.find({e.transport, e.target});
      if (it == pairs_.end()) return error{status::invalid_argument, "no stream joins them"};
      std::shared_lock lock(t.lock);
      if (!t.up) return {};  // a shut-down initiator has no connections to drop
      t.p->local()->drop_connections(it->second->segment.load());
      return {};
    }
    case event_action::add_fault:
    case event_action::remove_fault: return change_fault(e);
    case event_action::arm:
      if (armed_.count(e.failpoint) != 0) disarm_and_count(e.failpoint);  // counts restart
      failpoint::arm(e.failpoint, e.failpoint_config);
      armed_.insert(e.failpoint);
      return {};
    case event_action::disarm: disarm_and_count(e.failpoint); return {};
  }
  return error{status::internal_error, "unknown event"};
}

void scenario_run::disarm_and_count(const std::string& name) {
  if (!failpoints_available()) return;
  auto count = [&](const std::string& each) {
    const auto n = failpoint::fired(each);
    rec_.edit([&](history& h) { h.failpoints_fired[each] += n; });
    failpoint::disarm(each);
  };
  if (!name.empty()) {
    if (armed_.erase(name) != 0) count(name);
    failpoint::disarm(name);
    return;
  }
  for (const auto& each : armed_) count(each);
  armed_.clear();
  failpoint::disarm_all();
}

result<void> scenario_run::change_fault(const event_spec& e) {
  relay_slot* found = nullptr;
  each_relay([&](relay_slot& rail) {
    if (rail.name == e.link) found = &rail;
  });
  if (found == nullptr) {
    return error{status::invalid_argument,
                 "no link " + e.link + " (a data link needs a stream to relay)"};
  }
  relay_slot& rail = *found;
  if (e.action == event_action::add_fault) {
    rail.faults.emplace(e.added.spec.name, rail.r->add_fault(e.added.spec));
    fault_names_.insert(e.added.spec.name);
    return {};
  }
  auto [first, last] = rail.faults.equal_range(e.fault_name);
  if (first == last && healed_) {
    return error{status::cancelled, "a heal already removed " + e.fault_name};
  }
  if (first == last) return error{status::invalid_argument, "no fault " + e.fault_name};
  for (auto it = first; it != last; ++it) rail.r->remove_fault(it->second);
  rail.faults.erase(first, last);
  return {};
}

}  // namespace faultlane::sim
