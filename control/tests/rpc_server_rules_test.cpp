// The rpc server's bounds, each on both sides: request and answer size,
// connections, calls read and not answered on one connection, worker
// threads, the names unknown methods are counted under; and what it
// reports: a handler that throws, a stop that a handler outlasts, the
// latency metrics; the unwritten answers' bound on both sides, and the
// worker pool released by its own last job.
#include <gtest/gtest.h>

#include <future>
#include <optional>

#include "faultlane/testing/transport_fixture.hpp"
#include "rpc_test_support.hpp"
#include "rpc_worker_pool.hpp"

namespace faultlane::rpc {
namespace {

using namespace test;

// Rule: a request payload of exactly request_bytes_max is served; one
// byte more is a malformed frame that closes its connection.
TEST(rpc_server, requests_up_to_request_bytes_max_are_served_and_one_more_closes) {
  auto s = serve(1, {.workers = 1, .request_bytes_max = 64});
  s.srv->add("take", placement::pooled,
             [](const call& c) { return reply::ok(bytes(std::to_string(c.body.size()))); });
  raw_connection fits(s.srv->local_endpoint());
  fits.send_call(1, "take", std::vector<std::byte>(60));  // 4 + 60 = 64
  auto a = fits.read_answer();
  EXPECT_EQ(a.h.status, rpc_status::ok);
  EXPECT_EQ(a.body, bytes("60"));
  raw_connection over(s.srv->local_endpoint());
  over.send_call(2, "take", std::vector<std::byte>(61));
  EXPECT_TRUE(over.closed_by_peer(5s));
  EXPECT_EQ(s.srv->metrics().malformed_frames, 1u);
}

// Rule: an answer of exactly response_bytes_max is sent; one byte more is
// answered too_large instead, and counted so.
TEST(rpc_server, answers_up_to_response_bytes_max_are_sent_and_one_more_is_too_large) {
  auto s = serve(1, {.workers = 1, .response_bytes_max = 100});
  s.srv->add("sized", placement::pooled,
             [](const call& c) { return reply::ok(std::vector<std::byte>(c.body.size())); });
  raw_connection conn(s.srv->local_endpoint());
  conn.send_call(1, "sized", std::vector<std::byte>(100));
  auto fits = conn.read_answer();
  EXPECT_EQ(fits.h.status, rpc_status::ok);
  EXPECT_EQ(fits.body.size(), 100u);
  conn.send_call(2, "sized", std::vector<std::byte>(101));
  auto over = conn.read_answer();
  EXPECT_EQ(over.h.status, rpc_status::too_large);
  EXPECT_NE(read_error_body(over.body).find("101 bytes"), std::string::npos);
  auto m = s.srv->metrics();
  EXPECT_EQ(m.calls_of("sized", rpc_status::ok), 1u);
  EXPECT_EQ(m.calls_of("sized", rpc_status::too_large), 1u);
}

// Rule: up to connections_max connections are served; one past it is
// closed at accept, and a connection that leaves makes room again (the
// live gauge follows).
TEST(rpc_server, connections_up_to_the_bound_are_served_and_one_more_is_closed) {
  auto s = serve(1, {.workers = 1, .connections_max = 2});
  std::optional<raw_connection> first(s.srv->local_endpoint());
  raw_connection second(s.srv->local_endpoint());
  for (auto* c : {&*first, &second}) {
    c->send_call(1, "ping");
    EXPECT_EQ(c->read_answer().h.status, rpc_status::ok);
  }
  raw_connection third(s.srv->local_endpoint());
  EXPECT_TRUE(third.closed_by_peer(5s));
  EXPECT_EQ(s.srv->metrics().connections_accepted, 2u);
  EXPECT_EQ(s.srv->metrics().connections_live, 2u);
  first.reset();
  ASSERT_TRUE(
      faultlane::testing::eventually([&] { return s.srv->metrics().connections_live == 1; }));
  raw_connection fourth(s.srv->local_endpoint());
  fourth.send_call(1, "ping");
  EXPECT_EQ(fourth.read_answer().h.status, rpc_status::ok);
  EXPECT_EQ(s.srv->metrics().connections_accepted, 3u);
}

// Rule: one connection has at most unanswered_per_connection_max calls
// read and not answered; the next is read once an answer leaves.
TEST(rpc_server, a_connection_has_at_most_its_unanswered_calls_read) {
  gate held;  // before the server: it outlives the handlers
  auto s = serve(1, {.workers = 1, .unanswered_per_connection_max = 2});
  s.srv->add("held", placement::pooled, [&](const call& c) {
    held.pass(c);
    return reply::ok();
  });
  raw_connection conn(s.srv->local_endpoint());
  for (std::uint64_t id = 1; id <= 3; ++id) conn.send_call(id, "held");
  ASSERT_TRUE(held.wait_for_waiters(1));
  ASSERT_TRUE(faultlane::testing::eventually([&] { return s.srv->metrics().queue_depth >= 1; }));
  // The third stays unread (the bound holds): were it read, it would queue.
  EXPECT_FALSE(
      faultlane::testing::eventually([&] { return s.srv->metrics().queue_depth > 1; }, 300ms));
  held.open();
  std::set<std::uint64_t> answered;
  for (int i = 0; i < 3; ++i) answered.insert(conn.read_answer().h.request_id);
  EXPECT_EQ(answered, (std::set<std::uint64_t>{1, 2, 3}));
}

// Rule: at most `workers` pooled handlers run at once; the rest wait in
// the queue.
TEST(rpc_server, no_more_pooled_handlers_run_at_once_than_there_are_workers) {
  gate held;  // before the server: it outlives the handlers
  auto s = serve(1, {.workers = 2});
  s.srv->add("held", placement::pooled, [&](const call& c) {
    held.pass(c);
    return reply::ok();
  });
  raw_connection conn(s.srv->local_endpoint());
  for (std::uint64_t id = 1; id <= 4; ++id) conn.send_call(id, "held");
  ASSERT_TRUE(held.wait_for_waiters(2));
  EXPECT_FALSE(held.wait_for_waiters(3, 300ms));
  EXPECT_TRUE(faultlane::testing::eventually([&] { return s.srv->metrics().queue_depth == 2; }));
  EXPECT_EQ(s.srv->metrics().workers, 2u);
  held.open();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(conn.read_answer().h.status, rpc_status::ok);
}

// Rule: calls to unknown methods count under their own name for the
// first 16 names, under "(other)" past them; a name already counted and a
// known method's answers keep their own rows.
TEST(rpc_server, unknown_method_names_past_sixteen_count_as_other) {
  auto s = serve(1, {.workers = 1});
  raw_connection conn(s.srv->local_endpoint());
  std::uint64_t id = 0;
  auto called = [&](const std::string& name) {
    conn.send_call(++id, name);
    return conn.read_answer().h.status;
  };
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(called("nope" + std::to_string(i)), rpc_status::unknown_method);
  }
  EXPECT_EQ(called("nope16"), rpc_status::unknown_method);  // the 17th name
  EXPECT_EQ(called("nope0"), rpc_status::unknown_method);   // counted before
  s.srv->add("late", placement::pooled, [](const call&) { return reply::ok(); });
  EXPECT_EQ(called("late"), rpc_status::ok);
  auto m = s.srv->metrics();
  EXPECT_EQ(m.calls_of("nope15", rpc_status::unknown_method), 1u);
  EXPECT_EQ(m.calls_of("nope16", rpc_status::unknown_method), 0u);
  EXPECT_EQ(m.calls_of("(other)", rpc_status::unknown_method), 1u);
  EXPECT_EQ(m.calls_of("nope0", rpc_status::unknown_method), 2u);
  EXPECT_EQ(m.calls_of("late", rpc_status::ok), 1u);
}

// Rule: a handler that throws is answered internal_error with the
// exception's text, and the connection goes on.
TEST(rpc_server, a_handler_that_throws_is_answered_internal_error_with_its_text) {
  auto s = serve(1, {.workers = 1});
  s.srv->add("throws", placement::pooled,
             [](const call&) -> reply { throw std::runtime_error("out of cheese"); });
  raw_connection conn(s.srv->local_endpoint());
  conn.send_call(1, "throws");
  auto a = conn.read_answer();
  EXPECT_EQ(a.h.status, rpc_status::internal_error);
  EXPECT_NE(read_error_body(a.body).find("out of cheese"), std::string::npos);
  conn.send_call(2, "ping");
  EXPECT_EQ(conn.read_answer().h.status, rpc_status::ok);
}

// Rule: stop() reports timeout, naming the running handler, when a
// handler that ignores stop_requested() is still running at its deadline.
TEST(rpc_server, stop_reports_timeout_when_a_handler_outlasts_its_deadline) {
  std::promise<void> release;  // before the server: it outlives the handler
  auto released = release.get_future().share();
  std::atomic<bool> running{false};
  auto s = serve(2, {.workers = 1});
  s.srv->add("deaf", placement::pooled, [&, released](const call&) {
    running = true;
    (void)released.wait_for(30s);  // ignores stop_requested()
    return reply::ok();
  });
  raw_connection conn(s.srv->local_endpoint());
  conn.send_call(1, "deaf");
  ASSERT_TRUE(faultlane::testing::eventually([&] { return running.load(); }));
  auto stopped = s.srv->stop(clock_type::now() + 300ms);
  release.set_value();
  ASSERT_FALSE(stopped.ok());
  EXPECT_EQ(stopped.code(), status::timeout);
  EXPECT_NE(stopped.error().message.find("still running"), std::string::npos)
      << stopped.error().message;
}

// Rule: every handled call is timed, inline ones too; only pooled ones
// wait in the queue; the wait and the handler time are at least what the
// test held them for, and p50 <= p99 <= max.
TEST(rpc_server, handler_time_and_queue_wait_count_every_call_and_bound_what_was_held) {
  gate held;  // before the server: it outlives the handlers
  auto s = serve(1, {.workers = 1});
  s.srv->add("held", placement::pooled, [&](const call& c) {
    held.pass(c);
    return reply::ok();
  });
  raw_connection conn(s.srv->local_endpoint());
  conn.send_call(1, "held");
  ASSERT_TRUE(held.wait_for_waiters(1));
  conn.send_call(2, "held");
  ASSERT_TRUE(faultlane::testing::eventually([&] { return s.srv->metrics().queue_depth == 1; }));
  // sleep-ok: the queue wait and the handler time must be at least this.
  std::this_thread::sleep_for(200ms);
  held.open();
  for (std::uint64_t id = 3; id <= 5; ++id) conn.send_call(id, "ping");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(conn.read_answer().h.status, rpc_status::ok);
  auto m = s.srv->metrics();
  EXPECT_EQ(m.handler_time.count, 5u);
  EXPECT_EQ(m.queue_wait.count, 2u);
  for (const auto& l : {m.handler_time, m.queue_wait}) {
    EXPECT_GE(l.max_us, 200'000u);
    EXPECT_LE(l.p50_us, l.p99_us);
    EXPECT_LE(l.p99_us, l.max_us);
  }
}

// Three calls to an inline `big` answering 16 MiB (more than loopback
// buffers hold) on a connection that never reads, with
// unwritten_bytes_per_connection_max `unwritten_max`: the server answers
// `read` of them and reads no more while the answers wait; once they
// leave, the rest is read and answered.
void expect_reading_stops_after(std::size_t unwritten_max, std::uint64_t read) {
  constexpr std::size_t answer_bytes = 16u << 20;
  auto s = serve(1, {.workers = 1, .unwritten_bytes_per_connection_max = unwritten_max});
  s.srv->add("big", placement::inline_on_io,
             [](const call&) { return reply::ok(std::vector<std::byte>(answer_bytes)); });
  raw_connection conn(s.srv->local_endpoint());
  for (std::uint64_t id = 1; id <= 3; ++id) conn.send_call(id, "big");
  EXPECT_TRUE(
      faultlane::testing::eventually([&] { return s.srv->metrics().calls_total() >= read; }));
  EXPECT_FALSE(
      faultlane::testing::eventually([&] { return s.srv->metrics().calls_total() > read; }, 300ms))
      << "bound " << unwritten_max;
  for (std::uint64_t id = 1; id <= 3; ++id) {
    auto a = conn.read_answer();
    EXPECT_EQ(a.h.request_id, id);
    EXPECT_EQ(a.body.size(), answer_bytes);
  }
}

// Rule: a connection is read while its unwritten answers stay below
// unwritten_bytes_per_connection_max: one 16 MiB answer waiting stops it
// at a bound of exactly 16 MiB, and not at one byte more (then the second
// call is read, and the two answers stop it).
TEST(rpc_server, reading_stops_once_unwritten_answers_reach_their_bound_not_before) {
  expect_reading_stops_after(16u << 20, 1);
  expect_reading_stops_after((16u << 20) + 1, 2);
}

// Rule: a pool released by the last job it ran (on its own worker) stops
// without joining that worker: the destructor returns there, and the
// thread finishes on its own.
TEST(rpc_worker_pool, a_pool_destroyed_on_its_own_worker_lets_that_worker_finish) {
  struct owner {
    std::unique_ptr<rpc_worker_pool> pool = std::make_unique<rpc_worker_pool>(2, 4);
    std::promise<void> gone;
    ~owner() {
      pool.reset();  // on a worker: the pool cannot join this thread
      gone.set_value();
    }
  };
  auto held = std::make_shared<owner>();
  auto destroyed = held->gone.get_future();
  std::promise<void> pushed;  // the job holds the pool until try_push returned
  auto* pool = held->pool.get();
  const auto queued = pool->try_push(
      [last = std::move(held), go = pushed.get_future()](bool) mutable { (void)go.wait_for(10s); });
  ASSERT_EQ(queued, rpc_worker_pool::push_result::queued);
  pushed.set_value();
  // The job lets go of the owner on its worker once it returned.
  ASSERT_EQ(destroyed.wait_for(10s), std::future_status::ready);
}

}  // namespace
}  // namespace faultlane::rpc
