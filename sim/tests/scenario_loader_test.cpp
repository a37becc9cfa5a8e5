// The scenario loader: valid files parse to the exact values, every broken
// file of sim/tests/broken/ fails with the message (file:line:col, key,
// problem) its first line names, to_yaml() round-trips, and count ranges,
// sizes and every bound are checked on both sides.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "docs_example.hpp"
#include "loader_support.hpp"
#include "scenario_compare.hpp"

namespace faultlane::sim {
namespace {

namespace fs = std::filesystem;

TEST(ScenarioLoader, RichFileParsesToExactValues) {
  const scenario s = load_ok("lost_write_ack.yaml");
  EXPECT_EQ(s.name, "lost-write-ack");
  EXPECT_EQ(s.summary.substr(0, s.summary.find('\n')),
            "Lost WRITE ACK: the target runs the WRITE but its ACK never arrives.");
  EXPECT_EQ(s.tags, (std::vector<std::string>{"write", "ambiguity"}));
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.timeout_ms, 60000u);
  EXPECT_TRUE(s.needs_failpoints);
  ASSERT_EQ(s.transports.size(), 2u);
  EXPECT_EQ(s.transports[0].name, "client");
  EXPECT_EQ(s.transports[0].process, process_kind::local);
  EXPECT_EQ(s.transports[0].config.worker_count, 2u);
  EXPECT_EQ(s.transports[0].config.progress_timeout_ms, 500u);
  EXPECT_EQ(s.transports[0].mark, (source_mark{s.file, 9, 5}));
  EXPECT_EQ(s.transports[1].process, process_kind::child);
  EXPECT_EQ(s.transports[1].rails, 1u);
  ASSERT_EQ(s.regions.size(), 2u);
  EXPECT_EQ(s.regions[0].size, 1u << 20);
  EXPECT_EQ(s.regions[1].size, 64u << 10);
  EXPECT_EQ(s.regions[1].perm, permission::remote_read);
  ASSERT_EQ(s.links.size(), 1u);
  const link_spec& l = s.links[0];
  EXPECT_EQ(l.name, "client-server-r0");
  EXPECT_EQ(l.initiator, "client");
  EXPECT_EQ(l.target, "server");
  ASSERT_EQ(l.faults.size(), 2u);
  EXPECT_EQ(fault_text(l.faults[0]), "drop_frame dir=down opcode=write count=1 name=ack_lost");
  EXPECT_EQ(fault_text(l.faults[1]), "latency dir=up ms=2 jitter_ms=1 name=latency.up optional");
  ASSERT_EQ(s.streams.size(), 3u);
  const stream_spec& w = s.streams[0];
  EXPECT_EQ(w.read_weight, 0);
  EXPECT_EQ(w.write_weight, 1);
  EXPECT_EQ(w.size.values, (std::vector<std::uint64_t>{4096}));
  EXPECT_EQ(w.count, 200u);
  EXPECT_EQ(w.depth, 4u);
  EXPECT_EQ(w.batch, 2u);
  EXPECT_EQ(w.offsets, offset_mode::sequential);
  EXPECT_EQ(w.allow, (std::vector<status>{status::ok, status::ambiguous_write}));
  const stream_spec& r = s.streams[1];
  EXPECT_EQ(r.read_weight, 3);
  EXPECT_EQ(r.write_weight, 0.5);
  EXPECT_TRUE(r.size.range);
  EXPECT_EQ(r.size.lo, 1u);
  EXPECT_EQ(r.size.hi, 65536u);
  EXPECT_EQ(r.count, 0u);
  EXPECT_EQ(r.duration_ms, 2000u);
  EXPECT_EQ(r.phase, "fault");  // the first phase by default
  EXPECT_EQ(r.offsets, offset_mode::random);
  EXPECT_EQ(s.streams[2].size.values, (std::vector<std::uint64_t>{1, 4096, 2049}));
  EXPECT_EQ(s.streams[2].size.max(), 4096u);
  EXPECT_EQ(s.streams[2].allow, std::vector<status>{status::ok});
  ASSERT_EQ(s.events.size(), 11u);
  EXPECT_EQ(s.events[0].when, trigger_kind::stream_ops);
  EXPECT_EQ(s.events[0].ops, 50u);
  EXPECT_EQ(s.events[0].action, event_action::restart);
  EXPECT_EQ(s.events[1].when, trigger_kind::fault_fired);
  EXPECT_EQ(s.events[1].fault, "ack_lost");
  EXPECT_EQ(s.events[1].times, 1u);
  EXPECT_EQ(fault_text(s.events[1].added), "reset dir=up after_bytes=100 name=late_reset");
  EXPECT_EQ(s.events[2].when, trigger_kind::phase_start);
  EXPECT_EQ(s.events[2].fault_name, "late_reset");
  EXPECT_EQ(s.events[4].action, event_action::register_region);
  EXPECT_EQ(s.events[5].when, trigger_kind::phase_end);
  EXPECT_EQ(s.events[5].phase, "fault");
  EXPECT_EQ(s.events[5].target, "server");
  EXPECT_EQ(s.events[6].action, event_action::kill);
  const failpoint::config& fp = s.events[8].failpoint_config;
  EXPECT_EQ(s.events[8].failpoint, "lane.on_deadline");
  EXPECT_EQ(fp.act, failpoint::action::return_error);
  EXPECT_EQ(fp.error, status::timeout);
  EXPECT_EQ(fp.count, 1);
  EXPECT_EQ(fp.probability, 0.5);
  EXPECT_EQ(fp.only_key, std::optional<std::uint64_t>(12));
  EXPECT_EQ(fp.seed, 3u);
  EXPECT_EQ(s.events[10].failpoint, "server.on_header");
  ASSERT_EQ(s.phases.size(), 3u);
  EXPECT_TRUE(s.phases[1].heal);
  EXPECT_TRUE(s.phases[2].liveness);
  EXPECT_EQ(s.phases[2].deadline_ms, 5000u);
  EXPECT_EQ(s.expect.counts.at("writes.ambiguous_write"), (count_range{1, 1}));
  EXPECT_EQ(s.expect.counts.at("writes.ok"), (count_range{10, UINT64_MAX}));
  EXPECT_EQ(s.expect.counts.at("reads.ok"), (count_range{2, 5}));
  EXPECT_EQ(s.expect.faults.at("client-server-r0/late_reset"), (count_range{1, UINT64_MAX}));
  EXPECT_EQ(s.expect.faults.at("latency.up"), (count_range{0, 2}));
  EXPECT_EQ(s.expect.stats.at("server.sessions_live"), (count_range{0, 0}));
  EXPECT_EQ(s.expect.stats.at("client.leases_live"), (count_range{1, UINT64_MAX}));
  EXPECT_EQ(s.expect.checkers_off,
            (std::map<std::string, std::string>{{"slice_coverage", "no sliced READs here"}}));
}

TEST(ScenarioLoader, MinimalFileTakesEveryDefault) {
  const scenario s = load_ok("minimal.yaml");
  EXPECT_EQ(s.name, "minimal");  // the file stem
  EXPECT_EQ(s.summary, "The smallest scenario: one READ stream between two local transports.");
  EXPECT_EQ(s.seed, 1u);
  EXPECT_EQ(s.timeout_ms, 120000u);
  EXPECT_FALSE(s.needs_failpoints);
  EXPECT_EQ(s.transports[0].rails, 1u);
  EXPECT_EQ(s.transports[0].config.worker_count, transport_config{}.worker_count);
  EXPECT_EQ(s.regions[0].perm, permission::remote_read_write);
  EXPECT_TRUE(s.links.empty());
  const stream_spec& w = s.streams[0];
  EXPECT_EQ(w.depth, 1u);
  EXPECT_EQ(w.batch, 1u);
  EXPECT_EQ(w.start_deadline_ms, 0u);
  EXPECT_EQ(w.allow, std::vector<status>{status::ok});
  ASSERT_EQ(s.phases.size(), 3u);
  EXPECT_EQ(s.phases[0].name, "fault");
  EXPECT_TRUE(s.phases[1].heal);
  EXPECT_EQ(s.phases[1].name, "heal");
  EXPECT_TRUE(s.phases[2].liveness);
  EXPECT_EQ(s.phases[2].deadline_ms, 10000u);
  EXPECT_EQ(w.phase, "fault");
}

TEST(ScenarioLoader, LinkDefaultsAndRails) {
  const scenario s = load_ok("sliced_reads.yaml");
  ASSERT_EQ(s.links.size(), 2u);
  EXPECT_EQ(s.links[0].name, "client-server-r1");
  EXPECT_EQ(s.links[0].rail, 1u);
  EXPECT_FALSE(s.links[0].tap);
  EXPECT_EQ(s.links[0].proto, relays::protocol::raw);
  EXPECT_EQ(s.links[0].faults[0].spec.name, "bandwidth.down");
  EXPECT_EQ(s.links[1].name, "rail0");
  EXPECT_TRUE(s.links[1].tap);
  EXPECT_EQ(s.links[1].proto, relays::protocol::faultlane);
  EXPECT_EQ(s.transports[0].rails, 2u);
  EXPECT_EQ(s.transports[0].config.max_transfer_bytes, 8u << 20);
  EXPECT_EQ(s.streams[0].size.lo, 1u << 20);
  EXPECT_EQ(s.streams[0].size.hi, 8u << 20);
  EXPECT_EQ(s.phases[0].deadline_ms, 20000u);
  EXPECT_FALSE(s.phases[0].liveness);
}

// Each broken file starts with "# error: LINE:COL: KEY: what"; the message
// must be exactly "FILE:" followed by that (what may go on).
TEST(ScenarioLoader, EveryBrokenFileFailsWithItsMessage) {
  std::size_t files = 0;
  for (const auto& entry : fs::directory_iterator(test_dir / "broken")) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    const std::string path = entry.path().string();
    std::ifstream in(path);
    std::string first;
    std::getline(in, first);
    const std::string prefix = "# error: ";
    ASSERT_EQ(first.substr(0, prefix.size()), prefix) << path;
    const std::string expected = path + ":" + first.substr(prefix.size());
    auto s = load_scenario(path);
    ASSERT_FALSE(s.ok()) << path << " loaded";
    EXPECT_EQ(s.error().code, status::invalid_argument);
    EXPECT_EQ(s.error().message.substr(0, expected.size()), expected) << s.error().message;
  }
  EXPECT_GE(files, 20u);
}

