// The transfer engine under failure: stalled peers, half-sent headers,
// connection limits, shutdown under load, handler exceptions, admission
// bounds, idle lanes and late handlers. Every assertion names exact
// statuses and counters.
#include <gtest/gtest.h>

#include <asio/write.hpp>

#include <array>
#include <atomic>
#include <future>
#include <mutex>
#include <set>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/testing/read_within.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;

// Test 3: a stalled peer ends its task with `timeout` while a healthy peer
// served by the same (single) io thread keeps completing.
TEST(transport_fault, stalled_peer_times_out_while_a_healthy_peer_continues) {
  silent_peer stalled;
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.worker_count = 1;  // both peers share one io thread
  config.connections_per_peer = 1;
  config.progress_timeout_ms = 500;
  auto initiator = start(config);
  std::vector<std::byte> memory = pattern(64u << 10, 8);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto healthy = initiator->open_segment(target->descriptor()).value();
  auto stuck = initiator->open_segment(stalled.descriptor()).value();

  std::vector<std::byte> never(4096);
  auto request = read_req(stuck, 1, 0, never.data(), never.size());
  auto stuck_batch = initiator->submit(std::span(&request, 1)).value();
  int healthy_done = 0;
  std::vector<std::byte> back(memory.size());
  while (!stuck_batch->status(0).done) {
    ASSERT_EQ(run_one(*initiator, read_req(healthy, id, 0, back.data(), back.size())).code,
              status::ok);
    ++healthy_done;
    ASSERT_LT(healthy_done, 100000) << "the stalled task never timed out";
  }
  EXPECT_EQ(stuck_batch->status(0).code, status::timeout);
  EXPECT_GT(healthy_done, 0);
  EXPECT_EQ(back, memory);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.timeouts, 1u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::timeout)], 1u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::ok)],
            static_cast<std::uint64_t>(healthy_done));
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Test 5a: a connection that sends half a header is dropped after the
// progress timeout and its session slot is freed.
TEST(transport_fault, half_header_is_dropped_after_the_progress_timeout) {
  auto config = loopback_config();
  config.progress_timeout_ms = 300;
  auto target = start(config);
  raw_client half(target->descriptor().endpoints[0]);
  auto frame = wire::encode(wire::request_frame{wire::opcode::read, 0, 1, 1, 0, 8});
  half.send(frame.data(), 20);
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 1; }));
  EXPECT_TRUE(half.closed_by_peer(10s));
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 0; }));
  auto stats = target->stats();
  EXPECT_EQ(stats.sessions_timed_out, 1u);
  EXPECT_EQ(stats.sessions_accepted, 1u);
  EXPECT_EQ(stats.server_reads + stats.server_writes + stats.server_rejects, 0u);
  EXPECT_TRUE(target->shutdown().ok());
}

// A WRITE whose body stops coming is dropped after the progress timeout, as
// a half header is: bytes that stopped arriving are not progress, however
// many came, and the WRITE never lands.
TEST(transport_fault, a_write_body_that_stops_coming_is_dropped_after_the_progress_timeout) {
  auto config = loopback_config();
  config.progress_timeout_ms = 300;
  auto target = start(config);
  std::vector<std::byte> memory(64);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  raw_client half(target->descriptor().endpoints[0]);
  auto frame = wire::encode(wire::request_frame{wire::opcode::write, 0, 1, id, 0, 64});
  half.send(frame.data(), frame.size());
  const std::vector<std::byte> part(10, std::byte{0x7e});  // 10 of the body's 64 bytes
  half.send(part.data(), part.size());
  EXPECT_TRUE(half.closed_by_peer(10s)) << "a stalled body held its session";
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 0; }));
  auto stats = target->stats();
  EXPECT_EQ(stats.sessions_timed_out, 1u);
  EXPECT_EQ(stats.deadline_checks_with_queued_bytes, 0u);
  EXPECT_EQ(stats.server_writes, 0u);
  EXPECT_TRUE(target->shutdown().ok());
}

