// Lifetimes and re-entry: destroying a transport after any shutdown result
// (or none), shutdown and destruction from inside a completion callback,
// drop_connections racing a stop, and the one handler guard that every
// handler kind runs behind. Each test names the defect it pins down.
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;

// Counts each task's terminal statuses, from the observer and from the
// batch callback, so "exactly once" is checked twice over.
class settle_log : public transport_observer {
 public:
  void task_finalized(const task_event& t, status s, std::uint64_t) override {
    std::lock_guard lock(mutex_);
    by_task_[t.task_id].push_back(s);
  }
  task_callback callback() {
    return [this](std::size_t index, status s, std::uint64_t) {
      std::lock_guard lock(mutex_);
      by_index_[index].push_back(s);
    };
  }
  // Every one of `tasks` tasks settled exactly once, with a status in `allowed`.
  void expect_each_settled_once(std::size_t tasks, const std::set<status>& allowed) const {
    std::lock_guard lock(mutex_);
    EXPECT_EQ(by_task_.size(), tasks);
    EXPECT_EQ(by_index_.size(), tasks);
    for (const auto& [task, statuses] : by_task_) {
      ASSERT_EQ(statuses.size(), 1u) << "task " << task;
      EXPECT_TRUE(allowed.count(statuses[0])) << "task " << task << ": " << to_string(statuses[0]);
    }
    for (const auto& [index, statuses] : by_index_) EXPECT_EQ(statuses.size(), 1u) << index;
  }
  std::size_t settled() const {
    std::lock_guard lock(mutex_);
    return by_task_.size();
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::vector<status>> by_task_;
  std::map<std::size_t, std::vector<status>> by_index_;
};

// Threads of this process, from /proc.
[[maybe_unused]] std::size_t thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::stoul(line.substr(8));
  }
  return 0;
}

std::vector<transfer_request> reads_to(segment_id seg, registration_id id,
                                       std::vector<std::vector<std::byte>>& into) {
  std::vector<transfer_request> out;
  for (auto& b : into) out.push_back(read_req(seg, id, 0, b.data(), b.size()));
  return out;
}

// An initiator on loopback whose observer is `log`.
auto start_observed(settle_log& log) {
  auto config = loopback_config();
  config.observer = &log;
  return start(config);
}

// Defect 1: no shutdown at all, work in flight to a peer that never
// answers. Destruction settles every task once; WRITEs whose bytes left
// are ambiguous, everything else shutting_down.
TEST(transport_lifetime, destroy_without_shutdown_settles_work_in_flight) {
  silent_peer stalled;
  settle_log log;
  auto initiator = start_observed(log);
  auto seg = initiator->open_segment(stalled.descriptor()).value();
  std::vector<std::vector<std::byte>> buffers(6, std::vector<std::byte>(4096));
  auto requests = reads_to(seg, 1, buffers);
  for (std::size_t i = 0; i < 3; ++i) requests[i].op = wire::opcode::write;
  auto batch = initiator->submit(requests, log.callback()).value();
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_connected == 2; }));
  initiator.reset();
  log.expect_each_settled_once(6, {status::shutting_down, status::ambiguous_write});
  EXPECT_EQ(batch->completed(), 6u);
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// Defect 1: a shutdown that timed out (its io thread was held past the
// bound) left dispatches queued. They never run; destroying the transport
// settles each as shutting_down while admission and stats still exist.
TEST(transport_lifetime, destroy_after_a_timed_out_shutdown_settles_queued_work) {
  settle_log log;
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.worker_count = 1;
  config.shutdown_timeout_ms = 1;
  config.observer = &log;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();

  failpoint::scoped slow("lane.enqueue", {.act = failpoint::action::delay, .delay_ms = 300});
  std::vector<std::vector<std::byte>> buffers(8, std::vector<std::byte>(4096));
  auto batch = initiator->submit(reads_to(seg, id, buffers), log.callback()).value();
  ASSERT_TRUE(eventually([] { return failpoint::evaluated("lane.enqueue") >= 1; }));
  auto down = initiator->shutdown();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.code(), status::timeout);
  EXPECT_LT(log.settled(), 8u);  // the queued dispatches never ran
  initiator.reset();
  log.expect_each_settled_once(8, {status::ok, status::shutting_down});
  EXPECT_TRUE(target->shutdown().ok());
}

