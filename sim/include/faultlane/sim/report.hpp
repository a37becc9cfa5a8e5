// report: what `faultlane-sim run` prints and writes about its runs.
//
// A run_result is one scenario run with one seed. The summary table and the
// failure text go to the terminal; JSON and JUnit XML go to files CI reads;
// the timeline is one self-contained HTML page (inline SVG, no scripts or
// styles fetched from anywhere) that shows one row per lane, session and
// relay connection, each exchange as a bar coloured by outcome, each fault
// and event as a mark, and the failing checker's evidence highlighted.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "faultlane/base/probe.hpp"
#include "faultlane/sim/checkers.hpp"
#include "faultlane/sim/history.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

// What the reports keep of a run's history once the history itself is let
// go (a swarm keeps no history: one seed's is tens of MiB): the ops by how
// they ended ("not_completed" for ops that never completed), and each
// link's relay counters and its tap records counted by kind.
struct link_counts {
  std::string name, initiator, target;
  std::size_t rail = 0;
  bool tapped = false;
  std::map<std::string, std::uint64_t> counters;
  std::map<std::string, std::uint64_t> tap_records;
};
struct run_counts {
  std::map<std::string, std::uint64_t> ops_by_status;
  std::vector<link_counts> links;
};
run_counts count_history(const history& h);

struct run_result {
  std::string scenario;  // name
  std::string file;
  std::uint64_t seed = 0;
  bool passed = false;
  bool skipped = false;  // e.g. needs failpoints in a build without them
  std::string skip_reason;
  std::string error;  // the run itself failed (could not start, timed out)
  std::vector<checker_result> checkers;
  std::uint64_t ops_total = 0;                        // planned
  std::uint64_t ops_done = 0;                         // completed
  std::map<std::string, std::uint64_t> faults_fired;  // name (summed over links) -> count
  double seconds = 0;                                 // the run, checkers included
  double check_seconds = 0;                           // of which the checkers
  std::vector<caller_summary> callers;                // the `control:` callers, in file order
  std::string replay;  // one shell line that replays exactly this run
  run_counts counts;   // of hist, made when the run ends
  // For the failure text and the timeline; callers that need neither let
  // it go (faultlane-sim's swarm does, for every run).
  std::shared_ptr<const history> hist;
  // A deterministic run (the dsim build, docs/dsim.md): the run digest
  // (the same for the same file and seed, in any process), the virtual
  // time it took, and the world's latest events when asked for.
  bool deterministic = false;
  std::uint64_t digest = 0;
  double virtual_seconds = 0;
  std::string trace;
  // The code probes this run reached (docs/dsim.md, "Code probes"): hits
  // per probe, in FAULTLANE_PROBES' order; all zero in a build that does
  // not count them. Neither the verdict nor the digest reads them.
  probes::counts probes{};
};

// How a run ended, in the order the reports decide it: a run error wins,
// then a skip, then `passed`.
enum class run_outcome : std::uint8_t { passed, failed, skipped, error };
run_outcome outcome_of(const run_result& r) noexcept;

// The first checker with violations, nullptr if none has any.
const checker_result* first_failure(const run_result& r) noexcept;

// "PASS", "FAIL exactly_once", "SKIP needs failpoints" or "ERROR": the
// summary table's verdict column (untruncated) and the timeline's header.
std::string verdict(const run_result& r);

// Sum of faults_fired.
std::uint64_t faults_fired_total(const run_result& r) noexcept;

// A failed run: the first failing checker's name and its violations (the
// first 10, one a line, then "... and N more"), each stream's ops by
// outcome, the counters that say why ops failed, the seed and the replay
// line. A run error: the error, the same outcomes and counters (when the
// run recorded any), the seed and the replay line. Passed and skipped
// runs: empty.
std::string failure_text(const run_result& r);
// scenario | seed | ops | faults fired | checkers | verdict | seconds, one
// line per run under a header and a rule, then "18 passed, 1 failed,
// 1 skipped" (", 1 error" when there is one). Fits 100 columns: long
// scenario names and verdicts are shortened in the middle with "...".
std::string summary_table(const std::vector<run_result>& runs);
// A run digest as the reports print it: 16 hex digits.
std::string digest_text(std::uint64_t digest);
// Deterministic runs, one a line: scenario, seed, digest, virtual and wall
// time and their ratio; empty when no run was deterministic.
std::string deterministic_text(const std::vector<run_result>& runs);
// One line per `control:` caller of each run ("SCENARIO seed S: " then
// describe(caller_summary)); empty when no run had callers.
std::string callers_text(const std::vector<run_result>& runs);

// Code probe hits over a set of runs: every probe this build declares, by
// name, summed over the runs (0: no run reached it); a merged report keeps
// the names of another build's table too.
struct probe_summary {
  bool counted = probes::counted;  // false: a build (or an input) without probes
  std::map<std::string, std::uint64_t> hits;
  std::size_t runs = 0;
};
probe_summary summarize_probes(const std::vector<run_result>& runs);
// The declared probes with no hit, in the table's order.
std::vector<std::string> never_reached(const probe_summary& p);
// "code probes: R of N reached over K runs", a table of the probes reached
// (probe | hits) and "never reached (M): a, b, ..." wrapped to 100
// columns; one line saying they are not counted where they are not.
std::string probes_text(const probe_summary& p);

// {"runs": [...]}: every run_result field but hist, the checkers with every
// violation field, and "counters": the run's counts (ops by outcome
// status, each link's relay counters and tap record counts); a run's "probes" holds the probes it
// reached. Then the runs' probes: "probes" (every declared name: hits,
// summed), "probes_never_reached" and "probes_counted".
std::string to_json(const std::vector<run_result>& runs);
// JUnit XML as Jenkins and GitLab read it: one <testsuite name="faultlane-sim">
// with one <testcase> per scenario x seed; a failure's message is
// "CHECKER: first evidence" and its body failure_text(); a run error is an
// <error>, a skipped run a <skipped>.
std::string to_junit(const std::vector<run_result>& runs);
// One self-contained HTML page (inline CSS and SVG, no script, no URL
// fetched). Without r.hist it shows the header and says there is no history.
std::string timeline_html(const run_result& r);

}  // namespace faultlane::sim
