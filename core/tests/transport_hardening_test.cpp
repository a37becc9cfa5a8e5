// Defects found in review, each pinned by a test that failed before its
// fix: definite WRITE failures that were reported ambiguous, idle lanes to
// a restarted peer, WRITE timeouts missing from `timeouts`, a descriptor
// source ignored for an open segment, cancelled connects counted as
// failures, accept errors that spun and refused socket options.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <optional>
#include <thread>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/testing/read_within.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "runtime/receive_watermark.hpp"

namespace faultlane {
namespace {

using namespace testing;

// A target that answers the first request on each connection with
// `answer` (after reading its whole body), then closes.
class scripted_target {
 public:
  // `echo_id`: answer with the request's id, or with id 0 as a target does
  // for a header it could not decode.
  scripted_target(wire::wire_status answer, bool echo_id)
      : acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}),
        thread_([this, answer, echo_id] { serve(answer, echo_id); }) {}
  ~scripted_target() {
    // Wakes a serve() still waiting for its connection (close would not);
    // the acceptor closes after the thread is gone.
    ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
    thread_.join();
  }
  segment_descriptor descriptor() const {
    return {0x5c1, {{"127.0.0.1", acceptor_.local_endpoint().port()}}, 1u << 30, {}};
  }

 private:
  void serve(wire::wire_status answer, bool echo_id) {
    std::error_code ec;
    asio::ip::tcp::socket s(context_);
    ec = faultlane::testing::accept_within(acceptor_, s);
    if (ec) return;
    wire::request_bytes header;
    ec = faultlane::testing::read_within(s, asio::buffer(header));
    if (ec) return;
    auto request = wire::decode_request(header, 1u << 30);
    std::vector<std::byte> body(request.ok() ? request.value().length : 0);
    if (request.ok() && request.value().op == wire::opcode::write)
      ec = faultlane::testing::read_within(s, asio::buffer(body));
    auto id = echo_id && request.ok() ? request.value().request_id : 0;
    auto reply = wire::encode(wire::response_frame{answer, id, 0});
    asio::write(s, asio::buffer(reply), ec);
  }

  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
};

// Defect 4: a WRITE the target answered for is definite, whatever the
// answer: a header it could not decode (id 0), or a refusal.
TEST(transport_hardening, target_answers_make_a_failed_write_definite) {
  struct expectation {
    wire::wire_status answer;
    bool echo_id;
    status code;
  };
  for (auto e :
       {expectation{wire::wire_status::bad_checksum, false, status::protocol_error},
        expectation{wire::wire_status::bad_frame, false, status::protocol_error},
        // A header rejection names no request: one that carries the
        // WRITE's id is no answer a target sends, so it says nothing
        // about whether the WRITE ran.
        expectation{wire::wire_status::bad_checksum, true, status::ambiguous_write},
        expectation{wire::wire_status::bad_frame, true, status::ambiguous_write},
        expectation{wire::wire_status::shutting_down, true, status::shutting_down},
        expectation{wire::wire_status::stale_registration, true, status::stale_registration},
        // An unknown id on an answer that is not a header rejection
        // cannot be matched: the WRITE's fate is unknown.
        expectation{wire::wire_status::stale_registration, false, status::ambiguous_write},
        expectation{wire::wire_status::ok, false, status::ambiguous_write}}) {
    scripted_target target(e.answer, e.echo_id);
    auto config = loopback_config();
    config.connections_per_peer = 1;
    auto initiator = start(config);
    auto seg = initiator->open_segment(target.descriptor()).value();
    auto source = pattern(4096, 1);
    auto w = run_one(*initiator, write_req(seg, 7, 0, source.data(), source.size()));
    EXPECT_EQ(w.code, e.code) << to_string(e.answer) << " echo=" << e.echo_id;
    EXPECT_TRUE(initiator->shutdown().ok());
  }
}

