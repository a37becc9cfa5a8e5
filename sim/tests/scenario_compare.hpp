// Comparing two scenarios field by field (source marks aside), for the
// tests that write a scenario with to_yaml() and load it back: every field
// of scenario.hpp is compared here, so a field the writer drops fails them.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

// A fault's kind, every non-default key, its name and whether it is optional.
inline std::string fault_text(const link_fault& f) {
  return relays::describe(f.spec) + " name=" + f.spec.name + (f.optional ? " optional" : "");
}

inline void expect_same(const scenario& a, const scenario& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.summary, b.summary);
  EXPECT_EQ(a.tags, b.tags);
  EXPECT_EQ(a.seed, b.seed);
  EXPECT_EQ(a.timeout_ms, b.timeout_ms);
  EXPECT_EQ(a.perturb, b.perturb);
  EXPECT_EQ(a.load, b.load);
  EXPECT_EQ(a.needs_failpoints, b.needs_failpoints);
  EXPECT_EQ(a.transports, b.transports);  // compares the config, not the mark
  ASSERT_EQ(a.regions.size(), b.regions.size());
  for (std::size_t i = 0; i < a.regions.size(); ++i) {
    EXPECT_EQ(a.regions[i].name, b.regions[i].name);
    EXPECT_EQ(a.regions[i].transport, b.regions[i].transport);
    EXPECT_EQ(a.regions[i].size, b.regions[i].size);
    EXPECT_EQ(a.regions[i].perm, b.regions[i].perm);
    EXPECT_EQ(a.regions[i].count, b.regions[i].count);
  }
  EXPECT_EQ(a.timing, b.timing);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    const link_spec& x = a.links[i];
    const link_spec& y = b.links[i];
    EXPECT_EQ(std::tie(x.name, x.control, x.initiator, x.target, x.rail, x.proto, x.tap),
              std::tie(y.name, y.control, y.initiator, y.target, y.rail, y.proto, y.tap));
    ASSERT_EQ(x.faults.size(), y.faults.size());
    for (std::size_t f = 0; f < x.faults.size(); ++f) {
      EXPECT_EQ(fault_text(x.faults[f]), fault_text(y.faults[f]));
    }
  }
  ASSERT_EQ(a.streams.size(), b.streams.size());
  for (std::size_t i = 0; i < a.streams.size(); ++i) {
    const stream_spec& x = a.streams[i];
    const stream_spec& y = b.streams[i];
    EXPECT_EQ(
        std::tie(x.name, x.from, x.region, x.read_weight, x.write_weight, x.size, x.offsets,
                 x.count, x.duration_ms, x.depth, x.batch, x.start_deadline_ms, x.phase, x.allow),
        std::tie(y.name, y.from, y.region, y.read_weight, y.write_weight, y.size, y.offsets,
                 y.count, y.duration_ms, y.depth, y.batch, y.start_deadline_ms, y.phase, y.allow))
        << x.name;
  }
  ASSERT_EQ(a.control.size(), b.control.size());
  for (std::size_t i = 0; i < a.control.size(); ++i) {
    const caller_spec& x = a.control[i];
    const caller_spec& y = b.control[i];
    EXPECT_EQ(std::tie(x.name, x.target, x.method, x.pattern, x.link, x.clients, x.count,
                       x.duration_ms, x.interval_ms, x.call_timeout_ms, x.phase, x.allow),
              std::tie(y.name, y.target, y.method, y.pattern, y.link, y.clients, y.count,
                       y.duration_ms, y.interval_ms, y.call_timeout_ms, y.phase, y.allow))
        << x.name;
  }
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const event_spec& x = a.events[i];
    const event_spec& y = b.events[i];
    EXPECT_EQ(
        std::tie(x.when, x.stream, x.ops, x.fault, x.times, x.phase, x.caller, x.calls, x.action,
                 x.transport, x.target, x.region, x.link, x.fault_name, x.failpoint),
        std::tie(y.when, y.stream, y.ops, y.fault, y.times, y.phase, y.caller, y.calls, y.action,
                 y.transport, y.target, y.region, y.link, y.fault_name, y.failpoint))
        << "event " << i;
    EXPECT_EQ(fault_text(x.added), fault_text(y.added));
    const failpoint::config& p = x.failpoint_config;
    const failpoint::config& q = y.failpoint_config;
    EXPECT_EQ(std::tie(p.act, p.error, p.delay_ms, p.count, p.probability, p.seed, p.only_key),
              std::tie(q.act, q.error, q.delay_ms, q.count, q.probability, q.seed, q.only_key));
    EXPECT_EQ(x.failpoint_optional, y.failpoint_optional) << "event " << i;
  }
  ASSERT_EQ(a.phases.size(), b.phases.size());
  for (std::size_t i = 0; i < a.phases.size(); ++i) {
    EXPECT_EQ(std::tie(a.phases[i].name, a.phases[i].heal, a.phases[i].liveness,
                       a.phases[i].deadline_ms, a.phases[i].settle_ms),
              std::tie(b.phases[i].name, b.phases[i].heal, b.phases[i].liveness,
                       b.phases[i].deadline_ms, b.phases[i].settle_ms));
  }
  EXPECT_EQ(a.expect.counts, b.expect.counts);
  EXPECT_EQ(a.expect.faults, b.expect.faults);
  EXPECT_EQ(a.expect.stats, b.expect.stats);
  EXPECT_EQ(a.expect.control, b.expect.control);
  EXPECT_EQ(a.expect.checkers_off, b.expect.checkers_off);
}

}  // namespace faultlane::sim
