// region_ranges: the bytes of each region that a scenario run's ops in
// flight touch (region_ranges.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runner/threads.hpp"

namespace faultlane::sim {

// The byte ranges of each region that ops in flight touch. A stream draws
// an offset that overlaps none of them: two in-flight ops on the same bytes
// would be a data race in the target's memory (ThreadSanitizer reports it,
// rightly), and their result is undefined anyway. Ranges are freed when the
// op's callback ran.
class region_ranges {
 public:
  // Takes [offset, offset + length) of `region` if free.
  bool try_take(const std::string& region, std::uint64_t offset, std::uint64_t length);
  // Takes the first free `length` bytes of `region` (of `size` bytes) at or
  // after `from`, wrapping round; nullopt when no gap is that long.
  std::optional<std::uint64_t> take_first_fit(const std::string& region, std::uint64_t size,
                                              std::uint64_t length, std::uint64_t from);
  void release(const std::string& region, std::uint64_t offset);
  // Keeps the range taken until release_deferred() (the phase's end).
  void defer(const std::string& region, std::uint64_t offset);
  void release_deferred();
  bool has_deferred();
  // Releases so far; wait() returns `released` when that changed, `blocked`
  // at once when every range of `region` still taken is deferred (nothing
  // can free one before the phase ends), `timed_out` at `deadline`.
  std::uint64_t releases();
  enum class wait_result : std::uint8_t { released, blocked, timed_out };
  wait_result wait(std::uint64_t seen, const std::string& region,
                   threads::clock::time_point deadline);

 private:
  std::vector<std::pair<std::string, std::uint64_t>> deferred_;
  threads::mutex mutex_;
  threads::condition_variable cv_;
  std::map<std::string, std::map<std::uint64_t, std::uint64_t>> taken_;  // offset -> end
  std::uint64_t releases_ = 0;
};

}  // namespace faultlane::sim