// A drain that never ran (the planted bug that skips it) leaves ops on the
// lanes, queued and in flight to a peer that never answers. A sliced
// READ's task holds its lanes while each lane holds one of its slices, so
// only the lanes letting go settles them: destruction must, once each,
// while admission is alive (its destructor asserts no task is left).
TEST(transport_lifetime, destroy_after_a_skipped_drain_settles_the_work_lanes_hold) {
  silent_peer stalled;
  settle_log log;
  auto config = loopback_config();
  config.bind_address = "";
  config.rail_addresses = {"127.0.0.1", "127.0.0.2"};
  config.observer = &log;
  auto initiator = start(config);
  auto d = stalled.descriptor();
  d.endpoints.push_back(d.endpoints[0]);  // two rails: a 2 MiB READ is sliced
  auto seg = initiator->open_segment(d).value();
  std::vector<std::vector<std::byte>> buffers(4, std::vector<std::byte>(2u << 20));
  auto requests = reads_to(seg, 1, buffers);
  requests[0].op = wire::opcode::write;
  requests[0].length = 4096;
  auto batch = initiator->submit(requests, log.callback()).value();
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_connected >= 2; }));
  {
    failpoint::scoped skip("planted.shutdown_skip_drain", {.act = failpoint::action::return_error});
    EXPECT_TRUE(initiator->shutdown().ok());
  }
  EXPECT_EQ(log.settled(), 0u);  // nothing drained
  initiator.reset();
  log.expect_each_settled_once(4, {status::shutting_down, status::ambiguous_write});
  EXPECT_EQ(batch->completed(), 4u);
}

// A WRITE too big for the socket buffers, to a peer that never reads, is
// still leaving (its async_write outstanding, the lane's request writer
// `writing`) when a drain that never ran stops the event loops. Its handler
// never runs: destruction settles it ambiguous_write, once.
TEST(transport_lifetime, destroy_after_a_skipped_drain_settles_a_write_still_leaving) {
  silent_peer stalled;
  settle_log log;
  auto initiator = start_observed(log);
  auto seg = initiator->open_segment(stalled.descriptor()).value();
  std::vector<std::byte> big(64u << 20);  // far past loopback's socket buffers
  auto w = read_req(seg, 1, 0, big.data(), big.size());
  w.op = wire::opcode::write;
  auto batch = initiator->submit(std::span(&w, 1), log.callback()).value();
  // Sent in the handler that connected the lane, which ends before the
  // event loops stop.
  ASSERT_TRUE(eventually([&] { return initiator->stats().request_sends >= 1; }));
  {
    failpoint::scoped skip("planted.shutdown_skip_drain", {.act = failpoint::action::return_error});
    EXPECT_TRUE(initiator->shutdown().ok());
  }
  EXPECT_EQ(log.settled(), 0u);
  initiator.reset();
  log.expect_each_settled_once(1, {status::ambiguous_write});
  EXPECT_EQ(batch->completed(), 1u);
}

// Defect 1, target side: sessions still open when a shutdown gave up.
TEST(transport_lifetime, destroy_a_target_whose_shutdown_left_sessions_open) {
  auto config = loopback_config();
  config.worker_count = 1;
  config.shutdown_timeout_ms = 1;
  auto target = start(config);
  std::vector<std::byte> memory(1u << 16);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  raw_client idle(target->descriptor().endpoints[0]);
  raw_client held(target->descriptor().endpoints[0]);
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 2; }));
  failpoint::scoped slow("server.on_header", {.act = failpoint::action::delay, .delay_ms = 300});
  auto header = wire::encode(wire::request_frame{wire::opcode::write, 0, 1, id, 0, 1u << 16});
  held.send(header.data(), header.size());
  ASSERT_TRUE(eventually([] { return failpoint::evaluated("server.on_header") >= 1; }));
  auto down = target->shutdown();
  EXPECT_EQ(down.code(), status::timeout);
  target.reset();  // sessions, their sockets and leases go with it
}

// Defect 3: shutdown() from a completion callback returns an error at once
// instead of waiting on its own thread; the caller's thread shuts down.
TEST(transport_lifetime, shutdown_from_a_callback_is_refused_without_hanging) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::promise<result<void>> inner;
  std::vector<std::byte> back(4096);
  auto r = read_req(seg, id, 0, back.data(), back.size());
  auto batch =
      initiator
          ->submit(std::span(&r, 1), [&](std::size_t, status,
                                         std::uint64_t) { inner.set_value(initiator->shutdown()); })
          .value();
  auto f = inner.get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  auto refused = f.get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), status::invalid_argument);
  EXPECT_NE(refused.error().message.find("io thread"), std::string::npos);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Defect 3: destroying the transport from a completion callback completes
