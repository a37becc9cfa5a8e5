#include "faultlane/core/status.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace faultlane {
namespace {

TEST(status, every_code_has_a_distinct_name) {
  std::set<std::string_view> names;
  for (int i = 0; i < status_count; ++i) {
    auto name = to_string(static_cast<status>(i));
    EXPECT_FALSE(name.empty());
    names.insert(name);
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(status_count));
}

TEST(status, root_causes_outrank_the_cancellations_they_cause) {
  EXPECT_EQ(most_severe(status::cancelled, status::timeout), status::timeout);
  EXPECT_EQ(most_severe(status::timeout, status::cancelled), status::timeout);
  EXPECT_EQ(most_severe(status::ok, status::cancelled), status::cancelled);
  EXPECT_EQ(most_severe(status::stale_registration, status::cancelled), status::stale_registration);
  for (int i = 0; i < status_count; ++i) {
    auto s = static_cast<status>(i);
    if (s == status::internal_error) continue;
    EXPECT_EQ(most_severe(s, status::ambiguous_write), status::ambiguous_write) << to_string(s);
    EXPECT_GE(severity(s), severity(status::ok));
  }
}

TEST(result, carries_a_value_or_an_error) {
  result<int> good = 7;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good.value(), 7);
  EXPECT_EQ(good.code(), status::ok);

  result<int> bad = error{status::busy, "queue full"};
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), status::busy);
  EXPECT_EQ(bad.error().message, "queue full");

  result<void> done;
  EXPECT_TRUE(done.ok());
  result<void> failed = error{status::timeout, "late"};
  EXPECT_EQ(failed.code(), status::timeout);
}

}  // namespace
}  // namespace faultlane
