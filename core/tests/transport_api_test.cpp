// The API promises a user relies on: a per-task start deadline, what
// submit() refuses, closing a segment, submit() from a completion callback,
// services attached to a transport, and a shutdown that closes the listener.
#include <gtest/gtest.h>

#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <future>
#include <limits>

#include "faultlane/core/limits.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;

// A task that waits too long behind a stalled exchange on its lane ends
// `timeout` at its start deadline, while the stalled one is still held; a
// WRITE that never left is a definite timeout, not ambiguous.
TEST(transport_api, start_deadline_ends_work_that_waited_too_long) {
  silent_peer stalled;
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.progress_timeout_ms = 60000;  // the stalled exchange is not under test
  config.lane_inflight_max = 1;        // the later work queues behind it, unsent
  auto initiator = start(config);
  auto seg = initiator->open_segment(stalled.descriptor()).value();
  std::vector<std::byte> a(4096), b(4096), c(4096);
  auto first = read_req(seg, 1, 0, a.data(), a.size());
  auto held = initiator->submit(std::span(&first, 1)).value();
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_connected == 1; }));
  auto late_read = read_req(seg, 1, 0, b.data(), b.size());
  late_read.start_deadline_ms = 1;  // the shortest there is (0 means none)
  auto late_write = write_req(seg, 1, 0, c.data(), c.size());
  late_write.start_deadline_ms = 150;
  auto no_deadline = read_req(seg, 1, 0, c.data(), c.size());
  auto batch = initiator->submit(std::vector{late_read, late_write, no_deadline}).value();
  ASSERT_TRUE(eventually([&] { return batch->completed() == 2; }));
  EXPECT_EQ(batch->status(0).code, status::timeout);
  EXPECT_EQ(batch->status(1).code, status::timeout);  // never sent: definite
  EXPECT_FALSE(batch->status(2).done);                // no deadline: still queued
  EXPECT_FALSE(held->status(0).done);
  auto stats = initiator->stats();
  EXPECT_EQ(stats.timeouts, 2u);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::ambiguous_write)], 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_EQ(batch->status(2).code, status::shutting_down);
}

// Queued work submitted apart ends at its own start deadline, whichever
// came first: a later, longer deadline does not push back a shorter one,
// nor does a shorter one wait for a longer one.
TEST(transport_api, each_queued_task_ends_at_its_own_start_deadline_in_either_order) {
  for (bool short_first : {true, false}) {
    silent_peer stalled;
    auto config = loopback_config();
    config.connections_per_peer = 1;
    config.progress_timeout_ms = 60000;
    config.lane_inflight_max = 1;
    auto initiator = start(config);
    auto seg = initiator->open_segment(stalled.descriptor()).value();
    std::vector<std::byte> a(64), b(64), c(64);
    auto first = read_req(seg, 1, 0, a.data(), a.size());
    auto held = initiator->submit(std::span(&first, 1)).value();
    ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_connected == 1; }));
    auto quick = read_req(seg, 1, 0, b.data(), b.size());
    quick.start_deadline_ms = 100;
    auto slow = read_req(seg, 1, 0, c.data(), c.size());
    slow.start_deadline_ms = 30000;
    std::shared_ptr<transfer_batch> quick_batch, slow_batch;
    if (short_first) quick_batch = initiator->submit(std::span(&quick, 1)).value();
    slow_batch = initiator->submit(std::span(&slow, 1)).value();
    if (!short_first) quick_batch = initiator->submit(std::span(&quick, 1)).value();
    // 100 ms, given up to 10 s on a loaded machine: far short of 30 s.
    ASSERT_TRUE(quick_batch->wait(10s)) << "short first " << short_first;
    EXPECT_EQ(quick_batch->status(0).code, status::timeout);
    EXPECT_FALSE(slow_batch->status(0).done);
    EXPECT_TRUE(initiator->shutdown().ok());
  }
}

