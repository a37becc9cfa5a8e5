// What the reports of a run say, rule by rule (docs/scenarios.md, "Running
// scenarios"; docs/dsim.md for the deterministic fields), from the
// hand-made runs of report_fixtures.hpp: the lines a failure text has and
// has not, the thresholds in its counts and plurals, and the JSON fields of
// deterministic runs and control-plane callers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "faultlane/sim/report.hpp"
#include "report_fixtures.hpp"

namespace faultlane::sim {
namespace {

using namespace report_fixtures;

// Rule: the runner's notes (a stream that stopped early) are printed with
// the failure, one `note:` line each; event marks are not notes.
TEST(report_rules, failure_text_prints_each_note_and_no_other_mark) {
  const auto text = failure_text(failed_run());
  EXPECT_NE(text.find("\nnote: liveness \"check\"\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("restart server#0"), std::string::npos) << text;
}

// Rule: a checker's line counts its violations, "1 violation" and
// "N violations" above one.
TEST(report_rules, failure_text_counts_violations_in_singular_and_plural) {
  auto r = failed_run();
  r.checkers[1].violations.push_back(make_violation(3, "again"));
  const auto text = failure_text(r);
  EXPECT_NE(text.find("checker no_replay failed: 2 violations (3 checked)\n"), std::string::npos)
      << text;
}

// Rule: at most 10 violations are shown, then "... and N more": exactly 10
// shows all with no such line, 11 shows 10 and "1 more".
TEST(report_rules, failure_text_shows_ten_violations_on_either_side_of_the_cap) {
  for (std::uint64_t total : {10u, 11u}) {
    const auto r = failed_run_with(total);
    const auto text = failure_text(r);
    std::size_t shown = 0;
    for (const auto& line : lines_of(text)) shown += line.starts_with("  op ") ? 1 : 0;
    EXPECT_EQ(shown, 10u) << text;
    EXPECT_EQ(text.find("... and 0 more"), std::string::npos) << text;
    EXPECT_EQ(text.find("  ... and 1 more\n") != std::string::npos, total == 11) << text;
  }
}

// Rule: `counters:` lists an incarnation only where one of its shown
// counters is not zero.
TEST(report_rules, failure_text_has_no_counters_line_for_an_incarnation_of_zeros) {
  auto r = failed_run();
  auto h = std::make_shared<history>(*r.hist);
  stats_record quiet{"server", 0, 90, 900, {}};
  quiet.stats.tasks_submitted = 5;  // not a counter that says why ops fail
  h->stats = {quiet};
  r.hist = h;
  const auto text = failure_text(r);
  EXPECT_EQ(text.find("counters:"), std::string::npos) << text;
}

// Rule: the first line is "SCENARIO (FILE): VERDICT", without the
// parentheses when there is no file; the replay line only when there is
// one to replay.
TEST(report_rules, failure_text_leaves_out_an_empty_file_and_replay) {
  auto r = failed_run();
  r.file.clear();
  r.replay.clear();
  const auto text = failure_text(r);
  EXPECT_TRUE(text.starts_with("lost <ack> & 'replay': FAIL no_replay\n")) << text;
  EXPECT_EQ(text.find("replay:"), std::string::npos) << text;
  EXPECT_TRUE(text.ends_with("\nseed: 42\n")) << text;
}

// Rule: a run that did not pass with no failing checker and no error says
// so, rather than print nothing between the verdict and the seed.
TEST(report_rules, failure_text_says_when_no_checker_explains_the_failure) {
  auto r = passed_run("odd", 3);
  r.passed = false;
  const auto text = failure_text(r);
  EXPECT_EQ(text,
            "odd: FAIL\nno checker reported a violation, but the run did not pass\n"
            "seed: 3\n");
}

// Rule: the totals line counts errors in singular and plural, and only
// when there is one.
TEST(report_rules, summary_totals_count_errors_in_singular_and_plural) {
  EXPECT_EQ(lines_of(summary_table({error_run(), error_run()})).back(),
            "0 passed, 0 failed, 0 skipped, 2 errors");
  EXPECT_EQ(lines_of(summary_table({error_run()})).back(),
            "0 passed, 0 failed, 0 skipped, 1 error");
}

run_result deterministic_run(double virtual_seconds, double seconds) {
  auto r = passed_run("det", 11);
  r.deterministic = true;
  r.digest = 0x284a4e1641325;
  r.virtual_seconds = virtual_seconds;
  r.seconds = seconds;
  return r;
}

// Rule (docs/dsim.md): a deterministic run prints "NAME seed S: digest D
// (16 hex digits), virtual V s in W s wall (Rx)", R whole from 10x up and
// with one decimal below; a run that is not deterministic prints nothing.
TEST(report_rules, deterministic_line_rounds_the_ratio_by_its_size) {
  EXPECT_EQ(deterministic_text({deterministic_run(3.12, 0.06), passed_run("real", 1)}),
            "det seed 11: digest 000284a4e1641325, virtual 3.120 s in 0.060 s wall (52x)\n");
  EXPECT_EQ(deterministic_text({deterministic_run(10, 1)}),
            "det seed 11: digest 000284a4e1641325, virtual 10.000 s in 1.000 s wall (10x)\n");
  EXPECT_EQ(deterministic_text({deterministic_run(9.5, 1)}),
            "det seed 11: digest 000284a4e1641325, virtual 9.500 s in 1.000 s wall (9.5x)\n");
  EXPECT_EQ(deterministic_text({passed_run("real", 1)}), "");
}

// Rule (docs/dsim.md): --json adds digest (16 hex digits), virtual_time_ms
// and wall_time_ms to a deterministic run, and to no other.
TEST(report_rules, json_has_the_digest_and_times_of_a_deterministic_run_only) {
  auto doc = nlohmann::json::parse(to_json({deterministic_run(3, 0.5), passed_run("real", 1)}));
  const auto& det = doc["runs"][0];
  EXPECT_EQ(det["digest"], "000284a4e1641325");
  EXPECT_DOUBLE_EQ(det["virtual_time_ms"].get<double>(), 3000);
  EXPECT_DOUBLE_EQ(det["wall_time_ms"].get<double>(), 500);
  const auto& real = doc["runs"][1];
  for (const char* key : {"digest", "virtual_time_ms", "wall_time_ms"}) {
    EXPECT_FALSE(real.contains(key)) << key;
  }
}

// Rule: --json writes each caller under "callers", in file order, with
// every measure under its own name.
TEST(report_rules, json_writes_every_caller_measure_under_its_name) {
  auto r = passed_run("calls", 1);
  r.callers = {caller_summary{.name = "pinger",
                              .method = "ping",
                              .calls = 7,
                              .by_status = {{status::ok, 5}, {status::timeout, 2}},
                              .p50_us = 11,
                              .p99_us = 22,
                              .max_us = 33,
                              .incarnations = 2,
                              .listed = 4},
               caller_summary{.name = "second", .method = "stats"}};
  auto doc = nlohmann::json::parse(to_json({r}));
  const auto& callers = doc["runs"][0]["callers"];
  ASSERT_EQ(callers.size(), 2u);
  EXPECT_EQ(callers[0], nlohmann::json::parse(R"({"name": "pinger", "method": "ping",
    "calls": 7, "by_status": {"ok": 5, "timeout": 2}, "p50_us": 11, "p99_us": 22,
    "max_us": 33, "incarnations": 2, "listed": 4})"));
  EXPECT_EQ(callers[1]["name"], "second");
  EXPECT_EQ(doc["runs"][0]["checkers"][0]["checked"], 10u);
  EXPECT_EQ(doc["runs"][0]["checkers"][0]["passed"], true);
}

}  // namespace
}  // namespace faultlane::sim