// Defect 12: a WRITE that times out is counted in `timeouts` (and ends
// ambiguous: its bytes left).
TEST(transport_hardening, write_timeouts_are_counted) {
  silent_peer stalled;
  auto config = loopback_config();
  config.progress_timeout_ms = 200;
  config.connections_per_peer = 1;
  auto initiator = start(config);
  auto seg = initiator->open_segment(stalled.descriptor()).value();
  auto source = pattern(4096, 2);
  EXPECT_EQ(run_one(*initiator, write_req(seg, 1, 0, source.data(), 4096)).code,
            status::ambiguous_write);
  std::vector<std::byte> back(4096);
  EXPECT_EQ(run_one(*initiator, read_req(seg, 1, 0, back.data(), 4096)).code, status::timeout);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.timeouts, 2u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::ambiguous_write)], 1u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::timeout)], 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// A progress timeout belongs to the connection it ended: the lane's next
// connect, refused, is a connection failure, not a second timeout.
TEST(transport_hardening, a_timeout_does_not_follow_the_lane_to_its_next_connect) {
  std::optional<silent_peer> stalled(std::in_place);
  auto config = loopback_config();
  config.progress_timeout_ms = 200;
  config.connections_per_peer = 1;
  config.reconnect_cooldown_ms = 1;
  auto initiator = start(config);
  auto seg = initiator->open_segment(stalled->descriptor()).value();
  std::vector<std::byte> back(4096);
  EXPECT_EQ(run_one(*initiator, read_req(seg, 1, 0, back.data(), 4096)).code, status::timeout);
  stalled.reset();  // its port now refuses
  EXPECT_EQ(run_one(*initiator, read_req(seg, 1, 0, back.data(), 4096)).code,
            status::connection_failed);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.timeouts, 1u);
  EXPECT_EQ(stats.connect_failures, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Defect 10: idle lanes to a peer that restarted (same port, new
// incarnation). Each lane finds its connection closed before reuse and
// reconnects, so the WRITE gets a definite answer (stale_registration: the
// id is from the old incarnation), never ambiguous_write.
TEST(transport_hardening, idle_lanes_to_a_restarted_peer_reconnect_before_writing) {
  auto target_config = loopback_config();
  std::vector<std::byte> memory(4096);
  auto target = start(target_config);
  auto id = target->register_buffer(memory.data(), 4096, permission::remote_read_write).value();
  auto initiator = start(loopback_config());  // two lanes
  auto seg = initiator->open_segment(target->descriptor()).value();
  auto source = pattern(4096, 3);
  for (int i = 0; i < 2; ++i) {  // one WRITE per lane: both lanes idle and connected
    ASSERT_EQ(run_one(*initiator, write_req(seg, id, 0, source.data(), 4096)).code, status::ok);
  }
  target_config.port = target->descriptor().endpoints[0].port;
  ASSERT_TRUE(target->shutdown().ok());
  target.reset();
  target = start(target_config);  // the same port, a new incarnation
  ASSERT_NE(target, nullptr);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(run_one(*initiator, write_req(seg, id, 0, source.data(), 4096)).code,
              status::stale_registration);
  }
  auto stats = initiator->stats();
  EXPECT_EQ(stats.lanes_found_closed, 2u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::ambiguous_write)], 0u);
  EXPECT_EQ(stats.reconnects, 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A source that returns the target's current descriptor.
class current_descriptor : public descriptor_source {
 public:
  explicit current_descriptor(transport& t) : target_(t) {}
  result<segment_descriptor> fetch() override { return target_.descriptor(); }

 private:
  transport& target_;
};

// Defect 13: opening from a source an incarnation already opened from a
// plain descriptor gives the segment that source: refresh works.
TEST(transport_hardening, a_source_upgrades_a_segment_opened_from_a_descriptor) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  auto memory = pattern(4096, 4);
  auto old_id = target->register_buffer(memory.data(), 4096, permission::remote_read, "kv").value();
  auto plain = initiator->open_segment(target->descriptor()).value();
  auto sourced = initiator->open_segment(std::make_shared<current_descriptor>(*target));
  ASSERT_TRUE(sourced.ok());
  EXPECT_EQ(sourced.value(), plain);
  ASSERT_TRUE(target->unregister_buffer(old_id).ok());
  ASSERT_TRUE(target->register_buffer(memory.data(), 4096, permission::remote_read, "kv").ok());
  std::vector<std::byte> back(4096);
  EXPECT_EQ(run_one(*initiator, read_req(plain, old_id, 0, back.data(), 4096)).code, status::ok);
  EXPECT_EQ(back, memory);
  EXPECT_EQ(initiator->stats().stale_refreshes, 1u);
  EXPECT_EQ(initiator->stats().stale_refresh_attempts, 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Defect 9: drop_connections() while a lane is connecting cancels that
// connect: not a connect failure, no cooldown, and the queued work
// connects again instead of failing with connection_failed.
TEST(transport_hardening, drop_connections_while_connecting_reconnects_queued_work) {
  full_backlog_listener slow;
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.connect_timeout_ms = 20000;
  config.progress_timeout_ms = 300;
  auto initiator = start(config);
  segment_descriptor d{0xc0ffee, {{"127.0.0.1", slow.port()}}, 1u << 30, {}};
  auto seg = initiator->open_segment(d).value();
  std::vector<std::byte> back(64);
  auto r = read_req(seg, 1, 0, back.data(), back.size());
  auto batch = initiator->submit(std::span(&r, 1)).value();
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_connecting == 1; }));
  initiator->drop_connections(seg);
  // Cancelled, then connecting again (not failed): the counters move in
  // that order on the io thread, so wait for both.
  ASSERT_TRUE(eventually([&] {
    auto s = initiator->stats();
    return s.connects_cancelled == 1 && s.lanes_connecting == 1;
  }));
  auto stats = initiator->stats();
  EXPECT_EQ(stats.connect_failures, 0u);
  EXPECT_FALSE(batch->status(0).done);
  slow.make_room();
  // The retransmitted SYN gets through; the peer never answers the READ.
  ASSERT_TRUE(batch->wait(20s));
  EXPECT_EQ(batch->status(0).code, status::timeout);
  stats = initiator->stats();
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(stats.connect_failures, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// Defect 6: a connection that cannot be made non-blocking is a failed
// connect (send_now would block an io thread), and no request goes out.
TEST(transport_hardening, a_socket_that_stays_blocking_is_a_failed_connect) {
  recording_observer served;
  auto target_config = loopback_config();
  target_config.observer = &served;
  auto target = start(target_config);
  auto config = loopback_config();
  config.connections_per_peer = 1;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), 4096, permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  failpoint::scoped refuse("lane.set_non_blocking",
                           {.act = failpoint::action::return_error, .count = 1});
  std::vector<std::byte> back(4096);
  EXPECT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 4096)).code,
            status::connection_failed);
  EXPECT_EQ(initiator->stats().connect_failures, 1u);
  EXPECT_EQ(initiator->stats().connects, 0u);
  EXPECT_TRUE(served.served().empty());
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// After a failed connect the peer is not dialled again before
// reconnect_cooldown_ms (new work fails fast), and after it a probe
// reconnects: each side of the cooldown comparison on its own.
TEST(transport_hardening, a_failed_connect_waits_out_the_cooldown_then_probes) {
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.reconnect_cooldown_ms = 500;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), 4096, permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back(64);
  auto read = [&] { return run_one(*initiator, read_req(seg, id, 0, back.data(), 64)).code; };
  {
    failpoint::scoped fail("lane.set_non_blocking",
                           {.act = failpoint::action::return_error, .count = 1});
    EXPECT_EQ(read(), status::connection_failed);
  }
  const auto failed_at = std::chrono::steady_clock::now();
  const auto soon = read();
  // Only meaningful if it ran inside the cooldown (it takes microseconds).
  if (std::chrono::steady_clock::now() - failed_at < 400ms) {
    EXPECT_EQ(soon, status::connection_failed);
    EXPECT_EQ(initiator->stats().connects, 0u);  // not dialled
  }
  EXPECT_TRUE(eventually([&] { return read() == status::ok; }, 10s));
  EXPECT_EQ(initiator->stats().connects, 1u);  // the probe, once
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}
#endif

