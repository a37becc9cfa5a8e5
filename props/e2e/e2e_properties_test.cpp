// The end-to-end properties (docs/properties.md): generated fault schedules
// against the running core over real sockets, judged by the simulator's
// checkers. Each TEST is one ctest, so ctest -j runs them side by side.
#include <gtest/gtest.h>

#include "properties.hpp"

namespace faultlane::props {
namespace {

void holds(const property_spec& p) {
  auto out = check_property(p);
  EXPECT_TRUE(out.passed) << "counterexample: " << out.yaml_path << " (timeline "
                          << out.timeline_path << ")";
  EXPECT_GT(out.cases, 0u);
}

TEST(e2e, exactly_once) { holds(exactly_once_property()); }
TEST(e2e, drained_shutdown) { holds(drained_shutdown_property()); }
TEST(e2e, stale_rejection) { holds(stale_rejection_property()); }
TEST(e2e, no_replay) { holds(no_replay_property()); }

// Every kind of relays::fault_kinds, in either direction and with every
// drawn trigger, becomes a fault the relay accepts: a kind added to the
// table without the values it needs (fault_of) fails here.
TEST(e2e_schedule, every_fault_kind_draws_a_valid_fault) {
  for (const auto& kind : relays::fault_kinds) {
    for (auto dir : {relays::direction::up, relays::direction::down}) {
      for (std::size_t t = 0; t < trigger_draw_count; ++t) {
        schedule s;
        fault_draw d;
        d.kind = kind.kind;
        d.dir = dir;
        d.trigger = static_cast<trigger_draw>(t);
        s.faults.push_back(d);
        std::size_t faults = 0;
        for (const auto& link : to_scenario(s, "kinds").links) {
          for (const auto& f : link.faults) {
            auto valid = relays::validate(f.spec);
            EXPECT_TRUE(valid.ok()) << relays::describe(f.spec) << ": " << valid.error().message;
            EXPECT_EQ(f.spec.kind, kind.kind);
            ++faults;
          }
        }
        EXPECT_EQ(faults, 1u) << kind.name;
      }
    }
  }
}

}  // namespace
}  // namespace faultlane::props
