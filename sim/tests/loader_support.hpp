// What the scenario loader's tests share: the directory of their files and
// loading one that must load.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

inline const std::filesystem::path test_dir = FAULTLANE_SIM_TEST_DIR;

inline scenario load_ok(const std::string& name) {
  auto s = load_scenario((test_dir / "valid" / name).string());
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
  return s.ok() ? std::move(s).value() : scenario{};
}

}  // namespace faultlane::sim
