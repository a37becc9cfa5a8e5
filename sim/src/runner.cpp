// runner: setup, phases, teardown and the verdict of one scenario run
// (runner.hpp). Streams are in workload.cpp, scenario events in events.cpp.
#include <csignal>

#include <fmt/format.h>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/hash.hpp"
#include "faultlane/core/limits.hpp"
#include "run_state.hpp"

namespace faultlane::sim {

bool failpoints_available() noexcept {
#if defined(FAULTLANE_FAILPOINTS_ENABLED)
  return true;
#else
  return false;
#endif
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FAULTLANE_SIM_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULTLANE_SIM_SANITIZED 1
#endif

bool timing_available() noexcept {
#if defined(__OPTIMIZE__) && !defined(FAULTLANE_SIM_SANITIZED)
  return true;
#else
  return false;
#endif
}

namespace {

std::uint64_t region_fill_seed(std::uint64_t seed, const region_spec& r, std::uint32_t inc) {
  return stable_hash(seed ^ stable_hash(r.transport + "/" + r.name) ^ stable_hash(inc + 1)) | 1;
}

std::string relay_name(const pair_slot& p, std::size_t rail) {
  return fmt::format("{}-{}-r{}", p.initiator, p.target, rail);
}

}  // namespace

scenario_run::scenario_run(const scenario& s, const run_options& o)
    : s_(s),
      o_(o),
      seed_(o.seed),
      rec_(o.record),
      fired_(s.events.size(), false),
      calls_ended_(s.control.size()) {
  for (const auto& r : s_.regions) regions_[r.name] = &r;
  phases_ = s_.phases;
  if (phases_.empty()) {
    phases_.push_back({"fault"});
    phases_.push_back({"heal", true});
    phases_.push_back({"liveness", false, true});
  }
}

scenario_run::~scenario_run() = default;

result<void> scenario_run::register_region(transport_slot& t, std::uint32_t inc,
                                           const region_spec& r, bool fresh) {
  const auto fill = fresh ? region_fill_seed(seed_, r, inc) : 0;
  const auto registered_seq = rec_.next_seq();
  auto id = t.p->register_region(r, fill);
  if (!id) return id.error();
  t.ids[r.name] = id.value();
  rec_.edit([&](history& h) {
    h.registrations.push_back(
        {t.spec->name, inc, r.name, id.value(), registered_seq, 0, fill, r.size});
  });
  return {};
}

result<void> scenario_run::start_transport(transport_slot& t, std::uint32_t index, bool fresh) {
  const auto start_seq = rec_.next_seq();
  if (auto r = t.p->start(index); !r) return r;
  t.ids.clear();
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

result<void> scenario_run::start_relay(relay_slot& slot, relays::relay_config c) {
  if (slot.link) {
    slot.name = slot.link->name;
    c.proto = slot.link->proto;
    c.tap = slot.link->tap && rec_.enabled();
  }
  c.name = slot.name;
  c.seed = stable_hash(seed_ ^ stable_hash(slot.name));
  auto r = relays::relay::start(c);
  if (!r) return error{r.code(), fmt::format("relay {}: {}", slot.name, r.error().message)};
  slot.r = std::move(r.value());
  slot.started_us = rec_.now_us();
  if (slot.link) {
    for (const auto& f : slot.link->faults) {
      slot.faults.emplace(f.spec.name, slot.r->add_fault(f.spec));
      fault_names_.insert(f.spec.name);
    }
  }
  return {};
}

// A relay for each control link, in front of its target's control plane.
result<void> scenario_run::start_control_relays() {
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
result<void> scenario_run::start_relays() {
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
void scenario_run::publish_descriptor(const std::string& target) {
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
// (open_segment("HOST:PORT"): a describe through the link).
result<void> scenario_run::open_segment(pair_slot& p) {
  auto& t = *transports_.at(p.initiator);
  auto seg = [&]() -> result<segment_id> {
    if (p.opened_by.empty()) return t.p->local()->open_segment(p.source);
    for (const auto& slot : control_relays_) {
      if (slot.name == p.opened_by) {
        return t.p->local()->open_segment(slot.r->listen_endpoint().str());
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

result<void> scenario_run::open_segments(const std::string& initiator) {
  for (auto& [key, p] : pairs_) {
    if (key.first != initiator) continue;
    if (auto r = open_segment(*p); !r) return r;
  }
  return {};
}

result<void> scenario_run::setup() {
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

void scenario_run::record_stats(transport_slot& t) {
  auto s = t.p->stats();
  if (!s) return;
  const auto seq = rec_.next_seq();
  rec_.edit([&](history& h) {
    h.stats.push_back({t.spec->name, t.incarnation.load(), seq, rec_.now_us(), s.value()});
  });
}

// Ends an incarnation: a graceful shutdown (recorded for the drained
// shutdown checker), or a SIGKILL.
void scenario_run::stop_transport(transport_slot& t, const std::string& reason, bool graceful) {
  if (!t.up) return;
  t.up = false;
  if (graceful) {
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

void scenario_run::report_progress(const std::string& phase) {
  if (!o_.on_progress) return;
  progress p;
  p.scenario = s_.name;
  p.phase = phase;
  p.ops_done = rec_.ops_done();
  for (const auto& [name, n] : planned_) p.ops_total += n;
  {
    std::lock_guard lock(events_mutex_);
    for (const auto& name : fault_names_) p.faults_fired += fault_fired(name);
  }
  p.elapsed_s = static_cast<double>(rec_.now_us()) / 1e6;
  o_.on_progress(p);
}

}  // namespace faultlane::sim
