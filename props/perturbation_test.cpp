// Schedule perturbation pays (docs/properties.md): a check-then-act planted
// in a copy of the settlement logic is a race a few instructions wide. The
// stress test the core's own settlement passes (two threads released by a
// barrier, 5 000 rounds) does not see it; a property that turns
// perturbation on, with a seed-drawn probability and sleep, catches it.
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <atomic>
#include <barrier>
#include <cstdint>
#include <thread>

#include "faultlane/core/completion.hpp"
#include "faultlane/core/failpoint.hpp"
#include "planted.hpp"

namespace faultlane::props {
namespace {

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
constexpr bool failpoints_on = true;
#else
constexpr bool failpoints_on = false;
#endif

// settlement::retire with the planted bug: it reads the count, decides, and
// only then takes its reference off, so two retirers can both see 2 and
// neither finalizes (or both see 1 and both do). The perturbation point sits
// at the decision, as the real retire's do.
class planted_settlement {
 public:
  explicit planted_settlement(std::uint32_t references) : references_(references) {}

  void retire() {
    const auto before = references_.load(std::memory_order_acquire);
    FAULTLANE_PERTURB("settle.finalize");
    references_.fetch_sub(1, std::memory_order_acq_rel);
    if (before == 1) finalized_.fetch_add(1, std::memory_order_acq_rel);
  }
  int finalized() const { return finalized_.load(std::memory_order_acquire); }

 private:
  std::atomic<std::uint32_t> references_;
  std::atomic<int> finalized_{0};
};

// The core's settlement behind the same interface: the control.
class real_settlement {
 public:
  explicit real_settlement(std::uint32_t references)
      : settle_(terminal_action([this](status, std::uint64_t) {
                  finalized_.fetch_add(1, std::memory_order_acq_rel);
                }),
                references) {}
  void retire() { (void)settle_.retire(status::ok, 0); }
  int finalized() const { return finalized_.load(std::memory_order_acquire); }

 private:
  std::atomic<int> finalized_{0};
  settlement settle_;
};

// Two threads retire one settlement each round, released together by a
// barrier; returns the rounds that did not finalize exactly once.
template <typename Settlement>
int rounds_gone_wrong(int rounds) {
  int wrong = 0;
  std::unique_ptr<Settlement> current;
  std::barrier sync(3);
  auto racer = [&] {
    for (int i = 0; i < rounds; ++i) {
      sync.arrive_and_wait();
      current->retire();
      sync.arrive_and_wait();
    }
  };
  std::thread a(racer);
  std::thread b(racer);
  for (int i = 0; i < rounds; ++i) {
    current = std::make_unique<Settlement>(2);
    sync.arrive_and_wait();
    sync.arrive_and_wait();
    if (current->finalized() != 1) ++wrong;
  }
  a.join();
  b.join();
  return wrong;
}

TEST(perturbation, the_same_seed_perturbs_the_same_passes) {
  if (!failpoints_on) GTEST_SKIP() << "perturbation points are failpoints; none here";
  auto passes = [](std::uint64_t seed) {
    failpoint::perturb_on({seed, 0.5, 0});
    std::vector<std::uint64_t> after;
    for (int i = 0; i < 64; ++i) {
      failpoint::perturb("settle.merge");
      after.push_back(failpoint::perturbed());
    }
    failpoint::perturb_off();
    return after;
  };
  EXPECT_EQ(passes(7), passes(7));
  EXPECT_NE(passes(7), passes(8));
  const auto half = passes(7).back();
  EXPECT_GT(half, 16u);  // about 32 of 64 at probability 0.5
  EXPECT_LT(half, 48u);
  failpoint::perturb("settle.merge");  // off: nothing happens, nothing counted
  EXPECT_EQ(failpoint::perturbed(), half);
}

TEST(perturbation, catches_a_check_then_act_the_plain_stress_test_misses) {
  if (!failpoints_on) GTEST_SKIP() << "perturbation points are failpoints; none here";
  // The property: a seed-drawn perturbation finds the planted check-then-act.
  const bool caught = finds_counterexample(
      "check-then-act in a settlement copy, perturbed",
      [&] {
        failpoint::perturbation p;
        p.seed = *rc::gen::arbitrary<std::uint64_t>();
        p.probability = *uniform_in_range<int>(20, 101) / 100.0;
        p.max_us = *uniform_in_range<std::uint32_t>(20, 200);
        failpoint::perturb_on(p);
        const int wrong = rounds_gone_wrong<planted_settlement>(100);
        failpoint::perturb_off();
        RC_ASSERT(wrong == 0);
      },
      1);
  EXPECT_TRUE(caught);
  // Per round, perturbation reaches the window more often than the plain
  // stress test. Both are measured in alternating blocks, so that load on
  // the machine, which lets preemption alone reach the window (once 10% of
  // plain rounds), falls on both alike; and apart from the property above,
  // whose shrinking moves to its weakest perturbation. Usually the plain
  // rounds see none; perturbed ones go wrong about half the time.
  constexpr int blocks = 10;
  constexpr int plain_per_block = 500;
  constexpr int perturbed_per_block = 100;
  int plain_wrong = 0;
  int perturbed_wrong = 0;
  for (int b = 0; b < blocks; ++b) {
    plain_wrong += rounds_gone_wrong<planted_settlement>(plain_per_block);
    failpoint::perturb_on({static_cast<std::uint64_t>(b) + 1, 1.0, 200});
    perturbed_wrong += rounds_gone_wrong<planted_settlement>(perturbed_per_block);
    failpoint::perturb_off();
  }
  RecordProperty("plain_rounds_wrong_of_5000", plain_wrong);
  RecordProperty("perturbed_rounds_wrong_of_1000", perturbed_wrong);
  std::cout << "plain: " << plain_wrong << " of " << blocks * plain_per_block
            << " rounds went wrong; perturbed: " << perturbed_wrong << " of "
            << blocks * perturbed_per_block << "\n";
  EXPECT_GT(perturbed_wrong * plain_per_block, 2 * plain_wrong * perturbed_per_block);
}

// The control: the same perturbed property over the core's own settlement
// holds, so what fails above is the planted check-then-act, not the test.
TEST(perturbation, the_real_settlement_passes_the_same_perturbed_property) {
  if (!failpoints_on) GTEST_SKIP() << "perturbation points are failpoints; none here";
  const bool caught = finds_counterexample(
      "the core's settlement, perturbed",
      [] {
        failpoint::perturbation p;
        p.seed = *rc::gen::arbitrary<std::uint64_t>();
        p.probability = *uniform_in_range<int>(20, 101) / 100.0;
        p.max_us = *uniform_in_range<std::uint32_t>(20, 200);
        failpoint::perturb_on(p);
        const int wrong = rounds_gone_wrong<real_settlement>(100);
        const auto perturbed = failpoint::perturbed();
        failpoint::perturb_off();
        RC_ASSERT(perturbed > 0u);  // its own points were perturbed
        RC_ASSERT(wrong == 0);
      },
      1);
  EXPECT_FALSE(caught);
}

}  // namespace
}  // namespace faultlane::props
