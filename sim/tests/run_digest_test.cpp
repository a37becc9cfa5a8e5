// The run digest (docs/dsim.md, "The run digest"): each thing it says it
// chains changes the digest when it alone changes, and the same run gives
// the same digest. What it leaves out (wall-clock seconds, the file, the
// replay line) changes nothing.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "report_fixtures.hpp"
#include "runner/run_digest.hpp"

namespace faultlane::sim {
namespace {

using namespace report_fixtures;

run_result digested_run() {
  auto r = failed_run();
  auto h = std::make_shared<history>(*r.hist);
  h->events.push_back({});
  stats_record s;
  s.transport = "client#0";
  h->stats.push_back(s);
  region_final f;
  f.transport = "server#0";
  f.region = "data";
  f.bytes = std::vector<std::byte>(8, std::byte{1});
  h->finals.push_back(f);
  r.hist = h;
  return r;
}

// The digest of the run after `change` edited its history or its result.
std::uint64_t digest_after(const std::function<void(history&, run_result&)>& change) {
  auto r = digested_run();
  auto h = std::make_shared<history>(*r.hist);
  change(*h, r);
  r.hist = h;
  return run_digest(1, r);
}

TEST(run_digest, every_part_it_chains_moves_it_and_nothing_else_does) {
  const auto base = run_digest(1, digested_run());
  EXPECT_EQ(base, run_digest(1, digested_run()));
  EXPECT_NE(base, run_digest(2, digested_run())) << "the world's digest";
  struct part {
    std::string name;
    std::function<void(history&, run_result&)> change;
  };
  const std::vector<part> chained = {
      {"an op's outcome", [](history& h, run_result&) { h.ops[0].outcome = status::timeout; }},
      {"an op's bytes", [](history& h, run_result&) { h.ops[0].bytes += 1; }},
      {"an op's offset", [](history& h, run_result&) { h.ops[0].offset += 1; }},
      {"an op's completion time", [](history& h, run_result&) { h.ops[0].complete_us += 1; }},
      {"an op's target incarnation",
       [](history& h, run_result&) { h.ops[0].target_incarnation += 1; }},
      {"an op's data seed", [](history& h, run_result&) { h.ops[0].data_seed += 1; }},
      {"a core event's kind",
       [](history& h, run_result&) { h.events[0].kind = event_kind::server_executed; }},
      {"a core event's length", [](history& h, run_result&) { h.events[0].length += 1; }},
      {"a core event's incarnation",
       [](history& h, run_result&) { h.events[0].incarnation += 1; }},
      {"a core event's opcode",
       [](history& h, run_result&) { h.events[0].op = wire::opcode::write; }},
      {"a core event's registration id",
       [](history& h, run_result&) { h.events[0].registration_id += 1; }},
      {"a slice's offset in its task", [](history& h, run_result&) { h.events[0].offset += 1; }},
      {"a core event's lane", [](history& h, run_result&) { h.events[0].lane += 1; }},
      {"a core event's rail", [](history& h, run_result&) { h.events[0].rail += 1; }},
      {"a core event's epoch", [](history& h, run_result&) { h.events[0].epoch += 1; }},
      {"a mark's text", [](history& h, run_result&) { h.marks[0].text += "!"; }},
      {"a relay counter", [](history& h, run_result&) { h.links[0].counters["reset.up"] += 1; }},
      {"a stats sample's counter",
       [](history& h, run_result&) { h.stats[0].stats.connects += 1; }},
      {"a region's final bytes",
       [](history& h, run_result&) { h.finals[0].bytes[3] = std::byte{2}; }},
      {"the verdict", [](history&, run_result& r) { r.passed = !r.passed; }},
      {"the run error", [](history&, run_result& r) { r.error = "lost"; }},
      {"the ops done", [](history&, run_result& r) { r.ops_done -= 1; }},
      {"a checker's violation count",
       [](history&, run_result& r) { r.checkers[1].violations.clear(); }},
  };
  for (const auto& p : chained) EXPECT_NE(base, digest_after(p.change)) << p.name;
  const std::vector<part> left_out = {
      {"the wall-clock seconds", [](history&, run_result& r) { r.seconds += 1; }},
      {"the file", [](history&, run_result& r) { r.file = "elsewhere.yaml"; }},
      {"the replay line", [](history&, run_result& r) { r.replay += " --again"; }},
      {"the code probes", [](history&, run_result& r) { r.probes[0] += 5; }},
  };
  for (const auto& p : left_out) EXPECT_EQ(base, digest_after(p.change)) << p.name;
}

}  // namespace
}  // namespace faultlane::sim