// A client that hangs up in the middle of a header ends its session at
// once, and the session's progress deadline goes with it: nothing times
// out afterwards (a deadline left armed would expire on an ended session).
// The deadline is long enough that the hang-up is certain to be handled
// first (at 200 ms, an io thread held that long under load would let it
// expire on a live session), and a deadline left armed still expires inside
// the wait.
TEST(transport_fault, a_client_that_hangs_up_mid_header_leaves_no_deadline_behind) {
  auto config = loopback_config();
  config.progress_timeout_ms = 1000;
  auto target = start(config);
  {
    raw_client half(target->descriptor().endpoints[0]);
    auto frame = wire::encode(wire::request_frame{wire::opcode::read, 0, 1, 1, 0, 8});
    half.send(frame.data(), 20);
    ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 1; }));
  }  // hangs up
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 0; }));
  // Bounded wait for something that must not happen: past the deadline.
  EXPECT_FALSE(eventually([&] { return target->stats().sessions_timed_out > 0; }, 1500ms));
  EXPECT_EQ(target->stats().timeouts, 0u);
  EXPECT_TRUE(target->shutdown().ok());
}

// Test 5b: the connection limit, at the limit and one past it.
TEST(transport_fault, connection_limit_at_and_past_the_bound) {
  auto config = loopback_config();
  config.max_connections = 2;
  auto target = start(config);
  auto ep = target->descriptor().endpoints[0];
  raw_client a(ep);
  raw_client b(ep);
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 2; }));
  EXPECT_EQ(target->stats().sessions_rejected_limit, 0u);
  raw_client c(ep);  // one past the limit: accepted by the kernel, closed by the target
  EXPECT_TRUE(c.closed_by_peer(10s));
  EXPECT_EQ(target->stats().sessions_rejected_limit, 1u);
  EXPECT_EQ(target->stats().sessions_live, 2u);
  EXPECT_FALSE(a.closed_by_peer(50ms));  // the ones within the limit stay
  EXPECT_TRUE(target->shutdown().ok());
  EXPECT_EQ(target->stats().sessions_live, 0u);
}

