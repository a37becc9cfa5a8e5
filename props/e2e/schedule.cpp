// A schedule as a scenario; see schedule.hpp.
#include "schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "faultlane/core/limits.hpp"

namespace faultlane::props {
namespace {

using relays::fault_kind;
using status_set = std::set<status>;

// Far above what a loaded two-core machine under ThreadSanitizer needs to
// move a 3 MiB op (the soak once saw a 600 ms deadline pass on a stream with
// no fault while a build ran beside it); each stall costs one of these.
constexpr std::uint32_t progress_timeout_ms = 2000;
constexpr std::uint64_t page_bytes = 4096;

// One READ of at least rails x slice_step_bytes is sliced; max_transfer_bytes
// sits just above the over-slice size so both fit in one region.
std::uint64_t max_transfer(std::size_t rails) {
  return rails * limits::slice_step_bytes + 64 * 1024;
}

std::uint64_t size_of(size_class c, std::size_t rails) {
  const std::uint64_t slice_at = rails * limits::slice_step_bytes;
  switch (c) {
    case size_class::one_byte: return 1;
    case size_class::page: return page_bytes;
    case size_class::under_slice: return slice_at - 1;
    case size_class::over_slice: return slice_at + 1;
    case size_class::max_transfer: return max_transfer(rails);
  }
  return 1;
}

const status_set broken_exchange{status::connection_failed, status::timeout,
                                 status::ambiguous_write, status::protocol_error,
                                 status::cancelled};

constexpr std::string_view up_fields[] = {
    "magic",           "version",       "opcode", "flags",    "request_id",
    "registration_id", "remote_offset", "length", "checksum", "reserved"};
constexpr std::string_view down_fields[] = {"magic",           "version",  "request_id", "status",
                                            "committed_bytes", "checksum", "reserved"};
constexpr status trigger_statuses[] = {status::ok, status::stale_registration,
                                       status::range_rejected};

// The direction the fault acts in: a status trigger acts on responses and
// refuse has none of its own; the counter name says the real one.
relays::direction effective_dir(const fault_draw& d) {
  using relays::fault_kind;
  if (d.kind == fault_kind::refuse) return relays::direction::up;
  // truncate fires at its own byte count (fault_of): no drawn trigger.
  const bool triggered = !slowing(d.kind) && d.kind != fault_kind::truncate;
  if (triggered && d.trigger == trigger_draw::status) return relays::direction::down;
  return d.dir;
}

std::string fault_name(const fault_draw& d, std::size_t index) {
  return fmt::format("f{}_{}_{}", index, relays::to_string(d.kind),
                     relays::to_string(effective_dir(d)));
}

relays::fault_spec fault_of(const fault_draw& d, std::size_t index) {
  relays::fault_spec f;
  f.kind = d.kind;
  f.dir = d.dir;
  f.name = fault_name(d, index);
  switch (d.kind) {
    case fault_kind::latency:
      f.ms = 1 + d.amount % 10;
      f.jitter_ms = f.ms / 2;
      break;
    case fault_kind::bandwidth: f.bytes_per_s = (16 + d.amount % 48) << 20; break;
    case fault_kind::slicer:
      f.size = (1 + d.amount % 64) * 1024;
      f.variation = f.size / 2;
      f.delay_us = d.amount % 20;
      break;
    case fault_kind::slow_close: f.ms = 1 + d.amount % 50; break;
    case fault_kind::truncate: f.bytes = d.at; break;
    case fault_kind::corrupt: {
      if (d.dir == relays::direction::up) {
        f.field = up_fields[d.field_pick % std::size(up_fields)];
      } else {
        f.field = down_fields[d.field_pick % std::size(down_fields)];
      }
      break;
    }
    default: break;
  }
  if (slowing(d.kind) || d.kind == fault_kind::truncate) return f;
  if (d.kind == fault_kind::refuse) {
    f.dir = relays::direction::up;
    f.when.count = 1 + d.count % 2;
    return f;
  }
  // Positional faults fire once per connection; the count bounds how many
  // connections a stall or blackhole costs a progress timeout.
  f.when.count = 1 + d.count % 3;
  switch (d.trigger) {
    case trigger_draw::first_byte: break;
    case trigger_draw::bytes: f.when.after_bytes = d.at; break;
    case trigger_draw::frame: f.when.frame = d.at % 8; break;
    case trigger_draw::header_byte:
      f.when.frame = d.at % 8;
      f.when.header_byte =
          1 + d.header_byte % (d.dir == relays::direction::up ? wire::request_frame_bytes - 1
                                                              : wire::response_frame_bytes - 1);
      break;
    case trigger_draw::opcode:
      f.when.opcode = d.on_write ? wire::opcode::write : wire::opcode::read;
      break;
    case trigger_draw::status:
      // A request carries no status: the trigger is a response's.
      f.dir = relays::direction::down;
      f.when.status = static_cast<std::uint16_t>(
          wire::wire_status_for(trigger_statuses[d.status_pick % std::size(trigger_statuses)]));
      break;
  }
  if (f.kind == fault_kind::corrupt && f.dir != d.dir) {
    f.field = down_fields[d.field_pick % std::size(down_fields)];
  }
  if ((f.kind == fault_kind::drop_frame || f.kind == fault_kind::corrupt) &&
      !f.when.needs_frame()) {
    f.when.frame = d.at % 8;  // a frame fault needs a frame to act on
  }
  return f;
}

std::string peer_name(std::size_t i) { return fmt::format("p{}", i); }
std::string region_name(std::size_t i) { return fmt::format("r{}", i); }
std::string stream_name(std::size_t i) { return fmt::format("s{}", i); }

stream_draw stream_of(const schedule& s, std::size_t peer) {
  if (peer < s.streams.size()) return s.streams[peer];
  return stream_draw{};
}

// What one peer's stream may end with, given everything aimed at it.
status_set allowed_statuses(const schedule& s, std::size_t peer, bool& may_throw) {
  status_set allow{status::ok};
  for (const auto& f : s.faults) {
    if (f.peer % s.peers == peer && !slowing(f.kind)) {
      allow.insert(broken_exchange.begin(), broken_exchange.end());
    }
  }
  for (const auto& e : s.events) {
    const bool here = e.peer % s.peers == peer;
    switch (e.kind) {
      case event_draw_kind::restart:
        if (here) allow.insert(broken_exchange.begin(), broken_exchange.end());
        if (here) allow.insert(status::stale_registration);
        break;
      case event_draw_kind::unregister:
        if (here) allow.insert(status::stale_registration);
        break;
      case event_draw_kind::drop_connections:
        if (here) allow.insert(broken_exchange.begin(), broken_exchange.end());
        break;
      case event_draw_kind::shutdown:  // the initiator: every stream
        allow.insert(broken_exchange.begin(), broken_exchange.end());
        allow.insert(status::shutting_down);
        break;
    }
  }
  for (const auto& d : s.failpoints) {
    const auto& fp = failpoint_menu[d.pick % failpoint_menu.size()];
    if (fp.act == failpoint::action::delay) continue;  // a few ms: nothing may fail
    allow.insert(broken_exchange.begin(), broken_exchange.end());
    if (fp.act == failpoint::action::return_error) allow.insert(fp.error);
    if (fp.act == failpoint::action::throw_exception) {
      may_throw = true;
      allow.insert({status::runtime_failed, status::shutting_down});
    }
  }
  if (!s.planted.empty()) {
    allow.insert(broken_exchange.begin(), broken_exchange.end());
    allow.insert(status::shutting_down);
  }
  return allow;
}

}  // namespace

// admission.release_extra is left out: it fails admission closed for the
// rest of the run on purpose (every later submit and the final shutdown
// report admission_underflow), which no liveness phase survives.
const std::vector<failpoint_choice> failpoint_menu = {
    {"server.before_read_payload", failpoint::action::return_error, status::range_rejected},
    // Not return_error: the body has landed there, so an error answer would
    // be a target lying about a WRITE it ran (the data checker says so).
    {"server.before_write_ack", failpoint::action::delay, status::internal_error, 5},
    {"client.after_request_sent", failpoint::action::return_error, status::connection_failed},
    {"client.on_response", failpoint::action::throw_exception},
    {"server.on_accept", failpoint::action::throw_exception},
    {"server.on_header", failpoint::action::delay, status::internal_error, 5},
    {"server.on_header", failpoint::action::throw_exception},
    {"session.on_deadline", failpoint::action::throw_exception},
    {"lane.enqueue", failpoint::action::delay, status::internal_error, 2},
    {"lane.enqueue", failpoint::action::throw_exception},
    {"lane.cancel_task", failpoint::action::throw_exception},
    // Not lane.probe_finished: its throw once stranded a lane's queued work
    // until timeout_ms (props/e2e/found/, docs/properties.md "Limits"); it
    // comes back with the fix.
    {"lane.on_deadline", failpoint::action::throw_exception},
    {"lane.set_non_blocking", failpoint::action::return_error, status::connection_failed},
    {"submit.before_slice", failpoint::action::delay, status::internal_error, 1},
};

std::string_view to_string(trigger_draw t) noexcept {
  switch (t) {
    case trigger_draw::first_byte: return "first_byte";
    case trigger_draw::bytes: return "after_bytes";
    case trigger_draw::frame: return "frame";
    case trigger_draw::header_byte: return "header_byte";
    case trigger_draw::opcode: return "opcode";
    case trigger_draw::status: return "status";
  }
  return "unknown";
}

bool slowing(relays::fault_kind k) noexcept {
  const auto c = relays::traits(k).category;
  return c == relays::fault_class::rate_shaping || c == relays::fault_class::close;
}

std::size_t fault_count(const schedule& s) noexcept {
  return s.faults.size() + s.failpoints.size() + s.events.size();
}

namespace {

sim::transport_spec transport_of(const schedule& s, const std::string& name) {
  sim::transport_spec t;
  t.name = name;
  t.rails = s.rails;
  t.config.worker_count = s.workers;
  t.config.connections_per_peer = std::max(s.lanes, s.rails);  // a lane per rail at least
  t.config.lane_inflight_max = s.lane_inflight;
  t.config.max_transfer_bytes = max_transfer(s.rails);
  t.config.progress_timeout_ms = progress_timeout_ms;
  // A loopback connect is refused or made at once; the bound only has to
  // outlast an io thread starved on a loaded machine (a CI run once saw a
  // liveness connect pass 1 s there).
  t.config.connect_timeout_ms = 5000;
  t.config.reconnect_cooldown_ms = 20;
  t.config.shutdown_timeout_ms = 3000;
  return t;
}

sim::event_spec at_ops(const schedule& s, const event_draw& d) {
  sim::event_spec e;
  const auto peer = d.peer % s.peers;
  e.when = sim::trigger_kind::stream_ops;
  e.stream = stream_name(peer);
  e.ops = 1 + d.at_op % std::max<std::uint64_t>(stream_of(s, peer).count, 1);
  if (d.on_fault && !s.faults.empty()) {
    const auto i = d.fault % s.faults.size();
    e.when = sim::trigger_kind::fault_fired;
    e.stream.clear();
    e.ops = 0;
    e.fault = fault_name(s.faults[i], i);
    e.times = 1;
  }
  return e;
}

void add_events(const schedule& s, sim::scenario& sc) {
  std::set<std::size_t> unregistered;  // one unregister per region: a second fails the run
  for (const auto& d : s.events) {
    const auto peer = d.peer % s.peers;
    if (d.kind == event_draw_kind::unregister && !unregistered.insert(peer).second) continue;
    auto e = at_ops(s, d);
    switch (d.kind) {
      case event_draw_kind::restart:
        e.action = sim::event_action::restart;
        e.transport = peer_name(peer);
        break;
      case event_draw_kind::unregister: {
        e.action = sim::event_action::unregister;
        e.region = region_name(peer);
        sc.events.push_back(e);
        // Registered again `gap` ops later, or when the fault phase ends.
        const auto count = std::max<std::uint64_t>(stream_of(s, peer).count, 1);
        e.action = sim::event_action::register_region;
        if (e.when == sim::trigger_kind::stream_ops && e.ops + d.gap < count) {
          e.ops += d.gap;
        } else {
          e.when = sim::trigger_kind::phase_end;
          e.stream.clear();
          e.ops = 0;
          e.fault.clear();
          e.phase = "fault";
        }
        break;
      }
      case event_draw_kind::drop_connections:
        e.action = sim::event_action::drop_connections;
        e.transport = "client";
        e.target = peer_name(peer);
        break;
      case event_draw_kind::shutdown:
        e.action = sim::event_action::shutdown;
        e.transport = "client";
        break;
    }
    sc.events.push_back(e);
  }
  auto arm = [&](std::string_view name, failpoint::config cfg, bool optional) {
    sim::event_spec e;
    e.when = sim::trigger_kind::phase_start;
    e.phase = "fault";
    e.action = sim::event_action::arm;
    e.failpoint = std::string(name);
    e.failpoint_config = cfg;
    e.failpoint_optional = optional;
    sc.events.push_back(e);
    sc.needs_failpoints = true;
  };
  for (const auto& d : s.failpoints) {
    const auto& fp = failpoint_menu[d.pick % failpoint_menu.size()];
    failpoint::config cfg;
    cfg.act = fp.act;
    if (fp.act == failpoint::action::return_error) cfg.error = fp.error;
    cfg.delay_ms = fp.delay_ms;
    cfg.count = 1 + d.count % 2;
    arm(fp.name, cfg, true);
  }
  if (!s.planted.empty()) {
    failpoint::config cfg;
    cfg.act = failpoint::action::return_error;
    cfg.count = 1;  // once shows it; a replay on every reconnect would loop until timeout_ms
    arm(s.planted, cfg, true);
  }
}

sim::stream_spec stream_spec_of(const schedule& s, std::size_t peer, bool& may_throw) {
  const auto d = stream_of(s, peer);
  sim::stream_spec st;
  st.name = stream_name(peer);
  st.from = "client";
  st.region = region_name(peer);
  st.read_weight = d.read_percent;
  st.write_weight = 100 - std::min<std::uint32_t>(d.read_percent, 100);
  for (auto c : d.sizes) st.size.values.push_back(size_of(c, s.rails));
  if (st.size.values.empty()) st.size.values.push_back(page_bytes);
  st.count = std::max<std::uint64_t>(d.count, 1);
  st.depth = std::max<std::size_t>(d.depth, 1);
  st.batch = std::clamp<std::size_t>(d.batch, 1, st.depth);
  st.phase = "fault";
  auto allow = allowed_statuses(s, peer, may_throw);
  st.allow.assign(allow.begin(), allow.end());
  return st;
}

}  // namespace

sim::scenario to_scenario(const schedule& s, const std::string& name) {
  sim::scenario sc;
  sc.name = name;
  sc.file = name + ".yaml";
  sc.summary = fmt::format(
      "Generated by the end-to-end properties (props/e2e): {} peer(s), {} rail(s), {} lane(s)\n"
      "of {} exchange(s) in flight, {} relay fault(s), {} failpoint(s), {} event(s).",
      s.peers, s.rails, s.lanes, s.lane_inflight, s.faults.size(), s.failpoints.size(),
      s.events.size());
  sc.tags = {"generated"};
  sc.seed = s.seed;
  sc.timeout_ms = 90000;
  sc.perturb = s.perturb;
  sc.transports.push_back(transport_of(s, "client"));
  for (std::size_t p = 0; p < s.peers; ++p) {
    sc.transports.push_back(transport_of(s, peer_name(p)));
    // Room for a whole-size op beside any one ambiguous WRITE, whose range
    // stays taken until the phase ends.
    sc.regions.push_back(
        {.name = region_name(p), .transport = peer_name(p), .size = 3 * max_transfer(s.rails)});
    for (std::size_t r = 0; r < s.rails; ++r) {
      sim::link_spec l;
      l.name = fmt::format("client-{}-r{}", peer_name(p), r);
      l.initiator = "client";
      l.target = peer_name(p);
      l.rail = r;
      sc.links.push_back(std::move(l));
    }
  }
  for (std::size_t i = 0; i < s.faults.size(); ++i) {
    const auto& d = s.faults[i];
    auto& link = sc.links[(d.peer % s.peers) * s.rails + d.rail % s.rails];
    link.faults.push_back({.spec = fault_of(d, i), .optional = true});
  }
  bool may_throw = false;
  for (std::size_t p = 0; p < s.peers; ++p) sc.streams.push_back(stream_spec_of(s, p, may_throw));
  add_events(s, sc);
  const bool shut = std::any_of(s.events.begin(), s.events.end(), [](const event_draw& e) {
    return e.kind == event_draw_kind::shutdown;
  });
  sc.phases.push_back({.name = "fault"});
  // The settle outlasts the reconnect cooldown a refused or failed connect
  // started: during it new work fails fast, by design, not for liveness.
  sc.phases.push_back({.name = "heal", .heal = true, .settle_ms = 200});
  if (!shut && !may_throw && s.planted.empty()) {
    sc.phases.push_back({.name = "live", .liveness = true, .deadline_ms = 20000});
    for (std::size_t p = 0; p < s.peers; ++p) {
      sim::stream_spec live;
      live.name = fmt::format("live{}", p);
      live.from = "client";
      live.region = region_name(p);
      live.read_weight = 1;
      live.write_weight = 1;
      live.size.values = {1, page_bytes, size_of(size_class::over_slice, s.rails)};
      live.count = 4;
      live.phase = "live";
      sc.streams.push_back(std::move(live));
    }
  }
  return sc;
}

void showValue(const schedule& s, std::ostream& os) {
  os << "\n" << sim::to_yaml(to_scenario(s, "shown"));
}

}  // namespace faultlane::props