// A target serving 64 readable bytes, an initiator with its segment, and
// 64 bytes to read them into; both shut down cleanly when it goes.
struct reading_pair {
  std::unique_ptr<transport> target = start(loopback_config());
  std::unique_ptr<transport> initiator = start(loopback_config());
  std::vector<std::byte> memory = std::vector<std::byte>(64);
  registration_id id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  segment_id seg = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back = std::vector<std::byte>(64);

  ~reading_pair() {
    EXPECT_TRUE(initiator->shutdown().ok());
    EXPECT_TRUE(target->shutdown().ok());
  }
};

TEST(transport_api, start_deadline_at_the_bound_and_one_past) {
  reading_pair p;
  auto r = read_req(p.seg, p.id, 0, p.back.data(), p.back.size());
  r.start_deadline_ms = limits::timeout_ms_max;
  EXPECT_EQ(run_one(*p.initiator, r).code, status::ok);
  r.start_deadline_ms = limits::timeout_ms_max + 1;
  auto refused = p.initiator->submit(std::span(&r, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), status::invalid_argument);
  EXPECT_NE(refused.error().message.find("start_deadline_ms"), std::string::npos);
}

// A request's remote end, remote_offset + length, must fit in 64 bits:
// the last range whose end fits is sent (and the target refuses it, far
// past the registration); one byte further, its end is 2^64, submit()
// refuses the batch and nothing is sent.
TEST(transport_api, a_remote_range_whose_end_does_not_fit_in_64_bits_is_refused_at_submit) {
  reading_pair p;
  // The last 64-byte range whose end fits in 64 bits.
  constexpr auto last_start = std::numeric_limits<std::uint64_t>::max() - 64;
  EXPECT_EQ(run_one(*p.initiator, read_req(p.seg, p.id, last_start, p.back.data(), 64)).code,
            status::range_rejected);
  auto r = read_req(p.seg, p.id, last_start + 1, p.back.data(), 64);
  auto refused = p.initiator->submit(std::span(&r, 1));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), status::invalid_argument);
  EXPECT_NE(refused.error().message.find("offset overflows"), std::string::npos);
  EXPECT_EQ(p.initiator->stats().tasks_submitted, 1u);
}

// Shutdown closes the listener: once it returns, a connect to the
// transport's port is refused while the transport object still exists (a
// listener left open would let the kernel take connections nobody serves).
TEST(transport_api, shutdown_closes_the_listener) {
  auto t = start(loopback_config());
  const auto served = t->descriptor().endpoints[0];
  const asio::ip::tcp::endpoint at(asio::ip::make_address(served.address), served.port);
  asio::io_context io;
  auto connect = [&] {
    asio::ip::tcp::socket s(io);
    std::error_code ec;
    s.connect(at, ec);
    // A port nobody holds can be the one the kernel picks for this socket
    // (TCP's self-connect): that too says no listener is there.
    std::error_code ignored;
    if (!ec && s.local_endpoint(ignored) == at) {
      return std::error_code(asio::error::connection_refused);
    }
    return ec;
  };
  EXPECT_FALSE(connect()) << "the listener takes connections before shutdown";
  ASSERT_TRUE(t->shutdown().ok());
  EXPECT_EQ(connect(), asio::error::connection_refused);
}

// A request may move at most the smaller of the initiator's and the
// target's max_transfer_bytes: at it, it runs; one byte past it, submit()
// refuses the batch. Each side is the smaller one once.
TEST(transport_api, max_transfer_bytes_at_the_bound_and_one_past_on_either_side) {
  for (bool target_smaller : {false, true}) {
    SCOPED_TRACE(target_smaller ? "target's bound" : "initiator's bound");
    auto small = loopback_config();
    small.max_transfer_bytes = 4096;
    auto large = loopback_config();
    large.max_transfer_bytes = 8192;
    auto target = start(target_smaller ? small : large);
    auto initiator = start(target_smaller ? large : small);
    std::vector<std::byte> memory(8192);
    auto id =
        target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
    auto seg = initiator->open_segment(target->descriptor()).value();
    std::vector<std::byte> back(8192);
    EXPECT_EQ(run_one(*initiator, read_req(seg, id, 0, back.data(), 4096)).code, status::ok);
    auto r = read_req(seg, id, 0, back.data(), 4097);
    auto refused = initiator->submit(std::span(&r, 1));
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.code(), status::invalid_argument);
    EXPECT_NE(refused.error().message.find("length <= 4096"), std::string::npos)
        << refused.error().message;
    EXPECT_TRUE(initiator->shutdown().ok());
    EXPECT_TRUE(target->shutdown().ok());
  }
}

