// What the simulated world cannot run is refused when the file loads, at
// the key's line, never run wrongly; the program's bad input ends with
// exit 2 before anything runs.
#include <gtest/gtest.h>

#include <string>

#include "../tests/program_run.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {
namespace {

constexpr const char* head = R"(transports:
  - {name: a}
  - {name: b}
regions:
  - {name: r, transport: b, size: 64KiB}
workload:
  - {name: s, from: a, region: r, ops: {read: 1, write: 1}, size: 4KiB, count: 4}
)";

std::string refusal(const std::string& text) {
  auto s = parse_scenario(text, "f.yaml");
  return s.ok() ? std::string("loaded") : s.error().message;
}

TEST(sim_on_world_refusal, a_timing_scenario_is_refused_at_its_timing_key) {
  const auto why = refusal(std::string("timing: true\n") + head);
  EXPECT_NE(why.find("f.yaml:1:9: timing:"), std::string::npos) << why;
  EXPECT_NE(why.find("real-time build"), std::string::npos) << why;
  EXPECT_EQ(refusal(std::string("timing: false\n") + head), "loaded");
}

TEST(sim_on_world_refusal, control_callers_are_refused_at_their_section) {
  const auto why = refusal(std::string(head) +
                           "control:\n  - {name: c, from: a, to: b, method: ping, count: 1}\n");
  EXPECT_NE(why.find("f.yaml:9:3: control:"), std::string::npos) << why;
  EXPECT_NE(why.find("control plane is not on the simulated world"), std::string::npos) << why;
}

TEST(sim_on_world_refusal, a_control_link_is_refused_at_its_flag) {
  const auto why = refusal(std::string(head) + "links:\n  - {target: b, control: true}\n");
  EXPECT_NE(why.find("links[0].control"), std::string::npos) << why;
  EXPECT_NE(why.find("f.yaml:9:"), std::string::npos) << why;
}

TEST(sim_on_world_refusal, a_trace_that_cannot_be_written_is_exit_2_before_any_run) {
  const auto scenario_path = test::write_temp("refusal.yaml", head);
  const auto out = test::run_program(
      {"run", "--deterministic", "--trace", "/nonexistent-faultlane-dir/t.txt", scenario_path});
  EXPECT_EQ(out.code, 2) << out.text;
  EXPECT_NE(out.text.find("cannot write /nonexistent-faultlane-dir/t.txt"), std::string::npos)
      << out.text;
  EXPECT_EQ(out.text.find("PASS"), std::string::npos) << out.text;  // nothing ran
}

TEST(sim_on_world_refusal, a_run_prints_its_digest_and_virtual_time) {
  const auto scenario_path = test::write_temp("digest.yaml", head);
  const auto trace = test::write_temp("digest-trace.txt", "");
  const auto out =
      test::run_program({"run", "--deterministic", "--trace", trace, scenario_path, "--seed", "3"});
  EXPECT_EQ(out.code, 0) << out.text;
  EXPECT_NE(out.text.find("digest seed 3: digest "), std::string::npos) << out.text;
  EXPECT_NE(out.text.find(" s wall ("), std::string::npos) << out.text;
  EXPECT_NE(test::read_file(trace).find(" step "), std::string::npos);
}

}  // namespace
}  // namespace faultlane::sim
