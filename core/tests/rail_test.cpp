// Multi-rail lanes and READ slicing on loopback rails 127.0.0.1..127.0.0.4.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/slice_plan.hpp"
#include "pipeline_peers.hpp"
#include "rail_support.hpp"

namespace faultlane {
namespace {

using namespace testing;

TEST(rail_config, each_rule_at_its_boundary_and_one_past) {
  auto c = rail_config(4, 4);
  EXPECT_TRUE(validate(c).ok());  // rails == lanes
  c.connections_per_peer = 3;     // one rail more than lanes
  auto r = validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("rail_addresses"), std::string::npos);

  c = rail_config(2, 4);
  c.rail_addresses[1] = c.rail_addresses[0];
  EXPECT_NE(validate(c).error().message.find("appears twice"), std::string::npos);
  c = rail_config(2, 4);
  c.rail_addresses[1] = "rail-two";
  EXPECT_NE(validate(c).error().message.find("rail_addresses"), std::string::npos);
  c = rail_config(2, 4);
  c.rail_addresses[1] = "0.0.0.0";
  EXPECT_NE(validate(c).error().message.find("rail_addresses"), std::string::npos);

  c = rail_config(16, 16);
  EXPECT_TRUE(validate(c).ok());  // the most rails
  c.rail_addresses.push_back("127.0.0.17");
  c.connections_per_peer = 17;
  EXPECT_NE(validate(c).error().message.find("at most 16 rails"), std::string::npos);

  c = rail_config(1, 2);
  c.bind_address = "127.0.0.1";  // a specific bind equal to the sole rail
  EXPECT_TRUE(validate(c).ok());
  c.bind_address = "127.0.0.2";  // a specific bind that is not the rail
  EXPECT_NE(validate(c).error().message.find("bind_address"), std::string::npos);
  c = rail_config(2, 2);
  c.bind_address = "127.0.0.1";  // several rails need the wildcard
  EXPECT_NE(validate(c).error().message.find("bind_address"), std::string::npos);
  c.bind_address = "0.0.0.0";
  EXPECT_TRUE(validate(c).ok());
}

TEST(rail_transport, mismatched_rail_counts_fail_at_open_segment) {
  auto two = start(rail_config(2, 2));
  auto one = start(rail_config(1, 2));
  auto opened = one->open_segment(two->descriptor());
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.code(), status::invalid_argument);
  EXPECT_NE(opened.error().message.find("rail count mismatch"), std::string::npos);
  EXPECT_FALSE(two->open_segment(one->descriptor()).ok());
  EXPECT_EQ(one->stats().connects, 0u);  // nothing was attempted
  EXPECT_TRUE(one->shutdown().ok());
  EXPECT_TRUE(two->shutdown().ok());
}

TEST(rail_transport, target_publishes_one_endpoint_per_rail) {
  auto t = start(rail_config(4, 4));
  auto d = t->descriptor();
  ASSERT_EQ(d.endpoints.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(d.endpoints[i].address, "127.0.0." + std::to_string(i + 1));
    EXPECT_NE(d.endpoints[i].port, 0);
  }
  EXPECT_TRUE(t->shutdown().ok());
}

// docs/architecture.md: a failed slice cancels its siblings; one already
// sent, alone on its lane, is cancelled by closing that lane's connection
// (the target then stops), and the lane connects again for the next work.
TEST(rail_transport, a_failed_slice_closes_a_lane_that_carries_only_its_sibling) {
  pipeline_testing::scripted_peer p0(0x5c1, "127.0.0.1"), p1(0x5c1, "127.0.0.2");
  auto config = rail_config(2, 2);
  config.progress_timeout_ms = 60000;  // the silent sibling is not timed out
  auto initiator = start(config);
  const segment_descriptor d{0x5c1, {p0.endpoint(), p1.endpoint()}, 1u << 30, {}};
  auto seg = initiator->open_segment(d).value();
  std::vector<std::byte> dest(2 * limits::slice_step_bytes);
  auto r = read_req(seg, 1, 0, dest.data(), dest.size());
  auto batch = initiator->submit(std::span(&r, 1)).value();
  ASSERT_TRUE(p0.accept());
  ASSERT_TRUE(p1.accept());
  ASSERT_TRUE(p0.next_request());
  auto on_rail1 = p1.next_request();
  ASSERT_TRUE(on_rail1);
  p1.answer(wire::wire_status::range_rejected, on_rail1->request_id, 0);
  ASSERT_TRUE(batch->wait(10s));
  EXPECT_EQ(batch->status(0).code, status::range_rejected);
  const auto asked = std::chrono::steady_clock::now();
  EXPECT_FALSE(p0.next_request(30s)) << "rail 0 got another request";
  EXPECT_LT(std::chrono::steady_clock::now() - asked, 20s)
      << "the sibling's lane was left open, its slice still in flight";
  // Rail 0's lane connects again and serves the next READ.
  std::vector<std::byte> small(16);
  auto next = read_req(seg, 1, 0, small.data(), small.size());
  auto after = initiator->submit(std::span(&next, 1)).value();
  ASSERT_TRUE(p0.accept()) << "rail 0's lane never connected again";
  auto request = p0.next_request();
  ASSERT_TRUE(request);
  p0.answer_ok(*request, pipeline_testing::sixteen);
  ASSERT_TRUE(after->wait(10s));
  EXPECT_EQ(after->status(0).code, status::ok);
  EXPECT_EQ(initiator->stats().connects, 3u);
  EXPECT_TRUE(initiator->shutdown().ok());
}