// close_segment: queued work ends `cancelled`, the exchange in flight is
// cut off, the connections close (the target sees its sessions end), the
// id is refused afterwards, and the incarnation can be opened again.
TEST(transport_api, close_segment_settles_its_work_and_frees_its_connections) {
  auto target = start(loopback_config());
  silent_peer stalled;
  auto config = loopback_config();
  config.connections_per_peer = 1;
  config.progress_timeout_ms = 60000;
  auto initiator = start(config);
  std::vector<std::byte> memory(4096);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto live = initiator->open_segment(target->descriptor()).value();
  std::vector<std::byte> back(4096);
  ASSERT_EQ(run_one(*initiator, read_req(live, id, 0, back.data(), 4096)).code, status::ok);
  ASSERT_EQ(target->stats().sessions_live, 1u);

  auto stuck = initiator->open_segment(stalled.descriptor()).value();
  std::vector<std::byte> a(64), b(64);
  auto batch = initiator
                   ->submit(std::vector{read_req(stuck, 1, 0, a.data(), 64),
                                        read_req(stuck, 1, 0, b.data(), 64)})
                   .value();
  ASSERT_TRUE(eventually([&] { return initiator->stats().lanes_connected == 2; }));
  ASSERT_TRUE(initiator->close_segment(stuck).ok());
  ASSERT_TRUE(batch->wait(10s));
  EXPECT_EQ(batch->status(0).code, status::cancelled);  // in flight, cut off
  EXPECT_EQ(batch->status(1).code, status::cancelled);  // queued
  auto again = initiator->submit(std::vector{read_req(stuck, 1, 0, a.data(), 64)});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.code(), status::invalid_argument);
  EXPECT_EQ(initiator->close_segment(stuck).code(), status::invalid_argument);

  ASSERT_TRUE(initiator->close_segment(live).ok());
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_live == 0; }));
  EXPECT_EQ(initiator->stats().lanes_connected, 0u);
  auto reopened = initiator->open_segment(target->descriptor()).value();
  EXPECT_NE(reopened, live);
  EXPECT_EQ(run_one(*initiator, read_req(reopened, id, 0, back.data(), 4096)).code, status::ok);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A completion callback may submit more work (a chain of READs here), and
