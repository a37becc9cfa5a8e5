// The `expect.checkers` keys the loader accepts are checker_table's names,
// no more: a checker added to the table can be turned off at once, and a
// misspelled one is an error. This binary links the loader without the
// checkers, which checker_names allows.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "faultlane/sim/checkers.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {
namespace {

result<scenario> turning_off(std::string_view checker) {
  std::string text = R"(transports: [{name: a}, {name: b}]
regions: [{name: r, transport: b, size: 4096}]
workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 10}]
expect:
  checkers:
    )";
  text += std::string(checker) + ": {run: false, reason: \"off in this test\"}\n";
  return parse_scenario(text, "inline.yaml");
}

TEST(ScenarioLoaderCheckers, EveryCheckerOfTheTableCanBeTurnedOff) {
  for (auto name : checker_names) {
    auto s = turning_off(name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.error().message;
    EXPECT_EQ(s.value().expect.checkers_off,
              (std::map<std::string, std::string>{{std::string(name), "off in this test"}}));
  }
}

TEST(ScenarioLoaderCheckers, ANameNotInTheTableIsAnError) {
  for (auto name : {"exactly_twice", "expectations", "Liveness"}) {
    auto s = turning_off(name);
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_NE(s.error().message.find("not a checker"), std::string::npos) << s.error().message;
  }
}

}  // namespace
}  // namespace faultlane::sim
