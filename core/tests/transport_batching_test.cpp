// Batched hand-off, sends and reads (docs/architecture.md, "The hot
// path"): a batch reaches a lane in one hand-off and leaves in one write,
// answers that arrive together are read together, and the target reads
// requests ahead and answers them together, wherever one read cut them.
#include <gtest/gtest.h>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "pipeline_peers.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace pipeline_testing;
using namespace std::chrono_literals;

// A batch reaches a connected lane in one hand-off, and every request the
// lane has room for leaves in one gather write, WRITE bodies included.
TEST(transport_pipeline, a_batch_leaves_a_connected_lane_in_one_write) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  ASSERT_NO_FATAL_FAILURE(connect_lane(peer, *initiator, seg));
  const auto before = initiator->stats().request_sends;
  batch_of work(*initiator, seg, "rwrwrwrw");
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 8; ++i) {
    auto r = peer.next_request();
    ASSERT_TRUE(r) << "request " << i;
    got.push_back(*r);
  }
  for (const auto& r : got) {
    if (r.op == wire::opcode::read) peer.answer_ok(r, sixteen);
    else peer.answer_ok(r);
  }
  EXPECT_EQ(work.codes(), std::vector<status>(8, status::ok));
  // One hand-off per op would have sent the first request alone, the lane
  // being idle when it arrived.
  EXPECT_EQ(initiator->stats().request_sends - before, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// docs/architecture.md: a gather write holds at most 256 KiB of requests;
// the request that would take it past that starts the next one. Two WRITEs
// whose requests (headers and bodies) come to exactly 256 KiB leave in one
// write; one byte more, in two.
TEST(transport_pipeline, a_gather_write_holds_256_kib_of_requests_and_not_a_byte_more) {
  for (std::size_t extra : {0u, 1u}) {
    auto target = start(loopback_config());
    auto initiator = start(one_lane(8));
    auto remote = pattern(512u << 10, 15);
    auto id = target->register_buffer(remote.data(), remote.size(), permission::remote_read_write)
                  .value();
    auto seg = initiator->open_segment(target->descriptor()).value();
    std::vector<std::byte> first(16);
    ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, first.data(), 16)).code, status::ok);
    const std::size_t half = (128u << 10) - wire::request_frame_bytes;
    auto a = pattern(half, 16);
    auto b = pattern(half + extra, 17);
    const auto before = initiator->stats().request_sends;
    auto batch = initiator->submit(std::vector{write_req(seg, id, 0, a.data(), a.size()),
                                               write_req(seg, id, 256u << 10, b.data(), b.size())})
                     .value();
    ASSERT_TRUE(batch->wait(20s));
    EXPECT_EQ(batch->status(0).code, status::ok);
    EXPECT_EQ(batch->status(1).code, status::ok);
    EXPECT_EQ(initiator->stats().request_sends - before, extra == 0 ? 1u : 2u)
        << (256u << 10) + extra << " bytes of requests";
    EXPECT_TRUE(initiator->shutdown().ok());
    EXPECT_TRUE(target->shutdown().ok());
  }
}

