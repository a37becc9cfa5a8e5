// stable_hash: the one 64-bit mix in faultlane (the splitmix64 finaliser),
// for anything that must hash the same way in every process and run: a
// relay's seeded fault draws, keys spread over buckets.
#pragma once

#include <cstdint>
#include <string_view>

namespace faultlane {

constexpr std::uint64_t stable_hash(std::uint64_t key) noexcept {
  key += 0x9e3779b97f4a7c15ull;
  key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
  key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
  return key ^ (key >> 31);
}

// FNV-1a, then the mix, so short keys still spread over every bucket.
constexpr std::uint64_t stable_hash(std::string_view key) noexcept {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  return stable_hash(h);
}

}  // namespace faultlane
