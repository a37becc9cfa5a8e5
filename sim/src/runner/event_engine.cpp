// event_engine: what a scenario does to its system at logical points
// (restart, SIGKILL, unregister, drop connections, faults, failpoints,
// shutdown), and the triggers that decide when. One event runs at a time;
// each runs once, and is recorded as a timeline mark with its result. See
// event_engine.hpp.
#include "runner/event_engine.hpp"

#include <fmt/format.h>

#include "faultlane/core/failpoint.hpp"

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

event_engine::event_engine(const scenario& s, run_topology& topology, recorder& rec,
                           run_error& error)
    : s_(s),
      topology_(topology),
      rec_(rec),
      error_(error),
      fired_(s.events.size(), false),
      calls_ended_(s.control.size()) {}

void event_engine::stream_ops(const std::string& stream, std::uint64_t from, std::uint64_t to) {
  for (std::size_t i = 0; i < s_.events.size(); ++i) {
    const auto& e = s_.events[i];
    if (e.when != trigger_kind::stream_ops || e.stream != stream) continue;
    if (e.ops > from && e.ops <= to) fire(e);
  }
}

void event_engine::phase(trigger_kind kind, const std::string& phase) {
  for (const auto& e : s_.events) {
    if (e.when == kind && e.phase == phase) fire(e);
  }
}

void event_engine::caller_call_ended(const caller_spec& caller) {
  const auto index = static_cast<std::size_t>(&caller - s_.control.data());
  // Each count is reached by exactly one call, whichever client made it.
  const auto ended = calls_ended_.at(index).fetch_add(1, std::memory_order_acq_rel) + 1;
  for (const auto& e : s_.events) {
    if (e.when == trigger_kind::caller_calls && e.caller == caller.name && e.calls == ended) {
      fire(e);
    }
  }
}

void event_engine::poll_faults() {
  for (const auto& e : s_.events) {
    if (e.when == trigger_kind::fault_fired && topology_.fault_fired(e.fault) >= e.times) fire(e);
  }
}

void event_engine::heal() {
  std::lock_guard lock(mutex_);
  topology_.remove_every_fault();
  disarm_and_count({});
  healed_ = true;
  rec_.add_mark("event", "heal: every relay fault removed, every failpoint disarmed");
}

void event_engine::disarm_every_failpoint() {
  std::lock_guard lock(mutex_);
  disarm_and_count({});
}

void event_engine::fire(const event_spec& e) {
  std::lock_guard lock(mutex_);
  const auto index = static_cast<std::size_t>(&e - s_.events.data());
  if (fired_[index]) return;
  fired_[index] = true;
  auto r = apply(e);
  rec_.add_mark("event", describe_event(e) + (r ? "" : ": failed: " + r.error().message), r.ok());
  // An event that could not act leaves a run that tested less than it
  // says: a run error, unless it removed a fault a heal already removed.
  const bool healed_away = e.action == event_action::remove_fault && r.code() == status::cancelled;
  if (!r && !healed_away) {
    error_.set(fmt::format("event {} failed: {}", describe_event(e), r.error().message));
  }
}

result<void> event_engine::apply(const event_spec& e) {
  auto& t = topology_;
  switch (e.action) {
    case event_action::restart: return t.restart(t.transport(e.transport), false);
    case event_action::kill: return t.restart(t.transport(e.transport), true);
    case event_action::shutdown: return t.shut_down(t.transport(e.transport));
    case event_action::unregister: return t.unregister(t.region(e.region));
    case event_action::register_region: return t.register_again(t.region(e.region));
    case event_action::drop_connections: return t.drop_connections(e.transport, e.target);
    case event_action::add_fault: return t.add_fault(e.link, e.added.spec);
    case event_action::remove_fault: return t.remove_fault(e.link, e.fault_name, healed_);
    case event_action::arm:
      if (armed_.count(e.failpoint) != 0) disarm_and_count(e.failpoint);  // counts restart
      failpoint::arm(e.failpoint, e.failpoint_config);
      armed_.insert(e.failpoint);
      return {};
    case event_action::disarm: disarm_and_count(e.failpoint); return {};
  }
  return error{status::internal_error, "unknown event"};
}

void event_engine::disarm_and_count(const std::string& name) {
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

}  // namespace faultlane::sim
