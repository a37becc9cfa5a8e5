// The rpc client's rules, each against a peer the test scripts by hand
// (scripted_peer) or a real server: the reconnect cooldown after a reset
// or a failed connect, a call's overall bound over its attempt bound and
// over a cooldown, retry_sent and retry_busy, a malformed answer, the
// answer and request size bounds, closing with calls in flight, and a
// connect that never completes against connect_timeout_ms and the call's bound.
#include <gtest/gtest.h>

#include <future>
#include <optional>

#include "faultlane/core/limits.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "rpc_test_support.hpp"

namespace faultlane::rpc {
namespace {

using namespace test;

// Rule: after a reset no new connect starts before reconnect_cooldown_ms,
// and the call the connection carried is sent again on the next one.
TEST(rpc_client, a_reset_holds_the_next_connect_for_the_cooldown_and_resends_the_call) {
  scripted_peer peer;
  auto o = peer.options();
  o.reconnect_cooldown_ms = 700;
  auto c = client::create(o).value();
  auto answer = std::async(std::launch::async, [&] { return c->ping(); });
  auto first = peer.accept();
  ASSERT_TRUE(first);
  ASSERT_TRUE(scripted_peer::read_request(*first));
  const auto closed_at = clock_type::now();
  first->close();
  auto second = peer.accept();
  const auto gap = clock_type::now() - closed_at;
  ASSERT_TRUE(second);
  auto again = scripted_peer::read_request(*second);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->method, "ping");
  scripted_peer::answer(*second, again->h.request_id);
  auto r = answer.get();
  EXPECT_TRUE(r.ok()) << r.error().message;
  EXPECT_GE(gap, 700ms);
  const auto n = c->counters();
  EXPECT_EQ(n.connects, 2u);
  EXPECT_EQ(n.connections_reset, 1u);
  EXPECT_EQ(n.calls, 1u);
  EXPECT_EQ(n.attempts, 2u);
}

// Rule: a failed connect holds the next one for the cooldown, and a call
// whose overall bound ends inside that cooldown ends then, not after it.
TEST(rpc_client, a_call_ends_at_its_overall_bound_inside_a_cooldown_with_one_connect) {
  client_options o;
  o.server = {"127.0.0.1", free_port()};
  o.reconnect_cooldown_ms = 20'000;
  o.overall_timeout_ms = 300;
  auto c = client::create(o).value();
  const auto started = clock_type::now();
  auto r = c->ping();
  const auto took = clock_type::now() - started;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::timeout);
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 10s);
  EXPECT_EQ(c->counters().connect_failures, 1u);
  EXPECT_EQ(c->counters().timeouts, 1u);
}

// Rule: one attempt's bound (call_timeout_ms) never outlasts the call's
// overall bound: a long call_timeout_ms still ends the call at overall.
TEST(rpc_client, the_overall_bound_ends_a_sent_call_before_a_longer_call_timeout) {
  faultlane::testing::silent_peer silent;
  client_options o;
  o.server = {"127.0.0.1", silent.port()};
  o.call_timeout_ms = 20'000;
  o.overall_timeout_ms = 300;
  auto c = client::create(o).value();
  const auto started = clock_type::now();
  auto r = c->ping();
  const auto took = clock_type::now() - started;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::timeout);
  EXPECT_LT(took, 10s);
  EXPECT_EQ(c->counters().attempts, 1u);
}

// Rule: with retry_sent false, a call whose connection failed before its
// answer ends connection_failed and is not sent again.
TEST(rpc_client, without_retry_sent_a_call_whose_connection_failed_is_not_sent_again) {
  scripted_peer peer;
  auto o = peer.options();
  o.retry_sent = false;
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  auto answer = std::async(std::launch::async, [&] { return c->ping(); });
  auto first = peer.accept();
  ASSERT_TRUE(first);
  ASSERT_TRUE(scripted_peer::read_request(*first));
  first->close();
  auto r = answer.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::connection_failed) << r.error().message;
  EXPECT_EQ(c->counters().attempts, 1u);
}

// Rule: a malformed answer ends every call waiting on the client with
// protocol_error at once; none is sent again.
TEST(rpc_client, a_malformed_answer_ends_every_waiting_call_with_protocol_error) {
  scripted_peer peer;
  auto o = peer.options();
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  auto one = std::async(std::launch::async, [&] { return c->ping(); });
  auto two = std::async(std::launch::async, [&] { return c->ping(); });
  auto conn = peer.accept();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(scripted_peer::read_request(*conn));
  ASSERT_TRUE(scripted_peer::read_request(*conn));
  const std::array<std::byte, header_bytes> garbage{};  // bad magic
  asio::write(*conn, asio::buffer(garbage));
  for (auto* f : {&one, &two}) {
    auto r = f->get();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), status::protocol_error) << r.error().message;
  }
  EXPECT_EQ(c->counters().connects, 1u);
  EXPECT_EQ(c->counters().attempts, 2u);
}

