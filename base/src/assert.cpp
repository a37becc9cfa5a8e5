// The failure path of FL_ASSERT: say what broke and where, then abort so a
// core dump or a sanitizer report captures the state.
#include "faultlane/base/assert.hpp"

#include <cstdio>
#include <cstdlib>

namespace faultlane::detail {

void assert_failed(const char* expression, const char* file, int line) noexcept {
  std::fprintf(stderr, "faultlane: assertion failed: %s (%s:%d)\n", expression, file, line);
  std::fflush(stderr);
  std::abort();
}

}  // namespace faultlane::detail