// docs/architecture.md: after a failed connect, once the cooldown is over,
// one lane probes and the peer's other lanes wait for its outcome rather
// than all dialling at once; the probe's failure fails the work waiting
// behind it, and the gate opens again for the next probe. The peer never
// answers a connect (its accept queue is full), so each dial stays pending
// until the 300 ms connect timeout and the lanes overlap.
TEST(transport_hardening, after_a_failed_connect_one_lane_probes_while_the_others_wait) {
  full_backlog_listener deaf;
  auto config = loopback_config();
  config.connections_per_peer = 4;
  config.connect_timeout_ms = 300;
  config.reconnect_cooldown_ms = 1000;
  auto initiator = start(config);
  segment_descriptor d{0x9a7e, {{"127.0.0.1", deaf.port()}}, 1u << 30, {}};
  auto seg = initiator->open_segment(d).value();
  std::vector<std::vector<std::byte>> back(4, std::vector<std::byte>(64));
  std::vector<transfer_request> four;
  for (auto& b : back) four.push_back(read_req(seg, 1, 0, b.data(), 64));
  auto cooldown_over = [] {
    // Waits out the configured cooldown: a rule of time, not a race.
    std::this_thread::sleep_for(1100ms);  // sleep-ok: the cooldown is time
  };
  EXPECT_EQ(run_one(*initiator, four[0]).code, status::timeout);
  EXPECT_EQ(initiator->stats().connect_failures, 1u);
  EXPECT_EQ(initiator->stats().timeouts, 1u);  // a connect that timed out counts
  cooldown_over();
  // Four READs, one per lane: one probe dials and times out; the three
  // that waited for it fail at once, without dialling.
  auto batch = initiator->submit(four).value();
  ASSERT_TRUE(batch->wait(20s)) << "the lanes that waited for the probe were never woken";
  int timed_out = 0, failed = 0;
  for (std::size_t i = 0; i < 4; ++i) {
    timed_out += batch->status(i).code == status::timeout;
    failed += batch->status(i).code == status::connection_failed;
  }
  EXPECT_EQ(timed_out, 1) << "lanes that dialled";
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(initiator->stats().connect_failures, 2u);
  cooldown_over();
  // The gate is open again: the next probe dials (and times out).
  auto again = initiator->submit(std::span(&four[0], 1)).value();
  ASSERT_TRUE(again->wait(20s)) << "the next probe never dialled";
  EXPECT_EQ(again->status(0).code, status::timeout);
  EXPECT_EQ(initiator->stats().connect_failures, 3u);
  EXPECT_EQ(initiator->stats().timeouts, 3u);  // the refused ones are not timeouts
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Defect 6: a receive watermark the kernel refused is not recorded, so
// progress() and end() never act on a value that is not in force.
TEST(transport_hardening, a_refused_receive_watermark_is_not_recorded) {
  asio::io_context context;
  asio::ip::tcp::socket never_opened(context);  // every setsockopt fails
  detail::receive_watermark w;
  w.begin(never_opened, 8u << 20, 8u << 20);
  EXPECT_EQ(w.current(), 1u);
  EXPECT_FALSE(w.queued_bytes_grew(never_opened));
  w.end(never_opened);
  EXPECT_EQ(w.current(), 1u);

  asio::ip::tcp::socket open(context);
  open.open(asio::ip::tcp::v4());
  w.begin(open, 8u << 20, 8u << 20);
  EXPECT_EQ(w.current(), detail::receive_watermark::watermark_bytes);
  w.end(open);
  EXPECT_EQ(w.current(), 1u);
}

// A transfer whose first bytes came with its header is as large as it was:
// a 1 MiB WRITE body of which the target's header read took 4 KiB still
// gets the watermark, never above what is still to come; a transfer just
// under the bulk size gets none.
TEST(transport_hardening, the_watermark_follows_the_whole_transfer_not_its_rest) {
  asio::io_context context;
  asio::ip::tcp::socket open(context);
  open.open(asio::ip::tcp::v4());
  constexpr std::size_t bulk = detail::receive_watermark::bulk_bytes_min;
  constexpr std::size_t mark = detail::receive_watermark::watermark_bytes;
  detail::receive_watermark w;
  w.begin(open, bulk - 4096, bulk);
  EXPECT_EQ(w.current(), mark);
  w.end(open);
  w.begin(open, mark - 1, bulk);  // less to come than the watermark
  EXPECT_EQ(w.current(), mark - 1);
  w.end(open);
  w.begin(open, bulk - 1, bulk - 1);
  EXPECT_EQ(w.current(), 1u);
  w.end(open);
}

// The child's side of the accept-backoff test: an exit code, 0 for pass.
int accept_errors_back_off_in_a_child() {
  auto target = start(loopback_config());
  auto endpoint = target->descriptor().endpoints[0];
  asio::io_context context;
  asio::ip::tcp::endpoint to(asio::ip::make_address(endpoint.address), endpoint.port);
  // One connection served before descriptors run out, so the accept path
  // has run once (and built what it builds lazily) with descriptors free.
  asio::ip::tcp::socket warm(context);
  warm.connect(to);
  if (!eventually([&] { return target->stats().sessions_accepted == 1; })) return 9;
  // Client sockets first: connecting them needs no new descriptor.
  std::vector<asio::ip::tcp::socket> clients;
  for (int i = 0; i < 2; ++i) clients.emplace_back(context).open(asio::ip::tcp::v4());
  // Use up every descriptor under a low limit.
  rlimit low{64, 64};
  if (setrlimit(RLIMIT_NOFILE, &low) != 0) return 10;
  std::vector<int> fillers;
  for (int fd; (fd = ::open("/dev/null", O_RDONLY)) >= 0;) fillers.push_back(fd);
  clients[0].connect(to);  // completes in the kernel's backlog
  if (!eventually([&] { return target->stats().accept_errors >= 3; })) return 11;
  // Backing off (1, 2, 4, ... 100 ms) allows about a dozen errors in
  // 300 ms; retrying at once, thousands.
  auto before = target->stats().accept_errors;
  std::this_thread::sleep_for(300ms);  // sleep-ok: measures a rate over a fixed window
  if (target->stats().accept_errors - before > 20) return 12;
  for (int fd : fillers) close(fd);
  if (!eventually([&] { return target->stats().sessions_accepted == 2; })) return 13;
  clients[1].connect(to);
  if (!eventually([&] { return target->stats().sessions_accepted == 3; })) return 14;
  if (target->stats().handler_exceptions != 0) return 15;  // no I/O object failed to build
  return target->shutdown().ok() ? 0 : 16;
}

// Defect 5: accept errors (here EMFILE) back off instead of spinning, are
// counted, and accepting resumes when descriptors are free again. Runs in
// a child process: it lowers its own descriptor limit.
TEST(transport_hardening, accept_errors_back_off_and_accepting_resumes) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  // The asan preset is ASan + UBSan, and UBSan cannot run this: on a miss
  // in its small cache of checked dynamic types (128 slots, indexed by a
  // hash of the vtable address, so which types collide changes with every
  // run's address layout) it opens a pipe to probe the vtable, and with
  // every descriptor in use it reports a false "invalid vptr" and halts.
  // Warming the cache up (the served connection below) made that rare, not
  // impossible: about one run in ten still failed. The test runs under
  // tsan and in plain builds; accept_loop_test.cpp fails accepts with a
  // failpoint instead, which runs here too.
  GTEST_SKIP() << "UBSan needs free descriptors for its type checks";
#endif
#endif
  EXPECT_EXIT(std::_Exit(accept_errors_back_off_in_a_child()), ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace faultlane
