#include "faultlane/core/registry.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <limits>
#include <set>
#include <thread>
#include <vector>

namespace faultlane {
namespace {

using namespace std::chrono_literals;

registration_id must_register(registry& r, void* p, std::size_t n, permission perm) {
  auto id = r.register_buffer(p, n, perm);
  EXPECT_TRUE(id.ok()) << (id.ok() ? "" : id.error().message);
  return id.ok() ? id.value() : 0;
}

TEST(registry, ids_are_unique_nonzero_and_namespaced) {
  std::vector<std::byte> buf(64);
  registry a;
  registry b;
  EXPECT_NE(a.namespace_value(), b.namespace_value());
  std::set<registration_id> ids;
  for (int i = 0; i < 100; ++i) {
    auto id = must_register(a, buf.data(), buf.size(), permission::remote_read);
    EXPECT_NE(id, 0u);
    EXPECT_TRUE(ids.insert(id).second);
  }
}

TEST(registry, id_zero_is_never_issued) {
  // With namespace 5, sequence 5 would map to id 0; it must be skipped.
  std::vector<std::byte> buf(8);
  registry r(registry_options{.namespace_value = 5});
  std::set<registration_id> ids;
  for (int i = 0; i < 8; ++i) {
    auto id = must_register(r, buf.data(), buf.size(), permission::remote_read);
    EXPECT_NE(id, 0u);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 8u);
  EXPECT_EQ(ids.count(5 ^ 6), 1u);
}

TEST(registry, sequence_exhaustion_is_an_error) {
  std::vector<std::byte> buf(8);
  registry r(registry_options{.sequence_max = 3});
  for (int i = 0; i < 3; ++i) must_register(r, buf.data(), buf.size(), permission::remote_read);
  auto fourth = r.register_buffer(buf.data(), buf.size(), permission::remote_read);
  ASSERT_FALSE(fourth.ok());
  EXPECT_EQ(fourth.code(), status::sequence_exhausted);
}

TEST(registry, bad_registrations_are_rejected) {
  std::vector<std::byte> buf(8);
  registry r;
  EXPECT_EQ(r.register_buffer(nullptr, 8, permission::remote_read).code(),
            status::invalid_argument);
  EXPECT_EQ(r.register_buffer(buf.data(), 0, permission::remote_read).code(),
            status::invalid_argument);
  auto* top = reinterpret_cast<void*>(std::numeric_limits<std::uintptr_t>::max() - 3);
  EXPECT_EQ(r.register_buffer(top, 8, permission::remote_read).code(), status::invalid_argument);
}

TEST(registry, ids_from_an_earlier_incarnation_are_stale) {
  std::vector<std::byte> buf(64);
  registration_id old_id;
  {
    registry before;
    old_id = must_register(before, buf.data(), buf.size(), permission::remote_read_write);
    ASSERT_TRUE(before.acquire(old_id, 0, 8, access::read).ok());
  }
  registry after;
  must_register(after, buf.data(), buf.size(), permission::remote_read_write);
  auto l = after.acquire(old_id, 0, 8, access::read);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.code(), status::stale_registration);
  EXPECT_EQ(after.acquire(0, 0, 8, access::read).code(), status::stale_registration);
}

TEST(registry, permissions_are_enforced) {
  std::vector<std::byte> buf(64);
  registry r;
  auto local = must_register(r, buf.data(), 64, permission::local_only);
  auto ro = must_register(r, buf.data(), 64, permission::remote_read);
  auto rw = must_register(r, buf.data(), 64, permission::remote_read_write);
  EXPECT_EQ(r.acquire(local, 0, 1, access::read).code(), status::permission_denied);
  EXPECT_EQ(r.acquire(local, 0, 1, access::write).code(), status::permission_denied);
  EXPECT_TRUE(r.acquire(ro, 0, 1, access::read).ok());
  EXPECT_EQ(r.acquire(ro, 0, 1, access::write).code(), status::permission_denied);
  EXPECT_TRUE(r.acquire(rw, 0, 1, access::read).ok());
  EXPECT_TRUE(r.acquire(rw, 0, 1, access::write).ok());
  auto ads = r.advertised();
  ASSERT_EQ(ads.size(), 2u);
  for (auto& a : ads) EXPECT_NE(a.perm, permission::local_only);
}

// The paged scan: pages in the order of registration (ids are not: the
// namespace scrambles them), each at most registration_page_max long and
// resuming after the id given; local_only and unregistered
// entries never appear; names travel with their ids; advertised() is every
// page, across the page boundary.
TEST(registry, advertised_pages_resume_after_the_last_id_and_skip_local_only) {
  const std::size_t page = limits::registration_page_max;
  std::vector<std::byte> buf(64);
  registry r;
  std::vector<registration_id> shown;
  for (std::size_t i = 0; i < 2 * page; ++i) {
    const auto perm = i % 3 == 0 ? permission::local_only : permission::remote_read;
    auto id = r.register_buffer(buf.data(), 64, perm, "b/" + std::to_string(i)).value();
    if (perm != permission::local_only) shown.push_back(id);
  }
  ASSERT_TRUE(r.unregister_buffer(shown[7]).ok());
  shown.erase(shown.begin() + 7);
  ASSERT_GT(shown.size(), page);  // the scan needs two pages
  auto first = r.advertised_page(0, page * 4);
  ASSERT_EQ(first.size(), page);  // bounded by the limit, whatever was asked
  auto second = r.advertised_page(first.back().id, page);
  ASSERT_EQ(second.size(), shown.size() - page);
  EXPECT_TRUE(r.advertised_page(second.back().id, page).empty());
  EXPECT_EQ(r.advertised_page(0, 3).size(), 3u);
  auto all = r.advertised();
  ASSERT_EQ(all.size(), shown.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].id, shown[i]);
    EXPECT_EQ(all[i].id, i < page ? first[i].id : second[i - page].id);
    EXPECT_EQ(all[i].name.substr(0, 2), "b/");
  }
}

