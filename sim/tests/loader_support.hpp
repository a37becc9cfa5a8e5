// What the scenario loader's tests share: the directory of their files,
// loading one that must load, checking a bound on both sides, texts that
// must load, and files that must fail at a key.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

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

// Each text loads.
inline void expect_each_loads(const std::vector<std::string>& texts) {
  for (const auto& text : texts) {
    auto s = parse_scenario(text, "loads.yaml");
    EXPECT_TRUE(s.ok()) << text << (s.ok() ? "" : s.error().message);
  }
}

// A file that must fail to load, at `key`, with `what` in its message
// (when not empty).
struct bad_value {
  bad_value(std::string t, std::string k, std::string w = {})
      : text(std::move(t)), key(std::move(k)), what(std::move(w)) {}
  std::string text;
  std::string key;
  std::string what;
};

// Each case fails to load, its error (a whole line) names its key, and the
// same key is in the error's place.
inline void expect_each_fails_at_its_key(const std::vector<bad_value>& cases) {
  for (const auto& c : cases) {
    SCOPED_TRACE(c.key + "\n" + c.text);
    auto s = parse_scenario(c.text, "reads.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, status::invalid_argument);
    ASSERT_TRUE(s.error().place.has_value()) << s.error().message;
    EXPECT_EQ(s.error().place->key, c.key) << s.error().message;
    EXPECT_NE(s.error().message.find(": " + c.key + ": "), std::string::npos) << s.error().message;
    EXPECT_NE(s.error().message.find(c.what), std::string::npos) << s.error().message;
  }
}

}  // namespace faultlane::sim
