// The runner's in-process peer (peer.hpp): a region registered again with
// fresh bytes gets new memory while the old stays alive for readers that
// still hold the old registration, a region registered again with seed 0
// keeps its bytes, and dump() answers for the memory a region has now.
// peer.hpp is private to sim/src.
#include <gtest/gtest.h>

#include <vector>

#include "faultlane/testing/transport_fixture.hpp"
#include "runner/peer.hpp"

namespace faultlane::sim {
namespace {

// Rule: fresh bytes (a seed) mean fresh memory, and the memory they
// replace stays alive as long as the peer: a reader still holding the
// first registration reads its bytes, not freed memory. Seed 0 registers
// the same memory again: a WRITE through the registration before it shows
// in the region's bytes. (The in-process peer is the real-time build's:
// this file is not built in the dsim preset.)
TEST(local_peer, fresh_bytes_leave_the_old_memory_to_its_registration) {
  recorder rec(true);
  auto peer = make_local_peer(transport_spec{.name = "server"}, rec);
  ASSERT_TRUE(peer->start(0).ok());
  const region_spec region{.name = "r", .transport = "server", .size = 4096};
  const auto first = peer->register_region(region, 1).value();
  const auto second = peer->register_region(region, 2).value();
  EXPECT_EQ(peer->dump("r").value(), testing::pattern(4096, 2));
  auto reader = testing::start(testing::loopback_config());
  ASSERT_NE(reader, nullptr);
  auto seg = reader->open_segment(peer->descriptor()).value();
  std::vector<std::byte> back(4096);
  ASSERT_EQ(testing::run_one(*reader, testing::read_req(seg, first, 0, back.data(), 4096)).code,
            status::ok);
  EXPECT_EQ(back, testing::pattern(4096, 1)) << "the first registration's bytes changed";
  ASSERT_TRUE(peer->register_region(region, 0).ok());
  auto written = testing::pattern(4096, 9);
  const auto wrote = testing::write_req(seg, second, 0, written.data(), 4096);
  ASSERT_EQ(testing::run_one(*reader, wrote).code, status::ok);
  EXPECT_EQ(peer->dump("r").value(), written) << "seed 0 gave the region other memory";
  EXPECT_TRUE(reader->shutdown().ok());
  EXPECT_TRUE(peer->shutdown().ok());
  peer->stop();
}

// Rule: dump() answers for a region with memory now: one never registered,
// or any after stop(), is invalid_argument; a live one, its size in bytes.
TEST(local_peer, dump_answers_only_for_a_region_with_memory) {
  recorder rec(true);
  auto peer = make_local_peer(transport_spec{.name = "server"}, rec);
  ASSERT_TRUE(peer->start(0).ok());
  EXPECT_EQ(peer->dump("r").code(), status::invalid_argument);
  ASSERT_TRUE(peer->register_region({.name = "r", .transport = "server", .size = 100}, 3).ok());
  EXPECT_EQ(peer->dump("r").value(), testing::pattern(100, 3));
  EXPECT_EQ(peer->dump("other").code(), status::invalid_argument);
  EXPECT_TRUE(peer->shutdown().ok());
  peer->stop();
  auto gone = peer->dump("r");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.code(), status::invalid_argument);
  EXPECT_NE(gone.error().message.find("no memory for region r"), std::string::npos);
}

}  // namespace
}  // namespace faultlane::sim
