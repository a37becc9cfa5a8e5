// How a target session reads requests between answers (docs/architecture.md,
// "The hot path"): it skips Asio's probe only on the kernel's word that its
// last read left the socket empty, and so never misses a client's end of
// file, whether the FIN came behind a request, in the request's own
// segment, or while an answer was still leaving.
#include <gtest/gtest.h>

#include <algorithm>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "pipeline_peers.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace pipeline_testing;

// `n` READs of 16 bytes, one at a time, each answered before the next
// leaves. Call it inside ASSERT_NO_FATAL_FAILURE.
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

// Requests made by `request(i)`, one at a time, each answered ok (with
// `payload` bytes after the answer) before the next leaves, until the session has read one without
// the probe; false if none was within `most`. A read is trusted only when the probe before it found
// nothing and the reactor's report performed it; once one is, each read after it skips the probe
// and is performed on the reactor's report. But the probe finds the next request when the client
// sends it first, which a loaded machine can make happen many times in a row (the client, woken by
// the answer, runs before the session's next receive): hence a bound, not a count.
template <typename MakeRequest>
bool exchange_until_unprobed(const transport& target, byte_client& client, MakeRequest request,
                             std::size_t payload, int most = 500) {
  const std::uint64_t before = target.stats().requests_read_unprobed;
  std::vector<std::byte> got(payload);
  for (int i = 0; i < most; ++i) {
    client.send(request(i));
    auto a = client.answer(payload > 0 ? &got : nullptr);
    if (!a || a->status != wire::wire_status::ok) {
      ADD_FAILURE() << "request " << i << " was not answered ok";
      return false;
    }
    if (target.stats().requests_read_unprobed > before) return true;
  }
  return false;
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

// A WRITE whose body is cut short by the client's FIN, in the same segment:
// the session takes the header and the part of the body that came, finds
// the end of file where the rest should be, and ends there. Nothing is
// answered, the WRITE does not land, and the target serves the next client.
TEST(transport_pipeline, a_write_body_cut_short_by_the_fin_ends_the_session_unanswered) {
  auto target = start(loopback_config());
  std::vector<std::byte> memory(4096);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  std::vector<std::byte> out;
  append(out, {wire::opcode::write, 0, 1, id, 0, 64}, pattern(10, 49));  // 10 of 64 bytes
  {
    byte_client client(target->descriptor().endpoints[0]);
    client.send_then_shut_down(out);
    EXPECT_TRUE(client.closed_by_peer()) << "the cut WRITE was answered, or its session stayed";
  }
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 0u; }));
  auto stats = target->stats();
  EXPECT_EQ(stats.server_writes, 0u);
  EXPECT_EQ(stats.sessions_timed_out, 0u);
  EXPECT_EQ(stats.handler_exceptions, 0u);
  byte_client next(target->descriptor().endpoints[0]);
  ASSERT_NO_FATAL_FAILURE(warm_up(next, id, 1));
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
  auto small_read = [&](int i) {
    std::vector<std::byte> out;
    append(out, {wire::opcode::read, 0, 100u + i, id, 0, 16});
    return out;
  };
  if (reads_can_skip_the_probe()) {
    ASSERT_TRUE(exchange_until_unprobed(*target, client, small_read, 16))
        << "no request read left the socket empty";
  } else {
    ASSERT_NO_FATAL_FAILURE(warm_up(client, id, 3));
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

// A WRITE whose header and body fill the read-ahead exactly comes in one
// read that leaves the socket empty, so the session reads the next request
// without the probe, and so on; one byte more and the read leaves that byte
// behind, so the next read probes, and no read is ever trusted. The test
// needs each request to arrive as one segment, as it does on loopback
// with Linux's default socket buffers (a send buffer held small by
// SO_SNDBUF or a low tcp_wmem could split it).
TEST(transport_pipeline, a_write_that_fills_the_read_ahead_is_read_in_one_receive) {
  if (!reads_can_skip_the_probe()) GTEST_SKIP() << "reads always probe on this Asio or kernel";
  auto target = start(loopback_config());
  std::vector<std::byte> memory(limits::request_read_ahead_bytes);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto write_of = [&](std::size_t body) {
    return [body, id](int i) {
      std::vector<std::byte> out;
      append(out, {wire::opcode::write, 0, 1u + i, id, 0, body}, pattern(body, 60 + i % 64));
      return out;
    };
  };
  constexpr std::size_t fills = limits::request_read_ahead_bytes - wire::request_frame_bytes;
  {
    byte_client client(target->descriptor().endpoints[0]);
    EXPECT_FALSE(exchange_until_unprobed(*target, client, write_of(fills + 1), 0, 100))
        << "a read that left a byte behind was trusted";
  }
  byte_client client(target->descriptor().endpoints[0]);
  ASSERT_TRUE(exchange_until_unprobed(*target, client, write_of(fills), 0))
      << "a WRITE that filled the read-ahead was never read in one receive";
  // From here on every read skips the probe.
  const std::uint64_t skipped = target->stats().requests_read_unprobed;
  constexpr int more = 4;
  for (int i = 0; i < more; ++i) {
    client.send(write_of(fills)(i));
    auto a = client.answer();
    ASSERT_TRUE(a && a->status == wire::wire_status::ok) << "WRITE " << i;
  }
  // Each counted at the start of the read after its answer, which the
  // client may see first: the last may not be counted yet.
  EXPECT_GE(target->stats().requests_read_unprobed, skipped + more - 1)
      << "a read that followed one without the probe probed";
  // The body came out of the read-ahead, whole and in place: read back
  // (through the target, so the check is ordered after its copy).
  std::vector<std::byte> back(fills);
  std::vector<std::byte> read_back;
  append(read_back, {wire::opcode::read, 0, 1000, id, 0, fills});
  client.send(read_back);
  auto answered = client.answer(&back);
  ASSERT_TRUE(answered && answered->status == wire::wire_status::ok);
  EXPECT_EQ(back, pattern(fills, 60 + (more - 1) % 64)) << "the last WRITE's body did not land";
  EXPECT_TRUE(target->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
