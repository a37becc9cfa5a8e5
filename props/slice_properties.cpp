// Properties of READ slicing: the pure plan, and the core's dispatch over
// real loopback rails checked against that plan.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "faultlane/core/observer.hpp"
#include "faultlane/core/slice_plan.hpp"
#include "faultlane/core/transport.hpp"
#include "planted.hpp"

namespace faultlane::props {
namespace {

// A plan as a plain list, so a planted variant can stand in for the real one.
using plan_fn = std::vector<slice> (*)(std::uint64_t, std::size_t, std::uint64_t);

std::vector<slice> real_plan(std::uint64_t length, std::size_t rails, std::uint64_t step) {
  auto plan = plan_read_slices(length, rails, step);
  return {plan.begin(), plan.end()};
}

// Everything a slice plan promises, for one (length, rails, step).
void plan_is_sound(plan_fn plan_of, std::uint64_t length, std::size_t rails, std::uint64_t step) {
  auto plan = plan_of(length, rails, step);
  const bool should = rails >= 2 && length / rails >= step;
  RC_ASSERT(read_is_sliced(length, rails, step) == should);
  RC_ASSERT(plan.size() == (should ? rails : 1u));
  std::uint64_t next = 0;
  std::uint64_t smallest = UINT64_MAX, largest = 0;
  for (std::size_t k = 0; k < plan.size(); ++k) {
    const auto& s = plan[k];
    RC_ASSERT(s.offset == next);  // contiguous and disjoint, in rail order
    RC_ASSERT(s.rail == k);
    RC_ASSERT(s.length > 0u);
    if (k > 0) RC_ASSERT(s.length <= plan[k - 1].length);  // remainder on the first
    smallest = std::min(smallest, s.length);
    largest = std::max(largest, s.length);
    next += s.length;
  }
  RC_ASSERT(next == length);  // covers [0, length) exactly
  RC_ASSERT(largest - smallest <= 1u);
}

rc::Gen<std::uint64_t> lengths(std::uint64_t step) {
  // Around the thresholds (k x step +- a few bytes) and anywhere up to 2^40.
  return rc::gen::oneOf(
      rc::gen::map(
          rc::gen::pair(rc::gen::inRange<std::uint64_t>(1, 33), rc::gen::inRange<int>(-3, 4)),
          [step](std::pair<std::uint64_t, int> p) {
            auto base = p.first * step;
            return std::max<std::uint64_t>(1, base + static_cast<std::uint64_t>(p.second));
          }),
      rc::gen::inRange<std::uint64_t>(1, 1ull << 40));
}

RC_GTEST_PROP(slice_properties, plan_is_contiguous_exact_and_balanced, ()) {
  auto rails = *uniform_in_range<std::size_t>(1, limits::rail_count_max + 1);
  auto step = *rc::gen::oneOf(rc::gen::just(limits::slice_step_bytes),
                              rc::gen::inRange<std::uint64_t>(1, 1 << 24));
  plan_is_sound(&real_plan, *lengths(step), rails, step);
}

// Planted: the remainder goes to the last slices instead of the first.
std::vector<slice> remainder_last(std::uint64_t length, std::size_t rails, std::uint64_t step) {
  auto slices = real_plan(length, rails, step);
  std::reverse(slices.begin(), slices.end());
  std::uint64_t offset = 0;
  for (std::size_t k = 0; k < slices.size(); ++k) {
    slices[k].rail = k;
    slices[k].offset = offset;
    offset += slices[k].length;
  }
  return slices;
}

TEST(slice_properties_planted, a_plan_with_the_remainder_last_is_caught) {
  EXPECT_TRUE(finds_counterexample("remainder on the last slices", [] {
    auto rails = *uniform_in_range<std::size_t>(2, 9);
    plan_is_sound(&remainder_last, *lengths(limits::slice_step_bytes), rails,
                  limits::slice_step_bytes);
  }));
}

// --- end to end over loopback rails -------------------------------------------

class slice_recorder : public transport_observer {
 public:
  void slice_dispatched(const slice_event& e) override {
    std::lock_guard lock(mutex_);
    by_task_[e.task_id].push_back(e);
  }
  std::vector<slice_event> take(std::uint64_t task_id) {
    std::lock_guard lock(mutex_);
    auto out = by_task_[task_id];
    by_task_.erase(task_id);
    return out;
  }

