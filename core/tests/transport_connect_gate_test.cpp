// The connect gate (docs/architecture.md, peer_group::request_connect): a
// healthy peer's lanes connect in parallel; only after a failed connect
// does one lane probe while the others wait (transport_hardening_test.cpp
// checks that side). The peer here never answers a connect, so every dial
// stays in progress for as long as the test looks.
#include <gtest/gtest.h>

#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace std::chrono_literals;

// Rule: with no connect failure yet, every lane dials at once; none waits
// for another's connect to finish.
TEST(transport_connect_gate, a_healthy_peers_lanes_connect_in_parallel) {
  full_backlog_listener deaf;
  auto config = loopback_config();
  config.connections_per_peer = 4;
  config.connect_timeout_ms = 60000;  // no dial ends while the test looks
  auto initiator = start(config);
  segment_descriptor d{0x6a7e, {{"127.0.0.1", deaf.port()}}, 1u << 30, {}};
  auto seg = initiator->open_segment(d).value();
  std::vector<std::vector<std::byte>> back(4, std::vector<std::byte>(64));
  std::vector<transfer_request> four;
  for (auto& b : back) four.push_back(read_req(seg, 1, 0, b.data(), 64));
  auto batch = initiator->submit(four).value();  // one READ per lane
  EXPECT_TRUE(eventually([&] { return initiator->stats().lanes_connecting == 4; }, 10s))
      << "lanes_connecting " << initiator->stats().lanes_connecting;
  EXPECT_EQ(initiator->stats().connect_failures, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  ASSERT_TRUE(batch->wait(10s));
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(batch->status(i).code, status::shutting_down);
}

}  // namespace
}  // namespace faultlane
