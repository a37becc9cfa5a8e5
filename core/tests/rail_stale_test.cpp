// Multi-rail READs whose registration went stale: the refresh, once, and
// the retry on the same rails.
#include <gtest/gtest.h>

#include <atomic>

#include "rail_support.hpp"

namespace faultlane {
namespace {

using namespace testing;

// A source that returns the target's current descriptor, as the control
// plane will.
class live_source : public descriptor_source {
 public:
  explicit live_source(transport& t) : target_(t) {}
  result<segment_descriptor> fetch() override {
    ++fetches;
    return target_.descriptor();
  }
  std::atomic<int> fetches{0};

 private:
  transport& target_;
};

// A buffer re-registered under the same name gets a new id: a stale answer
// triggers one refresh and one retry, each slice on its own rail; a name
// that is gone stays stale_registration.
TEST(rail_transport, stale_registration_refreshes_once_and_retries_on_the_same_rail) {
  rail_observer seen;
  auto target = start(rail_config(2, 2));
  auto config = rail_config(2, 2);
  config.observer = &seen;
  auto initiator = start(config);
  auto memory = pattern(4u << 20, 71);
  auto old_id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read, "blob")
          .value();
  auto source = std::make_shared<live_source>(*target);
  auto seg = initiator->open_segment(source).value();
  EXPECT_EQ(source->fetches.load(), 1);

  ASSERT_TRUE(target->unregister_buffer(old_id).ok());
  auto new_id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read, "blob")
          .value();
  ASSERT_NE(new_id, old_id);
  std::vector<std::byte> dest(memory.size());
  auto r = run_one(*initiator, read_req(seg, old_id, 0, dest.data(), dest.size()));
  EXPECT_EQ(r.code, status::ok);
  EXPECT_EQ(dest, memory);
  EXPECT_EQ(initiator->stats().stale_refreshes, 2u);  // one per slice, each at most once
  EXPECT_EQ(initiator->stats().stale_refresh_attempts, 2u);
  auto slices = seen.slices_of_last_task();
  ASSERT_EQ(slices.size(), 4u);  // two slices, each sent twice
  std::map<std::uint64_t, std::set<std::size_t>> rails_by_offset;
  for (const auto& s : slices) rails_by_offset[s.offset].insert(s.rail);
  for (const auto& [offset, used] : rails_by_offset)
    EXPECT_EQ(used.size(), 1u) << offset;  // never moved

  // A name that is gone: the refresh finds nothing and the task stays stale.
  ASSERT_TRUE(target->unregister_buffer(new_id).ok());
  auto gone = run_one(*initiator, read_req(seg, new_id, 0, dest.data(), 4096));
  EXPECT_EQ(gone.code, status::stale_registration);
  // The third refresh found no registration of that name: attempted, not
  // refreshed.
  EXPECT_EQ(initiator->stats().stale_refresh_attempts, 3u);
  EXPECT_EQ(initiator->stats().stale_refreshes, 2u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// A source whose next answer the test sets.
class set_source : public descriptor_source {
 public:
  result<segment_descriptor> fetch() override {
    std::lock_guard lock(mutex_);
    return next_;
  }
  void answer(segment_descriptor d) {
    std::lock_guard lock(mutex_);
    next_ = std::move(d);
  }

 private:
  std::mutex mutex_;
  segment_descriptor next_;
};

// docs/architecture.md: a stale answer is refreshed once, and the retry
// goes out only when the fresh descriptor names the buffer at the same
// endpoints. A refresh that names a buffer already gone again ends stale
// after one attempt, never a second; one at other endpoints is not
// trusted.
TEST(rail_transport, a_stale_refresh_is_tried_once_and_only_at_the_same_endpoints) {
  auto target = start(loopback_config());
  auto initiator = start(loopback_config());
  auto memory = pattern(4096, 72);
  auto reregister = [&](registration_id old) {
    EXPECT_TRUE(target->unregister_buffer(old).ok());
    return target->register_buffer(memory.data(), memory.size(), permission::remote_read, "kv")
        .value();
  };
  auto a =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read, "kv").value();
  auto source = std::make_shared<set_source>();
  source->answer(target->descriptor());
  auto seg = initiator->open_segment(source).value();
  std::vector<std::byte> dest(memory.size());
  // The fresh descriptor names b, which is gone by the retry: stale again.
  auto b = reregister(a);
  source->answer(target->descriptor());
  auto c = reregister(b);
  auto r = run_one(*initiator, read_req(seg, a, 0, dest.data(), dest.size()));
  EXPECT_EQ(r.code, status::stale_registration);
  EXPECT_EQ(initiator->stats().stale_refresh_attempts, 1u);
  EXPECT_EQ(initiator->stats().stale_refreshes, 1u);
  // b's name is known now. The fresh descriptor names d, but at another
  // port: not retried.
  auto d = reregister(c);
  auto moved = target->descriptor();
  moved.endpoints[0].port = static_cast<std::uint16_t>(moved.endpoints[0].port + 1);
  source->answer(moved);
  r = run_one(*initiator, read_req(seg, b, 0, dest.data(), dest.size()));
  EXPECT_EQ(r.code, status::stale_registration);
  EXPECT_EQ(initiator->stats().stale_refresh_attempts, 2u);
  EXPECT_EQ(initiator->stats().stale_refreshes, 1u);
  // At the same endpoints, d is found and the READ lands.
  source->answer(target->descriptor());
  r = run_one(*initiator, read_req(seg, b, 0, dest.data(), dest.size()));
  EXPECT_EQ(r.code, status::ok);
  EXPECT_EQ(dest, memory);
  EXPECT_EQ(initiator->stats().stale_refreshes, 2u);
  EXPECT_NE(d, b);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

}  // namespace
}  // namespace faultlane
