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

}  // namespace
}  // namespace faultlane::props