TEST(registry, ranges_are_checked_without_overflow) {
  std::vector<std::byte> buf(100);
  registry r;
  auto id = must_register(r, buf.data(), 100, permission::remote_read_write);
  auto whole = r.acquire(id, 0, 100, access::read);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->data(), buf.data());
  EXPECT_EQ(whole->size(), 100u);
  auto tail = r.acquire(id, 99, 1, access::read);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->data(), buf.data() + 99);
  constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();
  EXPECT_EQ(r.acquire(id, 0, 101, access::read).code(), status::range_rejected);
  EXPECT_EQ(r.acquire(id, 100, 1, access::read).code(), status::range_rejected);
  EXPECT_EQ(r.acquire(id, 50, 0, access::read).code(), status::range_rejected);
  EXPECT_EQ(r.acquire(id, u64_max, 2, access::read).code(), status::range_rejected);
  EXPECT_EQ(r.acquire(id, 2, u64_max - 1, access::read).code(), status::range_rejected);
  EXPECT_EQ(r.acquire(id, 101, u64_max, access::read).code(), status::range_rejected);
}

TEST(registry, unregister_hides_first_then_waits_for_leases) {
  std::vector<std::byte> buf(64);
  registry r;
  auto id = must_register(r, buf.data(), 64, permission::remote_read);
  auto held = r.acquire(id, 0, 64, access::read);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(r.active_leases(), 1u);

  auto unregistering = std::async(std::launch::async, [&] { return r.unregister_buffer(id); });
  // The range is hidden from new work before the wait ends.
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (r.acquire(id, 0, 1, access::read).ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_EQ(r.acquire(id, 0, 1, access::read).code(), status::stale_registration);
  EXPECT_EQ(unregistering.wait_for(20ms), std::future_status::timeout);

  held->release();
  ASSERT_EQ(unregistering.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(unregistering.get().ok());
  EXPECT_EQ(r.active_leases(), 0u);
  EXPECT_EQ(r.unregister_buffer(id).code(), status::stale_registration);
}

TEST(registry, timed_unregister_reports_timeout_and_can_be_retried) {
  std::vector<std::byte> buf(64);
  registry r;
  auto id = must_register(r, buf.data(), 64, permission::remote_read);
  auto held = r.acquire(id, 0, 64, access::read);
  ASSERT_TRUE(held.ok());
  auto first = r.unregister_buffer(id, 30ms);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.code(), status::timeout);
  EXPECT_EQ(r.acquire(id, 0, 1, access::read).code(), status::stale_registration);
  held->release();
  EXPECT_TRUE(r.unregister_buffer(id, 5000ms).ok());
}

TEST(registry, close_rejects_new_work_and_waits_for_leases) {
  std::vector<std::byte> buf(64);
  registry r;
  auto id = must_register(r, buf.data(), 64, permission::remote_read);
  auto held = r.acquire(id, 0, 8, access::read);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(r.close(20ms).code(), status::timeout);
  EXPECT_EQ(r.acquire(id, 0, 8, access::read).code(), status::shutting_down);
  EXPECT_EQ(r.register_buffer(buf.data(), 8, permission::remote_read).code(),
            status::shutting_down);
  held->release();
  EXPECT_TRUE(r.close(5000ms).ok());
  EXPECT_EQ(r.registration_count(), 0u);
}

// Lease holders on several threads race unregistration; once
// unregister_buffer returns, the memory is freed, so any access through a
// lease that outlived it is caught by ASan (use-after-free) or TSan (race).
TEST(registry, unregister_races_lease_holders_on_many_threads) {
  constexpr int buffers = 16;
  constexpr std::size_t size = 256;
  registry r;
  std::vector<std::unique_ptr<std::byte[]>> memory;
  std::vector<registration_id> ids;
  for (int i = 0; i < buffers; ++i) {
    memory.push_back(std::make_unique<std::byte[]>(size));
    std::fill_n(memory.back().get(), size, std::byte{7});
    ids.push_back(must_register(r, memory.back().get(), size, permission::remote_read_write));
  }
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> leased{0};
  std::atomic<std::uint64_t> refused{0};
  std::vector<std::thread> holders;
  for (int t = 0; t < 4; ++t) {
    holders.emplace_back([&, t] {
      std::uint64_t i = static_cast<std::uint64_t>(t);
      while (!done.load(std::memory_order_acquire)) {
        auto id = ids[i++ % buffers];
        auto l = r.acquire(id, 0, size, access::write);
        if (!l.ok()) {
          EXPECT_EQ(l.code(), status::stale_registration);
          refused.fetch_add(1);
          continue;
        }
        // Readers only: concurrent leases on one buffer are shared, and the
        // free after unregister is the write a missing wait would race with.
        unsigned sum = 0;
        for (std::size_t b = 0; b < size; ++b) sum += std::to_integer<unsigned>(l->data()[b]);
        EXPECT_EQ(sum, size * 7u);
        leased.fetch_add(1);
      }
    });
  }
  for (int i = 0; i < buffers; ++i) {
    // Let the holders get some leases on this buffer before it goes.
    auto target = leased.load() + 50;
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (leased.load() < target && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    ASSERT_TRUE(r.unregister_buffer(ids[i]).ok());
    memory[i].reset();
  }
  done.store(true, std::memory_order_release);
  for (auto& h : holders) h.join();
  EXPECT_GT(leased.load(), 0u);
  EXPECT_GT(refused.load(), 0u);
  EXPECT_EQ(r.active_leases(), 0u);
}

TEST(registry, permissions_parse_and_print) {
  for (auto p : {permission::local_only, permission::remote_read, permission::remote_read_write}) {
    EXPECT_EQ(parse_permission(to_string(p)), p);
  }
  EXPECT_FALSE(parse_permission("rw").has_value());
}

}  // namespace
}  // namespace faultlane
