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

#include "faultlane/sim/checkers.hpp"
#include "faultlane/sim/history.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim {

struct run_result {
  std::string scenario;  // name
  std::string file;
  std::uint64_t seed = 0;
  bool passed = false;
  bool skipped = false;        // e.g. needs failpoints in a build without them
  std::string skip_reason;
  std::string error;           // the run itself failed (could not start, timed out)
  std::vector<checker_result> checkers;
  std::uint64_t ops_total = 0;  // planned
  std::uint64_t ops_done = 0;   // completed
  std::map<std::string, std::uint64_t> faults_fired;  // name (summed over links) -> count
  double seconds = 0;
  std::string replay;  // one shell line that replays exactly this run
  std::shared_ptr<const history> hist;  // kept for the timeline
};

// The first failing checker's violations, the seed and the replay line.
std::string failure_text(const run_result& r);
// scenario | seed | ops | faults fired | checkers | verdict | seconds
std::string summary_table(const std::vector<run_result>& runs);

std::string to_json(const std::vector<run_result>& runs);
// One <testcase> per scenario x seed; a failure carries the checker's text.
std::string to_junit(const std::vector<run_result>& runs);
// Needs r.hist.
std::string timeline_html(const run_result& r);

}  // namespace faultlane::sim