// A READ of a large answer queued in front of a WRITE larger than the
// socket buffers take. The lane must read the READ's answer while the
// WRITE's body still leaves: the target answers the READ before it reads
// on, so a lane that waited for its whole write to leave before reading
// anything would wait on a target that waits on it, until the progress
// deadline. (A large WRITE starts a write of its own; a READ whose request
// is out is read even while the rest of its write still leaves.)
TEST(transport_pipeline, a_read_answer_is_read_while_a_write_behind_it_still_leaves) {
  auto target = start(loopback_config());
  auto config = one_lane(8);
  config.progress_timeout_ms = 5000;
  auto initiator = start(config);
  auto remote = pattern(16u << 20, 13);
  auto id =
      target->register_buffer(remote.data(), remote.size(), permission::remote_read_write).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back(remote.size() / 2);
  auto body = pattern(remote.size() / 2, 14);
  std::vector<transfer_request> requests{
      read_req(seg, id, 0, back.data(), back.size()),
      write_req(seg, id, remote.size() - body.size(), body.data(), body.size())};
  const auto started = std::chrono::steady_clock::now();
  auto batch = initiator->submit(requests).value();
  ASSERT_TRUE(batch->wait(20s));
  EXPECT_EQ(batch->status(0).code, status::ok);
  EXPECT_EQ(batch->status(1).code, status::ok);
  EXPECT_TRUE(std::equal(back.begin(), back.end(), remote.begin()));
  EXPECT_LT(std::chrono::steady_clock::now() - started, 5s) << "the lane waited on the target";
  EXPECT_EQ(initiator->stats().timeouts, 0u);
  EXPECT_EQ(initiator->stats().request_sends, 2u) << "the 8 MiB WRITE did not leave alone";
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A batch spread over more lanes than one hand-off holds (16) still
// reaches every lane, and every task completes.
TEST(transport_pipeline, a_batch_over_more_lanes_than_one_hand_off_holds_completes) {
  auto target = start(loopback_config());
  auto config = one_lane(4);
  config.connections_per_peer = 20;
  auto initiator = start(config);
  auto memory = pattern(4096, 12);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::vector<std::byte>> back(50, std::vector<std::byte>(64));
  std::vector<transfer_request> requests;
  for (std::size_t i = 0; i < back.size(); ++i) {
    requests.push_back(read_req(seg, id, 64 * i, back[i].data(), 64));
  }
  auto batch = initiator->submit(requests).value();
  ASSERT_TRUE(batch->wait(20s));
  for (std::size_t i = 0; i < back.size(); ++i) {
    EXPECT_EQ(batch->status(i).code, status::ok) << i;
    EXPECT_TRUE(std::equal(back[i].begin(), back[i].end(), memory.begin() + 64 * i)) << i;
  }
  EXPECT_EQ(initiator->stats().connects, 20u);  // every lane got work
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Answers that arrive together are read together and end their exchanges
// together; the requests waiting behind them then leave in one write.
TEST(transport_pipeline, answers_that_arrive_together_free_their_room_together) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  ASSERT_NO_FATAL_FAILURE(connect_lane(peer, *initiator, seg));
  const auto before = initiator->stats().request_sends;
  batch_of work(*initiator, seg, "rrrrrrrrrrrrrrrr");  // 16: eight wait for room
  std::vector<std::byte> answers;
  std::vector<std::vector<std::byte>> payloads;
  for (int i = 0; i < 8; ++i) {
    auto r = peer.next_request();
    ASSERT_TRUE(r) << "request " << i;
    payloads.push_back(pattern(16, 100 + i));
    auto a = answer_bytes(wire::wire_status::ok, r->request_id, 16, payloads.back());
    answers.insert(answers.end(), a.begin(), a.end());
  }
  peer.send_raw(answers);  // eight answers in one write
  for (int i = 8; i < 16; ++i) {
    auto r = peer.next_request();
    ASSERT_TRUE(r) << "request " << i;
    payloads.push_back(pattern(16, 100 + i));
    peer.answer_ok(*r, payloads.back());
  }
  EXPECT_EQ(work.codes(), std::vector<status>(16, status::ok));
  for (std::size_t i = 0; i < 16; ++i) EXPECT_EQ(work.buffers[i], payloads[i]) << i;
  // The first eight in one write; the eight behind them, once the eight
  // answers were read, in one more (not one per answer).
  EXPECT_EQ(initiator->stats().request_sends - before, 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Refusals among answers read together: a refused READ has no payload, so
// the answers after it were read one answer too early (the first of them
// into the refused READ's own buffer) and must still reach their own
// exchanges, byte for byte; a refused WRITE in between moves nothing.
TEST(transport_pipeline, answers_read_together_past_refusals_reach_their_exchanges) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "rrwrrr");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 6; ++i) got.push_back(peer.next_request().value());
  const auto refused = wire::wire_status_for(status::range_rejected);
  std::vector<std::vector<std::byte>> payloads;
  for (int i = 0; i < 6; ++i) payloads.push_back(pattern(16, 200 + i));
  std::vector<std::byte> answers;
  auto add = [&](std::vector<std::byte> a) { answers.insert(answers.end(), a.begin(), a.end()); };
  add(answer_bytes(wire::wire_status::ok, got[0].request_id, 16, payloads[0]));
  add(answer_bytes(refused, got[1].request_id, 0, {}));
  add(answer_bytes(refused, got[2].request_id, 0, {}));
  add(answer_bytes(wire::wire_status::ok, got[3].request_id, 16, payloads[3]));
  add(answer_bytes(refused, got[4].request_id, 0, {}));
  add(answer_bytes(wire::wire_status::ok, got[5].request_id, 16, payloads[5]));
  peer.send_raw(answers);
  EXPECT_EQ(work.codes(),
            (std::vector<status>{status::ok, status::range_rejected, status::range_rejected,
                                 status::ok, status::range_rejected, status::ok}));
  EXPECT_EQ(work.buffers[0], payloads[0]);
  EXPECT_EQ(work.buffers[3], payloads[3]);
  EXPECT_EQ(work.buffers[5], payloads[5]);
  EXPECT_EQ(initiator->stats().connects, 1u);  // refusals keep the connection
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Two READs in flight into the same buffer, the first refused: the bytes
// after the refusal are carried over intact (one scatter read never spans
// two overlapping buffers), and the connection stays.
TEST(transport_pipeline, reads_into_one_buffer_past_a_refusal_keep_the_connection) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  std::vector<std::byte> shared(16);
  std::vector<std::byte> own(16);
  std::vector<transfer_request> requests{read_req(seg, 1, 0, shared.data(), 16),
                                         read_req(seg, 1, 0, shared.data(), 16),
                                         read_req(seg, 1, 0, own.data(), 16)};
  auto batch = initiator->submit(requests).value();
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(peer.next_request().value());
  const auto second = pattern(16, 401);
  const auto third = pattern(16, 402);
  std::vector<std::byte> answers;
  auto add = [&](std::vector<std::byte> a) { answers.insert(answers.end(), a.begin(), a.end()); };
  add(answer_bytes(wire::wire_status_for(status::range_rejected), got[0].request_id, 0, {}));
  add(answer_bytes(wire::wire_status::ok, got[1].request_id, 16, second));
  add(answer_bytes(wire::wire_status::ok, got[2].request_id, 16, third));
  peer.send_raw(answers);
  ASSERT_TRUE(batch->wait(20s));
  EXPECT_EQ(batch->status(0).code, status::range_rejected);
  EXPECT_EQ(batch->status(1).code, status::ok);
  EXPECT_EQ(batch->status(2).code, status::ok);
  EXPECT_EQ(shared, second);
  EXPECT_EQ(own, third);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Answers cut anywhere (inside a header, inside a payload) end the
// exchanges that arrived whole, and the rest when their bytes come.
TEST(transport_pipeline, answers_cut_inside_a_header_or_a_payload_complete_when_the_rest_comes) {
  for (const std::size_t cut_into : {std::size_t{10}, std::size_t{32 + 5}}) {
    SCOPED_TRACE(cut_into < 32 ? "cut inside a header" : "cut inside a payload");
    scripted_peer peer;
    auto initiator = start(one_lane(8));
    auto seg = initiator->open_segment(peer.descriptor()).value();
    batch_of work(*initiator, seg, "rwrr");
    ASSERT_TRUE(peer.accept());
    std::vector<wire::request_frame> got;
    for (int i = 0; i < 4; ++i) got.push_back(peer.next_request().value());
    std::vector<std::vector<std::byte>> payloads;
    for (int i = 0; i < 4; ++i) payloads.push_back(pattern(16, 300 + i));
    std::vector<std::byte> answers;
    for (int i = 0; i < 4; ++i) {
      const bool read = got[i].op == wire::opcode::read;
      auto a = answer_bytes(
          wire::wire_status::ok, got[i].request_id, 16,
          read ? std::span<const std::byte>(payloads[i]) : std::span<const std::byte>());
      answers.insert(answers.end(), a.begin(), a.end());
    }
    // READ 48 bytes, WRITE 32: the third answer starts at byte 80.
    const std::size_t cut = 80 + cut_into;
    peer.send_raw(std::span(answers).first(cut));
    ASSERT_TRUE(eventually([&] { return work.batch->completed() >= 2; }, 10s));
    // Bounded wait for something that must not happen: the exchange whose
    // answer is cut ending before the rest came.
    EXPECT_FALSE(eventually([&] { return work.batch->status(2).done; }, 200ms))
        << "an exchange ended before its answer was whole";
    peer.send_raw(std::span(answers).subspan(cut));
    EXPECT_EQ(work.codes(), std::vector<status>(4, status::ok));
    EXPECT_EQ(work.buffers[0], payloads[0]);
    EXPECT_EQ(work.buffers[2], payloads[2]);
    EXPECT_EQ(work.buffers[3], payloads[3]);
    EXPECT_TRUE(initiator->shutdown().ok());
  }
}

// The target reads requests ahead and answers those that came together in
// one write: every case of where a request can sit in what one read took
// (whole, a WRITE body in part or whole, a rejected WRITE's body to drop, a
// header cut at the end) is served in order, and a later request sees what
// an earlier WRITE put there.
TEST(transport_pipeline, the_target_serves_requests_that_arrive_together_in_order) {
  auto target = start(loopback_config());
  std::vector<std::byte> memory(64u << 10);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  const auto small = pattern(4000, 41);   // fits in the target's first read, with others
  const auto large = pattern(20000, 42);  // more than its read-ahead: the rest lands directly
  const auto dropped = pattern(3000, 43);
  const auto later = pattern(16, 44);
  using wire::opcode;
  std::vector<std::byte> out;
  append(out, {opcode::read, 0, 20, id, 40000, later.size()});
  append(out, {opcode::write, 0, 21, id, 40000, later.size()}, later);  // after READ 20 read
  append(out, {opcode::write, 0, 1, id, 100, small.size()}, small);
  append(out, {opcode::read, 0, 2, id, 100, small.size()});
  append(out, {opcode::write, 0, 3, id + 1000, 0, dropped.size()}, dropped);  // refused, drained
  append(out, {opcode::read, 0, 4, id, memory.size() - 10, 100});             // out of range
  append(out, {opcode::write, 0, 5, id, 8000, large.size()}, large);
  append(out, {opcode::read, 0, 6, id, 8000, large.size()});
  append(out, {opcode::read, 0, 7, id, 100, 16});
  const std::size_t cut = 20;  // request 7's header: the rest comes later
  byte_client client(target->descriptor().endpoints[0]);
  client.send(std::span(out).first(out.size() - wire::request_frame_bytes + cut));

  auto expect = [&](std::uint64_t request_id, wire::wire_status s, std::uint64_t committed,
                    std::vector<std::byte>* payload = nullptr) {
    auto a = client.answer(payload);
    ASSERT_TRUE(a) << "no answer for request " << request_id;
    EXPECT_EQ(a->request_id, request_id);
    EXPECT_EQ(a->status, s) << "request " << request_id;
    EXPECT_EQ(a->committed_bytes, committed) << "request " << request_id;
  };
  std::vector<std::byte> got_small(small.size());
  std::vector<std::byte> got_large(large.size());
  std::vector<std::byte> before(later.size());
  expect(20, wire::wire_status::ok, later.size(), &before);
  EXPECT_EQ(before, std::vector<std::byte>(later.size())) << "READ 20 saw the WRITE sent after it";
  expect(21, wire::wire_status::ok, later.size());
  expect(1, wire::wire_status::ok, small.size());
  expect(2, wire::wire_status::ok, small.size(), &got_small);
  EXPECT_EQ(got_small, small);
  expect(3, wire::wire_status_for(status::stale_registration), 0);
  expect(4, wire::wire_status_for(status::range_rejected), 0);
  expect(5, wire::wire_status::ok, large.size());
  expect(6, wire::wire_status::ok, large.size(), &got_large);
  EXPECT_EQ(got_large, large);
  // Bounded wait for something that must not happen: an answer to a header
  // not all here.
  EXPECT_FALSE(client.readable_within(200ms)) << "answered a header cut short";
  client.send(std::span(out).last(wire::request_frame_bytes - cut));
  std::vector<std::byte> got_again(16);
  expect(7, wire::wire_status::ok, 16, &got_again);
  EXPECT_TRUE(std::equal(got_again.begin(), got_again.end(), small.begin()));
  // Counted once the answer left, which the client may see first.
  EXPECT_TRUE(eventually([&] { return target->stats().server_reads == 4u; }));
  EXPECT_EQ(target->stats().server_writes, 3u);
  EXPECT_EQ(target->stats().server_rejects, 2u);
  EXPECT_TRUE(eventually([&] { return target->stats().leases_live == 0u; }));

  // A header that cannot be decoded, behind a good request in the same
  // write: the good one is answered first, then the rejection, then the
  // connection closes.
  std::vector<std::byte> bad;
  append(bad, {opcode::read, 0, 8, id, 0, 16});
  auto garbage = wire::encode(wire::request_frame{opcode::read, 0, 9, id, 0, 16});
  garbage[10] ^= std::byte{0xff};  // the request id no longer matches the checksum
  bad.insert(bad.end(), garbage.begin(), garbage.end());
  append(bad, {opcode::read, 0, 10, id, 0, 16});  // behind the bad header: never served
  client.send(bad);
  std::vector<std::byte> sixteen_back(16);
  expect(8, wire::wire_status::ok, 16, &sixteen_back);
  auto rejection = client.answer();
  ASSERT_TRUE(rejection);
  EXPECT_EQ(rejection->request_id, 0u);
  EXPECT_TRUE(wire::is_header_rejection(rejection->status));
  EXPECT_TRUE(client.closed_by_peer());
  EXPECT_TRUE(eventually([&] { return target->stats().server_reads == 5u; }));
  EXPECT_TRUE(target->shutdown().ok());
}

// More requests than one read-ahead takes, sent in one write: the read
// fills the staging room and cuts a header, and the rest is already in the
// socket, so the read that follows must try the socket (no new bytes will
// wake it). Every request is answered, in order.
TEST(transport_pipeline, requests_past_a_full_read_ahead_are_served_without_new_bytes) {
  auto target = start(loopback_config());
  auto memory = pattern(64u << 10, 45);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  // More than the read-ahead takes, and off its grid of whole headers: a
  // WRITE of 16 bytes goes first, so the read cuts a header.
  constexpr std::uint64_t requests =
      limits::request_read_ahead_bytes / wire::request_frame_bytes + 44;
  constexpr std::uint64_t length = 16;
  static_assert((limits::request_read_ahead_bytes - wire::request_frame_bytes - length) %
                    wire::request_frame_bytes !=
                0);
  std::vector<std::byte> out;
  append(out, {wire::opcode::write, 0, 999, id, 60000, length}, pattern(length, 0));
  for (std::uint64_t i = 0; i < requests; ++i) {
    append(out, {wire::opcode::read, 0, i + 1, id, i * length, length});
  }
  byte_client client(target->descriptor().endpoints[0]);
  // One exchange first: the session then has a read waiting when the
  // requests arrive, and the reactor's report of them performs it.
  std::vector<std::byte> got(length);
  std::vector<std::byte> warm_up;
  append(warm_up, {wire::opcode::read, 0, 1000, id, 0, length});
  client.send(warm_up);
  auto answered = client.answer(&got);
  ASSERT_TRUE(answered);
  EXPECT_EQ(answered->request_id, 1000u);
  client.send(out);
  auto written = client.answer();
  ASSERT_TRUE(written);
  EXPECT_EQ(written->request_id, 999u);
  EXPECT_EQ(written->status, wire::wire_status::ok);
  for (std::uint64_t i = 0; i < requests; ++i) {
    auto a = client.answer(&got);
    ASSERT_TRUE(a) << "no answer for request " << i + 1;
    EXPECT_EQ(a->request_id, i + 1);
    EXPECT_EQ(a->status, wire::wire_status::ok);
    EXPECT_TRUE(std::equal(got.begin(), got.end(),
                           memory.begin() + static_cast<std::ptrdiff_t>(i * length)))
        << "request " << i + 1;
  }
  EXPECT_TRUE(target->shutdown().ok());
}

// A WRITE body that stalls part way holds back only what comes after it:
// the answer of a WRITE before it, held to leave with others, leaves
// before the target waits for the rest.
TEST(transport_pipeline, a_stalled_write_body_does_not_hold_back_the_answers_before_it) {
  auto target = start(loopback_config());
  std::vector<std::byte> memory(64u << 10);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  const auto first = pattern(16, 51);
  const auto second = pattern(20000, 52);  // crosses the read-ahead; the rest is small
  std::vector<std::byte> out;
  append(out, {wire::opcode::write, 0, 1, id, 0, first.size()}, first);
  append(out, {wire::opcode::write, 0, 2, id, 1000, second.size()}, second);
  const std::size_t stall_at = out.size() - 10000;  // inside the second body
  byte_client client(target->descriptor().endpoints[0]);
  client.send(std::span(out).first(stall_at));
  ASSERT_TRUE(client.readable_within(5000ms)) << "the first WRITE's answer waited for the second";
  auto a = client.answer();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->request_id, 1u);
  EXPECT_EQ(a->status, wire::wire_status::ok);
  client.send(std::span(out).subspan(stall_at));
  a = client.answer();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->request_id, 2u);
  EXPECT_EQ(a->status, wire::wire_status::ok);
  EXPECT_TRUE(target->shutdown().ok());
}

// Every header must arrive within the progress timeout, not only a
// connection's first: a header cut short after a request was served ends
// the session, while the connection idle between requests has no deadline.
TEST(transport_pipeline, a_later_header_cut_short_times_the_session_out) {
  auto config = loopback_config();
  config.progress_timeout_ms = 300;
  auto target = start(config);
  std::vector<std::byte> memory(64);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  byte_client client(target->descriptor().endpoints[0]);
  std::vector<std::byte> one;
  append(one, {wire::opcode::read, 0, 1, id, 0, 16});
  client.send(one);
  std::vector<std::byte> back(16);
  auto a = client.answer(&back);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->status, wire::wire_status::ok);
  // Idle between requests, for longer than the timeout: nothing expires.
  EXPECT_FALSE(client.readable_within(600ms)) << "an idle session was closed";
  EXPECT_EQ(target->stats().sessions_timed_out, 0u);
  client.send(std::span(one).first(20));  // the next header, cut short
  EXPECT_TRUE(client.closed_by_peer());
  EXPECT_EQ(target->stats().sessions_timed_out, 1u);
  EXPECT_TRUE(target->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