// may not close a segment (it would wait on its own thread).
TEST(transport_api, a_completion_callback_may_submit_more_work) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  auto memory = pattern(4096, 9);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  constexpr int chain = 20;
  std::vector<std::vector<std::byte>> back(chain, std::vector<std::byte>(4096));
  std::promise<void> all_done;
  std::atomic<int> done{0};
  std::vector<std::shared_ptr<transfer_batch>> keep(chain);
  std::atomic<bool> close_refused{false};
  std::function<void(int)> next = [&](int k) {
    auto r = read_req(seg, id, 0, back[k].data(), 4096);
    keep[k] = initiator
                  ->submit(std::span(&r, 1),
                           [&, k](std::size_t, status s, std::uint64_t) {
                             EXPECT_EQ(s, status::ok);
                             if (k == 0) {
                               close_refused =
                                   initiator->close_segment(seg).code() == status::invalid_argument;
                             }
                             if (++done == chain) return all_done.set_value();
                             next(k + 1);
                           })
                  .value();
  };
  next(0);
  ASSERT_EQ(all_done.get_future().wait_for(20s), std::future_status::ready);
  for (auto& b : back) EXPECT_EQ(b, memory);
  EXPECT_TRUE(close_refused.load());
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A service the transport owns (transport_service.hpp): found by its name,
// stopped once by shutdown() after admission closed, while the io threads
// still run, within half the bound, its failure reported; destroyed with
// the transport. Named twice, null, or after shutdown: refused.
class probe_service final : public transport_service {
 public:
  struct seen {
    int stops = 0;
    bool accepting_at_stop = true;
    bool io_ran_at_stop = false;
    std::chrono::milliseconds deadline_left{-1};
    bool destroyed = false;
  };
  probe_service(const transport_view& t, seen& s, result<void> answer)
      : t_(t), seen_(s), answer_(std::move(answer)) {}
  ~probe_service() override { seen_.destroyed = true; }
  std::string_view name() const noexcept override { return "probe"; }
  result<void> stop(net::clock::time_point deadline) override {
    ++seen_.stops;
    seen_.deadline_left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::clock::now());
    seen_.accepting_at_stop = t_.accepting_work();
    auto ran = std::make_shared<std::promise<void>>();
    auto done = ran->get_future();
    asio::post(t_.io().context(0), [ran] { ran->set_value(); });
    seen_.io_ran_at_stop = done.wait_for(5s) == std::future_status::ready;
    return answer_;
  }

 private:
  const transport_view& t_;
  seen& seen_;
  result<void> answer_;
};

TEST(transport_api, an_attached_service_is_stopped_first_by_shutdown_and_goes_with_it) {
  auto config = loopback_config();
  config.shutdown_timeout_ms = 4000;
  probe_service::seen seen, twice, late;  // outlive the transport and its probe
  auto t = transport::start(config).value();
  EXPECT_EQ(t->attach(nullptr).code(), status::invalid_argument);
  ASSERT_TRUE(t->attach(std::make_unique<probe_service>(t->view(), seen, result<void>{})).ok());
  EXPECT_NE(t->service("probe"), nullptr);
  EXPECT_EQ(t->service("control"), nullptr);  // transport::start serves none
  auto again = t->attach(std::make_unique<probe_service>(t->view(), twice, result<void>{}));
  EXPECT_EQ(again.code(), status::invalid_argument);
  EXPECT_TRUE(twice.destroyed);  // refused: not kept
  EXPECT_TRUE(t->view().accepting_work());
  ASSERT_TRUE(t->shutdown().ok());
  EXPECT_EQ(seen.stops, 1);
  EXPECT_FALSE(seen.accepting_at_stop);  // admission closed first
  EXPECT_TRUE(seen.io_ran_at_stop);      // the io threads still ran
  EXPECT_GT(seen.deadline_left.count(), 0);
  EXPECT_LE(seen.deadline_left.count(), 2000);  // half of shutdown_timeout_ms,
  EXPECT_GE(seen.deadline_left.count(), 1500);  // less what closing admission took
  EXPECT_TRUE(t->shutdown().ok());              // idempotent: not stopped again
  EXPECT_EQ(seen.stops, 1);
  EXPECT_EQ(t->attach(std::make_unique<probe_service>(t->view(), late, result<void>{})).code(),
            status::shutting_down);
  EXPECT_FALSE(seen.destroyed);
  t.reset();
  EXPECT_TRUE(seen.destroyed);
}

TEST(transport_api, a_service_that_fails_to_stop_is_what_shutdown_reports) {
  probe_service::seen seen;  // outlives the transport, which destroys the probe
  auto t = transport::start(loopback_config()).value();
  const result<void> failed = error{status::timeout, "probe: a handler outlived its deadline"};
  ASSERT_TRUE(t->attach(std::make_unique<probe_service>(t->view(), seen, failed)).ok());
  auto down = t->shutdown();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.code(), status::timeout);
  EXPECT_EQ(down.error().message, "probe: a handler outlived its deadline");
}

}  // namespace
}  // namespace faultlane
