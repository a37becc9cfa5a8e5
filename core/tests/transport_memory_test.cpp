// Memory in the steady state (docs/architecture.md): once lanes are
// connected, submitting and completing work allocates nothing from the
// heap, also when the caller's thread is not an io thread. Counted through
// the sanitizer runtime's malloc hooks, so the counts run under TSan (ASan
// builds pass the pool through to the heap, so that ASan sees every
// lifetime) and skip elsewhere; the pool's own tests run everywhere.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "faultlane/testing/transport_fixture.hpp"

#include "memory/batch_memory.hpp"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FAULTLANE_TEST_SANITIZED 1
#endif
#if __has_feature(address_sanitizer)
#define FAULTLANE_TEST_POOL_PASSES_THROUGH 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FAULTLANE_TEST_SANITIZED 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FAULTLANE_TEST_POOL_PASSES_THROUGH 1
#endif

#if defined(FAULTLANE_TEST_SANITIZED)
#include <sanitizer/allocator_interface.h>
#endif

namespace faultlane {
namespace {

using namespace testing;

std::atomic<std::uint64_t> allocations{0};

constexpr bool pool_passes_through =
#if defined(FAULTLANE_TEST_POOL_PASSES_THROUGH)
    true;
#else
    false;
#endif

// True once every allocation in the process is counted.
bool counting() {
#if defined(FAULTLANE_TEST_SANITIZED)
  static const bool hooked = __sanitizer_install_malloc_and_free_hooks(
                                 [](const volatile void*, std::size_t) {
                                   allocations.fetch_add(1, std::memory_order_relaxed);
                                 },
                                 [](const volatile void*) {}) != 0;
  return hooked;
#else
  return false;
#endif
}

transport_config polling_every(std::uint32_t busy_poll_us) {
  auto config = loopback_config();
  config.busy_poll_us = busy_poll_us;
  return config;
}

struct loopback_pair {
  std::vector<std::byte> remote = std::vector<std::byte>(64 * 4096);  // outlives the target
  std::unique_ptr<transport> target;
  std::unique_ptr<transport> initiator;
  registration_id id = 0;
  segment_id seg = 0;