// docs/architecture.md: lane i serves rail i % rails, and each rail's
// slices take its lanes in turn. With 4 lanes on 2 rails two sliced READs
// use all four; with 3 lanes rail 0 has two (0 and 2) and rail 1 one.
TEST(rail_transport, each_rail_takes_every_lane_of_its_own_in_turn) {
  for (std::size_t lanes : {4u, 3u}) {
    rail_observer seen;
    auto target = start(rail_config(2, 2));
    auto config = rail_config(2, lanes);
    config.observer = &seen;
    auto initiator = start(config);
    const std::uint64_t length = 2 * limits::slice_step_bytes;
    std::vector<std::byte> memory = pattern(length, 73);
    auto id =
        target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
    auto seg = initiator->open_segment(target->descriptor()).value();
    std::set<std::size_t> used;
    for (int i = 0; i < 2; ++i) {
      std::vector<std::byte> dest(length);
      ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, dest.data(), length)).code, status::ok);
      for (const auto& slice : seen.slices_of_last_task()) {
        EXPECT_EQ(slice.lane % 2, slice.rail) << "lane " << slice.lane;
        used.insert(slice.lane);
      }
    }
    std::set<std::size_t> every;
    for (std::size_t l = 0; l < lanes; ++l) every.insert(l);
    EXPECT_EQ(used, every) << lanes << " lanes";
    EXPECT_TRUE(initiator->shutdown().ok());
    EXPECT_TRUE(target->shutdown().ok());
  }
}

// The whole slicing contract on 2 and 4 rails: lanes bound to their rails on
// both ends, one slice per rail with the planned ranges, nothing sliced one
// byte below the threshold, uneven lengths covered exactly, payload intact
// and guard bytes around the destination untouched.
class rail_slicing : public ::testing::TestWithParam<std::size_t> {};

