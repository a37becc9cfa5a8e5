// Tests of the HTML timeline: well-formed, self-contained, one mark per
// fired fault and per runner mark, the violating op outlined, every name
// escaped, and a 10 000-op history within a few megabytes.
#include <gtest/gtest.h>

#include <chrono>

#include "faultlane/sim/report.hpp"
#include "report_fixtures.hpp"

namespace faultlane::sim {
namespace {

using namespace report_fixtures;

// Catches an unclosed element, an unquoted attribute, an unescaped name.
TEST(ReportTimeline, WellFormedAndSelfContained) {
  auto html = timeline_html(failed_run());
  EXPECT_EQ(check_balanced(html), "") << html;
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_EQ(count_of(html, "https://"), 0u);
  EXPECT_EQ(count_of(html, "http://"), 1u);
  EXPECT_EQ(count_of(html, "xmlns=\"http://www.w3.org/2000/svg\""), 1u);
  EXPECT_EQ(count_of(html, " src="), 0u);
  EXPECT_EQ(count_of(html, "<link"), 0u);
  EXPECT_EQ(count_of(html, "@import"), 0u);
}

// Catches a name written raw (the scenario, a mark's text, evidence).
TEST(ReportTimeline, EscapesNames) {
  auto html = timeline_html(failed_run());
  EXPECT_EQ(html.find("lost <ack>"), std::string::npos);
  EXPECT_NE(html.find("lost &lt;ack&gt; &amp; &#39;replay&#39;"), std::string::npos);
  EXPECT_NE(html.find("restart server#0 &lt;now&gt; &amp; then"), std::string::npos);
  EXPECT_NE(html.find("liveness &quot;check&quot;"), std::string::npos);
  EXPECT_NE(html.find("expected &lt;= 1 &amp; &quot;once&quot;"), std::string::npos);
}

// Catches a fault drawn twice or not at all, or a write record drawn as one.
TEST(ReportTimeline, OneFaultMarkPerFaultRecordAndOneLinePerMark) {
  auto html = timeline_html(failed_run());
  EXPECT_EQ(count_of(html, "class=\"fault-mark\""), 3u);
  auto faults = tags_with(html, "class=\"fault-mark\"");
  for (const auto& tag : faults) EXPECT_TRUE(tag.starts_with("<path")) << tag;
  EXPECT_EQ(count_of(html, "<title>fault drop_frame.down (up)"), 2u);
  EXPECT_EQ(count_of(html, "<title>fault reset.up (up)"), 1u);
  EXPECT_EQ(count_of(html, "class=\"decode-error\""), 0u) << "the write record was drawn";
  EXPECT_EQ(count_of(html, "class=\"event-mark\""), 2u);
  EXPECT_NE(html.find(R"(data-kind="note" data-ok="false")"), std::string::npos);
}

// Catches the outline on the wrong op (op ids and task ids differ on
// purpose) or the bar losing its outcome colour when outlined.
TEST(ReportTimeline, ViolatingOpsBarIsOutlined) {
  auto html = timeline_html(failed_run());
  auto flagged = tags_with(html, "class=\"violation\"");
  ASSERT_EQ(flagged.size(), 1u) << html;
  EXPECT_TRUE(flagged[0].starts_with("<rect")) << flagged[0];
  EXPECT_NE(flagged[0].find("data-op=\"2\""), std::string::npos) << flagged[0];
  EXPECT_NE(flagged[0].find("id=\"op-2\""), std::string::npos) << flagged[0];
  EXPECT_NE(flagged[0].find("fill:#f08c00"), std::string::npos) << "ambiguous_write is orange";
  auto bar = html.find(flagged[0]);
  EXPECT_EQ(html.compare(bar + flagged[0].size(), 39, "<title>VIOLATION no_replay: op 2 (task "),
            0);
  EXPECT_NE(html.find("<a href=\"#op-2\">op 2 (task 102"), std::string::npos);
  // The other ops' bars keep their outcome class.
  EXPECT_EQ(count_of(html, "<title>op 1 writes task 101 request 0xa1"), 1u);
  EXPECT_EQ(count_of(html, "<title>op 3 writes task 103 request 0xa3"), 1u);
}

// Catches a seq-only violation dropped instead of drawn at its point.
TEST(ReportTimeline, ViolationWithoutOpIsALineAtItsSeq) {
  auto r = failed_run();
  r.checkers[1].violations[0].op_id = 0;
  r.checkers[1].violations[0].seq = 22;  // op 2's slice_dispatched, at 210 us
  auto html = timeline_html(r);
  EXPECT_EQ(check_balanced(html), "");
  auto lines = tags_with(html, "class=\"violation\"");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0].starts_with("<line")) << lines[0];
  EXPECT_NE(html.find("<title>VIOLATION at seq 22\n"), std::string::npos);
}

