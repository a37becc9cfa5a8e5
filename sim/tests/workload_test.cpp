// What a stream submits (docs/scenarios.md, "workload:"), from the history
// of short in-process runs: exactly `count` ops; sizes drawn from the
// stream's range, both ends included; random offsets anywhere an op fits;
// sequential offsets each where the previous op ended, back to 0 when the
// next does not fit; the op mix by its weights. Nothing here depends on
// how fast the run goes: only on what was submitted.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "faultlane/sim/runner.hpp"

namespace faultlane::sim {
namespace {

history run_stream(const std::string& region_size, const std::string& stream) {
  auto s = parse_scenario(
      "transports: [{name: a}, {name: b}]\n"
      "regions: [{name: r, transport: b, size: " +
          region_size +
          "}]\n"
          "workload: [{name: s, from: a, region: r, " +
          stream + "}]\nphases: [{name: only}]\n",
      "workload.yaml");
  EXPECT_TRUE(s.ok()) << s.error().message;
  if (!s.ok()) return {};
  run_options o;
  o.seed = 5;
  const run_result r = run_scenario(s.value(), o);
  EXPECT_EQ(r.error, "");
  EXPECT_TRUE(r.passed) << r.error;
  return r.hist ? *r.hist : history{};
}

// Rule: a stream submits exactly `count` ops, also when its batches do not
// divide the count.
TEST(workload, a_stream_submits_exactly_count_ops) {
  const history h = run_stream("4096", "ops: read, size: 64, count: 301, depth: 4, batch: 4");
  EXPECT_EQ(h.ops.size(), 301u);
}

// Rule: sizes of a range are drawn from both ends included; a random
// offset is anywhere the op fits, up to the region's last byte. (One op
// in flight, so no offset is redrawn around another.)
TEST(workload, sizes_in_range_and_random_offsets_wherever_they_fit) {
  const history h = run_stream("8", "ops: read, size: \"1..4\", count: 300");
  ASSERT_EQ(h.ops.size(), 300u);
  std::set<std::uint64_t> sizes;
  bool reached_end = false;
  for (const auto& op : h.ops) {
    sizes.insert(op.length);
    EXPECT_LE(op.offset + op.length, 8u) << op.id;
    reached_end = reached_end || op.offset + op.length == 8;
    EXPECT_EQ(op.op, wire::opcode::read);
  }
  EXPECT_EQ(sizes, (std::set<std::uint64_t>{1, 2, 3, 4}));
  EXPECT_TRUE(reached_end);
}

// Rule: sequential offsets: each op starts where the previous one ended,
// and at 0 when it would not fit before the region's end (an op that
// ends exactly at the end still fits).
TEST(workload, sequential_offsets_follow_on_and_wrap_only_when_the_op_does_not_fit) {
  const history h =
      run_stream("1000", "ops: write, size: [100, 200], count: 60, offsets: sequential");
  ASSERT_EQ(h.ops.size(), 60u);
  bool exact_fit = false;
  std::size_t wraps = 0;
  for (std::size_t i = 1; i < h.ops.size(); ++i) {
    const auto& prev = h.ops[i - 1];
    const auto& op = h.ops[i];
    const auto next = prev.offset + prev.length;
    const bool fits = next + op.length <= 1000;
    EXPECT_EQ(op.offset, fits ? next : 0) << "op " << op.id;
    exact_fit = exact_fit || next + op.length == 1000;
    wraps += fits ? 0 : 1;
    EXPECT_EQ(op.op, wire::opcode::write);
  }
  EXPECT_TRUE(exact_fit);
  EXPECT_GE(wraps, 2u);
}

// Rule: `ops: {read: W, write: W}` draws each op's kind by the weights:
// with equal weights both kinds appear, about as often.
TEST(workload, an_op_mix_draws_both_kinds_by_weight) {
  const history h = run_stream("4096", "ops: {read: 1, write: 1}, size: 64, count: 200");
  ASSERT_EQ(h.ops.size(), 200u);
  const auto writes = std::count_if(
      h.ops.begin(), h.ops.end(), [](const op_record& op) { return op.op == wire::opcode::write; });
  EXPECT_GE(writes, 70);  // 100 expected, sd 7
  EXPECT_LE(writes, 130);
}

}  // namespace
}  // namespace faultlane::sim
