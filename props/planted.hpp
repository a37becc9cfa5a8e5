// Helpers for planted-violation tests: every property in this folder is
// also run once against a deliberately broken variant, and must fail there.
// Otherwise the property could be one that cannot fail.
#pragma once

#include <rapidcheck.h>

#include <string>

namespace faultlane::props {

// Runs `property` as rapidcheck would and returns true when it found a
// counterexample. rapidcheck prints the shrunk counterexample and the
// RC_PARAMS that reproduce it, as it does for a real failure.
//
// One rapidcheck run uses one seed per process, so repeating rc::check
// would repeat the same cases. Instead each case draws `draws_per_case`
// fresh inputs, so a planted bug that only some inputs expose is found
// with near certainty and the planted test itself never flakes.
template <typename Property>
bool finds_counterexample(const std::string& what, const Property& property,
                          int draws_per_case = 10) {
  return !rc::check("planted violation: " + what, [&] {
    for (int i = 0; i < draws_per_case; ++i) property();
  });
}

// rapidcheck's inRange grows with the test size, so early tests stay near
// the low end. Where a choice must be uniform from the first test (which
// field to corrupt, which slice to fail), generate at the nominal size.
template <typename T>
rc::Gen<T> uniform_in_range(T low, T high) {
  return rc::gen::resize(rc::kNominalSize, rc::gen::inRange<T>(low, high));
}

}  // namespace faultlane::props
