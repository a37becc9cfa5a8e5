// Every library scenario on the world, one test each: it passes on its
// file's seed and seeds 1-3, or it is refused when it loads, for a reason
// docs/dsim.md lists ("What runs on the world").
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "faultlane/sim/runner.hpp"

namespace faultlane::sim {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> library_files() {
  std::vector<std::string> files;
  for (const auto& e :
       fs::directory_iterator(std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// What docs/dsim.md says is refused at load, and nothing else.
const std::set<std::string> refused_on_the_world{"ping_while_inline_starved",
                                                 "ping_while_pool_saturated"};

TEST(sim_on_world, the_library_scenarios_refused_at_load_are_those_docs_dsim_lists) {
  const auto files = library_files();
  ASSERT_GE(files.size(), 20u);
  std::set<std::string> refused;
  for (const auto& f : files) {
    auto s = load_scenario(f);
    if (s) continue;
    EXPECT_NE(s.error().message.find("runs in the real-time build"), std::string::npos)
        << s.error().message;
    refused.insert(fs::path(f).stem().string());
  }
  EXPECT_EQ(refused, refused_on_the_world);
}

// One test per library file, so that a run (or a mutant, whose tests are
// those that reach its code) takes only the scenarios it needs.
class sim_on_world_library : public testing::TestWithParam<std::string> {};

TEST_P(sim_on_world_library, passes_on_its_seed_and_seeds_1_to_3) {
  auto s = load_scenario(GetParam());
  ASSERT_TRUE(s.ok()) << s.error().message;
  const std::uint64_t own = s.value().seed;
  for (std::uint64_t seed : {own, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}}) {
    run_options o;
    o.seed = seed;
    const auto r = run_scenario(s.value(), o);
    EXPECT_TRUE(r.passed) << "seed " << seed << ": " << failure_text(r);
  }
}

std::vector<std::string> runnable_files() {
  auto files = library_files();
  std::erase_if(files, [](const std::string& f) {
    return refused_on_the_world.count(fs::path(f).stem().string()) > 0;
  });
  return files;
}

INSTANTIATE_TEST_SUITE_P(file, sim_on_world_library, testing::ValuesIn(runnable_files()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return fs::path(info.param).stem().string();
                         });

}  // namespace
}  // namespace faultlane::sim