TEST_P(rail_slicing, reads_split_per_rail_exactly_as_planned) {
  const std::size_t rail_count = GetParam();
  rail_observer seen, target_seen;
  auto target_config = rail_config(rail_count, rail_count);
  target_config.observer = &target_seen;
  auto target = start(target_config);
  auto config = rail_config(rail_count, rail_count * 2);
  config.observer = &seen;
  auto initiator = start(config);
  const std::uint64_t threshold = rail_count * limits::slice_step_bytes;
  std::vector<std::byte> memory = pattern(threshold + 4096, 40 + rail_count);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();

  constexpr std::size_t guard = 128;
  for (std::uint64_t length :
       {threshold - 1, threshold, threshold + 3, threshold + rail_count - 1}) {
    for (std::uint64_t offset : {std::uint64_t{0}, std::uint64_t{7}}) {
      if (offset + length > memory.size()) continue;
      std::vector<std::byte> dest(length + 2 * guard, std::byte{0x5A});
      auto done = run_one(*initiator, read_req(seg, id, offset, dest.data() + guard, length));
      ASSERT_EQ(done.code, status::ok) << length;
      ASSERT_EQ(done.bytes, length);
      ASSERT_EQ(std::memcmp(dest.data() + guard, memory.data() + offset, length), 0) << length;
      for (std::size_t g = 0; g < guard; ++g) {
        ASSERT_EQ(dest[g], std::byte{0x5A});
        ASSERT_EQ(dest[guard + length + g], std::byte{0x5A});
      }
      auto slices = seen.slices_of_last_task();
      auto plan = plan_read_slices(length, rail_count);
      ASSERT_EQ(slices.size(), plan.size()) << length;
      EXPECT_EQ(plan.sliced(), length >= threshold);
      std::sort(slices.begin(), slices.end(),
                [](const slice_event& a, const slice_event& b) { return a.offset < b.offset; });
      for (std::size_t k = 0; k < plan.size(); ++k) {
        EXPECT_EQ(slices[k].offset, plan[k].offset);
        EXPECT_EQ(slices[k].length, plan[k].length);
        if (plan.sliced()) {
          EXPECT_EQ(slices[k].rail, plan[k].rail);
          EXPECT_EQ(slices[k].lane % rail_count, plan[k].rail);  // lane i uses rail i % rails
        }
      }
    }
  }
  // Every lane's socket is bound to its rail and reached the same rail.
  auto lanes = seen.lanes();
  ASSERT_FALSE(lanes.empty());
  std::set<std::size_t> rails_used;
  for (const auto& l : lanes) {
    EXPECT_EQ(l.rail, l.lane % rail_count);
    EXPECT_EQ(l.local.address, "127.0.0." + std::to_string(l.rail + 1)) << "lane " << l.lane;
    EXPECT_EQ(l.remote.address, "127.0.0." + std::to_string(l.rail + 1)) << "lane " << l.lane;
    rails_used.insert(l.rail);
  }
  EXPECT_EQ(rails_used.size(), rail_count);
  for (const auto& [local, remote] : target_seen.sessions()) {
    EXPECT_EQ(local.address, remote.address);  // same rail on both ends
  }
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

INSTANTIATE_TEST_SUITE_P(rails, rail_slicing, ::testing::Values(2, 4));

TEST(rail_transport, writes_are_never_sliced) {
  rail_observer seen;
  auto target = start(rail_config(2, 2));
  auto config = rail_config(2, 2);
  config.observer = &seen;
  auto initiator = start(config);
  std::vector<std::byte> memory(4u << 20);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  auto source = pattern(4u << 20, 5);
  ASSERT_EQ(run_one(*initiator, write_req(seg, id, 0, source.data(), source.size())).code,
            status::ok);
  EXPECT_EQ(seen.slices_of_last_task().size(), 1u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// A failed slice cancels its siblings: with each sibling's lane held busy by
// a blocker, the failing slice ends the task at once, the siblings are
// never sent, the task settles exactly once with the failed slice's status,
// and nothing runs for it after that.
TEST(rail_transport, failed_slice_cancels_its_siblings_and_settles_once) {
  constexpr std::size_t rail_count = 4;
  rail_observer seen;
  auto target_config = rail_config(rail_count, rail_count);
  target_config.worker_count = rail_count + 1;  // a paused session blocks only its shard
  target_config.progress_timeout_ms = 120000;
  auto target = start(target_config);
  auto config = rail_config(rail_count, rail_count);  // one lane per rail
  config.observer = &seen;
  // The blockers are held for as long as the test needs, however loaded
  // the machine: their deadline is not what this test is about.
  config.progress_timeout_ms = 120000;
  // Queued behind the blockers, not pipelined past them: this test is about
  // slices that have not left (transport_pipeline covers the ones that did).
  config.lane_inflight_max = 1;
  auto initiator = start(config);
  std::vector<std::byte> blocker_memory(4096);
  std::vector<std::byte> memory = pattern(rail_count * limits::slice_step_bytes, 6);
  auto blocker_id =
      target->register_buffer(blocker_memory.data(), 4096, permission::remote_read).value();
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto seg = initiator->open_segment(target->descriptor()).value();

  // Warm every lane so each has its session (and shard) on the target.
  std::vector<std::byte> small(64);
  for (int i = 0; i < 8; ++i)
    ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, small.data(), 64)).code, status::ok);

  // Occupy three of the four lanes with blockers held on the target. The
  // per-peer sequence is at a multiple of four after the warm-up, so a batch
  // of four requests puts request k on lane k (= rail k); three of them
  // pause at the target, the fourth passes and frees its lane.
  failpoint::scoped hold(
      "server.before_read_payload",
      {.act = failpoint::action::pause, .count = rail_count - 1, .only_key = blocker_id});
  std::vector<std::vector<std::byte>> blocker_dest(rail_count, std::vector<std::byte>(64));
  std::vector<transfer_request> round;
  for (std::size_t k = 0; k < rail_count; ++k) {
    round.push_back(read_req(seg, blocker_id, 0, blocker_dest[k].data(), 64));
  }
  auto blocked = initiator->submit(round).value();
  ASSERT_TRUE(failpoint::wait_paused("server.before_read_payload", rail_count - 1, 10000ms));
  ASSERT_TRUE(eventually([&] { return blocked->completed() == 1; }));
  std::size_t free_rail = rail_count;
  for (std::size_t k = 0; k < rail_count; ++k) {
    if (blocked->status(k).done) free_rail = k;
  }
  ASSERT_LT(free_rail, rail_count);

  // The sliced READ: its slice on the free lane fails (injected on the
  // initiator, keyed to this registration); the other three queue behind
  // the blockers.
  failpoint::scoped injected("client.after_request_sent", {.act = failpoint::action::return_error,
                                                           .error = status::range_rejected,
                                                           .count = 1,
                                                           .only_key = id});
  // The slices after the first reach their lanes only after the first
  // failed and cancelled them (a schedule a stress loop hits once in
  // hundreds of runs): they must still end cancelled, not wait behind the
  // blockers.
  failpoint::scoped late_siblings("submit.before_slice",
                                  {.act = failpoint::action::delay, .delay_ms = 100});
  std::vector<std::byte> dest(memory.size());
  std::mutex calls_mutex;
  int calls = 0;
  auto sliced_request = read_req(seg, id, 0, dest.data(), dest.size());
  auto batch = initiator
                   ->submit(std::span(&sliced_request, 1),
                            [&](std::size_t, status, std::uint64_t) {
                              std::lock_guard lock(calls_mutex);
                              ++calls;
                            })
                   .value();
  ASSERT_TRUE(batch->wait(10s)) << "slices sent: " << seen.slices_of_last_task().size()
                                << ", free rail " << free_rail << ", lanes connected "
                                << initiator->stats().lanes_connected << ", found closed "
                                << initiator->stats().lanes_found_closed << ", connects "
                                << initiator->stats().connects << ", target sessions "
                                << target->stats().sessions_accepted;
  EXPECT_EQ(batch->status(0).code, status::range_rejected);
  auto slices = seen.slices_of_last_task();
  ASSERT_EQ(slices.size(), 1u);  // only the failing slice was ever sent
  EXPECT_EQ(slices[0].rail, free_rail);

  failpoint::resume("server.before_read_payload");
  ASSERT_TRUE(blocked->wait(10s));
  for (std::size_t k = 0; k < rail_count; ++k) EXPECT_EQ(blocked->status(k).code, status::ok);
  {
    std::lock_guard lock(calls_mutex);
    EXPECT_EQ(calls, 1);  // exactly once, and nothing after settlement
  }
  auto finals = seen.finalized();
  std::size_t cancelled_tasks = 0;
  for (const auto& [task, statuses] : finals) {
    EXPECT_EQ(statuses.size(), 1u) << "task " << task;
    cancelled_tasks += statuses[0] == status::range_rejected;
  }
  EXPECT_EQ(cancelled_tasks, 1u);
  EXPECT_EQ(initiator->stats().failures_by_status[static_cast<int>(status::cancelled)], 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// docs/architecture.md, "Failpoints": submit.before_slice is passed between
// dispatching a task's slices, once before each slice after the first, and
// never for a task that is one exchange (a READ below the threshold, a WRITE).
TEST(rail_transport, submit_before_slice_is_passed_between_the_slices_of_a_task) {
  constexpr std::size_t rail_count = 4;
  auto target = start(rail_config(rail_count, rail_count));
  auto initiator = start(rail_config(rail_count, rail_count));
  const std::uint64_t length = rail_count * limits::slice_step_bytes;
  std::vector<std::byte> memory = pattern(length, 9);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write).value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  failpoint::scoped passed("submit.before_slice", {.act = failpoint::action::delay, .delay_ms = 0});
  std::vector<std::byte> dest(length);
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, dest.data(), length)).code, status::ok);
  EXPECT_EQ(dest, memory);
  EXPECT_EQ(failpoint::evaluated("submit.before_slice"), rail_count - 1);
  ASSERT_EQ(run_one(*initiator, read_req(seg, id, 0, dest.data(), length - 1)).code, status::ok);
  ASSERT_EQ(run_one(*initiator, write_req(seg, id, 0, dest.data(), length)).code, status::ok);
  EXPECT_EQ(failpoint::evaluated("submit.before_slice"), rail_count - 1);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}
#endif

}  // namespace
}  // namespace faultlane
