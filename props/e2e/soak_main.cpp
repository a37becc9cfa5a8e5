// The soak (docs/properties.md): runs the four end-to-end properties in
// turn, each time with a fresh seed and the full generator size, for
// FAULTLANE_SOAK_S seconds (default 60), then prints the coverage table
// and every counterexample found. Exit status 1 if any property failed.
//
//   FAULTLANE_SOAK_S=1800 build/tsan/props/e2e_soak
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "properties.hpp"

int main() {
  using namespace faultlane::props;
  const char* env = std::getenv("FAULTLANE_SOAK_S");
  const long seconds = env != nullptr ? std::strtol(env, nullptr, 10) : 60;
  if (seconds <= 0) {
    std::cerr << "FAULTLANE_SOAK_S must be a positive number of seconds, got '" << env << "'\n";
    return 2;
  }
  const std::vector<property_spec> properties = {exactly_once_property(),
                                                 drained_shutdown_property(),
                                                 stale_rejection_property(), no_replay_property()};
  std::random_device entropy;
  std::mt19937_64 seeds((std::uint64_t{entropy()} << 32) | entropy());
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  std::vector<std::string> failures;
  std::size_t rounds = 0;
  while (std::chrono::steady_clock::now() < until) {
    for (auto p : properties) {
      p.seed = seeds();
      p.cases = 10;
      p.max_size = 100;
      p.name += "_soak" + std::to_string(rounds);  // one file per failure
      auto out = check_property(p);
      if (!out.passed) {
        failures.push_back(p.name + " seed " + std::to_string(*p.seed) + ": " + out.yaml_path);
      }
    }
    ++rounds;
  }
  std::cout << "\nsoak: " << seconds << " s, " << rounds << " round(s) of the four properties\n\n"
            << coverage_table(coverage_so_far());
  for (const auto& f : failures) std::cout << "FAILED " << f << "\n";
  return failures.empty() ? 0 : 1;
}