 private:
  std::mutex mutex_;
  std::map<std::uint64_t, std::vector<slice_event>> by_task_;
};

struct rail_pair {
  slice_recorder recorder;
  std::unique_ptr<transport> target;
  std::unique_ptr<transport> initiator;
  std::vector<std::byte> memory;
  registration_id id = 0;
  segment_id segment = 0;
  std::uint64_t next_task_id = 1;  // tasks are numbered from 1 per transport
};

std::unique_ptr<rail_pair> make_rail_pair(std::size_t rails, std::size_t memory_bytes) {
  auto pair = std::make_unique<rail_pair>();
  transport_config c;
  c.bind_address = rails > 1 ? "" : "127.0.0.1";
  for (std::size_t i = 1; i <= rails; ++i)
    c.rail_addresses.push_back("127.0.0." + std::to_string(i));
  c.connections_per_peer = rails;
  c.worker_count = 2;
  pair->target = transport::start(c).value();
  c.observer = &pair->recorder;
  c.connections_per_peer = 2 * rails;
  pair->initiator = transport::start(c).value();
  pair->memory.resize(memory_bytes);
  for (std::size_t i = 0; i < memory_bytes; ++i) {
    pair->memory[i] = static_cast<std::byte>((i * 2654435761u) >> 13);
  }
  pair->id =
      pair->target->register_buffer(pair->memory.data(), memory_bytes, permission::remote_read)
          .value();
  pair->segment = pair->initiator->open_segment(pair->target->descriptor()).value();
  return pair;
}

// One READ through the core; its recorded slices must equal `expected_plan`.
void read_matches_plan(rail_pair& p, std::size_t rails, std::uint64_t offset, std::uint64_t length,
                       plan_fn expected_plan) {
  std::vector<std::byte> dest(length);
  transfer_request r{wire::opcode::read, dest.data(), length, p.segment, p.id, offset};
  auto batch = p.initiator->submit(std::span(&r, 1));
  RC_ASSERT(batch.ok());
  RC_ASSERT(batch.value()->wait(std::chrono::seconds(60)));
  RC_ASSERT(batch.value()->status(0).code == status::ok);
  RC_ASSERT(std::memcmp(dest.data(), p.memory.data() + offset, length) == 0);
  auto recorded = p.recorder.take(p.next_task_id++);
  auto plan = expected_plan(length, rails, limits::slice_step_bytes);
  RC_ASSERT(recorded.size() == plan.size());
  std::sort(recorded.begin(), recorded.end(),
            [](const slice_event& a, const slice_event& b) { return a.offset < b.offset; });
  for (std::size_t k = 0; k < plan.size(); ++k) {
    RC_ASSERT(recorded[k].offset == plan[k].offset);
    RC_ASSERT(recorded[k].length == plan[k].length);
    if (plan.size() > 1) RC_ASSERT(recorded[k].rail == plan[k].rail);
  }
}

constexpr std::size_t e2e_memory_bytes = 9u << 20;

void run_end_to_end(plan_fn expected_plan) {
  std::map<std::size_t, std::unique_ptr<rail_pair>> pairs;
  bool ok = rc::check("slices over loopback rails match the plan", [&] {
    auto rails = *uniform_in_range<std::size_t>(1, 5);
    auto& pair = pairs[rails];
    if (!pair) pair = make_rail_pair(rails, e2e_memory_bytes);
    auto threshold = rails * limits::slice_step_bytes;
    auto length = *rc::gen::oneOf(
        rc::gen::inRange<std::uint64_t>(std::max<std::uint64_t>(1, threshold - 4), threshold + 4),
        rc::gen::inRange<std::uint64_t>(1, 8u << 20));
    auto offset = *rc::gen::inRange<std::uint64_t>(0, e2e_memory_bytes - length + 1);
    read_matches_plan(*pair, rails, offset, length, expected_plan);
  });
  for (auto& [rails, pair] : pairs) {
    EXPECT_TRUE(pair->initiator->shutdown().ok());
    EXPECT_TRUE(pair->target->shutdown().ok());
  }
  if (expected_plan == &real_plan) {
    EXPECT_TRUE(ok);
  } else {
    EXPECT_FALSE(ok) << "the planted plan was not caught";
  }
}

TEST(slice_properties, core_dispatch_over_loopback_rails_matches_the_plan) {
  run_end_to_end(&real_plan);
}

TEST(slice_properties_planted, core_dispatch_checked_against_a_wrong_plan_is_caught) {
  run_end_to_end(&remainder_last);
}

}  // namespace
}  // namespace faultlane::props
