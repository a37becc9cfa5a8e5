// A completion callback that submits the next operation to the lane whose
// handler runs it hands that lane the work directly: enqueued as the
// handler returns, with no post and no event-loop turn (docs/architecture.md,
// "The hot path"). Work for any other lane is posted as before, and a lane
// that settles every op at once cannot keep its thread by being handed
// the same work again and again.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <future>
#include <optional>

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

  // The codes, or none if the chain stalled (its callbacks may still run:
  // declare the chain before the transports, so it outlives them).
  std::vector<status> run() {
    next(0);
    if (done_.get_future().wait_for(30s) != std::future_status::ready) {
      ADD_FAILURE() << "the chain stalled";
      return {};
    }
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

// A target serving one 4 KiB block to an initiator the test configures,
// and room for chains. The block and the chains come first, so they
// outlive both transports (a stalled chain's callbacks may still run while
// the transports go).
struct chain_setup {
  explicit chain_setup(const transport_config& initiator_config, std::size_t chain_count = 1)
      : chains(chain_count),
        target(start(loopback_config())),
        initiator(start(initiator_config)),
        id(target->register_buffer(bytes.data(), bytes.size(), permission::remote_read).value()),
        seg(initiator->open_segment(target->descriptor()).value()) {}

  read_chain& chain(int n, std::function<bool(status)> go_on, std::size_t i = 0) {
    return chains[i].emplace(*initiator, seg, id, n, std::move(go_on));
  }
  void expect_chain_read_the_block(std::size_t i, int n) const {
    for (int k = 0; k < n; ++k)
      ASSERT_EQ(chains[i]->bytes(k), bytes) << "chain " << i << ", READ " << k;
  }
  void shut_down() {
    EXPECT_TRUE(initiator->shutdown().ok());
    EXPECT_TRUE(target->shutdown().ok());
  }
  std::uint64_t taken() const { return initiator->stats().handoffs_inline; }

  std::vector<std::byte> bytes = pattern(4096, 3);
  std::vector<std::optional<read_chain>> chains;
  std::unique_ptr<transport> target;
  std::unique_ptr<transport> initiator;
  registration_id id;
  segment_id seg;
};

bool always(status) { return true; }

// One lane: every READ but the first (submitted from this thread) is
// handed over from the lane's own callback.
TEST(transport_handoff, a_callback_hands_its_own_lane_the_next_op_inline) {
  chain_setup s(pipeline_testing::one_lane(8));
  ASSERT_EQ(s.chain(chain_length, always).run(), std::vector<status>(chain_length, status::ok));
  s.expect_chain_read_the_block(0, chain_length);
  EXPECT_EQ(s.taken(), static_cast<std::uint64_t>(chain_length - 1));
  s.shut_down();
}

// Each READ handed over inline finds its lane idle with the answer read
// just before having left nothing on the socket (one segment each, on
// loopback): the lane sends without poll(2). Only the first, submitted
// from this thread, is checked. (The lane connects first: the read after a
// connect probes, and may find the answer there already, which it does
// not trust.)
TEST(transport_handoff, work_handed_over_by_an_answer_that_left_nothing_needs_no_idle_check) {
  chain_setup s(pipeline_testing::one_lane(8));
  std::vector<std::byte> first(4096);
  ASSERT_EQ(run_one(*s.initiator, read_req(s.seg, s.id, 0, first.data(), 4096)).code, status::ok);
  ASSERT_EQ(s.chain(chain_length, always).run(), std::vector<status>(chain_length, status::ok));
  s.expect_chain_read_the_block(0, chain_length);
  const auto stats = s.initiator->stats();
  EXPECT_EQ(stats.idle_checks_skipped,
            pipeline_testing::reads_can_skip_the_probe() ? chain_length - 1u : 0u);
  EXPECT_EQ(stats.lanes_found_closed, 0u);
  s.shut_down();
}

// A scripted peer, the one lane connected to it, and a READ (X) whose
// completion callback hands the lane one more 16-byte op (Y), inline.
// Call start() inside ASSERT_NO_FATAL_FAILURE.
struct one_handoff {
  void start(wire::opcode y_kind) {
    using pipeline_testing::connect_lane;
    ASSERT_NO_FATAL_FAILURE(connect_lane(peer, *initiator, seg));
    auto rx = read_req(seg, 1, 0, x.data(), 16);
    auto submitted =
        initiator->submit(std::span(&rx, 1), [this, y_kind](std::size_t, status s, std::uint64_t) {
          // X failed (a test that stopped early shuts the transport down):
          // no Y.
          if (s != status::ok) return y_submitted.set_value(nullptr);
          auto ry = y_kind == wire::opcode::write ? write_req(seg, 1, 16, y.data(), 16)
                                                  : read_req(seg, 1, 16, y.data(), 16);
          auto y_batch = initiator->submit(std::span(&ry, 1));
          y_submitted.set_value(y_batch.ok() ? std::move(y_batch).value() : nullptr);
        });
    ASSERT_TRUE(submitted.ok());
    x_batch = std::move(submitted).value();
  }
  // Y's batch, once X's callback submitted it (null if it never did).
  std::shared_ptr<transfer_batch> y_batch() {
    auto f = y_submitted.get_future();
    if (f.wait_for(10s) != std::future_status::ready) return nullptr;
    return f.get();
  }

  // The buffers and the promise outlive the transport.
  std::vector<std::byte> x = std::vector<std::byte>(16);
  std::vector<std::byte> y = std::vector<std::byte>(16);
  std::promise<std::shared_ptr<transfer_batch>> y_submitted;
  pipeline_testing::scripted_peer peer;
  std::unique_ptr<transport> initiator = testing::start(pipeline_testing::one_lane(8));
  segment_id seg = initiator->open_segment(peer.descriptor()).value();
  std::shared_ptr<transfer_batch> x_batch;
};

// A WRITE handed over the same way is checked all the same: the kernel's
// word is as old as the answer, and only the check keeps a WRITE from
// leaving on a connection the peer closed while the callbacks ran.
TEST(transport_handoff, a_write_handed_over_by_an_answer_that_left_nothing_is_still_checked) {
  if (!pipeline_testing::reads_can_skip_the_probe())
    GTEST_SKIP() << "no check is ever skipped here";
  one_handoff h;
  ASSERT_NO_FATAL_FAILURE(h.start(wire::opcode::write));
  auto first = h.peer.next_request();
  ASSERT_TRUE(first);
  h.peer.answer_ok(*first, pipeline_testing::sixteen);
  auto second = h.peer.next_request();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->op, wire::opcode::write);
  h.peer.answer_ok(*second);
  auto w = h.y_batch();
  ASSERT_TRUE(w && w->wait(10s));
  EXPECT_EQ(w->status(0).code, status::ok);
  const auto stats = h.initiator->stats();
  EXPECT_EQ(stats.handoffs_inline, 1u);
  EXPECT_EQ(stats.idle_checks_skipped, 0u) << "the WRITE left unchecked";
  EXPECT_TRUE(h.initiator->shutdown().ok());
}