// on another thread; the other tasks still settle exactly once.
TEST(transport_lifetime, destroy_from_a_callback_finishes_on_another_thread) {
  silent_peer stalled;
  settle_log log;
  auto target = start(loopback_config());
  const std::size_t threads_before = thread_count();  // the sanitizer's own threads are up
  auto config = loopback_config();
  config.observer = &log;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto live = initiator->open_segment(target->descriptor()).value();
  auto stuck = initiator->open_segment(stalled.descriptor()).value();
  std::vector<std::vector<std::byte>> buffers(4, std::vector<std::byte>(4096));
  auto held = initiator->submit(reads_to(stuck, 1, buffers), log.callback()).value();
  std::vector<std::byte> back(4096);
  auto r = read_req(live, id, 0, back.data(), back.size());
  std::atomic<bool> destroyed{false};
  // The callback may run before submit() returns; destroying the transport
  // while this thread is still inside one of its methods would be the
  // test's own use-after-free, so it waits (bounded) for submit to return.
  std::promise<void> submitted;
  auto submit_returned = submitted.get_future().share();
  auto on_done = [&, submit_returned](std::size_t, status, std::uint64_t) {
    if (submit_returned.wait_for(10s) != std::future_status::ready) return;
    initiator.reset();  // on an io thread
    destroyed = true;
  };
  auto batch = initiator->submit(std::span(&r, 1), on_done).value();
  submitted.set_value();
  ASSERT_TRUE(batch->wait(10s));
  ASSERT_TRUE(held->wait(10s));  // the reaper's shutdown settled them
  EXPECT_TRUE(destroyed.load());
  for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(held->status(i).code, status::shutting_down);
  ASSERT_TRUE(eventually([&] { return log.settled() == 5; }));
  // The thread that destroyed it, and its io threads, are all gone: nothing
  // of the initiator runs past this test.
  EXPECT_TRUE(eventually([&] { return thread_count() == threads_before; }))
      << thread_count() << " threads, " << threads_before << " before the initiator";
  EXPECT_TRUE(target->shutdown().ok());
}
#endif

// Defect 3: drop_connections() racing shutdown() from another thread, and
// from a callback, never hangs and never touches a stopped pool.
TEST(transport_lifetime, drop_connections_racing_shutdown_returns) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back(4096);
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 4096)).code, status::ok);
  auto r = read_req(seg, id, 0, back.data(), back.size());
  auto from_callback =
      initiator
          ->submit(std::span(&r, 1),
                   [&](std::size_t, status, std::uint64_t) { initiator->drop_connections(seg); })
          .value();
  ASSERT_TRUE(from_callback->wait(10s));
  std::atomic<bool> stop{false};
  std::atomic<int> drops{0};
  std::thread dropper([&] {
    while (!stop.load()) {
      initiator->drop_connections(seg);
      ++drops;
    }
  });
  ASSERT_TRUE(eventually([&] { return drops.load() >= 3; }));
  EXPECT_TRUE(initiator->shutdown().ok());
  stop = true;
  dropper.join();
  initiator->drop_connections(seg);  // after shutdown: returns at once
  EXPECT_TRUE(target->shutdown().ok());
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// Defect 2: a completion callback that throws marks the runtime failed; the
// task is still done, the others in its batch still settle and call back.
TEST(transport_guard, throwing_completion_callback_marks_the_runtime_failed) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::vector<std::byte>> buffers(4, std::vector<std::byte>(4096));
  std::atomic<int> calls{0};
  auto batch = initiator
                   ->submit(reads_to(seg, id, buffers),
                            [&](std::size_t, status, std::uint64_t) {
                              if (calls.fetch_add(1) == 0) throw std::runtime_error("user bug");
                            })
                   .value();
  ASSERT_TRUE(batch->wait(10s));
  EXPECT_EQ(calls.load(), 4);
  for (std::size_t i = 0; i < 4; ++i) EXPECT_TRUE(batch->status(i).done);
  auto stats = initiator->stats();
  EXPECT_TRUE(stats.runtime_failed);
  EXPECT_EQ(stats.handler_exceptions, 1u);
  EXPECT_EQ(initiator->shutdown().code(), status::runtime_failed);
  EXPECT_TRUE(target->shutdown().ok());
}