TEST(ScenarioLoader, ToYamlRoundTrips) {
  for (const char* name :
       {"lost_write_ack.yaml", "sliced_reads.yaml", "minimal.yaml", "control.yaml"}) {
    SCOPED_TRACE(name);
    scenario s = load_ok(name);
    // Values the files leave at their defaults, so the writer must carry them.
    s.expect.checkers_off["bounds"] = "a \"quoted\" reason: with a colon\nand a line";
    s.streams[0].start_deadline_ms = 250;
    s.perturb = perturb_spec{.probability = 0.25, .max_us = 30};
    s.load = load_spec{.cost_us = 40, .hiccup_probability = 0.125, .hiccup_ms = 300};
    for (auto& e : s.events) e.failpoint_optional = e.action == event_action::arm;
    const std::string text = to_yaml(s);
    auto back = parse_scenario(text, s.file);
    ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
    expect_same(s, back.value());
    EXPECT_EQ(to_yaml(back.value()), text);  // a fixed point
  }
}

TEST(ScenarioLoader, ToYamlWritesOnlyNonDefaultConfig) {
  const std::string text = to_yaml(load_ok("lost_write_ack.yaml"));
  EXPECT_NE(text.find("config: {worker_count: 2, progress_timeout_ms: 500}"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("max_connections"), std::string::npos);
  EXPECT_EQ(text.substr(0, 2), "# ");
}

TEST(ScenarioLoader, CountRanges) {
  const std::uint64_t top = UINT64_MAX;
  const std::pair<const char*, count_range> good[] = {{"3", {3, 3}},
                                                      {"0", {0, 0}},
                                                      {">=1", {1, top}},
                                                      {">=0", {0, top}},
                                                      {">0", {1, top}},
                                                      {"<=2", {0, 2}},
                                                      {"<3", {0, 2}},
                                                      {"<1", {0, 0}},
                                                      {"2..5", {2, 5}},
                                                      {"5..5", {5, 5}},
                                                      {"18446744073709551615", {top, top}},
                                                      {">18446744073709551614", {top, top}}};
  for (const auto& [text, want] : good) {
    auto r = parse_count_range(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error().message;
    EXPECT_EQ(r.value(), want) << text;
    EXPECT_EQ(parse_count_range(to_string(r.value())).value(), want) << text;
  }
  for (const char* text : {"", "<0", "5..4", ">18446744073709551615", "18446744073709551616", "-1",
                           ">=", "1..", "..3", "abc", "> 1", "1.5", "=3"}) {
    EXPECT_FALSE(parse_count_range(text).ok()) << text;
  }
  EXPECT_TRUE((count_range{2, 5}).contains(2));
  EXPECT_TRUE((count_range{2, 5}).contains(5));
  EXPECT_FALSE((count_range{2, 5}).contains(1));
  EXPECT_FALSE((count_range{2, 5}).contains(6));
}

TEST(ScenarioLoader, Sizes) {
  const std::pair<const char*, std::uint64_t> good[] = {{"0", 0},
                                                        {"4096", 4096},
                                                        {"4KiB", 4096},
                                                        {"4K", 4096},
                                                        {"1B", 1},
                                                        {"1MiB", 1u << 20},
                                                        {"1M", 1u << 20},
                                                        {"1GiB", 1u << 30},
                                                        {"1G", 1u << 30},
                                                        {"1MiB-1", (1u << 20) - 1},
                                                        {"2MiB+1", (2u << 20) + 1},
                                                        {"1-1", 0},
                                                        {"17179869183G", 17179869183ull << 30}};
  for (const auto& [text, want] : good) {
    auto n = parse_size(text);
    ASSERT_TRUE(n.ok()) << text << ": " << n.error().message;
    EXPECT_EQ(n.value(), want) << text;
  }
  for (const char* text : {"", "KiB", "4KB", "4 KiB", "-1", "1-2", "4XiB", "1MiB-", "1MiB+x",
                           "17179869184G", "18446744073709551615+1", "1.5K", "4kib"}) {
    EXPECT_FALSE(parse_size(text).ok()) << text;
  }
}

TEST(ScenarioLoader, BoundsOnBothSides) {
  const std::string s1 = "size: 1, count: 1";
  expect_bound(with("timeout_ms: 1000\n", "1", s1), with("timeout_ms: 999\n", "1", s1),
               "timeout_ms");
  expect_bound(with("timeout_ms: 600000\n", "1", s1), with("timeout_ms: 600001\n", "1", s1),
               "timeout_ms");
  expect_bound(with("", "1GiB", s1), with("", "1GiB+1", s1), "regions[0].size");
  expect_bound(with("", "1", s1), with("", "0", s1), "regions[0].size");
  expect_bound(with("", "4KiB", "size: 4KiB, count: 1"), with("", "4KiB", "size: 4097, count: 1"),
               "workload[0].size");
  expect_bound(with("", "4KiB", "size: \"1..4KiB\", count: 1"),
               with("", "4KiB", "size: \"0..4KiB\", count: 1"), "workload[0].size");
  expect_bound(with("", "4KiB", "size: [1, 4096], count: 1"),
               with("", "4KiB", "size: [1, 4097], count: 1"), "workload[0].size[1]");
  expect_bound(with("", "1", "size: 1, count: 1000000"), with("", "1", "size: 1, count: 1000001"),
               "workload[0].count");
  expect_bound(with("", "1", "size: 1, count: 1"), with("", "1", "size: 1, count: 0"),
               "workload[0].count");
  expect_bound(with("", "1", "size: 1, duration_ms: 600000"),
               with("", "1", "size: 1, duration_ms: 600001"), "workload[0].duration_ms");
  expect_bound(with("", "1", "size: 1, count: 1, depth: 1024, batch: 256"),
               with("", "1", "size: 1, count: 1, depth: 1025"), "workload[0].depth");
  expect_bound(with("", "1", "size: 1, count: 1, depth: 1024, batch: 256"),
               with("", "1", "size: 1, count: 1, depth: 1024, batch: 257"), "workload[0].batch");
  expect_bound(with("", "1", "size: 1, count: 1, depth: 3, batch: 3"),
               with("", "1", "size: 1, count: 1, depth: 3, batch: 4"), "workload[0].batch");
  expect_bound(with("", "1", "size: 1, count: 1, ops: {read: 0, write: 0.001}"),
               with("", "1", "size: 1, count: 1, ops: {read: 0, write: 0}"), "workload[0].ops");
  const std::string phases = "phases: [{name: p, liveness: true, deadline_ms: ";
  expect_bound(with(phases + "600000}]\n", "1", s1), with(phases + "600001}]\n", "1", s1),
               "phases[0].deadline_ms");
  expect_bound(with(phases + "1}]\n", "1", s1), with(phases + "0}]\n", "1", s1),
               "phases[0].deadline_ms");
}

TEST(ScenarioLoader, TransportAndRailBounds) {
  const std::string tail =
      "workload: [{name: s, from: t0, region: r, ops: read, size: 1, "
      "count: 1}]\n";
  auto transports = [&](std::size_t n, const std::string& first) {
    std::string text = "transports: [{name: t0" + first + "}";
    for (std::size_t i = 1; i < n; ++i) text += ", {name: t" + std::to_string(i) + first + "}";
    return text + "]\nregions: [{name: r, transport: t1, size: 1}]\n" + tail;
  };
  expect_bound(transports(8, ""), transports(9, ""), "transports");
  const std::string rails4 = ", rails: 4, config: {connections_per_peer: 4}";
  const std::string rails5 = ", rails: 5, config: {connections_per_peer: 5}";
  expect_bound(transports(2, rails4), transports(2, rails5), "transports[0].rails");
  expect_bound(transports(2, ", rails: 2, config: {connections_per_peer: 2}"),
               transports(2, ", rails: 2, config: {connections_per_peer: 1}"),
               "transports[0].rails");
  const std::string two =
      "transports: [{name: a, rails: 2}, {name: b, rails: 2}]\n"
      "regions: [{name: r, transport: b, size: 1}]\n"
      "workload: [{name: s, from: a, region: r, ops: read, size: 1, "
      "count: 3}]\n";
  expect_bound(two + "links: [{initiator: a, target: b, rail: 1}]\n",
               two + "links: [{initiator: a, target: b, rail: 2}]\n", "links[0].rail");
  const std::string restart = ", do: restart, transport: b}]\n";
  expect_bound(two + "events: [{at: {stream: s, ops: 3}" + restart,
               two + "events: [{at: {stream: s, ops: 4}" + restart, "events[0].at.ops");
  expect_bound(two + "events: [{at: {stream: s, ops: 1}" + restart,
               two + "events: [{at: {stream: s, ops: 0}" + restart, "events[0].at.ops");
}

TEST(ScenarioLoader, FaultNamesAreUniquePerLinkAndReferencesResolve) {
  const std::string base =
      "transports: [{name: a}, {name: b}]\n"
      "regions: [{name: r, transport: b, size: 1}]\n"
      "workload: [{name: s, from: a, region: r, ops: read, size: 1, "
      "count: 3}]\n";
  expect_bound(base +
                   "links: [{initiator: a, target: b, faults: [{type: reset, dir: up}, "
                   "{type: reset, dir: up, name: second}]}]\n",
               base +
                   "links: [{initiator: a, target: b, faults: [{type: reset, dir: up}, "
                   "{type: reset, dir: up}]}]\n",
               "links[0].faults[1].name");
  const std::string link = base +
                           "links: [{initiator: a, target: b, faults: "
                           "[{type: reset, dir: up}]}]\n";
  // A fault trigger may wait for a fault a later event adds.
  expect_bound(link +
                   "events:\n"
                   "  - {at: {fault: late}, do: restart, transport: b}\n"
                   "  - {at: {stream: s, ops: 1}, do: add_fault, link: a-b-r0, "
                   "fault: {type: stall, dir: up, name: late}}\n",
               link +
                   "events:\n"
                   "  - {at: {fault: later}, do: restart, transport: b}\n"
                   "  - {at: {stream: s, ops: 1}, do: add_fault, link: a-b-r0, "
                   "fault: {type: stall, dir: up, name: late}}\n",
               "events[0].at.fault");
  expect_bound(link + "expect: {faults: {\"a-b-r0/reset.up\": 1}}\n",
               link + "expect: {faults: {\"a-b-r0/reset.down\": 1}}\n",
               "expect.faults.a-b-r0/reset.down");
  expect_bound(link + "expect: {counts: {s.done: 3, s.busy: 0}}\n",
               link + "expect: {counts: {s.finished: 3}}\n", "expect.counts.s.finished");
  // Arming a failpoint needs no local target: the runner process arms it.
  auto child = parse_scenario(
      "transports: [{name: a}, {name: b, process: child}]\n"
      "regions: [{name: r, transport: b, size: 1}]\n"
      "workload: [{name: s, from: a, region: r, ops: read, size: 1, count: 3}]\n"
      "events: [{at: {stream: s, ops: 1}, do: arm,\n"
      "          failpoint: {name: lane.enqueue, action: pause}}]\n",
      "child.yaml");
  ASSERT_TRUE(child.ok()) << child.error().message;
  EXPECT_TRUE(child.value().needs_failpoints);
}

TEST(ScenarioLoader, FileNameIsTheDefaultNameAndMustBeOne) {
  const std::string body = with("", "1", "size: 1, count: 1");
  auto good = parse_scenario(body, "/x/dir/my-case.yaml");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value().name, "my-case");
  auto bad = parse_scenario(body, "/x/My Case.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.substr(0, 22), "/x/My Case.yaml:1:1: n");
  EXPECT_FALSE(load_scenario("/nonexistent/dir/none.yaml").ok());
}

// Rule: the summary is the file's opening comment block: blank lines before
// it skipped, each line without its "#" and one space (a second space kept),
// trailing spaces and CRs dropped, up to the first line that is not a
// comment (a blank one included).
TEST(ScenarioLoader, TheSummaryIsTheOpeningCommentBlock) {
  const std::string body = with("", "1", "size: 1, count: 1");
  auto summary_of = [&](const std::string& head) {
    auto s = parse_scenario(head + body, "summary.yaml");
    EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
    return s.ok() ? s.value().summary : std::string("(did not load)");
  };
  EXPECT_EQ(summary_of("\n\n# first  \r\n#second\n#   third\n#\n# last\n"),
            "first\nsecond\n  third\n\nlast");
  EXPECT_EQ(summary_of("# one\n\n# not the summary\n"), "one");
  EXPECT_EQ(summary_of("# one\nname: x\n# not the summary\n"), "one");
  EXPECT_EQ(summary_of(""), "");
}

// Rule: a scenario is one YAML document: a "---" before its content opens
// it (and is no content of its own), one after its content (at the start
// of a line, alone or before a space) is a second document, refused at its
// line.
TEST(ScenarioLoader, OneDocumentMarkerBeforeTheContentIsAllowed) {
  const std::string body = with("", "1", "size: 1, count: 1");
  EXPECT_TRUE(parse_scenario("# a comment\n---\n" + body, "one.yaml").ok());
  EXPECT_TRUE(parse_scenario("--- \n" + body, "one.yaml").ok());
  // A marker is no content: a file of a comment and a marker is empty.
  auto empty = parse_scenario("# nothing\n---\n", "empty.yaml");
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.error().message.find("the file is empty"), std::string::npos)
      << empty.error().message;
  auto two = parse_scenario(body + "--- # another\n" + body, "two.yaml");
  ASSERT_FALSE(two.ok());
  EXPECT_EQ(two.error().message.rfind("two.yaml:4:1: yaml: more than one YAML document", 0), 0u)
      << two.error().message;
}

// The complete example that opens docs/scenarios.md loads as it stands.
TEST(ScenarioLoader, DocsExampleLoads) {
  const auto example = test::docs_opening_example((test_dir / ".." / "..").string());
  ASSERT_FALSE(example.empty());
  auto s = parse_scenario(example, "docs-example.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s.value().name, "lost-write-ack");
  EXPECT_EQ(s.value().streams.size(), 2u);
  EXPECT_EQ(s.value().events[0].action, event_action::kill);
  // The default phases; the heal waits out the default 1 s cooldown.
  ASSERT_EQ(s.value().phases.size(), 3u);
  EXPECT_EQ(s.value().phases[1].settle_ms, limits::reconnect_cooldown_ms_default + 100);
}

}  // namespace
}  // namespace faultlane::sim