// Rule: an answer of exactly response_bytes_max is read; one byte more is
// a malformed answer (protocol_error).
TEST(rpc_client, answers_up_to_response_bytes_max_are_read_and_one_more_is_refused) {
  scripted_peer peer;
  auto o = peer.options();
  o.response_bytes_max = 16;
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  auto fits = std::async(std::launch::async, [&] { return c->call("echo", {}); });
  auto conn = peer.accept();
  ASSERT_TRUE(conn);
  auto first = scripted_peer::read_request(*conn);
  ASSERT_TRUE(first);
  scripted_peer::answer(*conn, first->h.request_id, 16);
  auto r = fits.get();
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().size(), 16u);
  auto over = std::async(std::launch::async, [&] { return c->call("echo", {}); });
  auto second = scripted_peer::read_request(*conn);
  ASSERT_TRUE(second);
  scripted_peer::answer(*conn, second->h.request_id, 17);
  auto refused = over.get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), status::protocol_error) << refused.error().message;
}

// Rule: a request of exactly rpc_request_bytes_max (name and body) is
// sent; one byte more is refused invalid_argument before it is sent.
TEST(rpc_client, requests_up_to_rpc_request_bytes_max_are_sent_and_one_more_is_refused) {
  auto s = serve(1, {.workers = 1, .request_bytes_max = limits::rpc_request_bytes_max});
  s.srv->add("echo", placement::pooled, [](const call& c) {
    return reply::ok({c.body.begin(), c.body.end()});
  });
  auto c = client::create(to(s)).value();
  std::vector<std::byte> body(limits::rpc_request_bytes_max - 4);
  auto sent = c->call("echo", body);
  ASSERT_TRUE(sent.ok()) << sent.error().message;
  EXPECT_EQ(sent.value().size(), body.size());
  body.push_back(std::byte{0});
  auto refused = c->call("echo", body);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), status::invalid_argument);
  EXPECT_NE(refused.error().message.find("rpc_request_bytes_max"), std::string::npos);
  EXPECT_EQ(c->counters().calls, 1u);  // the refused one never reached the connection
}

// A server with one worker and a queue of one, both taken by `held` calls
// sent on a connection of the test's own: the next pooled call is busy.
struct saturated {
  gate held;  // before the server: it outlives the handlers
  served s = serve(2, {.workers = 1, .queue_max = 1});
  std::optional<raw_connection> filler;
  saturated() {
    s.srv->add("held", placement::pooled, [this](const call& c) {
      held.pass(c);
      return reply::ok();
    });
    filler.emplace(s.srv->local_endpoint());
    filler->send_call(1, "held");
    EXPECT_TRUE(held.wait_for_waiters(1));
    filler->send_call(2, "held");
    EXPECT_TRUE(faultlane::testing::eventually([&] { return s.srv->metrics().queue_depth == 1; }));
  }
  ~saturated() {
    held.open();
    s.srv.reset();  // waits for the handlers, which use `held`
  }
};

// Rule: without retry_busy, a call answered busy ends busy at once.
TEST(rpc_client, a_busy_answer_ends_the_call_busy_unless_retry_busy) {
  saturated full;
  auto o = to(full.s);
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  auto r = c->call("held", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::busy) << r.error().message;
  EXPECT_NE(r.error().message.find("held: busy"), std::string::npos) << r.error().message;
  EXPECT_EQ(c->counters().attempts, 1u);
}

// Rule: with retry_busy, a call answered busy is sent again after the
// cooldown, and is answered once the queue has room.
TEST(rpc_client, with_retry_busy_a_busy_call_is_sent_again_until_the_queue_has_room) {
  saturated full;
  auto o = to(full.s);
  o.retry_busy = true;
  o.reconnect_cooldown_ms = 20;
  auto c = client::create(o).value();
  auto r = std::async(std::launch::async, [&] { return c->call("held", {}); });
  ASSERT_TRUE(
      faultlane::testing::eventually([&] { return full.s.srv->metrics().busy_rejections >= 1; }));
  full.held.open();
  auto answered = r.get();
  EXPECT_TRUE(answered.ok()) << answered.error().message;
  EXPECT_GE(c->counters().attempts, 2u);
  EXPECT_EQ(c->counters().connects, 1u);  // busy is no reason to reconnect
}

