#include "faultlane/core/endpoint.hpp"

#include <gtest/gtest.h>

namespace faultlane {
namespace {

TEST(endpoint, parses_host_and_port_at_the_bounds) {
  auto e = parse_endpoint("127.0.0.2:65535");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e.value().address, "127.0.0.2");
  EXPECT_EQ(e.value().port, 65535);
  EXPECT_EQ(e.value().str(), "127.0.0.2:65535");
  EXPECT_EQ(parse_endpoint("localhost:0").value(), (endpoint{"localhost", 0}));
  EXPECT_EQ(parse_endpoint("[::1]:80").value().address, "[::1]");  // the last colon splits
}

TEST(endpoint, rejects_each_malformed_form) {
  for (const char* bad : {"127.0.0.1:65536", "127.0.0.1:", ":80", "127.0.0.1", "host:8o", "host:-1",
                          "host:123456", ""}) {
    auto e = parse_endpoint(bad);
    ASSERT_FALSE(e.ok()) << bad;
    EXPECT_EQ(e.code(), status::invalid_argument) << bad;
    EXPECT_NE(e.error().message.find(bad), std::string::npos) << e.error().message;
  }
}

// Rule: a port is at most five digits: a leading zero does not make room for
// a sixth, and a number that would wrap 32 bits is not taken for a small one.
TEST(endpoint, a_port_is_at_most_five_digits) {
  EXPECT_EQ(parse_endpoint("host:65535").value().port, 65535);
  for (const char* bad : {"host:065535", "host:000080", "host:4294967296", "host:4294967376"}) {
    EXPECT_FALSE(parse_endpoint(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace faultlane
