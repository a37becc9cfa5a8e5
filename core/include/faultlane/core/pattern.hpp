// fill_pattern: the seeded byte pattern that data checks compare against.
//
// Bytes depend on the seed and their position, so a shifted, reordered or
// stale byte never matches by accident. One definition serves the
// benchmark's --verify, the transport tests and (later) the scenario
// checkers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>

namespace faultlane {

inline void fill_pattern(std::byte* p, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    auto v = rng();
    std::memcpy(p + i, &v, 8);
  }
  auto v = rng();
  std::memcpy(p + i, &v, n - i);
}

}  // namespace faultlane
