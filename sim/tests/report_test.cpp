// Tests of the terminal and CI reports: failure_text, summary_table, JSON
// and JUnit XML, from the hand-made runs of report_fixtures.hpp. Each test
// names the wrong line it would catch.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "faultlane/sim/report.hpp"
#include "report_fixtures.hpp"

namespace faultlane::sim {
namespace {

using namespace report_fixtures;

std::vector<run_result> four_runs() {
  auto long_name = passed_run(std::string(150, 'x') + "_tail", UINT64_MAX);
  return {failed_run(), long_name, skipped_run(), error_run()};
}

TEST(ReportTagChecker, CatchesWhatItMust) {
  EXPECT_EQ(check_balanced("<a><b x=\"1\">t &amp; u</b><br><c/></a>"), "");
  EXPECT_NE(check_balanced("<a><b></a></b>"), "");
  EXPECT_NE(check_balanced("<a>"), "");
  EXPECT_NE(check_balanced("<a x=1></a>"), "");
  EXPECT_NE(check_balanced("<a>x & y</a>"), "");
  EXPECT_NE(check_balanced("<a>x > y</a>"), "");
  EXPECT_NE(check_balanced("<a t=\"&\"></a>"), "");
}

// Catches a run outcome decided in the wrong order, or a verdict without
// the checker's name.
TEST(ReportVerdict, ErrorThenSkipThenPassed) {
  EXPECT_EQ(verdict(failed_run()), "FAIL no_replay");
  EXPECT_EQ(verdict(passed_run("a", 1)), "PASS");
  EXPECT_EQ(verdict(skipped_run()), "SKIP needs failpoints");
  auto r = error_run();
  r.skipped = true;
  EXPECT_EQ(outcome_of(r), run_outcome::error);
  EXPECT_EQ(verdict(r), "ERROR");
  EXPECT_EQ(faults_fired_total(failed_run()), 3u);
}

// Catches a missing seed or replay line, the wrong checker, ids left out.
TEST(ReportFailureText, NamesCheckerViolationSeedAndReplay) {
  auto text = failure_text(failed_run());
  EXPECT_TRUE(
      text.starts_with("lost <ack> & 'replay' (sim/scenarios/lost_ack.yaml): FAIL no_replay\n"))
      << text;
  EXPECT_NE(text.find("checker no_replay failed: 1 violation (3 checked)"), std::string::npos);
  EXPECT_NE(text.find("  op 2 (task 102, request 0xa2, server#0, seq 50): WRITE executed 2 times"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nseed: 42\n"), std::string::npos);
  EXPECT_NE(text.find("\nreplay: faultlane-sim run sim/scenarios/lost_ack.yaml --seed 42\n"),
            std::string::npos);
  EXPECT_EQ(text.find("exactly_once"), std::string::npos) << "a passing checker was blamed";
}

// Catches a failed count that does not say what the other ops became, a
// stream's outcomes mixed with another's, an unfinished or refused op left
// out, a counter read from an earlier snapshot than the latest (by seq, not
// by place in the list), incarnations merged, a counter under another's
// name, and zero counters listed.
TEST(ReportFailureText, SaysHowEachStreamsOpsEndedAndWhy) {
  auto r = failed_run();
  auto h = std::make_shared<history>(*r.hist);
  auto read = op_of(4, 104, status::connection_failed, 600);
  read.stream = "reads";
  h->ops.push_back(read);
  h->ops.push_back(op_of(5, 105, status::connection_failed, 0));  // not finished
  auto refused = op_of(6, 106, status::shutting_down, 0);
  refused.submit_failed = true;
  h->ops.push_back(refused);
  stats_record latest{"client", 0, 90, 900, {}};
  latest.stats.connect_failures = 2;
  latest.stats.stale_refreshes = 1;
  stats_record earlier{"client", 0, 10, 100, {}};  // listed after, but older
  earlier.stats.connect_failures = 9;
  stats_record restarted{"client", 1, 50, 500, {}};
  restarted.stats.server_rejects = 3;
  restarted.stats.sessions_timed_out = 4;
  h->stats = {latest, earlier, restarted};
  r.hist = h;
  auto text = failure_text(r);
  EXPECT_NE(text.find("\noutcomes: reads: connection_failed 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("\noutcomes: writes: ambiguous_write 1, not_completed 1, ok 2, "
                      "shutting_down 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\ncounters: client#0: connect_failures 2, stale_refreshes 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\ncounters: client#1: sessions_timed_out 4, server_rejects 3\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("timeouts"), std::string::npos) << text;
}

// Catches an off-by-one in the cap of 10 or a wrong "and N more".
TEST(ReportFailureText, ShowsTenViolationsThenHowManyMore) {
  auto r = failed_run();
  auto& violations = r.checkers[1].violations;
  for (std::uint64_t i = 3; i <= 14; ++i) violations.push_back(make_violation(i, "again"));
  r.checkers[0].violations.clear();
  r.checkers.push_back({"bounds", true, "", 1, {make_violation(1, "over")}});
  auto lines = lines_of(failure_text(r));
  std::size_t shown = 0;
  for (const auto& line : lines) shown += line.starts_with("  op ") ? 1 : 0;
  EXPECT_EQ(shown, 10u);
  auto text = failure_text(r);
  EXPECT_NE(text.find("  ... and 3 more\n"), std::string::npos) << text;
  EXPECT_NE(text.find("also failed: bounds (1)"), std::string::npos) << text;
}

// Catches text for a passing run, or an error run without its error.
TEST(ReportFailureText, EmptyWhenPassedOrSkippedErrorOtherwise) {
  EXPECT_EQ(failure_text(passed_run("a", 1)), "");
  EXPECT_EQ(failure_text(skipped_run()), "");
  auto text = failure_text(error_run());
  EXPECT_TRUE(text.starts_with("unreachable: ERROR\n")) << text;
  EXPECT_NE(text.find("child server#1 did not start"), std::string::npos);
  EXPECT_NE(text.find("seed: 9"), std::string::npos);
  EXPECT_NE(text.find("replay: faultlane-sim run unreachable.yaml --seed 9"), std::string::npos);
}

// Catches a row too wide for 100 columns, columns out of line, a wrong
// count in a cell or in the totals.
TEST(ReportSummaryTable, OneAlignedLinePerRunAndTotals) {
  auto runs = four_runs();
  auto lines = lines_of(summary_table(runs));
  ASSERT_EQ(lines.size(), 2 + runs.size() + 1) << summary_table(runs);
  for (const auto& line : lines) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_EQ(lines.back(), "1 passed, 1 failed, 1 skipped, 1 error");
  auto column = lines[0].find("verdict");
  EXPECT_EQ(lines[2].find("FAIL no_replay"), column) << lines[2];
  EXPECT_EQ(lines[3].find("PASS"), column) << lines[3];
  EXPECT_EQ(lines[4].find("SKIP needs failpoints"), column) << lines[4];
  EXPECT_EQ(lines[5].find("ERROR"), column) << lines[5];
  // ops done/total, faults fired, checkers passed/ran (liveness did not run)
  EXPECT_NE(lines[2].find(" 3/3 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find(" 1/2 "), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("  3  "), std::string::npos) << lines[2];
  EXPECT_TRUE(lines[2].ends_with("1.25")) << lines[2];
  EXPECT_NE(lines[3].find("18446744073709551615"), std::string::npos) << "seed shortened";
  EXPECT_NE(lines[3].find("..."), std::string::npos);
  EXPECT_NE(lines[3].find("_tail"), std::string::npos) << "shortened at the end, not the middle";
  // Shortened in the middle: the name's first and last characters stay.
  const auto cut =
      lines_of(summary_table({passed_run("head_" + std::string(150, 'x') + "_tail", 1)}));
  ASSERT_GE(cut.size(), 3u);
  EXPECT_TRUE(cut[2].starts_with("head_x")) << cut[2];
  EXPECT_NE(cut[2].find("x...x"), std::string::npos) << cut[2];
  EXPECT_NE(cut[2].find("x_tail "), std::string::npos) << cut[2];
  EXPECT_EQ(lines_of(summary_table({})).back(), "0 passed, 0 failed, 0 skipped");
}

// Catches widths counted in bytes: a name with two-byte characters would
// push its row's later columns out of line.
TEST(ReportSummaryTable, AlignsNamesWithMultibyteCharacters) {
  auto lines = lines_of(summary_table(
      {passed_run("\xc3\xbc\xc3\xbc\xc3\xbc\xc3\xbc_long_name", 1), passed_run("b", 2)}));
  ASSERT_EQ(lines.size(), 5u);
  // Four two-byte characters: four more bytes before the same column.
  EXPECT_EQ(lines[2].find("PASS"), lines[0].find("verdict") + 4) << lines[2];
  EXPECT_EQ(lines[3].find("PASS"), lines[0].find("verdict")) << lines[3];
}

// Catches a field left out or renamed, violations not carried, wrong
// counters, and hist leaking into the JSON.
TEST(ReportJson, ParsesBackWithEveryField) {
  auto doc = nlohmann::json::parse(to_json(four_runs()));
  ASSERT_EQ(doc["runs"].size(), 4u);
  const auto& run = doc["runs"][0];
  EXPECT_EQ(run["scenario"], "lost <ack> & 'replay'");
  EXPECT_EQ(run["file"], "sim/scenarios/lost_ack.yaml");
  EXPECT_EQ(run["seed"], 42u);
  EXPECT_EQ(run["passed"], false);
  EXPECT_EQ(run["outcome"], "failed");
  EXPECT_EQ(run["verdict"], "FAIL no_replay");
  EXPECT_EQ(run["ops_total"], 3u);
  EXPECT_EQ(run["ops_done"], 3u);
  EXPECT_EQ(run["faults_fired"]["drop_frame.down"], 2u);
  EXPECT_DOUBLE_EQ(run["seconds"].get<double>(), 1.25);
  EXPECT_EQ(run["replay"], "faultlane-sim run sim/scenarios/lost_ack.yaml --seed 42");
  EXPECT_FALSE(run.contains("hist"));
  ASSERT_EQ(run["checkers"].size(), 3u);
  EXPECT_EQ(run["checkers"][2]["ran"], false);
  EXPECT_EQ(run["checkers"][2]["reason_off"], "no heal phase");
  const auto& v = run["checkers"][1]["violations"][0];
  EXPECT_EQ(v["checker"], "no_replay");
  EXPECT_EQ(v["op_id"], 2u);
  EXPECT_EQ(v["task_id"], 102u);
  EXPECT_EQ(v["request_id"], "0xa2");  // hex text: real ids pass 2^53
  EXPECT_EQ(v["transport"], "server#0");
  EXPECT_EQ(v["seq"], 50u);
  EXPECT_EQ(v["evidence"], "WRITE executed 2 times, expected <= 1 & \"once\"");
  const auto& counters = run["counters"];
  EXPECT_EQ(counters["ops_by_status"]["ok"], 2u);
  EXPECT_EQ(counters["ops_by_status"]["ambiguous_write"], 1u);
  EXPECT_EQ(counters["links"]["c0-s0"]["counters"]["reset.up"], 1u);
  EXPECT_EQ(counters["links"]["c0-s0"]["tap_records"]["fault"], 3u);
  EXPECT_EQ(counters["links"]["c0-s0"]["tap_records"]["frame"], 4u);
  EXPECT_EQ(doc["runs"][1]["seed"].get<std::uint64_t>(), UINT64_MAX);
  EXPECT_EQ(doc["runs"][2]["skip_reason"], "needs failpoints");
  EXPECT_EQ(doc["runs"][3]["error"], "child server#1 did not start\x01 within 5000 ms");
}

// Catches an op that never completed counted under its default outcome (ok).
TEST(ReportJson, OpsNeverCompletedCountedApart) {
  auto r = failed_run();
  auto h = std::make_shared<history>(*r.hist);
  h->ops.push_back(op_of(4, 104, status::ok, 0));
  r.hist = h;
  auto doc = nlohmann::json::parse(to_json({r}));
  EXPECT_EQ(doc["runs"][0]["counters"]["ops_by_status"]["ok"], 2u);
  EXPECT_EQ(doc["runs"][0]["counters"]["ops_by_status"]["not_completed"], 1u);
}

// Catches wrong counts, a missing escape in an attribute or a body, a
// control character passed through, a testcase not closed.
TEST(ReportJunit, BalancedWithCountsAndEscapedMessages) {
  auto xml = to_junit(four_runs());
  EXPECT_EQ(check_balanced(xml), "") << xml;
  EXPECT_TRUE(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites"));
  EXPECT_NE(xml.find(R"(<testsuite name="faultlane-sim" tests="4" failures="1" errors="1" )"
                     R"(skipped="1" time="2.750">)"),
            std::string::npos)
      << xml;
  EXPECT_EQ(count_of(xml, "<testcase "), 4u);
  EXPECT_NE(xml.find(R"(classname="faultlane-sim.lost &lt;ack&gt; &amp; &#39;replay&#39;")"),
            std::string::npos);
  EXPECT_NE(xml.find(R"(name="lost &lt;ack&gt; &amp; &#39;replay&#39; seed=42")"),
            std::string::npos);
  EXPECT_NE(xml.find(R"(<failure message="no_replay: WRITE executed 2 times, expected &lt;= 1 )"
                     R"(&amp; &quot;once&quot;" type="no_replay">)"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("\nseed: 42\nreplay: faultlane-sim run"), std::string::npos);
  EXPECT_NE(xml.find(R"(<skipped message="needs failpoints"/>)"), std::string::npos);
  EXPECT_NE(xml.find(R"(<error message="child server#1 did not start within 5000 ms")"),
            std::string::npos);
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
}

// Catches bytes that are not UTF-8 passed into the XML (a CI parser then
// rejects the whole file) or good UTF-8 mangled.
TEST(ReportJunit, ReplacesBytesThatAreNotUtf8) {
  auto r = failed_run();
  r.scenario =
      "pr\xc3\xbc"
      "fung \xff\xc3 \xed\xa0\x80 end";  // ü, bad byte, cut ü, surrogate
  auto xml = to_junit({r});
  EXPECT_EQ(check_balanced(xml), "");
  EXPECT_NE(xml.find("pr\xc3\xbc"
                     "fung \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end"),
            std::string::npos)
      << xml;
}

TEST(ReportJunit, EmptyRunListIsStillAValidSuite) {
  auto xml = to_junit({});
  EXPECT_EQ(check_balanced(xml), "");
  EXPECT_NE(xml.find(R"(tests="0" failures="0" errors="0" skipped="0")"), std::string::npos);
}

// Catches probes summed wrong, a never-reached list with a reached probe
// (or without an unreached one), a line past 100 columns, and counts shown
// as if meaningful where probes are compiled out.
TEST(ReportProbes, SumsHitsByNameAndNamesEveryProbeNeverReached) {
  auto a = passed_run("a", 1);
  auto b = passed_run("b", 2);
  const auto at = [](probe_id id) { return static_cast<std::size_t>(id); };
  a.probes[at(probe_id::ambiguous_write)] = 2;
  b.probes[at(probe_id::ambiguous_write)] = 3;
  b.probes[at(probe_id::world_load_hiccup)] = 1;
  auto p = summarize_probes({a, b});
  EXPECT_EQ(p.runs, 2u);
  EXPECT_EQ(p.hits.size(), probes::count);
  EXPECT_EQ(p.hits["ambiguous_write"], 5u);
  EXPECT_EQ(p.hits["world_load_hiccup"], 1u);
  EXPECT_EQ(p.hits["lane_handler_threw"], 0u);
  const auto never = never_reached(p);
  EXPECT_EQ(never.size(), probes::count - 2);
  EXPECT_EQ(never.front(), std::string(probes::table[0].name));
  EXPECT_EQ(std::count(never.begin(), never.end(), "ambiguous_write"), 0);
  p.counted = true;
  const auto text = probes_text(p);
  EXPECT_TRUE(text.starts_with("code probes: 2 of " + std::to_string(probes::count) +
                               " reached over 2 run(s)\n"))
      << text;
  for (const auto& line : lines_of(text)) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_NE(text.find("ambiguous_write"), std::string::npos);
  EXPECT_NE(text.find("never reached (" + std::to_string(probes::count - 2) + "):"),
            std::string::npos);
  for (const auto& name : never) EXPECT_NE(text.find(name), std::string::npos) << name;
  p.counted = false;
  EXPECT_EQ(probes_text(p), "code probes: not counted in this build (failpoints compiled out)\n");
  // The JSON: each run's own probes, then the sum, the list and whether counted.
  const auto doc = nlohmann::json::parse(to_json({a, b}));
  EXPECT_EQ(doc["runs"][0]["probes"], (nlohmann::json{{"ambiguous_write", 2}}));
  EXPECT_EQ(doc["probes"]["ambiguous_write"], 5u);
  EXPECT_EQ(doc["probes"].size(), probes::count);
  EXPECT_EQ(doc["probes_never_reached"].get<std::vector<std::string>>(), never);
  EXPECT_EQ(doc["probes_counted"], probes::counted);
}

}  // namespace
}  // namespace faultlane::sim