// Catches a lane, session or relay connection row missing, or a bar
// ending at the wrong time.
TEST(ReportTimeline, RowsForLanesSessionsAndRelayConnections) {
  auto html = timeline_html(failed_run());
  EXPECT_NE(html.find(">client#0 i0 s0 lane 0<title>"), std::string::npos);
  EXPECT_NE(html.find(">client#0 i0 s0 lane 1<title>"), std::string::npos);
  EXPECT_NE(html.find(">sessions of server#0 i0<title>"), std::string::npos);
  EXPECT_NE(html.find(">c0-s0 c1<title>"), std::string::npos);
  EXPECT_NE(html.find("status ambiguous_write, 0.210 ms to 0.450 ms"), std::string::npos);
  EXPECT_NE(html.find("executed WRITE request 0xa3\nregistration 7 offset 12288 length 4096"),
            std::string::npos);
  EXPECT_NE(html.find("closed (connection_failed) at 0.900 ms"), std::string::npos);
  EXPECT_EQ(count_of(html, "class=\"phase\""), 2u);
  EXPECT_NE(html.find(R"(data-kind="heal")"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"evidence\"><h2>no_replay: 1 violation(s)"), std::string::npos);
  EXPECT_NE(html.find("class=\"legend\""), std::string::npos);
}

// Catches a page that needs a history it does not have.
TEST(ReportTimeline, WithoutHistoryStillAPage) {
  auto r = passed_run("plain", 3);
  auto html = timeline_html(r);
  EXPECT_EQ(check_balanced(html), "");
  EXPECT_NE(html.find("No history was recorded"), std::string::npos);
  EXPECT_EQ(html.find("class=\"evidence\""), std::string::npos);
}

// Rule: the header's evidence lists at most 10 violations of the failing
// checker, then "... and N more"; exactly 10 shows them all.
TEST(ReportTimeline, EvidenceListsTenViolationsThenHowManyMore) {
  for (std::size_t total : {10u, 11u}) {
    const auto r = failed_run_with(total);
    const auto html = timeline_html(r);
    const auto box = html.substr(html.find("<div class=\"evidence\">"));
    EXPECT_EQ(count_of(box.substr(0, box.find("</div>")), "<li>"), 10u) << box;
    EXPECT_EQ(html.find("<p>... and 1 more</p>") != std::string::npos, total == 11) << html;
    EXPECT_EQ(html.find("... and 0 more"), std::string::npos);
    EXPECT_NE(html.find("<h2>no_replay: " + std::to_string(total) + " violation(s), 3 checked"),
              std::string::npos);
  }
}

// Rule: a run error is the evidence, under its own heading, whatever the
// checkers said.
TEST(ReportTimeline, ARunErrorIsTheEvidence) {
  auto r = failed_run();
  r.error = "child server#1 did not start";
  const auto html = timeline_html(r);
  EXPECT_EQ(check_balanced(html), "");
  EXPECT_NE(html.find("<div class=\"evidence\"><h2>run error</h2><ul><li>child server#1 did not "
                      "start</li></ul></div>"),
            std::string::npos)
      << html;
  EXPECT_EQ(html.find("<h2>no_replay"), std::string::npos);
  EXPECT_NE(html.find("class=\"verdict v-error\">ERROR</span>"), std::string::npos);
}

