// The transfer engine end to end on loopback: data integrity, WRITE
// visibility, rejected WRITEs, unregister under load, restarts.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;

constexpr std::size_t guard_bytes = 64;

// Test 1: sizes from 1 B up, unaligned offsets and lengths, three
// submitting threads, two peers, several lanes; then one 64 MiB round trip.
TEST(transport_data, integrity_across_sizes_threads_peers_and_lanes) {
  auto config = loopback_config();
  config.connections_per_peer = 3;
  auto initiator = start(config);
  std::vector<std::unique_ptr<transport>> targets;
  constexpr int submitters = 3;
  constexpr std::size_t region = 5u << 20;
  std::vector<std::vector<std::byte>> target_memory;
  std::vector<registration_id> ids;
  std::vector<segment_id> segments;
  for (int t = 0; t < 2; ++t) {
    targets.push_back(start(loopback_config()));
    target_memory.emplace_back(region * submitters);
    auto id = targets[t]->register_buffer(target_memory[t].data(), target_memory[t].size(),
                                          permission::remote_read_write);
    ASSERT_TRUE(id.ok());
    ids.push_back(id.value());
    auto seg = initiator->open_segment(targets[t]->descriptor());
    ASSERT_TRUE(seg.ok()) << seg.error().message;
    segments.push_back(seg.value());
  }

  const std::vector<std::size_t> sizes{1, 3, 4096, 4099, 65543, (1u << 20) + 1, 4u << 20};
  const std::vector<std::size_t> offsets{0, 1, 4093};
  std::atomic<int> checked{0};
  auto submitter = [&](int who) {
    std::uint64_t seed = 1000 * static_cast<std::uint64_t>(who);
    for (std::size_t size : sizes) {
      for (std::size_t offset : offsets) {
        if (offset + size > region) continue;
        for (int peer = 0; peer < 2; ++peer) {
          auto remote = static_cast<std::uint64_t>(who) * region + offset;
          auto source = pattern(size, ++seed);
          auto w = run_one(*initiator,
                           write_req(segments[peer], ids[peer], remote, source.data(), size));
          ASSERT_EQ(w.code, status::ok) << "write size " << size << " offset " << offset;
          ASSERT_EQ(w.bytes, size);
          std::vector<std::byte> back(size + 2 * guard_bytes, std::byte{0xEE});
          auto r = run_one(*initiator, read_req(segments[peer], ids[peer], remote,
                                                back.data() + guard_bytes, size));
          ASSERT_EQ(r.code, status::ok) << "read size " << size << " offset " << offset;
          ASSERT_EQ(r.bytes, size);
          ASSERT_EQ(std::memcmp(back.data() + guard_bytes, source.data(), size), 0)
              << "size " << size << " offset " << offset;
          for (std::size_t g = 0; g < guard_bytes; ++g) {
            ASSERT_EQ(back[g], std::byte{0xEE});
            ASSERT_EQ(back[guard_bytes + size + g], std::byte{0xEE});
          }
          checked.fetch_add(1);
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < submitters; ++i) threads.emplace_back(submitter, i);
  for (auto& t : threads) t.join();
  EXPECT_EQ(checked.load(), submitters * 2 * static_cast<int>(sizes.size() * offsets.size()));

  // One 64 MiB WRITE and READ back at an unaligned offset.
  constexpr std::size_t big = 64u << 20;
  std::vector<std::byte> big_target(big + 8);
  auto big_id = targets[0]->register_buffer(big_target.data(), big_target.size(),
                                            permission::remote_read_write);
  ASSERT_TRUE(big_id.ok());
  auto source = pattern(big, 77);
  auto w = run_one(*initiator, write_req(segments[0], big_id.value(), 3, source.data(), big), 120s);
  ASSERT_EQ(w.code, status::ok);
  std::vector<std::byte> back(big);
  auto r = run_one(*initiator, read_req(segments[0], big_id.value(), 3, back.data(), big), 120s);
  ASSERT_EQ(r.code, status::ok);
  EXPECT_EQ(std::memcmp(back.data(), source.data(), big), 0);

  auto stats = initiator->stats();
  EXPECT_EQ(stats.tasks_completed, stats.tasks_submitted);
  EXPECT_EQ(stats.failures_by_status[static_cast<int>(status::ok)], stats.tasks_submitted);
  EXPECT_LE(stats.connects, 2u * config.connections_per_peer);  // persistent lanes
  EXPECT_TRUE(initiator->shutdown().ok());
  for (auto& t : targets) EXPECT_TRUE(t->shutdown().ok());
}

// Test 2: after an OK WRITE completes, a reader on the target sees all of
// it: 400 iterations with background traffic, zero torn reads.
TEST(transport_data, write_is_visible_on_the_target_when_it_completes) {
  recording_observer target_view;
  auto target_config = loopback_config();
  target_config.observer = &target_view;
  auto target = start(target_config);
  auto initiator = start(loopback_config());
  constexpr std::size_t size = 2'400'000;
  std::vector<std::byte> target_memory(size);
  std::vector<std::byte> noise_memory(1u << 20);
  fill_pattern(noise_memory.data(), noise_memory.size(), 9);
  auto id = target->register_buffer(target_memory.data(), size, permission::remote_read_write);
  auto noise_id =
      target->register_buffer(noise_memory.data(), noise_memory.size(), permission::remote_read);
  ASSERT_TRUE(id.ok() && noise_id.ok());
  auto seg = initiator->open_segment(target->descriptor()).value();

  std::atomic<bool> stop{false};
  std::vector<std::thread> noise;
  for (int n = 0; n < 3; ++n) {
    noise.emplace_back([&] {
      std::vector<std::byte> sink(64u << 10);
      while (!stop.load()) {
        auto r =
            run_one(*initiator, read_req(seg, noise_id.value(), 4096, sink.data(), sink.size()));
        EXPECT_EQ(r.code, status::ok);
      }
    });
  }
  std::vector<std::byte> source(size);
  int torn = 0;
  for (int i = 0; i < 400; ++i) {
    fill_pattern(source.data(), size, 5000 + static_cast<std::uint64_t>(i));
    auto w = run_one(*initiator, write_req(seg, id.value(), 0, source.data(), size));
    ASSERT_EQ(w.code, status::ok) << "iteration " << i;
    torn += target_view.synchronized(
        [&] { return std::memcmp(target_memory.data(), source.data(), size) != 0; });
  }
  stop.store(true);
  for (auto& t : noise) t.join();
  EXPECT_EQ(torn, 0);
  EXPECT_EQ(target_view.served_count(wire::opcode::write, status::ok), 400u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Test 4: a rejected WRITE fails, its body is drained and never parsed as a
// header, and the next request (on a new connection) succeeds.
TEST(transport_data, rejected_write_drains_its_body_and_the_next_request_succeeds) {
  recording_observer target_view;
  auto target_config = loopback_config();
  target_config.observer = &target_view;
  auto target = start(target_config);
  auto config = loopback_config();
  config.connections_per_peer = 1;
  auto initiator = start(config);
  std::vector<std::byte> read_only(1u << 20);
  std::vector<std::byte> writable(4096, std::byte{0x11});
  auto ro = target->register_buffer(read_only.data(), read_only.size(), permission::remote_read);
  auto rw =
      target->register_buffer(writable.data(), writable.size(), permission::remote_read_write);
  ASSERT_TRUE(ro.ok() && rw.ok());
  auto seg = initiator->open_segment(target->descriptor()).value();

  // The body is a run of valid WRITE headers aimed at the writable buffer:
  // if any body byte were parsed as a header, `writable` would change.
  std::vector<std::byte> body;
  for (int i = 0; body.size() + wire::request_frame_bytes <= 256u << 10; ++i) {
    auto frame = wire::encode(wire::request_frame{
        wire::opcode::write, 0, static_cast<std::uint64_t>(i), rw.value(), 0, 16});
    body.insert(body.end(), frame.begin(), frame.end());
  }
  auto denied = run_one(*initiator, write_req(seg, ro.value(), 0, body.data(), body.size()));
  EXPECT_EQ(denied.code, status::permission_denied);
  auto out_of_range =
      run_one(*initiator, write_req(seg, rw.value(), 4000, body.data(), body.size()));
  EXPECT_EQ(out_of_range.code, status::range_rejected);

  std::vector<std::byte> back(4096);
  auto r = run_one(*initiator, read_req(seg, rw.value(), 0, back.data(), back.size()));
  ASSERT_EQ(r.code, status::ok);
  EXPECT_EQ(back, std::vector<std::byte>(4096, std::byte{0x11}));
  auto stats = initiator->stats();
  EXPECT_EQ(stats.connects, 1u);  // a rejected WRITE keeps the connection
  EXPECT_EQ(target->stats().server_writes, 0u);
  EXPECT_EQ(target_view.served_count(wire::opcode::write, status::permission_denied), 1u);
  EXPECT_EQ(target_view.served_count(wire::opcode::write, status::range_rejected), 1u);
  EXPECT_EQ(target_view.served_count(wire::opcode::write, status::ok), 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// Test 8: unregister waits for the lease of an in-flight remote READ; a
// READ after unregister fails and never touches the freed memory.
TEST(transport_data, unregister_waits_for_an_in_flight_read) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  auto memory = std::make_unique<std::vector<std::byte>>(pattern(1u << 20, 31));
  auto expected = *memory;
  auto id = target->register_buffer(memory->data(), memory->size(), permission::remote_read);
  ASSERT_TRUE(id.ok());
  auto seg = initiator->open_segment(target->descriptor()).value();

  std::vector<std::byte> back(memory->size());
  auto request = read_req(seg, id.value(), 0, back.data(), back.size());
  failpoint::scoped pause("server.before_read_payload",
                          {.act = failpoint::action::pause, .count = 1});
  auto batch = initiator->submit(std::span(&request, 1));
  ASSERT_TRUE(batch.ok());
  ASSERT_TRUE(failpoint::wait_paused("server.before_read_payload", 1, 10000ms));
  EXPECT_EQ(target->stats().leases_live, 1u);

  auto unregistering =
      std::async(std::launch::async, [&] { return target->unregister_buffer(id.value()); });
  EXPECT_EQ(unregistering.wait_for(100ms), std::future_status::timeout);  // held by the lease
  failpoint::resume("server.before_read_payload");
  ASSERT_EQ(unregistering.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(unregistering.get().ok());
  ASSERT_TRUE(batch.value()->wait(10s));
  EXPECT_EQ(batch.value()->status(0).code, status::ok);
  EXPECT_EQ(back, expected);
  memory.reset();  // freed: a READ that touched it now would be a use-after-free

  auto after = run_one(*initiator, read_req(seg, id.value(), 0, back.data(), back.size()));
  EXPECT_EQ(after.code, status::stale_registration);
  EXPECT_EQ(target->stats().leases_live, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}
#endif

// Test 9: a target restarted on the same port rejects the old ids as stale.
TEST(transport_data, restarted_target_rejects_old_registration_ids) {
  auto initiator = start(loopback_config());
  std::vector<std::byte> memory = pattern(4096, 3);
  auto first = start(loopback_config());
  auto old_id =
      first->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  auto old_descriptor = first->descriptor();
  auto old_seg = initiator->open_segment(old_descriptor).value();
  std::vector<std::byte> back(4096);
  ASSERT_EQ(run_one(*initiator, read_req(old_seg, old_id, 0, back.data(), 4096)).code, status::ok);
  ASSERT_TRUE(first->shutdown().ok());
  first.reset();

  auto config = loopback_config();
  config.port = old_descriptor.endpoints[0].port;
  auto second = start(config);
  ASSERT_NE(second, nullptr);
  auto new_id =
      second->register_buffer(memory.data(), memory.size(), permission::remote_read).value();
  EXPECT_NE(new_id, old_id);
  // The old segment reconnects to the same port and reaches the new process.
  auto stale = run_one(*initiator, read_req(old_seg, old_id, 0, back.data(), 4096));
  EXPECT_EQ(stale.code, status::stale_registration);
  auto new_seg = initiator->open_segment(second->descriptor()).value();
  EXPECT_NE(new_seg, old_seg);  // a new incarnation is a new peer group
  EXPECT_EQ(run_one(*initiator, read_req(new_seg, old_id, 0, back.data(), 4096)).code,
            status::stale_registration);
  EXPECT_EQ(run_one(*initiator, read_req(new_seg, new_id, 0, back.data(), 4096)).code, status::ok);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(second->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