// Rule: retry_busy sends a busy call again only when the cooldown ends
// within its overall bound; otherwise it ends busy at once.
TEST(rpc_client, retry_busy_gives_up_busy_when_the_cooldown_would_pass_the_bound) {
  saturated full;
  auto o = to(full.s);
  o.retry_busy = true;
  o.reconnect_cooldown_ms = 5000;
  o.overall_timeout_ms = 1000;
  auto c = client::create(o).value();
  auto r = c->call("held", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::busy) << r.error().message;
  EXPECT_EQ(c->counters().attempts, 1u);
}

// Rule: retry_busy retries busy answers only; any other failure (here
// unknown_method) ends the call at once.
TEST(rpc_client, retry_busy_leaves_other_failures_alone) {
  auto s = serve(1, {.workers = 1});
  auto o = to(s);
  o.retry_busy = true;
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  auto r = c->call("no_such_method", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::invalid_argument) << r.error().message;
  EXPECT_EQ(c->counters().attempts, 1u);
}

// Rule: destroying the client ends every call in flight `cancelled`, each
// exactly once, and a call made from such a callback is cancelled too.
TEST(rpc_client, closing_ends_calls_in_flight_and_calls_made_meanwhile_cancelled) {
  faultlane::testing::silent_peer silent;
  client_options o;
  o.server = {"127.0.0.1", silent.port()};
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  client* raw = c.get();
  std::mutex mutex;
  std::vector<status> ended;
  auto note = [&](result<std::vector<std::byte>> r) {
    std::lock_guard lock(mutex);
    ended.push_back(r.ok() ? status::ok : r.code());
  };
  for (int i = 0; i < 3; ++i) {
    raw->call_async("ping", {}, [&, raw, i](result<std::vector<std::byte>> r) {
      if (i == 0) raw->call_async("ping", {}, note);  // made while closing
      note(std::move(r));
    });
  }
  ASSERT_TRUE(faultlane::testing::eventually([&] { return raw->counters().attempts == 3; }));
  c.reset();
  std::lock_guard lock(mutex);
  EXPECT_EQ(ended, std::vector<status>(4, status::cancelled));
}

// Rule: a connect that never completes (a listener that never accepts) is
// given up at connect_timeout_ms, not before, and counted a connect
// failure; the call is not ended by it and ends at its own overall bound.
TEST(rpc_client, a_connect_that_never_completes_ends_at_connect_timeout_ms) {
  faultlane::testing::full_backlog_listener deaf;
  client_options o;
  o.server = {"127.0.0.1", deaf.port()};
  o.connect_timeout_ms = 300;
  o.reconnect_cooldown_ms = 20'000;
  o.overall_timeout_ms = 2'000;
  auto c = client::create(o).value();
  std::promise<status> ended;
  const auto started = clock_type::now();
  c->call_async("ping", {}, [&](result<std::vector<std::byte>> r) {
    ended.set_value(r.ok() ? status::ok : r.code());
  });
  ASSERT_TRUE(faultlane::testing::eventually([&] { return c->counters().connect_failures == 1; }));
  EXPECT_GE(clock_type::now() - started, 290ms);  // not before connect_timeout_ms
  auto end = ended.get_future();
  ASSERT_EQ(end.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(end.get(), status::timeout);
  EXPECT_GE(clock_type::now() - started, 1'990ms);  // the call's own bound, after the connect's
  EXPECT_EQ(c->counters().connect_failures, 1u);    // no second connect inside the cooldown
  EXPECT_EQ(c->counters().connects, 0u);
}

// Rule: a call's overall bound ends it while its connect is still in
// progress: a connect_timeout_ms longer than the bound does not hold it.
TEST(rpc_client, a_call_ends_at_its_overall_bound_while_its_connect_is_in_progress) {
  faultlane::testing::full_backlog_listener deaf;
  client_options o;
  o.server = {"127.0.0.1", deaf.port()};
  o.connect_timeout_ms = 30'000;
  o.overall_timeout_ms = 300;
  auto c = client::create(o).value();
  const auto started = clock_type::now();
  auto r = c->ping();
  const auto took = clock_type::now() - started;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::timeout);
  EXPECT_GE(took, 290ms);
  EXPECT_LT(took, 10s);                           // far from the connect's 30 s
  EXPECT_EQ(c->counters().connect_failures, 0u);  // the connect had not ended
  EXPECT_EQ(c->counters().timeouts, 1u);
}

}  // namespace
}  // namespace faultlane::rpc