  explicit loopback_pair(std::size_t lanes, std::uint32_t busy_poll_us = 0)
      : target(start(polling_every(busy_poll_us))) {
    auto config = polling_every(busy_poll_us);
    config.connections_per_peer = lanes;
    initiator = start(config);
    id = target->register_buffer(remote.data(), remote.size(), permission::remote_read_write)
             .value();
    seg = initiator->open_segment(target->descriptor()).value();
  }
};

// `batches` batches of `requests.size()` 4 KiB READs and WRITEs (alternating),
// each submitted from this thread with a callback and waited for.
template <std::size_t N>
void run_batches(loopback_pair& p, std::array<transfer_request, N>& requests,
                 std::array<std::byte, N * 4096>& local, int batches, std::atomic<int>& called) {
  for (int b = 0; b < batches; ++b) {
    for (std::size_t i = 0; i < N; ++i) {
      const bool write = (b + i) % 2 == 1;
      requests[i] = {write ? wire::opcode::write : wire::opcode::read,
                     local.data() + i * 4096,
                     4096,
                     p.seg,
                     p.id,
                     ((b * N + i) % 64) * 4096};
    }
    auto batch = p.initiator->submit(requests, [&called](std::size_t, status, std::uint64_t) {
      called.fetch_add(1, std::memory_order_relaxed);
    });
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE(batch.value()->wait(std::chrono::seconds(30)));
    for (std::size_t i = 0; i < N; ++i) ASSERT_EQ(batch.value()->status(i).code, status::ok);
  }
}

// What 1000 single-frame tasks may count. 0 when the machine is quiet.
// The count is process-wide (both transports' threads run here), and under
// load stray allocations come that are not one per task: 7 once in a
// clean-clone CI run, 12 once in `ctest --preset tsan -j4 --repeat
// until-fail:3` beside a CPU-bound loop. Traced (a backtrace per
// allocation, 25 runs beside two CPU-bound loops), they were: the pool
// growing by one batch's 4 blocks when the io thread still held the last
// batch's as the next was submitted (4 in 6 of the runs: growth to a new
// high-water mark, which stays); and, until fixed, a progress deadline's
// timer completing through Asio's polymorphic executor (deadline.hpp) and
// the pool's free lists growing (batch_memory.hpp). A task that allocated
// would read 1 000; at most 1 per 20 tasks passes.
constexpr std::uint64_t stray_allocations_max = 50;

#define SKIP_UNLESS_COUNTED()             \
  if (!counting() || pool_passes_through) \
  GTEST_SKIP() << "counted under TSan only (ASan builds pass the pool through to the heap)"

TEST(transport_memory, single_frame_tasks_allocate_nothing_in_the_steady_state) {
  SKIP_UNLESS_COUNTED();
  loopback_pair p(2);
  std::array<transfer_request, 1> one{};
  std::array<std::byte, 4096> local{};
  std::atomic<int> called{0};
  run_batches(p, one, local, 300, called);  // lanes connect, pools fill
  const auto before = allocations.load();
  run_batches(p, one, local, 1000, called);
  const auto allocated = allocations.load() - before;
  EXPECT_LE(allocated, stray_allocations_max) << "allocations in 1000 single-frame tasks";
  EXPECT_EQ(called.load(), 1300);
}

// Busy-polling io threads keep Asio's per-thread handler memory too: they
// poll from inside one run() (a thread that called poll() in a loop
// allocated for every socket operation, two per task).
TEST(transport_memory, single_frame_tasks_allocate_nothing_with_busy_polling) {
  SKIP_UNLESS_COUNTED();
  loopback_pair p(2, 50);
  std::array<transfer_request, 1> one{};
  std::array<std::byte, 4096> local{};
  std::atomic<int> called{0};
  run_batches(p, one, local, 300, called);
  const auto before = allocations.load();
  run_batches(p, one, local, 1000, called);
  EXPECT_LE(allocations.load() - before, stray_allocations_max)
      << "allocations in 1000 single-frame tasks";
  EXPECT_EQ(called.load(), 1300);
}

TEST(transport_memory, a_batch_of_32_allocates_at_most_once) {
  SKIP_UNLESS_COUNTED();
  loopback_pair p(2);
  std::array<transfer_request, 32> many{};
  std::array<std::byte, 32 * 4096> local{};
  std::atomic<int> called{0};
  run_batches(p, many, local, 50, called);
  const auto before = allocations.load();
  run_batches(p, many, local, 100, called);
  const auto allocated = allocations.load() - before;
  EXPECT_LE(allocated, 100u) << "allocations in 100 batches of 32";
  EXPECT_EQ(called.load(), 150 * 32);
}

// The counter itself: it sees an allocation, so a 0 above means none.
TEST(transport_memory, the_counter_sees_an_allocation) {
  if (!counting()) GTEST_SKIP() << "allocations are counted under ASan and TSan only";
  static std::unique_ptr<int> kept;  // escapes, so the allocation cannot be elided
  const auto before = allocations.load();
  kept = std::make_unique<int>(7);
  EXPECT_GE(allocations.load() - before, 1u);
  kept.reset();
}

// The pool: a freed block is the next one of its size class handed out,
// from any thread; classes do not mix; what is too large for the pool, or
// anything under ASan, goes to the heap and is never cached.
TEST(batch_memory, freed_blocks_are_reused_by_size_class_from_any_thread) {
  auto memory = detail::batch_memory::create();
  void* a = memory->allocate(100, alignof(std::max_align_t));  // the 128 B class
  void* big = memory->allocate(detail::batch_memory::pooled_bytes_max + 1, 8);
  std::thread([&] {
    memory->deallocate(a, 100, alignof(std::max_align_t));
    memory->deallocate(big, detail::batch_memory::pooled_bytes_max + 1, 8);
  }).join();
  if (pool_passes_through) {
    EXPECT_EQ(memory->cached_blocks(), 0u);
    return;
  }
  EXPECT_EQ(memory->cached_blocks(), 1u);        // the large block went back to the heap
  void* other_class = memory->allocate(200, 8);  // 256 B: not the cached block
  EXPECT_NE(other_class, a);
  EXPECT_EQ(memory->cached_blocks(), 1u);
  void* again = memory->allocate(65, 8);  // the 128 B class again
  EXPECT_EQ(again, a);
  EXPECT_EQ(memory->cached_blocks(), 0u);
  memory->deallocate(again, 65, 8);
  memory->deallocate(other_class, 200, 8);
  EXPECT_EQ(memory->cached_blocks(), 2u);
}

// Freeing allocates nothing until more blocks of a class are free at once
// than its list had room for from the start (a list that grew as it went
// allocated 7 times on the way to 64).
TEST(batch_memory, freeing_as_many_blocks_as_the_room_allocates_nothing) {
  SKIP_UNLESS_COUNTED();
  auto memory = detail::batch_memory::create();
  std::vector<void*> blocks(detail::batch_memory::free_room_initial);
  for (auto& b : blocks) b = memory->allocate(100, 8);
  const auto before = allocations.load();
  for (void* b : blocks) memory->deallocate(b, 100, 8);
  EXPECT_EQ(allocations.load() - before, 0u);
  EXPECT_EQ(memory->cached_blocks(), blocks.size());
}

// A size class holds exactly its sizes: a block freed at the top of a
// class (64, 4096, 65536 bytes) is handed out again for any size up to it,
// and never for one byte more, which a class too small for it would get
// (an off-by-one in the class choice overruns every such block).
TEST(batch_memory, sizes_on_both_sides_of_a_class_boundary_get_room_for_what_they_asked) {
  if (pool_passes_through) GTEST_SKIP() << "ASan builds pass the pool through to the heap";
  auto memory = detail::batch_memory::create();
  for (std::size_t top : {std::size_t{64}, std::size_t{4096}, std::size_t{65536}}) {
    void* block = memory->allocate(top, 8);
    memory->deallocate(block, top, 8);
    void* bigger = memory->allocate(top + 1, 8);
    EXPECT_NE(bigger, block) << top + 1 << " bytes got a " << top << "-byte block";
    void* same = memory->allocate(top / 2 + 1, 8);  // the smallest size of that class
    EXPECT_EQ(same, block) << top / 2 + 1 << " bytes did not get the " << top << "-byte block";
    memory->deallocate(same, top / 2 + 1, 8);
    memory->deallocate(bigger, top + 1, 8);
  }
  // 1 byte takes the smallest class; 65537 bytes is never cached.
  void* tiny = memory->allocate(1, 8);
  memory->deallocate(tiny, 1, 8);
  void* again = memory->allocate(64, 8);
  EXPECT_EQ(again, tiny);
  memory->deallocate(again, 64, 8);
}

// A batch the caller keeps after its transport is gone still frees into
// a live pool (ASan would see a block given back to a destroyed one).
TEST(batch_memory, a_batch_outlives_its_transport) {
  std::shared_ptr<transfer_batch> kept;
  {
    loopback_pair p(1);
    std::array<std::byte, 4096> local{};
    kept = p.initiator->submit({{read_req(p.seg, p.id, 0, local.data(), local.size())}}).value();
    ASSERT_TRUE(kept->wait(std::chrono::seconds(10)));
    EXPECT_EQ(kept->status(0).code, status::ok);
  }
  EXPECT_EQ(kept->status(0).code, status::ok);
  kept.reset();
}

}  // namespace
}  // namespace faultlane
