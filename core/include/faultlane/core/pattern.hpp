// fill_pattern: the seeded byte pattern that data checks compare against.
//
// Bytes depend on the seed and their position, so a shifted, reordered or
// stale byte never matches by accident. One definition serves the
// benchmark's --verify, the transport tests, the scenario runner and its
// data checker.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "faultlane/base/hash.hpp"

namespace faultlane {

// Word i of the pattern is stable_hash(seed * odd + i): one multiply and a
// mix per 8 bytes (the scenario checkers regenerate every WRITE's bytes, so
// this runs at memory speed rather than at a generator's pace), and every
// word depends on both the seed and its position.
inline void fill_pattern(std::byte* p, std::size_t n, std::uint64_t seed) {
  const std::uint64_t base = seed * 0xd1342543de82ef95ull;
  std::uint64_t i = 0;
  for (; (i + 1) * 8 <= n; ++i) {
    const auto v = stable_hash(base + i);
    std::memcpy(p + i * 8, &v, 8);
  }
  const auto v = stable_hash(base + i);
  std::memcpy(p + i * 8, &v, n - i * 8);
}

}  // namespace faultlane