// Rule: a violation links to its op's bar only when the op has one.
TEST(ReportTimeline, OnlyAViolationWithABarIsLinked) {
  auto r = failed_run();
  r.checkers[1].violations.push_back(make_violation(7, "an op with no bar"));
  const auto html = timeline_html(r);
  EXPECT_EQ(count_of(html, "<a href=\"#op-"), 1u) << html;
  EXPECT_NE(html.find("<li>op 7 (task 107"), std::string::npos) << html;
}

// Rule: the header's verdict is coloured by the outcome, and the replay
// line is there only when there is a command to show.
TEST(ReportTimeline, VerdictClassAndReplayLine) {
  EXPECT_NE(timeline_html(failed_run()).find("class=\"verdict v-fail\">FAIL no_replay</span>"),
            std::string::npos);
  auto passed = passed_run("plain", 3);
  EXPECT_NE(timeline_html(passed).find("class=\"verdict v-pass\">PASS</span>"), std::string::npos);
  EXPECT_EQ(timeline_html(passed).find("replay: <code>"), std::string::npos);
  EXPECT_NE(timeline_html(skipped_run()).find("class=\"verdict v-skip\">SKIP needs failpoints"),
            std::string::npos);
  EXPECT_NE(timeline_html(failed_run())
                .find("<p class=\"meta\">replay: <code>faultlane-sim run "
                      "sim/scenarios/lost_ack.yaml --seed 42</code></p>"),
            std::string::npos);
  EXPECT_NE(timeline_html(failed_run())
                .find("<p class=\"meta\">seed 42 | "
                      "sim/scenarios/lost_ack.yaml | ops 3/3 | faults "
                      "fired 3 | 1.25 s</p>"),
            std::string::npos);
}

std::shared_ptr<const history> big_history(std::uint64_t ops, std::uint64_t faults) {
  auto h = std::make_shared<history>();
  link_record link;
  link.name = "c0-s0";
  link.tapped = true;
  link.tap.push_back(tap_of(relays::record_kind::open, 0));
  std::uint64_t seq = 1;
  for (std::uint64_t id = 1; id <= ops; ++id) {
    std::uint64_t t = id * 50;
    h->ops.push_back(op_of(id, id, id % 7 == 0 ? status::timeout : status::ok, t + 400));
    auto slice = event_of(seq++, t + 10, "client#0", event_kind::slice_dispatched);
    slice.task_id = id;
    slice.request_id = id;
    slice.lane = id % 8;
    slice.length = 4096;
    h->events.push_back(slice);
    auto served = event_of(seq++, t + 200, "server#0", event_kind::server_executed);
    served.request_id = id;
    h->events.push_back(served);
    auto req = tap_of(relays::record_kind::frame, t + 100);
    req.request_id = id;
    link.tap.push_back(req);
    auto resp = tap_of(relays::record_kind::frame, t + 300);
    resp.request = false;
    resp.dir = relays::direction::down;
    link.tap.push_back(resp);
    if (id % (ops / faults) == 0) link.tap.push_back(tap_of(relays::record_kind::fault, t + 301));
  }
  h->links.push_back(link);
  return h;
}

// Catches an element per op grown too large, or rows lost at scale.
TEST(ReportTimeline, TenThousandOpsStaysSmall) {
  auto r = failed_run();
  r.hist = big_history(10000, 100);
  auto start = std::chrono::steady_clock::now();
  auto html = timeline_html(r);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                  start);
  std::printf("10 000 ops: %zu bytes in %lld ms\n", html.size(),
              static_cast<long long>(ms.count()));
  EXPECT_LT(html.size(), 10u * 1000 * 1000);
  EXPECT_EQ(count_of(html, "class=\"fault-mark\""), 100u);
  EXPECT_EQ(count_of(html, " (slice +0 length 4096, rail 0)"), 10000u);
  EXPECT_EQ(count_of(html, "class=\"violation\""), 1u);
  EXPECT_EQ(check_balanced(html), "");
}

}  // namespace
}  // namespace faultlane::sim
