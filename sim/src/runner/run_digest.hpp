// run_digest: a deterministic run's digest (run_digest.cpp).
#pragma once

#include <cstdint>

#include "faultlane/sim/report.hpp"

namespace faultlane::sim {

// `world_digest` chained with everything the run recorded and its verdict.
std::uint64_t run_digest(std::uint64_t world_digest, const run_result& r);

}  // namespace faultlane::sim
