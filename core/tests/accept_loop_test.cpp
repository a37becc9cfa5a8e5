// accept_loop: failed accepts back off, doubling up to the bound, and the
// queued connection is accepted once they stop; close() ends the loop. The
// failpoint accept_loop.before_accept (keyed by the listening port) fails
// an accept as EMFILE does, so this runs in every build with failpoints,
// the sanitizers' included (the descriptor-starved version in
// transport_hardening_test.cpp cannot run under UBSan). The target
// transport's listener is covered here too; control_plane_test.cpp and
// relay_accept_test.cpp cover the other two owners of the loop.
#include "faultlane/core/accept_loop.hpp"

#include <gtest/gtest.h>

#include <vector>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

#if defined(FAULTLANE_FAILPOINTS_ENABLED)

using asio::ip::tcp;
using namespace std::chrono_literals;

// A loop on a context the test runs itself, so every hook runs on the
// test's thread.
struct looped {
  asio::io_context context;
  std::vector<std::uint32_t> waits_before;  // backoff_ms() as each failure arrived
  std::vector<std::error_code> errors;
  std::vector<tcp::socket> accepted;
  std::function<void()> on_failed = [] {};
  std::function<void()> on_accepted = [this] { context.stop(); };
  std::size_t places = 0;  // times the loop asked where a connection goes
  accept_loop loop{context,
                   {.place =
                        [this] {
                          ++places;
                          return accept_destination{context};
                        },
                    .failed =
                        [this](const std::error_code& ec) {
                          errors.push_back(ec);
                          waits_before.push_back(loop.backoff_ms());
                          on_failed();
                        },
                    .accepted =
                        [this](tcp::socket s, std::size_t) {
                          accepted.push_back(std::move(s));
                          on_accepted();
                        }}};
  looped() { EXPECT_FALSE(loop.listen({asio::ip::make_address("127.0.0.1"), 0})); }
  failpoint::config failing(std::int64_t count) const {
    return {.act = failpoint::action::return_error, .count = count, .only_key = loop.port()};
  }
};

TEST(accept_loop, failures_back_off_doubling_to_the_bound_then_the_queued_connection_is_accepted) {
  looped l;
  constexpr std::int64_t failures = 9;  // waits 1, 2, 4 ... 64, 100, 100 ms
  failpoint::scoped failing("accept_loop.before_accept", l.failing(failures));
  asio::io_context client_context;
  tcp::socket client(client_context);
  client.connect({asio::ip::make_address("127.0.0.1"), l.loop.port()});  // queued in the backlog
  const auto started = std::chrono::steady_clock::now();
  l.loop.start();
  l.context.run_for(10s);  // the accepted hook stops it
  const auto took = std::chrono::steady_clock::now() - started;

  ASSERT_EQ(l.accepted.size(), 1u) << l.errors.size() << " failures seen";
  EXPECT_EQ(failpoint::fired("accept_loop.before_accept"), static_cast<std::uint64_t>(failures));
  // Each failure reached the owner, as the error EMFILE gives.
  ASSERT_EQ(l.errors.size(), static_cast<std::size_t>(failures));
  for (const auto& ec : l.errors) EXPECT_EQ(ec, asio::error::no_descriptors);
  // The wait before failure n + 1 is twice the one before n, from the
  // least to the most.
  const std::vector<std::uint32_t> expected{0,  limits::accept_backoff_ms_min, 2, 4, 8, 16, 32,
                                            64, limits::accept_backoff_ms_max};
  EXPECT_EQ(l.waits_before, expected);
  // Timers never fire early: the loop waited at least every wait above,
  // and the one after the last failure.
  EXPECT_GE(took, std::chrono::milliseconds(1 + 2 + 4 + 8 + 16 + 32 + 64 + 100 + 100));
  EXPECT_EQ(l.loop.backoff_ms(), 0u) << "an accept resets the wait";
  l.loop.close();
}

TEST(accept_loop, close_during_a_wait_ends_the_loop_and_no_hook_runs_after_it) {
  looped l;
  failpoint::scoped failing("accept_loop.before_accept", l.failing(-1));  // every accept fails
  l.on_failed = [&] {
    if (l.errors.size() == 3) l.loop.close();
  };
  l.loop.start();
  l.context.run_for(10s);
  // Out of work: the wait was cancelled and nothing accepts any more.
  EXPECT_TRUE(l.context.stopped());
  EXPECT_EQ(l.errors.size(), 3u);
  EXPECT_FALSE(l.loop.is_open());
}

// Rule: close() ends the loop and no hook runs after it: closed from the
// accepted hook, the loop does not ask place() for a next connection; and
// start() on a closed loop asks nothing either.
TEST(accept_loop, closed_from_the_accepted_hook_no_hook_runs_after_it) {
  looped l;
  l.on_accepted = [&] { l.loop.close(); };
  asio::io_context client_context;
  tcp::socket client(client_context);
  client.connect({asio::ip::make_address("127.0.0.1"), l.loop.port()});
  l.loop.start();
  l.context.run_for(10s);  // out of work once the loop is closed
  EXPECT_TRUE(l.context.stopped()) << "something still waits on a closed loop";
  ASSERT_EQ(l.accepted.size(), 1u);
  EXPECT_EQ(l.places, 1u) << "place() was asked after close()";
  EXPECT_TRUE(l.errors.empty());
  l.context.restart();
  l.loop.start();
  l.context.run_for(10s);
  EXPECT_EQ(l.places, 1u) << "start() on a closed loop asked place()";
  EXPECT_TRUE(l.errors.empty());
}

// The target transport's listener: its accept errors are counted, and it
// accepts again (a connection that arrived during the errors, and a new
// one) once they stop.
TEST(accept_loop, the_target_listener_counts_failures_and_accepts_again) {
  using namespace testing;
  auto target = start(loopback_config());
  const auto port = target->descriptor().endpoints[0].port;
  failpoint::scoped failing("accept_loop.before_accept",
                            {.act = failpoint::action::return_error, .count = 3, .only_key = port});
  asio::io_context context;
  const tcp::endpoint to(asio::ip::make_address("127.0.0.1"), port);
  // The accept pending since start() takes the first; the failures follow.
  tcp::socket first(context), second(context);
  first.connect(to);
  second.connect(to);
  ASSERT_TRUE(eventually([&] { return target->stats().sessions_accepted == 2; }))
      << target->stats().accept_errors << " accept errors";
  EXPECT_EQ(failpoint::fired("accept_loop.before_accept"), 3u);
  auto stats = target->stats();
  EXPECT_EQ(stats.accept_errors, 3u);
  EXPECT_EQ(stats.sessions_rejected_limit, 0u);
  EXPECT_EQ(stats.handler_exceptions, 0u);
  EXPECT_TRUE(target->shutdown().ok());
}

#endif

}  // namespace
}  // namespace faultlane
