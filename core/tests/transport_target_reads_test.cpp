// How a target session reads requests between answers (docs/architecture.md,
// "The hot path"): it skips Asio's probe only on the kernel's word that its
// last read left the socket empty, and so never misses a client's end of
// file, whether the FIN came behind a request, in the request's own
// segment, or while an answer was still leaving.
#include <gtest/gtest.h>

#include <algorithm>

#include "faultlane/core/frame.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "pipeline_peers.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace pipeline_testing;

// `n` READs of 16 bytes, one at a time, each answered before the next
// leaves: past the first, the session's request reads are performed on
// the reactor's report (the read after an answer finds nothing yet), and
// each left the socket empty. Call it inside ASSERT_NO_FATAL_FAILURE.
void warm_up(byte_client& client, registration_id id, int n) {
  for (int i = 0; i < n; ++i) {
    std::vector<std::byte> request;
    append(request, {wire::opcode::read, 0, 100u + i, id, 0, 16});
    client.send(request);
    std::vector<std::byte> got(16);
    auto a = client.answer(&got);
    ASSERT_TRUE(a) << "warm-up " << i;
    ASSERT_EQ(a->status, wire::wire_status::ok);
  }
}

// A request with the client's FIN right behind it: the target answers it,
// then sees the end of file (its read of the request usually took the FIN
// too, and nothing more will come) and closes the session.
TEST(transport_pipeline, a_request_with_the_fin_behind_it_is_answered_then_the_session_ends) {
  auto target = start(loopback_config());
  auto memory = pattern(4096, 46);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  std::vector<std::byte> out;
  append(out, {wire::opcode::read, 0, 1, id, 0, 16});
  byte_client client(target->descriptor().endpoints[0]);
  client.send(out);
  client.shut_down_sending();
  std::vector<std::byte> got(16);
  auto a = client.answer(&got);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, wire::wire_status::ok);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), memory.begin()));
  EXPECT_TRUE(client.closed_by_peer()) << "the session missed the end of file";
  EXPECT_TRUE(eventually([&] { return target->stats().sessions_live == 0u; }));
  EXPECT_TRUE(target->shutdown().ok());
}

// The same with the FIN in the request's own segment, on a session past
// its first exchange: the target's read of the request is performed on the
// reactor's report and takes the request, the FIN coming with it, and the
// FIN's edge is gone. The kernel says so (TCP_INQ), so the next read
// probes and finds the end of file. Had it trusted the read, it would
// wait for good: the session has no deadline with nothing staged.
TEST(transport_pipeline, a_request_with_the_fin_in_its_segment_is_answered_then_the_session_ends) {
  auto target = start(loopback_config());
  auto memory = pattern(4096, 47);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  byte_client client(target->descriptor().endpoints[0]);
  ASSERT_NO_FATAL_FAILURE(warm_up(client, id, 1));
  std::vector<std::byte> got(16);
  std::vector<std::byte> out;
  append(out, {wire::opcode::read, 0, 2, id, 16, 16});
  client.send_then_shut_down(out);
  auto a = client.answer(&got);
  ASSERT_TRUE(a) << "the request with the FIN was not answered";
  EXPECT_EQ(a->request_id, 2u);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), memory.begin() + 16));
  EXPECT_TRUE(client.closed_by_peer()) << "the session missed the end of file";
  EXPECT_TRUE(eventually([&] { return target->stats().sessions_live == 0u; }));
  EXPECT_TRUE(target->shutdown().ok());
}

// A request that arrives while a large answer is still leaving (the write
// goes on in a later handler, with no read queued) is read once the answer
// is out: the request read before it left nothing on the socket then, but
// the reactor has reported the socket since, so the next read probes. The
// answer, 16 MiB, cannot leave before the client reads it (a loopback
// socket takes about 4 MiB, and the client's receive buffer grows only as
// it reads), and the client sends the request first. The large request's
// read must have been performed on the reactor's report, so that it left
// nothing: past the warm-up, the session reads without the probe.
TEST(transport_pipeline, a_request_that_came_while_an_answer_was_leaving_is_read) {
  auto target = start(loopback_config());
  auto memory = pattern(16u << 20, 48);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  byte_client client(target->descriptor().endpoints[0]);
  ASSERT_NO_FATAL_FAILURE(warm_up(client, id, 3));
  if (reads_can_skip_the_probe()) {
    ASSERT_TRUE(eventually([&] { return target->stats().requests_read_unprobed > 0; }))
        << "no request read of the warm-up left the socket empty";
  }
  std::vector<std::byte> small(16);
  std::vector<std::byte> large_request;
  append(large_request, {wire::opcode::read, 0, 2, id, 0, memory.size()});
  client.send(large_request);
  auto large = client.answer();  // the header: the answer is leaving
  ASSERT_TRUE(large);
  EXPECT_EQ(large->request_id, 2u);
  std::vector<std::byte> next;
  append(next, {wire::opcode::read, 0, 3, id, 32, 16});
  client.send_then_shut_down(next);
  std::vector<std::byte> payload(memory.size());
  ASSERT_FALSE(client.read(asio::buffer(payload)));
  EXPECT_EQ(payload, memory);
  auto a = client.answer(&small);
  ASSERT_TRUE(a) << "the request that came while the answer left was never read";
  EXPECT_EQ(a->request_id, 3u);
  EXPECT_TRUE(std::equal(small.begin(), small.end(), memory.begin() + 32));
  EXPECT_TRUE(client.closed_by_peer()) << "the session missed the end of file";
  EXPECT_TRUE(target->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
