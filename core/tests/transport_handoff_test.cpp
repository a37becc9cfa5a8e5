// A completion callback that submits the next operation to the lane whose
// handler runs it hands that lane the work directly: enqueued as the
// handler returns, with no post and no event-loop turn (docs/architecture.md,
// "The hot path"). Work for any other lane is posted as before, and a lane
// that settles every op at once cannot keep its thread by being handed
// the same work again and again.
#include <gtest/gtest.h>

#include <future>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "pipeline_peers.hpp"

namespace faultlane {
namespace {

using namespace testing;
using namespace std::chrono_literals;

// Submits READs of `seg` one after another, each from the callback of the
// one before, until `n` settled or `go_on` says stop; the codes, in order.
class read_chain {
 public:
  read_chain(transport& t, segment_id seg, registration_id id, int n,
             std::function<bool(status)> go_on)
      : t_(t), seg_(seg), id_(id), n_(n), go_on_(std::move(go_on)), back_(n), keep_(n) {}

  std::vector<status> run() {
    next(0);
    EXPECT_EQ(done_.get_future().wait_for(30s), std::future_status::ready) << "the chain stalled";
    return codes_;
  }
  const std::vector<std::byte>& bytes(int k) const { return back_[k]; }

 private:
  void next(int k) {
    back_[k].resize(4096);
    auto r = read_req(seg_, id_, 0, back_[k].data(), 4096);
    auto submitted = t_.submit(std::span(&r, 1), [this, k](std::size_t, status s, std::uint64_t) {
      codes_.push_back(s);
      if (k + 1 == n_ || !go_on_(s)) return done_.set_value();
      next(k + 1);
    });
    ASSERT_TRUE(submitted) << "submit " << k;
    keep_[k] = std::move(submitted).value();
  }

  transport& t_;
  const segment_id seg_;
  const registration_id id_;
  const int n_;
  const std::function<bool(status)> go_on_;
  std::vector<std::vector<std::byte>> back_;
  std::vector<std::shared_ptr<transfer_batch>> keep_;
  std::vector<status> codes_;  // one callback at a time: each submits the next
  std::promise<void> done_;
};

constexpr int chain_length = 200;

struct served_memory {
  explicit served_memory(transport& target)
      : bytes(pattern(4096, 3)),
        id(target.register_buffer(bytes.data(), bytes.size(), permission::remote_read).value()) {}
  std::vector<std::byte> bytes;
  registration_id id;
};

// One lane: every READ but the first (submitted from this thread) is
// handed over from the lane's own callback.
TEST(transport_handoff, a_callback_hands_its_own_lane_the_next_op_inline) {
  auto target = start(loopback_config());
  auto initiator = start(pipeline_testing::one_lane(8));
  served_memory memory(*target);
  auto seg = initiator->open_segment(target->descriptor()).value();
  read_chain chain(*initiator, seg, memory.id, chain_length, [](status) { return true; });
  EXPECT_EQ(chain.run(), std::vector<status>(chain_length, status::ok));
  for (int k = 0; k < chain_length; ++k) ASSERT_EQ(chain.bytes(k), memory.bytes) << "READ " << k;
  EXPECT_EQ(initiator->stats().handoffs_inline, static_cast<std::uint64_t>(chain_length - 1));
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

// Two lanes on one io thread take turns: each callback runs in one lane's
// handler and submits to the other, which is posted (taking it inline
// would enqueue on a lane from another lane's handler).
TEST(transport_handoff, work_for_another_lane_on_the_same_thread_is_posted) {
  auto target = start(loopback_config());
  auto config = pipeline_testing::one_lane(8);
  config.connections_per_peer = 2;
  config.worker_count = 1;
  auto initiator = start(config);
  served_memory memory(*target);
  auto seg = initiator->open_segment(target->descriptor()).value();
  read_chain chain(*initiator, seg, memory.id, chain_length, [](status) { return true; });
  EXPECT_EQ(chain.run(), std::vector<status>(chain_length, status::ok));
  for (int k = 0; k < chain_length; ++k) ASSERT_EQ(chain.bytes(k), memory.bytes) << "READ " << k;
  EXPECT_EQ(initiator->stats().handoffs_inline, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// In the reconnect cooldown a lane fails each op as it is enqueued. A
// callback that submits again on every failure hands the lane work it
// fails at once: one round is taken inline, what that round's callbacks
// hand over is posted, so other handlers on the thread run in between and
// the stack never grows with the chain.
TEST(transport_handoff, work_failed_at_once_and_handed_back_takes_the_post_every_other_time) {
  auto target = start(loopback_config());
  auto config = pipeline_testing::one_lane(8);
  config.reconnect_cooldown_ms = 60000;
  auto initiator = start(config);
  served_memory memory(*target);
  auto seg = initiator->open_segment(target->descriptor()).value();
  constexpr int failures = 2000;
  std::vector<status> codes;
  {
    failpoint::scoped fail("lane.set_non_blocking",
                           {.act = failpoint::action::return_error, .count = 1});
    read_chain chain(*initiator, seg, memory.id, failures,
                     [](status s) { return s == status::connection_failed; });
    codes = chain.run();
  }
  EXPECT_EQ(codes, std::vector<status>(failures, status::connection_failed));
  const auto taken = initiator->stats().handoffs_inline;
  EXPECT_GE(taken, failures / 2 - 1u);
  EXPECT_LE(taken, failures / 2 + 1u) << "a round's hand-backs were taken inline too";
  EXPECT_EQ(initiator->stats().connects, 0u);
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}
#endif

}  // namespace
}  // namespace faultlane
