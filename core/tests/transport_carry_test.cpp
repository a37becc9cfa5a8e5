// Answer bytes carried past a refusal (docs/architecture.md, "The hot
// path"; answer_reader.cpp): a refused READ has no payload, so the bytes one
// scatter read took after it belong to the answers behind it, every byte of
// them, wherever that read stopped. The scripted target cuts the answers
// exactly where each test says.
#include <gtest/gtest.h>

#include "faultlane/core/frame.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "pipeline_peers.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace pipeline_testing;
using namespace std::chrono_literals;

// Rule: the bytes a scatter read took past a refused READ are carried to
// the answers behind it down to the last byte, whether that read stopped at
// the end of a later answer, one byte into the next header or two bytes in.
// Three 16-byte READs, the first refused: the answers are 32, 48 and 48
// bytes, and the read is cut at 96 (the second answer's end), 97 and 98.
TEST(transport_carry, bytes_read_past_a_refusal_are_carried_to_the_last_byte) {
  for (const std::size_t cut : {std::size_t{96}, std::size_t{97}, std::size_t{98}}) {
    SCOPED_TRACE(cut);
    scripted_peer peer;
    auto initiator = start(one_lane(8));
    auto seg = initiator->open_segment(peer.descriptor()).value();
    batch_of work(*initiator, seg, "rrr");
    ASSERT_TRUE(peer.accept());
    std::vector<wire::request_frame> got;
    for (int i = 0; i < 3; ++i) got.push_back(peer.next_request().value());
    const auto second = pattern(16, 501);
    const auto third = pattern(16, 502);
    std::vector<std::byte> answers;
    auto add = [&](std::vector<std::byte> a) { answers.insert(answers.end(), a.begin(), a.end()); };
    add(answer_bytes(wire::wire_status_for(status::range_rejected), got[0].request_id, 0, {}));
    add(answer_bytes(wire::wire_status::ok, got[1].request_id, 16, second));
    add(answer_bytes(wire::wire_status::ok, got[2].request_id, 16, third));
    ASSERT_EQ(answers.size(), 128u);
    peer.send_raw(std::span(answers).first(cut));
    // The refusal and the second answer end from what the first read took;
    // only then does the rest come, so the third header is put together
    // from carried bytes and new ones.
    ASSERT_TRUE(eventually([&] { return work.batch->completed() >= 2; }, 10s));
    peer.send_raw(std::span(answers).subspan(cut));
    EXPECT_EQ(work.codes(), (std::vector<status>{status::range_rejected, status::ok, status::ok}));
    EXPECT_EQ(work.buffers[1], second);
    EXPECT_EQ(work.buffers[2], third);
    EXPECT_EQ(initiator->stats().connects, 1u);  // the refusal kept the connection
    EXPECT_TRUE(initiator->shutdown().ok());
  }
}

// Rule: answer bytes left carried when every exchange in flight has ended
// were asked for by nobody: the target cannot be trusted, and the lane
// closes the connection (the next READ connects again) rather than keep
// the bytes for the next answer.
TEST(transport_carry, carried_bytes_nobody_asked_for_close_the_connection) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "rr");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 2; ++i) got.push_back(peer.next_request().value());
  std::vector<std::byte> answers;
  auto add = [&](std::vector<std::byte> a) { answers.insert(answers.end(), a.begin(), a.end()); };
  add(answer_bytes(wire::wire_status_for(status::range_rejected), got[0].request_id, 0, {}));
  add(answer_bytes(wire::wire_status::ok, got[1].request_id, 16, sixteen));
  add(std::vector<std::byte>(10, std::byte{0x5a}));  // after the last answer: nobody's
  peer.send_raw(answers);
  EXPECT_EQ(work.codes(), (std::vector<status>{status::range_rejected, status::ok}));
  EXPECT_EQ(work.buffers[1], sixteen);
  EXPECT_TRUE(eventually([&] { return initiator->stats().lanes_connected == 0; }, 10s))
      << "the lane kept a connection that sent bytes nobody asked for";
  batch_of next(*initiator, seg, "r");
  ASSERT_TRUE(peer.accept());
  peer.answer_ok(peer.next_request().value(), sixteen);
  EXPECT_EQ(next.codes(), std::vector<status>{status::ok});
  EXPECT_EQ(initiator->stats().connects, 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