// Test 6: shutdown while a peer holds a half-sent request and while tasks
// are queued and in flight: bounded, every counter back to zero, every task
// settled exactly once.
TEST(transport_fault, shutdown_under_load_is_bounded_and_drains_everything) {
  silent_peer stalled;
  auto target_config = loopback_config();
  target_config.progress_timeout_ms = 30000;  // nothing here may wait for a timeout
  auto target = start(target_config);
  raw_client half(target->descriptor().endpoints[0]);
  auto frame = wire::encode(wire::request_frame{wire::opcode::write, 0, 1, 1, 0, 8});
  half.send(frame.data(), 11);

  auto config = loopback_config();
  config.connections_per_peer = 2;
  config.progress_timeout_ms = 30000;
  auto initiator = start(config);
  constexpr int tasks = 40;
  constexpr std::size_t slot = 256u << 10;
  // Each task owns its own slot: concurrent READs and WRITEs of one range
  // would be a race in the workload itself.
  std::vector<std::byte> memory(tasks * slot);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto live = initiator->open_segment(target->descriptor()).value();
  auto stuck = initiator->open_segment(stalled.descriptor()).value();

  std::vector<std::vector<std::byte>> buffers(tasks, std::vector<std::byte>(256u << 10));
  std::vector<transfer_request> requests;
  for (int i = 0; i < tasks; ++i) {
    auto seg = i % 2 == 0 ? stuck : live;
    auto op = i % 3 == 0 ? wire::opcode::write : wire::opcode::read;
    requests.push_back({op, buffers[i].data(), buffers[i].size(), seg, id, i * slot});
  }
  std::mutex seen_mutex;
  std::multiset<std::size_t> seen;
  auto batch = initiator
                   ->submit(requests,
                            [&](std::size_t index, status, std::uint64_t) {
                              std::lock_guard lock(seen_mutex);
                              seen.insert(index);
                            })
                   .value();
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live >= 2; }));

  auto started = std::chrono::steady_clock::now();
  auto down = initiator->shutdown();
  auto target_down = target->shutdown();
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(down.ok()) << down.error().message;
  EXPECT_TRUE(target_down.ok()) << target_down.error().message;
  EXPECT_LT(took, 5s);  // bounded by cancellation, not by the 30 s timeouts

  ASSERT_TRUE(batch->wait(1s));
  std::lock_guard lock(seen_mutex);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(tasks));
  for (int i = 0; i < tasks; ++i) EXPECT_EQ(seen.count(static_cast<std::size_t>(i)), 1u) << i;
  for (int i = 0; i < tasks; ++i) {
    auto s = batch->status(static_cast<std::size_t>(i));
    EXPECT_TRUE(s.done);
    if (i % 2 == 0) {  // the stalled peer can only end in shutdown
      EXPECT_TRUE(s.code == status::shutting_down || s.code == status::ambiguous_write)
          << i << " " << to_string(s.code);
    }
  }
  for (auto* t : {initiator.get(), target.get()}) {
    auto stats = t->stats();
    EXPECT_EQ(stats.tasks_admitted_now, 0u);
    EXPECT_EQ(stats.bytes_admitted_now, 0u);
    EXPECT_EQ(stats.leases_live, 0u);
    EXPECT_EQ(stats.sessions_live, 0u);
    EXPECT_EQ(stats.lanes_connected, 0u);
    EXPECT_EQ(stats.lanes_connecting, 0u);
    EXPECT_EQ(stats.tasks_completed, stats.tasks_submitted);
  }
  EXPECT_TRUE(half.closed_by_peer(1s));
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// Test 7: an exception escaping a handler marks the runtime failed: new work
// gets runtime_failed, work in flight still settles, shutdown reports it.
TEST(transport_fault, handler_exception_marks_the_runtime_failed) {
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.connections_per_peer = 1;
  auto initiator = start(config);
  std::vector<std::byte> memory = pattern(1u << 20, 4);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();

  failpoint::scoped thrower("client.on_response",
                            {.act = failpoint::action::throw_exception, .count = 1});
  std::vector<std::vector<std::byte>> back(4, std::vector<std::byte>(memory.size()));
  std::vector<transfer_request> requests;
  for (auto& b : back) requests.push_back(read_req(seg, id, 0, b.data(), b.size()));
  auto batch = initiator->submit(requests).value();
  ASSERT_TRUE(batch->wait(20s));  // every task settles, thrown-in or queued
  EXPECT_EQ(batch->status(0).code, status::runtime_failed);
  EXPECT_EQ(failpoint::fired("client.on_response"), 1u);
  EXPECT_TRUE(initiator->stats().runtime_failed);

  std::vector<std::byte> more(16);
  auto rejected = initiator->submit(std::vector{read_req(seg, id, 0, more.data(), 16)});
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.code(), status::runtime_failed);
  auto down = initiator->shutdown();
  EXPECT_EQ(down.code(), status::runtime_failed);
  EXPECT_EQ(initiator->stats().tasks_admitted_now, 0u);
  EXPECT_TRUE(target->shutdown().ok());  // the target was not harmed
}
#endif

