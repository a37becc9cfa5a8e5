// Pipelined lanes (docs/architecture.md, "Pipelined lanes"): requests leave
// before earlier answers, answers are matched in order, and when the
// connection breaks every exchange in flight ends as the ambiguity rule
// says. Most tests talk to a scripted target that reads requests and
// writes answers (right or wrong) exactly when the test says, so each
// ordering is certain rather than likely.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace std::chrono_literals;

// A target the test drives by hand: it accepts when told, reads whole
// requests (a WRITE's body included), and sends whatever answer the test
// gives it. Every wait is bounded.
class scripted_peer {
 public:
  // Each peer is its own incarnation (one segment each).
  explicit scripted_peer(std::uint64_t incarnation = 0x5c1)
      : incarnation_(incarnation), acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}) {
    acceptor_.non_blocking(true);
  }
  segment_descriptor descriptor() const {
    return {incarnation_, {{"127.0.0.1", acceptor_.local_endpoint().port()}}, 1u << 30, {}};
  }

  // Takes the next connection; false if none came within `timeout`.
  bool accept(std::chrono::milliseconds timeout = 10s) {
    pollfd p{acceptor_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    socket_ = std::make_unique<asio::ip::tcp::socket>(context_);
    acceptor_.accept(*socket_);
    socket_->non_blocking(false);
    timeval bound{10, 0};  // every blocking read below ends within 10 s
    ::setsockopt(socket_->native_handle(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
    return true;
  }
  // The next request, or nothing if none arrives within `timeout`.
  std::optional<wire::request_frame> next_request(std::chrono::milliseconds timeout = 10s) {
    pollfd p{socket_->native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    wire::request_bytes header{};
    std::error_code ec;
    asio::read(*socket_, asio::buffer(header), ec);
    if (ec) return std::nullopt;
    auto decoded = wire::decode_request(header, 1u << 30);
    EXPECT_TRUE(decoded.ok());
    if (!decoded.ok()) return std::nullopt;
    auto frame = decoded.value();
    if (frame.op == wire::opcode::write) {
      std::vector<std::byte> body(frame.length);
      asio::read(*socket_, asio::buffer(body), ec);
      if (ec) return std::nullopt;
    }
    return frame;
  }
  void answer(wire::wire_status s, std::uint64_t request_id, std::uint64_t committed,
              std::span<const std::byte> payload = {}) {
    auto header = wire::encode(wire::response_frame{s, request_id, committed});
    asio::write(*socket_, std::array{asio::const_buffer(header.data(), header.size()),
                                     asio::const_buffer(payload.data(), payload.size())});
  }
  void answer_ok(const wire::request_frame& r, std::span<const std::byte> payload = {}) {
    answer(wire::wire_status::ok, r.request_id, r.length, payload);
  }
  // A request's header alone (a WRITE's body stays in the socket).
  std::optional<wire::request_frame> next_header() {
    wire::request_bytes header{};
    std::error_code ec;
    asio::read(*socket_, asio::buffer(header), ec);
    if (ec) return std::nullopt;
    auto decoded = wire::decode_request(header, 1u << 30);
    if (!decoded.ok()) return std::nullopt;
    return decoded.value();
  }
  bool drain(std::size_t n) {
    std::vector<std::byte> sink(1u << 20);
    std::error_code ec;
    while (n > 0 && !ec) {
      const auto step = std::min(n, sink.size());
      n -= asio::read(*socket_, asio::buffer(sink.data(), step), ec);
    }
    return !ec;
  }
  void send_raw(std::span<const std::byte> bytes) {
    asio::write(*socket_, asio::const_buffer(bytes.data(), bytes.size()));
  }
  void hang_up() { socket_.reset(); }

 private:
  std::uint64_t incarnation_;
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  std::unique_ptr<asio::ip::tcp::socket> socket_;
};

transport_config one_lane(std::size_t inflight) {
  auto c = loopback_config();
  c.connections_per_peer = 1;
  c.lane_inflight_max = inflight;
  c.reconnect_cooldown_ms = 1;
  return c;
}

// Submits `kinds.size()` 16-byte requests (r = READ, w = WRITE) to one
// segment as one batch.
struct batch_of {
  batch_of(transport& t, segment_id seg, std::string_view kinds)
      : buffers(kinds.size(), std::vector<std::byte>(16)) {
    std::vector<transfer_request> requests;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      requests.push_back(kinds[i] == 'w' ? write_req(seg, 1, 0, buffers[i].data(), 16)
                                         : read_req(seg, 1, 0, buffers[i].data(), 16));
    }
    batch = t.submit(requests).value();
  }
  std::vector<status> codes(std::chrono::milliseconds timeout = 20s) {
    EXPECT_TRUE(batch->wait(timeout)) << "the batch did not settle";
    std::vector<status> out;
    for (std::size_t i = 0; i < buffers.size(); ++i) out.push_back(batch->status(i).code);
    return out;
  }
  std::vector<std::vector<std::byte>> buffers;
  std::shared_ptr<transfer_batch> batch;
};

const std::vector<std::byte> sixteen = pattern(16, 5);

// Requests leave before the first answer, at most lane_inflight_max of
// them; answers in order complete their own exchanges, payloads included.
TEST(transport_pipeline, requests_leave_before_answers_up_to_the_bound) {
  scripted_peer peer;
  auto initiator = start(one_lane(3));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "rrrrr");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) {
    auto r = peer.next_request();
    ASSERT_TRUE(r) << "request " << i << " did not leave before any answer";
    got.push_back(*r);
  }
  // Bounded wait for something that must not happen: a fourth request
  // while three are unanswered.
  EXPECT_FALSE(peer.next_request(200ms)) << "more than lane_inflight_max in flight";
  for (int i = 0; i < 5; ++i) {
    peer.answer_ok(got[static_cast<std::size_t>(i)], sixteen);
    if (i + 3 < 5) {
      auto r = peer.next_request();
      ASSERT_TRUE(r) << "an answer did not free a slot";
      got.push_back(*r);
    }
  }
  EXPECT_EQ(work.codes(), std::vector<status>(5, status::ok));
  for (auto& b : work.buffers) EXPECT_EQ(b, sixteen);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(stats.requests_pipelined, 4u);  // requests 2, 3 at once; 4 and 5 behind 2 others
  EXPECT_EQ(stats.request_sends, 3u);       // 1 to 3 in one write; 4 and 5 one per answer
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A batch reaches a connected lane in one hand-off, and every request the
// lane has room for leaves in one gather write, WRITE bodies included.
TEST(transport_pipeline, a_batch_leaves_a_connected_lane_in_one_write) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  {
    batch_of first(*initiator, seg, "r");
    ASSERT_TRUE(peer.accept());
    peer.answer_ok(peer.next_request().value(), sixteen);
    ASSERT_EQ(first.codes(), std::vector<status>{status::ok});
  }
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

// An answer, and a READ's payload after it, as bytes.
std::vector<std::byte> answer_bytes(wire::wire_status s, std::uint64_t request_id,
                                    std::uint64_t committed, std::span<const std::byte> payload) {
  auto header = wire::encode(wire::response_frame{s, request_id, committed});
  std::vector<std::byte> out(header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// Answers that arrive together are read together and end their exchanges
// together; the requests waiting behind them then leave in one write.
TEST(transport_pipeline, answers_that_arrive_together_free_their_room_together) {
  scripted_peer peer;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  {
    batch_of first(*initiator, seg, "r");
    ASSERT_TRUE(peer.accept());
    peer.answer_ok(peer.next_request().value(), sixteen);
    ASSERT_EQ(first.codes(), std::vector<status>{status::ok});
  }
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
    ASSERT_TRUE(eventually([&] { return work.batch->status(1).done; }, 10s));
    EXPECT_EQ(work.batch->completed(), 2u) << "an exchange ended before its answer was whole";
    peer.send_raw(std::span(answers).subspan(cut));
    EXPECT_EQ(work.codes(), std::vector<status>(4, status::ok));
    EXPECT_EQ(work.buffers[0], payloads[0]);
    EXPECT_EQ(work.buffers[2], payloads[2]);
    EXPECT_EQ(work.buffers[3], payloads[3]);
    EXPECT_TRUE(initiator->shutdown().ok());
  }
}

// With lane_inflight_max 1 the next request waits for the answer.
TEST(transport_pipeline, one_in_flight_waits_for_each_answer) {
  scripted_peer peer;
  auto initiator = start(one_lane(1));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "rr");
  ASSERT_TRUE(peer.accept());
  auto first = peer.next_request();
  ASSERT_TRUE(first);
  EXPECT_FALSE(peer.next_request(200ms));
  peer.answer_ok(*first, sixteen);
  auto second = peer.next_request();
  ASSERT_TRUE(second);
  peer.answer_ok(*second, sixteen);
  EXPECT_EQ(work.codes(), std::vector<status>(2, status::ok));
  EXPECT_EQ(initiator->stats().requests_pipelined, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A refusal names its request and keeps the connection: the exchanges
// behind it go on, and the refused WRITE is definite.
TEST(transport_pipeline, a_refusal_ends_only_its_own_exchange) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wrw");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(peer.next_request().value());
  peer.answer(wire::wire_status::range_rejected, got[0].request_id, 0);
  peer.answer_ok(got[1], sixteen);
  peer.answer_ok(got[2]);
  EXPECT_EQ(work.codes(), (std::vector<status>{status::range_rejected, status::ok, status::ok}));
  EXPECT_EQ(work.buffers[1], sixteen);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A lone READ reads its answer and payload in one scatter read. Requests
// that leave behind it meanwhile are answered right after it: when its
// answer is a refusal (no payload), that read takes the next answers'
// bytes too, and they must still reach their own exchanges.
TEST(transport_pipeline, answers_read_past_a_refused_lone_read_reach_their_exchanges) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  std::vector<std::byte> wide(64);
  auto lone_request = read_req(seg, 1, 0, wide.data(), wide.size());
  auto lone = initiator->submit(std::span(&lone_request, 1)).value();
  ASSERT_TRUE(peer.accept());
  auto first = peer.next_request();  // its answer's read is waiting now
  ASSERT_TRUE(first);
  batch_of behind(*initiator, seg, "rr");
  auto second = peer.next_request();
  auto third = peer.next_request();
  ASSERT_TRUE(second && third);
  // All three answers at once: the lone READ's 96-byte read takes the
  // refusal (32), the second answer (32 + 16) and half the third header.
  const auto other = pattern(16, 6);
  std::vector<std::byte> all;
  auto append = [&all](auto&& bytes) { all.insert(all.end(), bytes.begin(), bytes.end()); };
  append(
      wire::encode(wire::response_frame{wire::wire_status::range_rejected, first->request_id, 0}));
  append(wire::encode(wire::response_frame{wire::wire_status::ok, second->request_id, 16}));
  append(sixteen);
  append(wire::encode(wire::response_frame{wire::wire_status::ok, third->request_id, 16}));
  append(other);
  peer.send_raw(all);
  ASSERT_TRUE(lone->wait(20s));
  EXPECT_EQ(lone->status(0).code, status::range_rejected);
  EXPECT_EQ(behind.codes(), std::vector<status>(2, status::ok));
  EXPECT_EQ(behind.buffers[0], sixteen);
  EXPECT_EQ(behind.buffers[1], other);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A carried answer can be the one of a WRITE still leaving: when its last
// bytes go, the lane reads that answer from the carried bytes, breaks and
// settles at once, and must not go on as if still connected.
TEST(transport_pipeline, a_carried_rejection_of_a_write_still_leaving_settles_cleanly) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  std::vector<std::byte> wide(64);
  auto lone_request = read_req(seg, 1, 0, wide.data(), wide.size());
  auto lone = initiator->submit(std::span(&lone_request, 1)).value();
  ASSERT_TRUE(peer.accept());
  auto first = peer.next_request();
  ASSERT_TRUE(first);
  std::vector<std::byte> big(16u << 20);  // far more than the socket buffers take
  auto big_request = write_req(seg, 1, 0, big.data(), big.size());
  auto write = initiator->submit(std::span(&big_request, 1)).value();
  ASSERT_TRUE(peer.next_header());
  // The READ's refusal and a header rejection in one write: the lone READ's
  // 96-byte read takes both, and the rejection waits, carried, for the
  // WRITE whose body is still leaving.
  std::vector<std::byte> both;
  auto refusal =
      wire::encode(wire::response_frame{wire::wire_status::range_rejected, first->request_id, 0});
  auto rejection = wire::encode(wire::response_frame{wire::wire_status::bad_checksum, 0, 0});
  both.insert(both.end(), refusal.begin(), refusal.end());
  both.insert(both.end(), rejection.begin(), rejection.end());
  peer.send_raw(both);
  ASSERT_TRUE(lone->wait(20s));
  EXPECT_EQ(lone->status(0).code, status::range_rejected);
  ASSERT_TRUE(peer.drain(big.size()));  // the body leaves; the carried answer is read
  ASSERT_TRUE(write->wait(20s));
  EXPECT_EQ(write->status(0).code, status::protocol_error);  // alone: definite
  EXPECT_TRUE(initiator->shutdown().ok());
}

// An answer for another request (here the first answer was lost on the
// way) is a protocol error: the lane closes and every exchange in flight
// ends: WRITEs that left are ambiguous, READs get the connection's status.
// Nothing is sent again.
TEST(transport_pipeline, a_mismatched_answer_ends_everything_in_flight) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wrw");
  ASSERT_TRUE(peer.accept());
  std::vector<wire::request_frame> got;
  for (int i = 0; i < 3; ++i) got.push_back(peer.next_request().value());
  peer.answer_ok(got[1], sixteen);  // the first answer went missing
  EXPECT_EQ(work.codes(), (std::vector<status>{status::ambiguous_write, status::connection_failed,
                                               status::ambiguous_write}));
  EXPECT_FALSE(peer.accept(200ms)) << "a cut-off exchange was sent again";
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A header rejection without an id says "not run" for the only exchange
// in flight; with more in flight, an earlier answer lost on the way could
// make it a later request's, so every WRITE that left is ambiguous.
TEST(transport_pipeline, a_header_rejection_is_definite_only_for_a_lone_exchange) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  {
    batch_of lone(*initiator, seg, "w");
    ASSERT_TRUE(peer.accept());
    ASSERT_TRUE(peer.next_request());
    peer.answer(wire::wire_status::bad_checksum, 0, 0);
    EXPECT_EQ(lone.codes(), std::vector<status>{status::protocol_error});
    peer.hang_up();
  }
  batch_of two(*initiator, seg, "ww");
  ASSERT_TRUE(peer.accept());
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  peer.answer(wire::wire_status::bad_checksum, 0, 0);
  EXPECT_EQ(two.codes(), std::vector<status>(2, status::ambiguous_write));
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A connection that breaks with WRITEs in flight and more queued: the ones
// that left are ambiguous, the queued ones never left and run on the next
// connection.
TEST(transport_pipeline, a_broken_connection_cuts_what_left_and_keeps_what_is_queued) {
  scripted_peer peer;
  auto initiator = start(one_lane(2));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wwww");
  ASSERT_TRUE(peer.accept());
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  peer.hang_up();
  ASSERT_TRUE(peer.accept()) << "the queued WRITEs did not reconnect";
  auto third = peer.next_request();
  auto fourth = peer.next_request();
  ASSERT_TRUE(third && fourth);
  peer.answer_ok(*third);
  peer.answer_ok(*fourth);
  EXPECT_EQ(work.codes(), (std::vector<status>{status::ambiguous_write, status::ambiguous_write,
                                               status::ok, status::ok}));
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A stalled exchange holds back only its own lane: its progress deadline
// fires and ends everything in flight there, while the other lane, on the
// same initiator, completes its work.
TEST(transport_pipeline, a_stall_holds_back_only_its_lane_and_its_deadline_fires) {
  scripted_peer stalled(0x5c1);
  scripted_peer healthy(0x5c2);
  auto config = one_lane(4);
  config.progress_timeout_ms = 300;
  auto initiator = start(config);
  auto stuck = initiator->open_segment(stalled.descriptor()).value();
  auto fine = initiator->open_segment(healthy.descriptor()).value();
  const auto submitted = std::chrono::steady_clock::now();
  batch_of held(*initiator, stuck, "rrr");
  batch_of served(*initiator, fine, "rrr");
  ASSERT_TRUE(stalled.accept());
  ASSERT_TRUE(healthy.accept());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(stalled.next_request());  // never answered
  for (int i = 0; i < 3; ++i) healthy.answer_ok(healthy.next_request().value(), sixteen);
  EXPECT_EQ(served.codes(), std::vector<status>(3, status::ok));
  EXPECT_EQ(held.codes(), std::vector<status>(3, status::timeout));
  EXPECT_GE(std::chrono::steady_clock::now() - submitted, 300ms);  // the deadline, not sooner
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Shutdown with exchanges in flight ends them all: the WRITE that left is
// ambiguous, the READ shutting_down.
TEST(transport_pipeline, shutdown_ends_every_exchange_in_flight) {
  scripted_peer peer;
  auto initiator = start(one_lane(4));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  batch_of work(*initiator, seg, "wr");
  ASSERT_TRUE(peer.accept());
  ASSERT_TRUE(peer.next_request());
  ASSERT_TRUE(peer.next_request());
  (void)initiator->shutdown();
  EXPECT_EQ(work.codes(), (std::vector<status>{status::ambiguous_write, status::shutting_down}));
}

// Against the real target, a refused WRITE no longer closes the
// connection: pipelined WRITEs to a stale registration each get their own
// answer, and the connection stays.
TEST(transport_pipeline, the_target_serves_requests_behind_a_refused_write) {
  auto target = start(loopback_config());
  auto initiator = start(one_lane(8));
  std::vector<std::byte> memory(64);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> data = pattern(16, 9);
  std::vector<transfer_request> requests{
      write_req(seg, id + 100, 0, data.data(), 16), write_req(seg, id, 0, data.data(), 16),
      write_req(seg, id, 64, data.data(), 16), write_req(seg, id, 16, data.data(), 16)};
  auto batch = initiator->submit(requests).value();
  ASSERT_TRUE(batch->wait(20s));
  EXPECT_EQ(batch->status(0).code, status::stale_registration);
  EXPECT_EQ(batch->status(1).code, status::ok);
  EXPECT_EQ(batch->status(2).code, status::range_rejected);
  EXPECT_EQ(batch->status(3).code, status::ok);
  EXPECT_EQ(initiator->stats().connects, 1u);
  EXPECT_EQ(target->stats().sessions_accepted, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A client of the real target that writes bytes exactly as the test
// composes them, so requests arrive together, split, or cut wherever the
// test says. Every read is bounded.
class raw_client {
 public:
  explicit raw_client(const endpoint& to) : socket_(context_) {
    socket_.connect({asio::ip::make_address(to.address), to.port});
    timeval bound{10, 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof(bound));
  }
  void send(std::span<const std::byte> bytes) {
    asio::write(socket_, asio::const_buffer(bytes.data(), bytes.size()));
  }
  // The next answer, and `payload` bytes after it for an ok READ.
  std::optional<wire::response_frame> answer(std::vector<std::byte>* payload = nullptr) {
    wire::response_bytes header{};
    std::error_code ec;
    asio::read(socket_, asio::buffer(header), ec);
    if (ec) return std::nullopt;
    auto decoded = wire::decode_response(header);
    if (!decoded.ok()) return std::nullopt;
    if (payload != nullptr) {
      asio::read(socket_, asio::buffer(*payload), ec);
      if (ec) return std::nullopt;
    }
    return decoded.value();
  }
  bool readable_within(std::chrono::milliseconds t) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(t.count())) == 1;
  }
  bool closed_by_peer() {
    std::byte one{};
    std::error_code ec;
    asio::read(socket_, asio::buffer(&one, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

 private:
  asio::io_context context_;
  asio::ip::tcp::socket socket_;
};

// Appends a request, and `body` after it for a WRITE.
void append(std::vector<std::byte>& out, const wire::request_frame& r,
            std::span<const std::byte> body = {}) {
  auto header = wire::encode(r);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), body.begin(), body.end());
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
  using wire::opcode;
  std::vector<std::byte> out;
  append(out, {opcode::write, 0, 1, id, 100, small.size()}, small);
  append(out, {opcode::read, 0, 2, id, 100, small.size()});
  append(out, {opcode::write, 0, 3, id + 1000, 0, dropped.size()}, dropped);  // refused, drained
  append(out, {opcode::read, 0, 4, id, memory.size() - 10, 100});             // out of range
  append(out, {opcode::write, 0, 5, id, 8000, large.size()}, large);
  append(out, {opcode::read, 0, 6, id, 8000, large.size()});
  append(out, {opcode::read, 0, 7, id, 100, 16});
  const std::size_t cut = 20;  // request 7's header: the rest comes later
  raw_client client(target->descriptor().endpoints[0]);
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
  EXPECT_TRUE(eventually([&] { return target->stats().server_reads == 3u; }));
  EXPECT_EQ(target->stats().server_writes, 2u);
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
  EXPECT_TRUE(eventually([&] { return target->stats().server_reads == 4u; }));
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
  raw_client client(target->descriptor().endpoints[0]);
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