// The answer came with the peer's FIN in its segment. The READ its
// callback hands over must not trust the connection: the lane checks it,
// finds it closed, and reconnects first, so the READ is served.
TEST(transport_handoff, work_handed_over_by_an_answer_with_a_fin_behind_it_reconnects_first) {
  one_handoff h;
  ASSERT_NO_FATAL_FAILURE(h.start(wire::opcode::read));
  auto first = h.peer.next_request();
  ASSERT_TRUE(first);
  h.peer.answer_ok_then_close(*first, pipeline_testing::sixteen);
  ASSERT_TRUE(h.peer.accept()) << "the lane did not reconnect";
  auto second = h.peer.next_request();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->remote_offset, 16u);
  h.peer.answer_ok(*second, pipeline_testing::sixteen);
  auto y = h.y_batch();
  ASSERT_TRUE(y && y->wait(10s));
  EXPECT_EQ(h.x_batch->status(0).code, status::ok);
  EXPECT_EQ(y->status(0).code, status::ok);
  const auto stats = h.initiator->stats();
  EXPECT_EQ(stats.lanes_found_closed, 1u);
  EXPECT_EQ(stats.idle_checks_skipped, 0u);
  EXPECT_EQ(stats.handoffs_inline, 1u);  // Y came from X's callback, inline
  EXPECT_TRUE(h.initiator->shutdown().ok());
}

// Two lanes on one io thread take turns: each callback runs in one lane's
// handler and submits to the other, which is posted (taking it inline
// would enqueue on a lane from another lane's handler).
TEST(transport_handoff, work_for_another_lane_on_the_same_thread_is_posted) {
  auto config = pipeline_testing::one_lane(8);
  config.connections_per_peer = 2;
  config.worker_count = 1;
  chain_setup s(config);
  ASSERT_EQ(s.chain(chain_length, always).run(), std::vector<status>(chain_length, status::ok));
  s.expect_chain_read_the_block(0, chain_length);
  EXPECT_EQ(s.taken(), 0u);
  // Posted work runs in a later handler, after the reactor may have
  // reported the socket: every idle lane is checked.
  EXPECT_EQ(s.initiator->stats().idle_checks_skipped, 0u);
  s.shut_down();
}

