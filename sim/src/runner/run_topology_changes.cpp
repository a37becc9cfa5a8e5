// run_topology, the changes events make: a restart or SIGKILL, a
// shutdown, a region unregistered or registered again, connections
// dropped, a fault added or removed (run_topology.hpp).
#include "runner/run_topology.hpp"

#include <fmt/format.h>

namespace faultlane::sim {

result<void> run_topology::restart(transport_slot& t, bool sigkill) {
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

result<void> run_topology::shut_down(transport_slot& t) {
  {
    // Its streams go on meanwhile, as a program's other threads do: what
    // they submit once the shutdown began is refused (shutting_down).
    std::shared_lock lock(t.lock);
    if (t.up) shut_down_recorded(t);
  }
  std::unique_lock lock(t.lock);
  stop_transport(t, "shutdown", true);
  t.shut_down = true;
  return {};
}

result<void> run_topology::unregister(const region_spec& region) {
  auto& t = *transports_.at(region.transport);
  const auto id = current_id(t, region.name);
  if (!t.up || id == 0) return error{status::invalid_argument, "not registered"};
  auto r = t.p->unregister_region(region.name, id);
  if (!r) return r;  // still registered: nothing changes
  const auto seq = rec_.next_seq();
  {
    std::lock_guard lock(ids_mutex_);
    t.ids[region.name] = 0;
  }
  rec_.edit([&](history& h) {
    for (auto& reg : h.registrations) {
      if (reg.id == id && reg.unregistered_seq == 0) reg.unregistered_seq = seq;
    }
  });
  publish_descriptor(region.transport);
  return r;
}

result<void> run_topology::register_again(const region_spec& region) {
  auto& t = *transports_.at(region.transport);
  if (!t.up) return error{status::shutting_down, "transport is down"};
  auto r = register_region(t, t.incarnation.load(), region, false);
  publish_descriptor(region.transport);
  return r;
}

result<void> run_topology::drop_connections(const std::string& initiator,
                                            const std::string& target) {
  auto& t = *transports_.at(initiator);
  auto it = pairs_.find({initiator, target});
  if (it == pairs_.end()) return error{status::invalid_argument, "no stream joins them"};
  std::shared_lock lock(t.lock);
  if (!t.up) return {};  // a shut-down initiator has no connections to drop
  t.p->local()->drop_connections(it->second->segment.load());
  return {};
}

relay_slot* run_topology::find_relay(const std::string& name) {
  relay_slot* found = nullptr;
  each_relay([&](relay_slot& rail) {
    if (rail.name == name) found = &rail;
  });
  return found;
}

result<void> run_topology::add_fault(const std::string& link, const relays::fault_spec& f) {
  relay_slot* rail = find_relay(link);
  if (rail == nullptr) {
    return error{status::invalid_argument,
                 "no link " + link + " (a data link needs a stream to relay)"};
  }
  std::lock_guard lock(faults_mutex_);
  rail->faults.emplace(f.name, rail->r->add_fault(f));
  fault_names_.insert(f.name);
  return {};
}

result<void> run_topology::remove_fault(const std::string& link, const std::string& name,
                                        bool healed) {
  relay_slot* rail = find_relay(link);
  if (rail == nullptr) {
    return error{status::invalid_argument,
                 "no link " + link + " (a data link needs a stream to relay)"};
  }
  std::lock_guard lock(faults_mutex_);
  auto [first, last] = rail->faults.equal_range(name);
  if (first == last && healed) return error{status::cancelled, "a heal already removed " + name};
  if (first == last) return error{status::invalid_argument, "no fault " + name};
  for (auto it = first; it != last; ++it) rail->r->remove_fault(it->second);
  rail->faults.erase(first, last);
  return {};
}

void run_topology::remove_every_fault() {
  std::lock_guard lock(faults_mutex_);
  each_relay([](relay_slot& rail) {
    for (const auto& [name, id] : rail.faults) rail.r->remove_fault(id);
    rail.faults.clear();
  });
}

}  // namespace faultlane::sim
