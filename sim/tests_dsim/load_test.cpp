// A scenario states the load it holds under (`load:`, docs/dsim.md
// "Load"), and the margin is tested both ways: under the stated load every
// seed passes; with hiccups past the client's progress deadline some seed
// fails, on the checker that guards the margin, and replays to the same
// digest. Before the load model, a margin was found on a loaded CI machine
// and answered by widening the deadline.
#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "../tests/program_run.hpp"
#include "faultlane/sim/runner.hpp"
#include "faultlane/sim/shrink.hpp"

namespace faultlane::sim {
namespace {

scenario library_scenario(const std::string& name) {
  auto s = load_scenario(std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios/" + name + ".yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? s.value() : scenario{};
}

struct margin_case {
  const char* name;
  // The checker a hiccup past the deadline trips first.
  const char* guard;
  friend void PrintTo(const margin_case& c, std::ostream* os) { *os << c.name; }
};

class sim_on_world_load : public testing::TestWithParam<margin_case> {};

TEST_P(sim_on_world_load, the_stated_load_passes_and_a_load_past_the_margin_fails_and_replays) {
  const auto stated = library_scenario(GetParam().name);
  ASSERT_TRUE(stated.load.has_value()) << "the file states no load";
  ASSERT_GT(stated.load->hiccup_ms, 0u);
  const auto deadline = stated.transports.front().config.progress_timeout_ms;
  ASSERT_LT(stated.load->hiccup_ms, deadline) << "the stated load leaves no margin";
  auto past = stated;
  past.load->hiccup_ms = deadline * 5 / 2;  // hiccups of 1.25 to 2.5 deadlines
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    run_options o;
    o.seed = seed;
    if (seed == 1) o.trace_events = 1u << 20;  // to see that the stated load did hiccup
    const auto r = run_scenario(stated, o);
    EXPECT_TRUE(r.passed) << "seed " << seed << " under the stated load\n" << failure_text(r);
    if (seed == 1) EXPECT_NE(r.trace.find(" hiccup "), std::string::npos) << "no hiccup came";
  }
  // Past the margin some seed must fail: the seeds run until one does (a
  // hiccup must land where an exchange waits on it, which a seed may miss).
  std::uint64_t failing = 0;
  for (std::uint64_t seed = 1; seed <= 40 && failing == 0; ++seed) {
    run_options o;
    o.seed = seed;
    const auto bad = run_scenario(past, o);
    if (!bad.passed) {
      failing = seed;
      EXPECT_EQ(first_failing_checker(bad), GetParam().guard) << failure_text(bad);
      EXPECT_EQ(run_scenario(past, o).digest, bad.digest) << "seed " << seed << " replayed";
    }
  }
  EXPECT_NE(failing, 0u) << "no seed of 1..40 felt hiccups past the deadline";
}

INSTANTIATE_TEST_SUITE_P(library, sim_on_world_load,
                         testing::Values(margin_case{"stalled_peer_healthy_peer", "liveness"},
                                         margin_case{"swarm", "liveness"}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace faultlane::sim
