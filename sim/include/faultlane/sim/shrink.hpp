// shrink: reduces a failing scenario to a small one that still fails.
//
// Delta debugging over the scenario's parts: drop link faults and events
// (in halves, then quarters, down to one at a time), then lower numbers
// (op counts, depth, batch, sizes, event trigger counts). A candidate is
// kept only if it still fails the same checker; each candidate runs
// `runs_per_candidate` times and counts as failing if any run does, so a
// nondeterministic pass cannot fake progress. A candidate the loader would
// reject (a removed fault still named by an event) is never run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "faultlane/sim/runner.hpp"

namespace faultlane::sim {

struct shrink_options {
  std::string checker;  // the checker the original failed
  // One of its violations' evidence: a candidate must show evidence of the
  // same form (digits and ids aside), so the shrinker cannot trade the bug
  // for another that the same checker also reports. Empty: any violation
  // of `checker` will do.
  std::string evidence;
  int runs_per_candidate = 3;
  run_options run;                              // seed and child program of the failing run
  std::function<void(const std::string&)> log;  // one line per accepted step
};

struct shrink_outcome {
  scenario minimal;
  std::size_t candidates_run = 0;
  std::size_t steps_kept = 0;
  bool confirmed = false;  // the minimal scenario failed once more at the end
};

shrink_outcome shrink(const scenario& failing, const shrink_options& options);

// The candidates of the lowering step, each `s` with one number lowered:
// per stream, its count halved (at least 1), its depth halved (at least 1,
// the batch within it), its batch 1, a size range's top halved towards its
// bottom, a size list's first half and the list without its first value;
// per stream_ops event, its ops halved. Nothing is offered that is already
// at its least (a count, depth or batch of 1, a range of one size, a list
// of one value, ops 1).
std::vector<scenario> lowered(const scenario& s);

// The first failing checker of a run, or "" if none failed.
std::string first_failing_checker(const run_result& r);
// Evidence with its numbers and ids taken out: what "the same failure" compares.
std::string evidence_form(const std::string& evidence);

}  // namespace faultlane::sim
