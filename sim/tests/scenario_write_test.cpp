// The scenario writer against every file a user may hold: each valid test
// file and each file of the scenario library loads, is written by
// to_yaml(), loads back to the same scenario field by field, and writes
// the same text again (docs/scenarios.md, "Writing scenarios back"). And
// the form it writes: every value explicit, but for transport `config:`
// fields at their defaults.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "loader_support.hpp"
#include "scenario_compare.hpp"

namespace faultlane::sim {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> yaml_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".yaml" && !name.ends_with(".min.yaml")) {
      out.push_back(entry.path());
    }
  }
  return out;
}

// Rule: loading to_yaml(s) gives s again, and writing that gives the same
// text, for every valid test file and every scenario of the library.
TEST(scenario_write, every_valid_and_library_file_round_trips_to_a_fixed_point) {
  std::size_t files = 0;
  for (const fs::path& dir : {test_dir / "valid", test_dir / ".." / "scenarios"}) {
    for (const fs::path& path : yaml_files(dir)) {
      SCOPED_TRACE(path.string());
      auto s = load_scenario(path.string());
      ASSERT_TRUE(s.ok()) << s.error().message;
      const std::string text = to_yaml(s.value());
      auto back = parse_scenario(text, s.value().file);
      ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
      expect_same(s.value(), back.value());
      EXPECT_EQ(to_yaml(back.value()), text);
      ++files;
    }
  }
  EXPECT_GE(files, 30u);  // 4 valid files and the library's 29
}

scenario minimal_scenario() {
  auto s = parse_scenario(R"(
transports: [{name: a}, {name: b}]
regions: [{name: r, transport: b, size: 4096}]
links: [{initiator: a, target: b}]
workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 1}]
)",
                          "inline.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  return s.ok() ? std::move(s).value() : scenario{};
}

// Rule: the written form states every value, defaults included (a reader
// of NAME.min.yaml sees the whole scenario), except transport config.
TEST(scenario_write, every_value_is_written_even_at_its_default) {
  const std::string text = to_yaml(minimal_scenario());
  for (const char* line :
       {"name: inline\n",
        "\ntags: []\n",
        "\nseed: 1\n",
        "\ntimeout_ms: 120000\n",
        "  - {name: a, rails: 1, process: local}\n",
        "  - {name: r, transport: b, size: 4096, perm: remote_read_write, count: 1}\n",
        "  - name: a-b-r0\n",
        "    rail: 0\n",
        "    protocol: faultlane\n",
        "    tap: true\n",
        "    faults: []\n",
        "    ops: read\n",
        "    size: 1\n",
        "    count: 1\n",
        "    depth: 1\n",
        "    batch: 1\n",
        "    offsets: random\n",
        "    start_deadline_ms: 0\n",
        "    phase: fault\n",
        "    allow: [ok]\n",
        "events: []\n",
        "  - {name: fault, heal: false, liveness: false, deadline_ms: 10000, settle_ms: 0}\n",
        "  counts: {}\n",
        "  checkers: {}\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  }
  EXPECT_EQ(text.find("config:"), std::string::npos) << text;
  EXPECT_EQ(text.find("timing:"), std::string::npos) << text;  // written only when true
}

// Rule: a scenario with perturb, load, timing, each read/write mix and each
// size form loads back the same.
TEST(scenario_write, optional_sections_and_every_size_form_round_trip) {
  scenario s = minimal_scenario();
  s.timing = true;
  s.perturb = perturb_spec{.probability = 0.5, .max_us = 0};
  s.load = load_spec{.cost_us = 1, .hiccup_probability = 0, .hiccup_ms = 0};
  s.summary = "first line\n\nthird line";
  // Op mixes on either side of the plain `read` (1, 0) and `write` (0, 1).
  const std::pair<double, double> mixes[] = {{3, 1}, {1, 1}, {2, 0}, {0, 2}};
  std::size_t k = 0;
  for (const size_dist& size : {size_dist{.values = {7}}, size_dist{.values = {1, 4096, 4095}},
                                size_dist{.values = {}, .range = true, .lo = 1, .hi = 4096},
                                size_dist{.values = {}, .range = true, .lo = 9, .hi = 9}}) {
    s.streams[0].size = size;
    std::tie(s.streams[0].read_weight, s.streams[0].write_weight) = mixes[k++];
    const std::string text = to_yaml(s);
    auto back = parse_scenario(text, s.file);
    ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
    expect_same(s, back.value());
    EXPECT_EQ(back.value().streams[0].size, size) << text;
  }
}

// Rule: a stream or caller that runs for duration_ms is written with it
// (and without a count), and loads back as one.
TEST(scenario_write, a_duration_stream_is_written_with_its_duration) {
  scenario s = minimal_scenario();
  s.streams[0].count = 0;
  s.streams[0].duration_ms = 1;
  const std::string text = to_yaml(s);
  EXPECT_NE(text.find("    duration_ms: 1\n"), std::string::npos) << text;
  auto back = parse_scenario(text, s.file);
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  EXPECT_EQ(back.value().streams[0].count, 0u);
  EXPECT_EQ(back.value().streams[0].duration_ms, 1u);
}

// Rule: a quoted value (a checker's reason, a caller's pattern) is written
// so that it loads back as it was: quotes, backslashes, line breaks and
// other control characters included.
TEST(scenario_write, quoted_text_loads_back_byte_for_byte) {
  scenario s = load_ok("control.yaml");
  const std::string reason =
      "a \"b\" \\ c\td\x01"
      "e\nf";
  s.expect.checkers_off["bounds"] = reason;
  caller_spec lister = s.control.front();
  lister.name = "lister";
  lister.method = control_method::list_registrations;
  lister.pattern = "^r'\\d+\"$";
  s.control.push_back(lister);
  const std::string text = to_yaml(s);
  auto back = parse_scenario(text, s.file);
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  EXPECT_EQ(back.value().expect.checkers_off.at("bounds"), reason) << text;
  EXPECT_EQ(back.value().control.back().pattern, "^r'\\d+\"$") << text;
  EXPECT_NE(text.find("reason: \"a \\\"b\\\" \\\\ c\\x09d\\x01e\\nf\"}"), std::string::npos)
      << text;
}

}  // namespace
}  // namespace faultlane::sim
