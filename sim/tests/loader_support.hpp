// What the scenario loader's tests share: the directory of their files,
// loading one that must load, and checking a bound on both sides.
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

// A small file: transports a and b, region r of `region_size` on b, stream
// s from a with `stream_extra`, and `head` before it.
inline std::string with(const std::string& head, const std::string& region_size,
                        const std::string& stream_extra) {
  return head + "transports: [{name: a}, {name: b}]\n" +
         "regions: [{name: r, transport: b, size: " + region_size + "}]\n" +
         "workload: [{name: s, from: a, region: r, " +
         (stream_extra.find("ops:") == std::string::npos ? "ops: read, " : "") + stream_extra +
         "}]\n";
}

// `ok_text` loads, and `bad_text` fails with an error at `key`.
inline void expect_bound(const std::string& ok_text, const std::string& bad_text,
                         const std::string& key) {
  auto good = parse_scenario(ok_text, "bound.yaml");
  EXPECT_TRUE(good.ok()) << ok_text << "\n" << (good.ok() ? "" : good.error().message);
  auto bad = parse_scenario(bad_text, "bound.yaml");
  ASSERT_FALSE(bad.ok()) << bad_text;
  EXPECT_NE(bad.error().message.find(": " + key + ": "), std::string::npos) << bad.error().message;
}

}  // namespace faultlane::sim
