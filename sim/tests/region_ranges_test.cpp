// The byte ranges ops in flight hold (region_ranges.hpp): two ops never
// overlap on a region's bytes, a first fit is the lowest free gap at or after
// where the stream asked (wrapping round, nothing when no gap is long
// enough), a freed range can be taken again, and a wait says whether a range
// was released, none can be before the phase ends, or time ran out.
// region_ranges.hpp is private to sim/src.
#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "runner/region_ranges.hpp"

namespace faultlane::sim {
namespace {

using std::chrono::milliseconds;

// Rule: [offset, offset + length) is taken only if no byte of it is;
// ranges that only touch do not overlap.
TEST(region_ranges, a_range_is_taken_only_if_none_of_its_bytes_is) {
  region_ranges r;
  ASSERT_TRUE(r.try_take("r", 100, 50));      // [100, 150)
  EXPECT_FALSE(r.try_take("r", 100, 50));     // the same
  EXPECT_FALSE(r.try_take("r", 90, 11));      // its first byte
  EXPECT_FALSE(r.try_take("r", 149, 10));     // its last byte
  EXPECT_FALSE(r.try_take("r", 120, 5));      // inside it
  EXPECT_FALSE(r.try_take("r", 50, 200));     // over it
  EXPECT_TRUE(r.try_take("r", 90, 10));       // ends where it starts
  EXPECT_TRUE(r.try_take("r", 150, 10));      // starts where it ends
  EXPECT_TRUE(r.try_take("other", 100, 50));  // another region's bytes
}

// Rule: a released range can be taken again; each release is counted.
TEST(region_ranges, a_released_range_is_free_again) {
  region_ranges r;
  ASSERT_TRUE(r.try_take("r", 0, 10));
  const auto before = r.releases();
  r.release("r", 0);
  EXPECT_EQ(r.releases(), before + 1);
  EXPECT_TRUE(r.try_take("r", 0, 10));
}

// Rule: the first fit is the lowest gap at or after `from` that holds
// `length`, starting at `from` itself when the gap does.
TEST(region_ranges, the_first_fit_is_the_lowest_gap_at_or_after_from) {
  region_ranges r;
  ASSERT_TRUE(r.try_take("r", 50, 10));  // free: [0, 50) and [60, 100)
  // [40, 50) fits exactly before the taken range.
  EXPECT_EQ(r.take_first_fit("r", 100, 10, 40), std::optional<std::uint64_t>(40));
  r.release("r", 40);
  // From 41 the gap below has no 10 bytes left: the next gap.
  EXPECT_EQ(r.take_first_fit("r", 100, 10, 41), std::optional<std::uint64_t>(60));
  r.release("r", 60);
  // From inside the taken range: the gap after it, at its start.
  EXPECT_EQ(r.take_first_fit("r", 100, 10, 55), std::optional<std::uint64_t>(60));
  r.release("r", 60);
  // From inside a gap that holds it: at `from` itself.
  EXPECT_EQ(r.take_first_fit("r", 100, 10, 70), std::optional<std::uint64_t>(70));
  // The last gap fits exactly up to the region's end.
  EXPECT_EQ(r.take_first_fit("r", 100, 10, 90), std::optional<std::uint64_t>(90));
}

// Rule: with no fit at or after `from`, it wraps round to the lowest fit of
// all; with no gap long enough, nothing is taken.
TEST(region_ranges, the_first_fit_wraps_round_else_finds_nothing) {
  region_ranges r;
  ASSERT_TRUE(r.try_take("r", 20, 80));  // free: [0, 20)
  EXPECT_EQ(r.take_first_fit("r", 100, 20, 30), std::optional<std::uint64_t>(0));
  EXPECT_EQ(r.take_first_fit("r", 100, 1, 0), std::nullopt);
  r.release("r", 0);
  EXPECT_EQ(r.take_first_fit("r", 100, 21, 0), std::nullopt);
  EXPECT_EQ(r.take_first_fit("r", 100, 5, 99), std::optional<std::uint64_t>(0));
  // What it took is taken: the next fit is after it.
  EXPECT_EQ(r.take_first_fit("r", 100, 5, 0), std::optional<std::uint64_t>(5));
  EXPECT_FALSE(r.try_take("r", 4, 2));
}

// Rule: a deferred range stays taken until release_deferred(), which frees
// every deferred range and counts as a release.
TEST(region_ranges, a_deferred_range_is_held_to_the_phase_end) {
  region_ranges r;
  EXPECT_FALSE(r.has_deferred());
  ASSERT_TRUE(r.try_take("r", 0, 10));
  ASSERT_TRUE(r.try_take("q", 0, 10));
  r.defer("r", 0);
  r.defer("q", 0);
  EXPECT_TRUE(r.has_deferred());
  EXPECT_FALSE(r.try_take("r", 0, 10));
  const auto before = r.releases();
  r.release_deferred();
  EXPECT_FALSE(r.has_deferred());
  EXPECT_EQ(r.releases(), before + 1);
  EXPECT_TRUE(r.try_take("r", 0, 10));
  EXPECT_TRUE(r.try_take("q", 0, 10));
}

// Rule: wait() says `released` once a release happened since `seen`,
// `blocked` at once when every range of the region still taken is deferred,
// and `timed_out` at its deadline otherwise.
TEST(region_ranges, a_wait_says_released_blocked_or_timed_out) {
  using wait_result = region_ranges::wait_result;
  region_ranges r;
  ASSERT_TRUE(r.try_take("r", 0, 10));
  ASSERT_TRUE(r.try_take("r", 10, 10));
  const auto far = threads::clock::now() + std::chrono::seconds(10);
  const auto seen = r.releases();
  EXPECT_EQ(r.wait(seen, "r", threads::clock::now() + milliseconds(20)), wait_result::timed_out);
  r.defer("r", 0);
  // One range is deferred, the other may still be released.
  EXPECT_EQ(r.wait(seen, "r", threads::clock::now() + milliseconds(20)), wait_result::timed_out);
  r.defer("r", 10);
  EXPECT_EQ(r.wait(seen, "r", far), wait_result::blocked);
  r.release_deferred();
  EXPECT_EQ(r.wait(seen, "r", far), wait_result::released);
}

}  // namespace
}  // namespace faultlane::sim