// Test 10: admission at the bound and one past it, then recovery.
TEST(transport_fault, admission_busy_at_the_bound_and_recovery) {
  silent_peer stalled;
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.max_outstanding_tasks = 2;
  config.max_outstanding_bytes = 1u << 20;
  config.progress_timeout_ms = 300;
  auto initiator = start(config);
  std::vector<std::byte> memory(1u << 20);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto live = initiator->open_segment(target->descriptor()).value();
  auto stuck = initiator->open_segment(stalled.descriptor()).value();

  std::vector<std::byte> a(1024), b(1024), c(1024), big((1u << 20) + 1);
  auto held = initiator->submit(
      std::vector{read_req(stuck, 1, 0, a.data(), 1024), read_req(stuck, 1, 0, b.data(), 1024)});
  ASSERT_TRUE(held.ok());
  auto past = initiator->submit(std::vector{read_req(live, id, 0, c.data(), 1024)});
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.code(), status::busy);
  EXPECT_EQ(initiator->stats().rejected_busy, 1u);
  EXPECT_EQ(initiator->stats().tasks_admitted_now, 2u);

  ASSERT_TRUE(held.value()->wait(10s));  // the stalled reads time out
  EXPECT_EQ(held.value()->status(0).code, status::timeout);
  EXPECT_EQ(run_one(*initiator, read_req(live, id, 0, c.data(), 1024)).code, status::ok);
  // The byte bound: exactly at it fits, one past it is busy.
  EXPECT_EQ(run_one(*initiator, read_req(live, id, 0, big.data(), 1u << 20)).code, status::ok);
  auto over = initiator->submit(std::vector{read_req(live, id, 0, a.data(), 1024),
                                            read_req(live, id, 0, big.data(), 1u << 20)});
  EXPECT_EQ(over.code(), status::busy);
  EXPECT_EQ(initiator->stats().rejected_busy, 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Test 11: an idle lane is closed after idle_connection_timeout_ms and
// transparently reconnected on next use.
TEST(transport_fault, idle_lane_closes_and_reconnects_on_next_use) {
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.connections_per_peer = 1;
  // Long enough that the lane is still up when the test reads the gauge
  // after the READ (a stall of the timeout between them closes it first).
  config.idle_connection_timeout_ms = 500;
  auto initiator = start(config);
  std::vector<std::byte> memory = pattern(8192, 12);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back(8192);
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 8192)).code, status::ok);
  EXPECT_EQ(initiator->stats().lanes_connected, 1u);
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_idle_closed == 1; }));
  EXPECT_EQ(initiator->stats().lanes_connected, 0u);
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 0; }));

  std::fill(back.begin(), back.end(), std::byte{0});
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 8192)).code, status::ok);
  EXPECT_EQ(back, memory);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.connects, 2u);
  EXPECT_EQ(stats.reconnects, 1u);
  EXPECT_EQ(stats.connect_failures, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A connect whose work expired while it was pending: the lane closes the
// connection as it comes up. Kept idle, it would carry nothing, and a
// target closes such a connection after its progress timeout, under
// whatever request comes next (a WRITE that meets that close is
// ambiguous). The connect is held pending for real: the listener's accept
// queue (backlog 0) is full, so the kernel drops the SYN until the test
// makes room, after the op has expired.
TEST(transport_fault, a_connect_whose_work_expired_meanwhile_is_closed_as_it_comes_up) {
  asio::io_context context;
  asio::ip::tcp::acceptor listener(context);
  listener.open(asio::ip::tcp::v4());
  listener.bind({asio::ip::make_address("127.0.0.1"), 0});
  listener.listen(0);
  asio::ip::tcp::socket filler(context);
  filler.connect(listener.local_endpoint());  // the one place in the accept queue
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.connect_timeout_ms = 30000;
  auto initiator = start(config);
  const segment_descriptor d{
      0x5113, {{"127.0.0.1", listener.local_endpoint().port()}}, 1u << 30, {}};
  auto seg = initiator->open_segment(d).value();
  std::vector<std::byte> back(4096);
  auto r = read_req(seg, 1, 0, back.data(), back.size());
  r.start_deadline_ms = 50;
  ASSERT_EQ(run_one(*initiator, r).code, status::timeout);  // never left the queue
  EXPECT_EQ(initiator->stats().lanes_connecting, 1u);       // its connect still pending

  asio::ip::tcp::socket taken(context);
  listener.accept(taken);  // room: the next SYN gets in
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_closed_unused == 1; }, 20s));
  const auto stats = initiator->stats();
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(stats.lanes_connected, 0u);
  EXPECT_EQ(stats.lanes_connecting, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// The same on a reconnect: a lane whose first connection carried a
// request, dropped, and connecting again for work that expired meanwhile,
// closes the new connection unused too (whether a connection carried a
// request is its own, not the lane's).
TEST(transport_fault, a_reconnect_whose_work_expired_meanwhile_is_closed_as_it_comes_up_too) {
  asio::io_context context;
  asio::ip::tcp::acceptor listener(context);
  listener.open(asio::ip::tcp::v4());
  listener.bind({asio::ip::make_address("127.0.0.1"), 0});
  listener.listen(0);
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.connect_timeout_ms = 30000;
  auto initiator = start(config);
  const segment_descriptor d{
      0x5113, {{"127.0.0.1", listener.local_endpoint().port()}}, 1u << 30, {}};
  auto seg = initiator->open_segment(d).value();
  std::vector<std::byte> back(64);
  // The first connection carries one READ, answered by hand.
  auto first_read = std::async(std::launch::async, [&] {
    return run_one(*initiator, read_req(seg, 1, 0, back.data(), back.size())).code;
  });
  asio::ip::tcp::socket first(context);
  ASSERT_FALSE(accept_within(listener, first));
  wire::request_bytes header{};
  ASSERT_FALSE(read_within(first, asio::buffer(header)));
  auto request = wire::decode_request(header, 1u << 30);
  ASSERT_TRUE(request.ok());
  const auto payload = pattern(64, 9);
  auto answer = wire::encode(wire::response_frame{wire::wire_status::ok,
                                                   request.value().request_id, 64});
  asio::write(first, std::array{asio::const_buffer(answer.data(), answer.size()),
                                asio::const_buffer(payload.data(), payload.size())});
  ASSERT_EQ(first_read.get(), status::ok);
  asio::ip::tcp::socket filler(context);
  filler.connect(listener.local_endpoint());  // the one place in the accept queue
  initiator->drop_connections(seg);
  auto r = read_req(seg, 1, 0, back.data(), back.size());
  r.start_deadline_ms = 50;
  ASSERT_EQ(run_one(*initiator, r).code, status::timeout);  // never left the queue
  asio::ip::tcp::socket taken(context);
  listener.accept(taken);  // room: the next SYN gets in
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_closed_unused == 1; }, 20s))
      << "a reconnect with nothing to send was kept idle";
  const auto stats = initiator->stats();
  EXPECT_EQ(stats.connects, 2u);
  EXPECT_EQ(stats.lanes_connected, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// Test 12: after a forced reconnect, the superseded idle-timer handler is
// counted as dropped and touches nothing; work goes on correctly.
TEST(transport_fault, late_handler_after_forced_reconnect_is_dropped) {
  recording_observer view;
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.observer = &view;
  auto initiator = start(config);
  std::vector<std::byte> memory = pattern(8192, 13);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back(8192);
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 8192)).code, status::ok);
  auto before = initiator->stats();

  initiator->drop_connections(seg);  // the lane is idle; its idle timer is pending
  ASSERT_TRUE(eventually([&] {
    return initiator->stats().stale_handlers_dropped == before.stale_handlers_dropped + 1;
  }));
  auto after_drop = initiator->stats();
  EXPECT_EQ(after_drop.lanes_connected, 0u);
  EXPECT_EQ(after_drop.lanes_idle_closed, 0u);  // the stale idle timer did not fire its action
  EXPECT_EQ(after_drop.tasks_completed, before.tasks_completed);

  std::fill(back.begin(), back.end(), std::byte{0});
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 8192)).code, status::ok);
  EXPECT_EQ(back, memory);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.reconnects, 1u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::ok)], 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A WRITE whose ACK never arrives (the target's ACK is withheld by a
// failpoint, then the connection drops) ends ambiguous_write, and the target
// executed it exactly once: it is not replayed on the reconnected lane.
#if defined(FAULTLANE_FAILPOINTS_ENABLED)
TEST(transport_fault, lost_write_ack_is_ambiguous_and_never_replayed) {
  recording_observer target_view;
  auto target_config = loopback_config();
  target_config.observer = &target_view;
  auto target = start(target_config);
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.progress_timeout_ms = 300;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  auto source = pattern(4096, 21);
  {
    failpoint::scoped hold("server.before_write_ack",
                           {.act = failpoint::action::pause, .count = 1});
    auto batch = initiator->submit(std::vector{write_req(seg, id, 0, source.data(), 4096)}).value();
    ASSERT_TRUE(batch->wait(10s));
    EXPECT_EQ(batch->status(0).code, status::ambiguous_write);
    failpoint::resume("server.before_write_ack");
  }
  std::vector<std::byte> back(4096);
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 4096)).code, status::ok);
  EXPECT_EQ(back, source);  // it did execute, once
  ASSERT_TRUE(
      eventually([&] { return target_view.served_count(wire::opcode::write, status::ok) >= 1; }));
  EXPECT_EQ(target_view.served_count(wire::opcode::write, status::ok), 1u);
  EXPECT_EQ(initiator->stats().failures_by_status[static_cast<int>(status::ambiguous_write)], 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}
#endif

}  // namespace
}  // namespace faultlane
