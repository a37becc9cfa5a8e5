// run_topology: the transports, relays and segments of a scenario run, and
// the changes events make to them; see run_topology.hpp.
#include "runner/run_topology.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/hash.hpp"
#include "faultlane/control/control_plane.hpp"

namespace faultlane::sim {
namespace {

std::uint64_t region_fill_seed(std::uint64_t seed, const region_spec& r, std::uint32_t inc) {
  return stable_hash(seed ^ stable_hash(r.transport + "/" + r.name) ^ stable_hash(inc + 1)) | 1;
}

// How often quiesce_links looks at a target's leases.
constexpr auto leases_poll_interval = std::chrono::milliseconds(5);
// How long quiesce_links lets the resets it sent travel: fifty times the
// simulated network's largest one-way latency (dsim::network_options).
constexpr auto resets_in_flight_max = std::chrono::milliseconds(10);

std::string relay_name(const pair_slot& p, std::size_t rail) {
  return fmt::format("{}-{}-r{}", p.initiator, p.target, rail);
}

}  // namespace

run_topology::run_topology(const scenario& s, const run_options& o, recorder& rec)
    : s_(s), o_(o), rec_(rec) {
  for (const auto& r : s_.regions) regions_[r.name] = &r;
}

registration_id run_topology::current_id(transport_slot& t, const std::string& region) {
  std::lock_guard lock(ids_mutex_);
  return t.ids[region];
}

const relay_slot* run_topology::control_relay(const std::string& link) const {
  for (const auto& slot : control_relays_) {
    if (slot.name == link) return &slot;
  }
  return nullptr;
}

result<void> run_topology::register_region(transport_slot& t, std::uint32_t inc,
                                           const region_spec& r, bool fresh) {
  const auto fill = fresh ? region_fill_seed(o_.seed, r, inc) : 0;
  const auto registered_seq = rec_.next_seq();
  auto id = t.p->register_region(r, fill);
  if (!id) return id.error();
  {
    std::lock_guard lock(ids_mutex_);
    t.ids[r.name] = id.value();
  }
  rec_.edit([&](history& h) {
    h.registrations.push_back(
        {t.spec->name, inc, r.name, id.value(), registered_seq, 0, fill, r.size});
  });
  return {};
}

result<void> run_topology::start_transport(transport_slot& t, std::uint32_t index, bool fresh) {
  const auto start_seq = rec_.next_seq();
  if (auto r = t.p->start(index); !r) return r;
  {
    std::lock_guard lock(ids_mutex_);
    t.ids.clear();
  }
  for (const auto& r : s_.regions) {
    if (r.transport != t.spec->name) continue;
    // A counted region is for the control plane: no stream reads it, so it
    // has no fill, no recorded ids and no final bytes.
    auto ok = r.count > 1 ? t.p->register_counted(r) : register_region(t, index, r, fresh);
    if (!ok) return ok;
  }
  // Streams stamp their ops with this (under the initiator's lock, not the
  // target's): stamped before its regions were recorded, an op submitted in
  // the start's window named an incarnation the data checker had no model
  // of yet, and its WRITE went untracked. Until here they name the last
  // one, and the checker counts them as outliving it.
  t.incarnation = index;
  incarnation_record rec;
  rec.transport = t.spec->name;
  rec.index = index;
  rec.incarnation = t.p->descriptor().incarnation;
  rec.child = t.spec->process == process_kind::child;
  rec.start_seq = start_seq;
  rec.start_us = rec_.now_us();
  rec.rails = t.spec->rails;
  rec.max_outstanding_tasks = t.spec->config.max_outstanding_tasks;
  rec.max_outstanding_bytes = t.spec->config.max_outstanding_bytes;
  rec.max_connections = t.spec->config.max_connections;
  rec.shutdown_timeout_ms = t.spec->config.shutdown_timeout_ms;
  rec_.edit([&](history& h) { h.incarnations.push_back(rec); });
  return {};
}

result<void> run_topology::start_relay(relay_slot& slot, relays::relay_config c) {
  if (slot.link) {
    slot.name = slot.link->name;
    c.proto = slot.link->proto;
    c.tap = slot.link->tap && rec_.enabled();
  }
  c.name = slot.name;
  c.seed = stable_hash(o_.seed ^ stable_hash(slot.name));
  auto r = relays::relay::start(c);
  if (!r) return error{r.code(), fmt::format("relay {}: {}", slot.name, r.error().message)};
  slot.r = std::move(r.value());
  slot.started_us = rec_.now_us();
  if (slot.link) {
    std::lock_guard lock(faults_mutex_);
    for (const auto& f : slot.link->faults) {
      slot.faults.emplace(f.spec.name, slot.r->add_fault(f.spec));
      fault_names_.insert(f.spec.name);
    }
  }
  return {};
}

// A relay for each control link, in front of its target's control plane.
result<void> run_topology::start_control_relays() {
  for (const auto& l : s_.links) {
    if (!l.control) continue;
    relay_slot slot;
    slot.link = &l;
    slot.initiator = l.initiator;
    slot.target = l.target;
    auto at = transports_.at(l.target)->p->control_endpoint();
    if (!at) return error{at.code(), fmt::format("link {}: {}", l.name, at.error().message)};
    relays::relay_config c;
    c.listen = {"127.0.0.1", 0};
    c.upstream = at.value();
    c.upstream_source = "127.0.0.1";
    if (auto r = start_relay(slot, c); !r) return r;
    control_relays_.push_back(std::move(slot));
  }
  return {};
}

// Every (initiator, target) pair a stream uses gets a relay per rail.
result<void> run_topology::start_relays() {
  for (const auto& st : s_.streams) {
    const auto& target = regions_.at(st.region)->transport;
    auto key = std::make_pair(st.from, target);
    if (pairs_.count(key)) continue;
    auto p = std::make_unique<pair_slot>();
    p->initiator = st.from;
    p->target = target;
    for (const auto& l : s_.links) {
      if (l.control && l.initiator == p->initiator && l.target == p->target) p->opened_by = l.name;
    }
    // Opened by address, the initiator's lanes go straight to the target.
    const auto rails = p->opened_by.empty() ? transports_.at(st.from)->spec->rails : 0;
    for (std::size_t rail = 0; rail < rails; ++rail) {
      relay_slot slot;
      slot.rail = rail;
      slot.name = relay_name(*p, rail);
      slot.initiator = p->initiator;
      slot.target = p->target;
      relays::relay_config c;
      for (const auto& l : s_.links) {
        if (l.initiator == p->initiator && l.target == p->target && l.rail == rail) slot.link = &l;
      }
      const auto host = fmt::format("127.0.0.{}", rail + 1);
      c.listen = {host, 0};
      c.upstream = transports_.at(target)->p->descriptor().endpoints.at(rail);
      c.upstream_source = host;
      c.rail = rail;
      if (auto r = start_relay(slot, c); !r) return r;
      p->rails.push_back(std::move(slot));
    }
    pairs_[key] = std::move(p);
  }
  return {};
}

// The target's current descriptor, with its endpoints swapped for the
// relays, to every initiator that reaches it.
void run_topology::publish_descriptor(const std::string& target) {
  auto& t = *transports_.at(target);
  if (!t.p->running()) return;
  const auto d = t.p->descriptor();
  for (auto& [key, p] : pairs_) {
    if (key.second != target) continue;
    auto seen = d;
    for (auto& rail : p->rails) seen.endpoints.at(rail.rail) = rail.r->listen_endpoint();
    // The new ids first: a stale answer from the new incarnation, through a
    // relay already pointed at it, must refresh to them, not to the old ids
    // (which would end the op stale_registration for good).
    p->source->set(std::move(seen));
    for (auto& rail : p->rails) (void)rail.r->set_upstream(d.endpoints.at(rail.rail));
  }
  // A control link follows its target to each new incarnation's endpoint.
  for (auto& slot : control_relays_) {
    if (slot.link->target != target) continue;
    if (auto at = t.p->control_endpoint()) (void)slot.r->set_upstream(at.value());
  }
}

// By the runner's descriptor source, or by a control link's address
// (control::open_segment to "HOST:PORT": a describe through the link).
result<void> run_topology::open_segment(pair_slot& p) {
  auto& t = *transports_.at(p.initiator);
  auto seg = [&]() -> result<segment_id> {
    if (p.opened_by.empty()) return t.p->local()->open_segment(p.source);
    for (const auto& slot : control_relays_) {
      if (slot.name == p.opened_by) {
        return control::open_segment(*t.p->local(), slot.r->listen_endpoint().str());
      }
    }
    return error{status::invalid_argument, "no control link " + p.opened_by};
  }();
  if (!seg) {
    return error{seg.code(),
                 fmt::format("{} cannot open {}: {}", p.initiator, p.target, seg.error().message)};
  }
  p.segment = seg.value();
  return {};
}

result<void> run_topology::open_segments(const std::string& initiator) {
  for (auto& [key, p] : pairs_) {
    if (key.first != initiator) continue;
    if (auto r = open_segment(*p); !r) return r;
  }
  return {};
}

result<void> run_topology::setup() {
  std::uint32_t node = 0;
  for (const auto& spec : s_.transports) {
    auto slot = std::make_unique<transport_slot>();
    slot->spec = &spec;
    ++node;
    if constexpr (threads::simulated) {
      // On the world every transport is in this process, on a node of its
      // own; a child's SIGKILL is a crash of that node (local_peer::kill).
      slot->p = make_local_peer(spec, rec_, {}, node);
    } else {
      slot->p = spec.process == process_kind::child ? make_child_peer(spec, rec_, o_.child_program)
                                                    : make_local_peer(spec, rec_);
    }
    if (auto r = start_transport(*slot, 0, true); !r) {
      return error{r.code(), fmt::format("transport {}: {}", spec.name, r.error().message)};
    }
    transports_[spec.name] = std::move(slot);
  }
  if (auto r = start_relays(); !r) return r;
  if (auto r = start_control_relays(); !r) return r;
  for (const auto& [name, t] : transports_) publish_descriptor(name);
  for (const auto& [name, t] : transports_) {
    if (t->p->local() == nullptr) continue;
    if (auto r = open_segments(name); !r) return r;
  }
  for (auto& [name, t] : transports_) t->up = true;
  return {};
}

void run_topology::record_stats(transport_slot& t) {
  auto s = t.p->stats();
  if (!s) return;
  const auto seq = rec_.next_seq();
  rec_.edit([&](history& h) {
    h.stats.push_back({t.spec->name, t.incarnation.load(), seq, rec_.now_us(), s.value()});
  });
}

// A graceful shutdown of the incarnation, recorded for the drained
// shutdown checker. The transport stays up (its streams may still call
// submit) until stop_transport.
void run_topology::shut_down_recorded(transport_slot& t) {
  FL_ASSERT(!t.shutdown_recorded);
  t.shutdown_recorded = true;
  shutdown_record sr;
  sr.transport = t.spec->name;
  sr.incarnation = t.incarnation;
  sr.bound_ms = t.spec->config.shutdown_timeout_ms;
  sr.start_seq = rec_.next_seq();
  sr.start_us = rec_.now_us();
  auto r = t.p->shutdown();
  sr.end_seq = rec_.next_seq();
  sr.end_us = rec_.now_us();
  if (!r) {
    sr.result = r.code();
    sr.message = r.error().message;
  }
  if (auto after = t.p->stats()) sr.after = after.value();
  rec_.edit([&](history& h) {
    h.shutdowns.push_back(sr);
    h.stats.push_back({sr.transport, sr.incarnation, sr.end_seq, sr.end_us, sr.after});
  });
}

// Ends an incarnation: a graceful shutdown (recorded, unless
// shut_down_recorded did that already), or a SIGKILL.
void run_topology::stop_transport(transport_slot& t, const std::string& reason, bool graceful) {
  if (!t.up) return;
  t.up = false;
  if (graceful && !t.shutdown_recorded) shut_down_recorded(t);
  t.shutdown_recorded = false;  // the next incarnation's own
  if (graceful) {
    t.p->stop();
  } else {
    t.p->kill();
  }
  const auto end_seq = rec_.next_seq();
  rec_.edit([&](history& h) {
    for (auto& inc : h.incarnations) {
      if (inc.transport == t.spec->name && inc.index == t.incarnation && inc.end_seq == 0) {
        inc.end_seq = end_seq;
        inc.end_us = rec_.now_us();
        inc.end_reason = reason;
      }
    }
  });
}

std::uint64_t run_topology::fault_fired(const std::string& name) const {
  std::uint64_t n = 0;
  each_relay([&](const relay_slot& rail) { n += rail.r->counter(name); });
  return n;
}

std::set<std::string> run_topology::fault_names() const {
  std::lock_guard lock(faults_mutex_);
  return fault_names_;
}

std::uint64_t run_topology::faults_fired() const {
  std::uint64_t n = 0;
  for (const auto& name : fault_names()) n += fault_fired(name);
  return n;
}

void run_topology::record_stats_of_each_up() {
  for (auto& [name, t] : transports_) {
    std::shared_lock lock(t->lock);
    if (t->up) record_stats(*t);
  }
}

// An ambiguous WRITE may still land after its phase: its bytes held by a
// stall, queued in a slow relay, or half received by the target. Before its
// range goes to new work, every relayed connection is reset (dropping what
// relays hold) and every target's leases drain, so nothing old can write
// there any more. Bounded: a target that stays busy is noted, not waited for.
void run_topology::quiesce_links() {
  for (auto& [key, p] : pairs_) {
    for (auto& rail : p->rails) (void)rail.r->reset_connections(std::chrono::seconds(2));
  }
  // The resets are on their way to the initiators: a lane that takes its
  // next op before its reset arrives sends it into the reset (a WRITE then
  // ends ambiguous), and the next phase may be a liveness phase. Loopback
  // delivers a reset at once; the simulated network after its latency.
  threads::sleep_for(resets_in_flight_max);  // sleep-ok: a bound of the network, not a race
  const auto until = threads::clock::now() + std::chrono::seconds(5);
  for (auto& [name, t] : transports_) {
    std::shared_lock lock(t->lock);
    while (t->up) {
      auto st = t->p->stats();
      if (!st || st.value().leases_live == 0) break;
      if (threads::clock::now() >= until) {
        rec_.add_mark("note", name + " still holds leases 5 s after its links were reset");
        break;
      }
      threads::sleep_for(leases_poll_interval);  // sleep-ok: polling a child's stats
    }
  }
  rec_.add_mark("event", "ambiguous WRITE ranges freed: every relayed connection reset");
}

// Each region's bytes (its target's last incarnation), once every stream has
// ended: what the data checker compares with its model.
void run_topology::read_finals() {
  if (!rec_.enabled()) return;
  for (const auto& r : s_.regions) {
    auto slot = transports_.find(r.transport);
    if (slot == transports_.end()) continue;  // setup failed before it
    auto& t = *slot->second;
    const auto id = current_id(t, r.name);
    if (!t.up || id == 0) continue;
    // A WRITE may still be landing (its bytes were in a relay);
    // unregistering waits for its lease, so nothing writes into the
    // region while it is read.
    (void)t.p->unregister_region(r.name, id);
    auto bytes = t.p->dump(r.name);
    if (!bytes) continue;
    const auto seq = rec_.next_seq();
    rec_.edit([&](history& h) {
      h.finals.push_back(
          {r.transport, t.incarnation.load(), r.name, seq, std::move(bytes.value())});
    });
  }
}

void run_topology::finish() {
  // Stats while everything is still up.
  for (auto& [name, t] : transports_) {
    if (t->up && rec_.enabled()) record_stats(*t);
  }
  // Every stream has ended, so no new work starts; a WRITE still landing is
  // waited for by the unregister in read_finals.
  read_finals();
  // Initiators first, so no new work reaches a target that is closing.
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& [slot_name, t] : transports_) {
      const auto& name = slot_name;
      const bool initiator =
          t->p->local() != nullptr && std::any_of(s_.streams.begin(), s_.streams.end(),
                                                  [&](const auto& st) { return st.from == name; });
      if (initiator != (pass == 0)) continue;
      std::unique_lock lock(t->lock);
      stop_transport(*t, "end of run", true);
    }
  }
  stop_relays();
}

// Each relay stops, and its counters, its faults' peak and its tap's
// records go into the history.
void run_topology::stop_relays() {
  each_relay([&](relay_slot& rail) {
    link_record lr;
    lr.name = rail.name;
    lr.initiator = rail.initiator;
    lr.target = rail.target;
    lr.rail = rail.rail;
    // A raw link's tap sees connections but no frames: nothing to check.
    lr.tapped = rail.r->config().tap && rail.r->config().proto == relays::protocol::faultlane;
    rail.r->stop();
    lr.counters = rail.r->counters();
    lr.active_faults_peak = rail.r->active_faults_peak();
    lr.active_faults_max = rail.r->config().active_faults_max;
    if (lr.tapped) {
      lr.tap = rail.r->taps().take_records();  // the relay has stopped
      for (auto& t : lr.tap) t.time_us += rail.started_us;
    }
    rec_.edit([&](history& h) { h.links.push_back(std::move(lr)); });
  });
}

}  // namespace faultlane::sim
