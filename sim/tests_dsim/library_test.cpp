// Every library scenario on the world: it passes on its file's seed and
// seeds 1-3, or it is refused when it loads, for a reason docs/dsim.md
// lists ("What runs on the world").
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

TEST(sim_on_world, every_library_scenario_passes_on_the_world_or_is_refused_at_load) {
  std::vector<fs::path> files;
  for (const auto& e :
       fs::directory_iterator(std::string(FAULTLANE_SOURCE_DIR) + "/sim/scenarios")) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 20u);
  std::set<std::string> refused;
  std::size_t ran = 0;
  for (const auto& f : files) {
    auto s = load_scenario(f.string());
    if (!s) {
      EXPECT_NE(s.error().message.find("runs in the real-time build"), std::string::npos)
          << s.error().message;
      refused.insert(f.stem().string());
      continue;
    }
    for (std::uint64_t seed :
         {s.value().seed, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3}}) {
      run_options o;
      o.seed = seed;
      const auto r = run_scenario(s.value(), o);
      ++ran;
      EXPECT_TRUE(r.passed) << failure_text(r);
    }
  }
  // What docs/dsim.md says is refused, and nothing else.
  EXPECT_EQ(refused,
            (std::set<std::string>{"ping_while_inline_starved", "ping_while_pool_saturated"}));
  EXPECT_EQ(ran, (files.size() - refused.size()) * 4);
}

}  // namespace
}  // namespace faultlane::sim