// An observer that throws as a lane connects: the lane must end closed and
// uncounted, not stay "connecting" (it used to keep lanes_connected at 1
// for good, with the connect gate's outcome never reported).
TEST(transport_guard, an_observer_throwing_as_a_lane_connects_leaves_no_lane_behind) {
  struct throwing_observer : transport_observer {
    std::atomic<int> closed{0};
    void lane_connected(const lane_event&) override { throw std::runtime_error("observer bug"); }
    void lane_closed(const lane_event&, status) override { closed.fetch_add(1); }
  } observer;
  auto target = start(loopback_config());
  auto config = loopback_config();
  config.observer = &observer;
  config.connections_per_peer = 1;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> local(4096);
  auto batch = initiator->submit({{read_req(seg, id, 0, local.data(), local.size())}}).value();
  ASSERT_TRUE(batch->wait(10s));
  EXPECT_EQ(batch->status(0).code, status::runtime_failed);
  auto stats = initiator->stats();
  EXPECT_TRUE(stats.runtime_failed);
  EXPECT_EQ(stats.handler_exceptions, 1u);
  EXPECT_EQ(stats.connects, 1u);
  EXPECT_EQ(stats.lanes_connected, 0u);
  EXPECT_EQ(stats.lanes_connecting, 0u);
  EXPECT_EQ(observer.closed.load(), 1);  // a connected lane closes, and says so
  EXPECT_EQ(initiator->shutdown().code(), status::runtime_failed);
  EXPECT_EQ(initiator->stats().lanes_connected, 0u);
  EXPECT_TRUE(target->shutdown().ok());
}

// Defect 2: a failpoint throwing in each kind of handler. The process
// survives (no std::terminate), the runtime that ran the handler is marked
// failed, every task settles once, and shutdown reports the failure.
struct handler_case {
  const char* failpoint;
  bool on_target;  // the handler runs on the target transport
};

class transport_guard_each_handler : public ::testing::TestWithParam<handler_case> {};

TEST_P(transport_guard_each_handler, a_throw_marks_the_runtime_failed_and_work_settles) {
  const auto param = GetParam();
  settle_log log;
  auto target_config = loopback_config();
  target_config.bind_address = "";
  target_config.rail_addresses = {"127.0.0.1", "127.0.0.2"};
  target_config.progress_timeout_ms = 200;  // session.on_deadline fires
  auto target = start(target_config);
  auto config = loopback_config();
  config.observer = &log;
  config.connections_per_peer = 4;
  config.bind_address = "";
  config.rail_addresses = target_config.rail_addresses;
  config.idle_connection_timeout_ms = 200;  // lane.on_deadline fires
  auto initiator = start(config);
  std::vector<std::byte> memory = pattern(4u << 20, 3);
  std::vector<std::byte> other(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto plain_id =
      target->register_buffer(other.data(), other.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();

  failpoint::scoped thrower(param.failpoint,
                            {.act = failpoint::action::throw_exception, .count = 1});
  // A sliced READ whose first slice fails (so siblings are cancelled), a
  // plain READ, and a half header on the target (so its deadline fires).
  failpoint::scoped fail_slice("server.before_read_payload",
                               {.act = failpoint::action::return_error,
                                .error = status::range_rejected,
                                .count = 1,
                                .only_key = id});
  raw_client half(target->descriptor().endpoints[0]);
  auto header = wire::encode(wire::request_frame{wire::opcode::read, 0, 1, id, 0, 8});
  half.send(header.data(), 10);
  std::vector<std::byte> sliced(4u << 20), plain(4096);
  std::vector<transfer_request> requests{read_req(seg, id, 0, sliced.data(), sliced.size()),
                                         read_req(seg, plain_id, 0, plain.data(), plain.size())};
  auto batch = initiator->submit(requests, log.callback()).value();
  ASSERT_TRUE(batch->wait(20s));
  ASSERT_TRUE(eventually([&] { return failpoint::fired(param.failpoint) == 1; }))
      << param.failpoint << " never ran";
  auto& failed = param.on_target ? *target : *initiator;
  ASSERT_TRUE(eventually([&] { return failed.stats().runtime_failed; }));
  EXPECT_EQ(failed.stats().handler_exceptions, 1u);
  log.expect_each_settled_once(
      2, {status::ok, status::range_rejected, status::runtime_failed, status::cancelled,
          status::protocol_error, status::connection_failed, status::timeout});
  EXPECT_EQ(failed.shutdown().code(), status::runtime_failed);
  (void)initiator->shutdown();
  (void)target->shutdown();
}

INSTANTIATE_TEST_SUITE_P(
    kinds, transport_guard_each_handler,
    ::testing::Values(handler_case{"server.on_accept", true},        // listener
                      handler_case{"server.on_header", true},        // session socket handler
                      handler_case{"session.on_deadline", true},     // session timer
                      handler_case{"lane.enqueue", false},           // dispatch hop
                      handler_case{"lane.set_non_blocking", false},  // connect handler
                      handler_case{"lane.cancel_task", false},       // sibling-cancel hop
                      handler_case{"client.on_response", false},     // lane socket handler
                      handler_case{"lane.on_deadline", false}),      // lane timer (idle)
    [](const auto& info) {
      std::string name = info.param.failpoint;
      for (auto& c : name) c = c == '.' ? '_' : c;
      return name;
    });
#endif

}  // namespace
}  // namespace faultlane
