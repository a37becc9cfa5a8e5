// child_digest: runs one test of this same binary in a child process (a
// fresh address space: ASLR places everything elsewhere) and returns the
// digest it prints as "digest=<16 hex digits>", or what it printed instead.
// The child test is a DISABLED_ one (run only when asked by name) that
// reads its seed from FAULTLANE_DSIM_SEED.
#pragma once

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace faultlane::dsim::testing {

inline std::string child_digest(const std::string& test_name, std::uint64_t seed) {
  std::array<char, 4096> self{};
  const auto len = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (len <= 0) return "readlink failed";
  const auto command = fmt::format(
      "FAULTLANE_DSIM_SEED={} '{}' --gtest_also_run_disabled_tests --gtest_filter={} 2>&1", seed,
      std::string(self.data(), static_cast<std::size_t>(len)), test_name);
  std::unique_ptr<FILE, int (*)(FILE*)> out(popen(command.c_str(), "r"), pclose);
  if (!out) return "popen failed";
  std::string text;
  std::array<char, 512> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), out.get()) != nullptr) {
    text += line.data();
  }
  const auto at = text.find("digest=");
  return at == std::string::npos ? text : text.substr(at + 7, 16);
}

// The line a child test prints for child_digest().
inline void print_digest(std::uint64_t digest) {
  std::printf("digest=%016llx\n", static_cast<unsigned long long>(digest));
}

}  // namespace faultlane::dsim::testing