// Eight chains on one lane, so that answers read together end several
// exchanges in one handler and several callbacks hand work over at once:
// every READ lands its bytes, and no more hand-offs are taken inline than
// were made from callbacks.
TEST(transport_handoff, several_callbacks_in_one_handler_hand_over_together) {
  constexpr std::size_t chains = 8;
  chain_setup s(pipeline_testing::one_lane(8), chains);
  std::vector<std::future<std::vector<status>>> runs;
  for (std::size_t i = 0; i < chains; ++i) {
    auto& c = s.chain(chain_length, always, i);
    runs.push_back(std::async(std::launch::async, [&c] { return c.run(); }));
  }
  for (std::size_t i = 0; i < chains; ++i) {
    ASSERT_EQ(runs[i].get(), std::vector<status>(chain_length, status::ok)) << "chain " << i;
    s.expect_chain_read_the_block(i, chain_length);
  }
  EXPECT_GT(s.taken(), 0u);
  EXPECT_LE(s.taken(), chains * (chain_length - 1));
  s.shut_down();
}

// A callback holds its lane's thread until this thread has posted another
// READ (Z) to the lane, then submits its own (Y). Y must not overtake Z:
// a thread's hand-offs reach a lane in the order it made them, so Y is
// posted behind Z rather than taken inline.
TEST(transport_handoff, work_taken_inline_never_overtakes_work_posted_before_it) {
  using namespace pipeline_testing;
  scripted_peer peer;
  std::vector<std::byte> x(16), y(16), z(16);
  std::promise<void> in_callback;
  std::promise<void> z_posted;
  auto z_was_posted = z_posted.get_future().share();
  std::atomic<bool> go_on{false};  // set with z_posted; a test that failed first leaves it
  std::promise<std::shared_ptr<transfer_batch>> y_submitted;
  auto initiator = start(one_lane(8));
  auto seg = initiator->open_segment(peer.descriptor()).value();
  ASSERT_NO_FATAL_FAILURE(connect_lane(peer, *initiator, seg));
  auto rx = read_req(seg, 1, 0, x.data(), 16);
  auto x_batch = initiator->submit(std::span(&rx, 1), [&](std::size_t, status, std::uint64_t) {
    in_callback.set_value();
    if (z_was_posted.wait_for(10s) != std::future_status::ready || !go_on) return;
    auto ry = read_req(seg, 1, 32, y.data(), 16);
    y_submitted.set_value(initiator->submit(std::span(&ry, 1)).value());
  });
  ASSERT_TRUE(x_batch.ok());
  auto first = peer.next_request();
  ASSERT_TRUE(first);
  peer.answer_ok(*first, sixteen);
  ASSERT_EQ(in_callback.get_future().wait_for(10s), std::future_status::ready);
  auto rz = read_req(seg, 1, 16, z.data(), 16);
  auto z_batch = initiator->submit(std::span(&rz, 1)).value();
  go_on = true;
  z_posted.set_value();
  auto second = peer.next_request();
  auto third = peer.next_request();
  ASSERT_TRUE(second && third);
  EXPECT_EQ(second->remote_offset, 16u) << "Y left before Z, which was handed over first";
  EXPECT_EQ(third->remote_offset, 32u);
  peer.answer_ok(*second, sixteen);
  peer.answer_ok(*third, sixteen);
  ASSERT_TRUE(z_batch->wait(10s));
  ASSERT_TRUE(x_batch.value()->wait(10s));
  auto y_future = y_submitted.get_future();
  ASSERT_EQ(y_future.wait_for(10s), std::future_status::ready);
  auto y_batch = y_future.get();
  ASSERT_TRUE(y_batch->wait(10s));
  EXPECT_EQ(z_batch->status(0).code, status::ok);
  EXPECT_EQ(y_batch->status(0).code, status::ok);
  EXPECT_TRUE(initiator->shutdown().ok());
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
// In the reconnect cooldown a lane fails each op as it is enqueued. A
// callback that submits again on every failure hands the lane work it
// fails at once: one round is taken inline, what that round's callbacks
// hand over is posted, so other handlers on the thread run in between and
// the stack never grows with the chain.
TEST(transport_handoff, work_failed_at_once_and_handed_back_takes_the_post_every_other_time) {
  auto config = pipeline_testing::one_lane(8);
  config.reconnect_cooldown_ms = 60000;
  chain_setup s(config);
  constexpr int failures = 2000;
  std::vector<status> codes;
  {
    failpoint::scoped fail("lane.set_non_blocking",
                           {.act = failpoint::action::return_error, .count = 1});
    codes = s.chain(failures, [](status c) { return c == status::connection_failed; }).run();
  }
  EXPECT_EQ(codes, std::vector<status>(failures, status::connection_failed));
  EXPECT_GE(s.taken(), failures / 2 - 1u);
  EXPECT_LE(s.taken(), failures / 2 + 1u) << "a round's hand-backs were taken inline too";
  EXPECT_EQ(s.initiator->stats().connects, 0u);
  s.shut_down();
}
#endif

}  // namespace
}  // namespace faultlane
