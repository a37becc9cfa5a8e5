// Tells ThreadSanitizer, in the order TCP really gives, that a send read a
// buffer.
//
// ThreadSanitizer models a socket send as a release, and a receive as an
// acquire, on one sync object shared by every socket of the process. That
// is exactly the causality TCP gives an in-process test: what a peer does
// after receiving our bytes happens after we sent them. But its `sendmsg`
// interceptor records the read of the sent buffer *after* the release (and
// after the syscall), so a thread preempted right after sending can have
// its read recorded after the peer already reacted, and a race is reported
// that no schedule can produce. The sanitizer preset therefore turns that
// late recording off (intercept_send=0, sanitizer/default_options.cpp) and
// the core records each payload it sends here, before the send.
#pragma once

#include <cstddef>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FAULTLANE_TSAN 1
#endif
#endif

#if defined(FAULTLANE_TSAN)
extern "C" void __tsan_read_range(void* addr, unsigned long size);
#endif

namespace faultlane::detail {

inline void note_send_reads(const void* data, std::size_t size) {
#if defined(FAULTLANE_TSAN)
  __tsan_read_range(const_cast<void*>(data), size);
#else
  (void)data;
  (void)size;
#endif
}

}  // namespace faultlane::detail
