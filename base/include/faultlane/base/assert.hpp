// FL_ASSERT: the always-on assertion for programmer errors.
//
// It stays on in release builds: a broken invariant in a transfer core is a
// corrupted buffer waiting to happen, and stopping at once is cheaper than
// finding it later. Failures from outside the process (a socket, a peer, a
// file, a flag) are never asserted; they travel as status values.
#pragma once

namespace faultlane::detail {
[[noreturn]] void assert_failed(const char* expression, const char* file, int line) noexcept;
}  // namespace faultlane::detail

#define FL_ASSERT(condition)                                              \
  do {                                                                    \
    if (!(condition)) [[unlikely]]                                        \
      ::faultlane::detail::assert_failed(#condition, __FILE__, __LINE__); \
  } while (false)
