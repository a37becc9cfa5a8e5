// What the rpc client does with its connection on each failure, and what
// its waits cost: a failed connect closes its socket, a malformed answer and
// an attempt past call_timeout_ms close the connection (the call goes again
// on a new one), and a client waiting for a connect or a cooldown sleeps.
// Then rpc_descriptor_source: fetch() and fetch_async() hand the caller
// the descriptor, or the call's error, or the decode's, and end cancelled
// once the source is closed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <iterator>
#include <sstream>

#include "faultlane/control/rpc_messages.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "rpc_test_support.hpp"

namespace faultlane::rpc {
namespace {

using namespace test;
using faultlane::testing::eventually;
using faultlane::testing::read_within;

// Sockets this process holds open now.
std::size_t open_sockets() {
  std::size_t n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(e.path(), ec);
    if (!ec && target.string().rfind("socket:", 0) == 0) ++n;
  }
  return n;
}

// CPU time (ms) the rpc clients' io threads ("fl-rpc-client") used so far.
std::uint64_t client_threads_cpu_ms() {
  std::uint64_t ticks = 0;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != "fl-rpc-client") continue;
    std::ifstream stat(task.path() / "stat");
    const std::string text((std::istreambuf_iterator<char>(stat)), {});
    // After the name's ")": state (field 3) ... utime (14), stime (15).
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    const std::vector<std::string> f(std::istream_iterator<std::string>(rest), {});
    if (f.size() > 12) ticks += std::stoull(f[11]) + std::stoull(f[12]);
  }
  return ticks * 1000 / static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK));
}

client::callback ended_into(std::promise<status>& ended) {
  return [&ended](result<std::vector<std::byte>> r) {
    ended.set_value(r.ok() ? status::ok : r.code());
  };
}

// Two calls, the second once `ready` holds (the client is in the wait under
// test), both ending at their overall bound; meanwhile the client's thread
// slept: a second call re-arms the wake-up, it does not spin on it.
void expect_two_waiting_calls_cost_no_cpu(client& c, const std::function<bool()>& ready) {
  const auto cpu_before = client_threads_cpu_ms();
  std::promise<status> first;
  std::promise<status> second;
  c.call_async("ping", {}, ended_into(first));
  ASSERT_TRUE(eventually(ready));
  c.call_async("ping", {}, ended_into(second));
  for (auto* p : {&first, &second}) {
    auto f = p->get_future();
    ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
    EXPECT_EQ(f.get(), status::timeout);
  }
  // A spinning thread burns most of the second the calls waited.
  EXPECT_LT(client_threads_cpu_ms() - cpu_before, 250u);
}

// Rule: a client waiting for its connect to complete sleeps until a call's
// bound (or the connect's): calls made meanwhile cost it no CPU.
TEST(rpc_client, a_client_waiting_on_its_connect_sleeps) {
  faultlane::testing::full_backlog_listener deaf;
  client_options o;
  o.server = {"127.0.0.1", deaf.port()};
  o.connect_timeout_ms = 30'000;
  o.overall_timeout_ms = 1'000;
  auto c = client::create(o).value();
  expect_two_waiting_calls_cost_no_cpu(*c, [] { return true; });
  EXPECT_EQ(c->counters().connect_failures, 0u);  // still connecting
}

// Rule: a client waiting out its cooldown after a failed connect sleeps
// until the cooldown or a call's bound ends: calls made meanwhile cost no CPU.
TEST(rpc_client, a_client_waiting_out_its_cooldown_sleeps) {
  client_options o;
  o.server = {"127.0.0.1", free_port()};
  o.reconnect_cooldown_ms = 20'000;
  o.overall_timeout_ms = 1'000;
  auto c = client::create(o).value();
  expect_two_waiting_calls_cost_no_cpu(*c, [&] { return c->counters().connect_failures == 1; });
  EXPECT_EQ(c->counters().connect_failures, 1u);  // no second connect inside the cooldown
}

// Rule: a failed connect closes its socket at once: a client waiting out
// its cooldown holds none.
TEST(rpc_client, a_failed_connect_leaves_no_socket_open_through_the_cooldown) {
  client_options o;
  o.server = {"127.0.0.1", free_port()};
  o.reconnect_cooldown_ms = 20'000;
  o.overall_timeout_ms = 300;
  auto c = client::create(o).value();
  const auto before = open_sockets();
  auto r = c->ping();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::timeout);
  EXPECT_EQ(c->counters().connect_failures, 1u);
  EXPECT_EQ(open_sockets(), before);  // still inside the cooldown
}

// Rule: a malformed answer ends the connection: the client closes it (the
// server reads its end of stream) and counts one reset.
TEST(rpc_client, a_malformed_answer_closes_the_connection) {
  scripted_peer peer;
  auto o = peer.options();
  o.overall_timeout_ms = 3000;
  auto c = client::create(o).value();
  auto answer = std::async(std::launch::async, [&] { return c->ping(); });
  auto conn = peer.accept();
  ASSERT_TRUE(conn);
  ASSERT_TRUE(scripted_peer::read_request(*conn));
  const std::array<std::byte, header_bytes> garbage{};  // bad magic
  asio::write(*conn, asio::buffer(garbage));
  auto r = answer.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::protocol_error);
  std::array<std::byte, 1> one{};
  EXPECT_EQ(read_within(*conn, asio::buffer(one)), asio::error::eof);
  EXPECT_EQ(c->counters().connections_reset, 1u);
}

// Rule: a call sent and not answered within call_timeout_ms closes its
// connection then, as a stalled one (not only when the next connect
// replaces it, after the cooldown), and goes again (same request id) on a
// new one within its overall bound.
TEST(rpc_client, an_unanswered_attempt_closes_its_connection_and_goes_again_on_a_new_one) {
  scripted_peer peer;
  auto o = peer.options();
  o.call_timeout_ms = 300;
  o.reconnect_cooldown_ms = 3000;
  o.overall_timeout_ms = 10'000;
  auto c = client::create(o).value();
  auto answer = std::async(std::launch::async, [&] { return c->ping(); });
  auto first = peer.accept();
  ASSERT_TRUE(first);
  auto sent = scripted_peer::read_request(*first);
  ASSERT_TRUE(sent);
  std::array<std::byte, 1> one{};
  // Closed at 300 ms: well before the cooldown lets a new connect replace it.
  EXPECT_EQ(read_within(*first, asio::buffer(one), 2000ms), asio::error::eof);
  auto second = peer.accept();
  ASSERT_TRUE(second);
  auto again = scripted_peer::read_request(*second);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->method, "ping");
  EXPECT_EQ(again->h.request_id, sent->h.request_id);
  scripted_peer::answer(*second, again->h.request_id);
  auto r = answer.get();
  EXPECT_TRUE(r.ok()) << r.error().message;
  const auto n = c->counters();
  EXPECT_EQ(n.connects, 2u);
  EXPECT_EQ(n.connections_reset, 1u);
  EXPECT_EQ(n.attempts, 2u);
  EXPECT_EQ(n.timeouts, 0u);
}

segment_descriptor sample_descriptor() {
  return {0x77, {{"127.0.0.1", 41000}}, 1u << 20, {{3, 4096, permission::remote_read, "w"}}};
}

std::shared_ptr<rpc_descriptor_source> source_for(const client_options& o) {
  auto s = rpc_descriptor_source::create(o);
  EXPECT_TRUE(s.ok());
  return s.ok() ? s.value() : nullptr;
}

// fetch_async's answer, waited for at most 10 s.
result<segment_descriptor> fetched_async(rpc_descriptor_source& s) {
  auto answer = std::make_shared<std::promise<result<segment_descriptor>>>();
  auto f = answer->get_future();
  s.fetch_async([answer](result<segment_descriptor> r) { answer->set_value(std::move(r)); });
  if (f.wait_for(10s) != std::future_status::ready) {
    return error{status::internal_error, "fetch_async never answered"};
  }
  return f.get();
}

// Both fetch() and fetch_async() of `s` end with `code`, and a message
// that holds `text`.
void expect_both_fetches_fail(rpc_descriptor_source& s, status code, const std::string& text = "") {
  for (const auto& r : {s.fetch(), fetched_async(s)}) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), code) << r.error().message;
    EXPECT_NE(r.error().message.find(text), std::string::npos) << r.error().message;
  }
}

// Rule: fetch() and fetch_async() hand over the descriptor `describe`
// answered.
TEST(rpc_descriptor_source, both_fetches_hand_over_the_described_descriptor) {
  auto s = serve(1, {.workers = 1});
  s.srv->add("describe", placement::pooled,
             [](const call&) { return reply::ok(encode_descriptor(sample_descriptor())); });
  auto source = source_for(to(s));
  ASSERT_TRUE(source);
  auto direct = source->fetch();
  ASSERT_TRUE(direct.ok()) << direct.error().message;
  EXPECT_EQ(direct.value(), sample_descriptor());
  auto async = fetched_async(*source);
  ASSERT_TRUE(async.ok()) << async.error().message;
  EXPECT_EQ(async.value(), sample_descriptor());
}

// Rule: the call's failure (here the server's unknown_method) and an answer
// that does not decode as a descriptor reach the caller of either fetch.
TEST(rpc_descriptor_source, both_fetches_pass_a_failed_call_or_a_bad_answer_on) {
  auto none = serve(1, {.workers = 1});  // no describe method
  auto source = source_for(to(none));
  ASSERT_TRUE(source);
  expect_both_fetches_fail(*source, status::invalid_argument, "unknown_method");
  auto bad = serve(1, {.workers = 1});
  bad.srv->add("describe", placement::inline_on_io, [](const call&) { return reply::ok(); });
  auto misread = source_for(to(bad));
  ASSERT_TRUE(misread);
  expect_both_fetches_fail(*misread, status::invalid_argument, "rpc body");
}

// Rule: a peer nobody serves ends either fetch with the call's timeout.
TEST(rpc_descriptor_source, both_fetches_end_timeout_when_nobody_answers) {
  client_options o;
  o.server = {"127.0.0.1", free_port()};
  o.overall_timeout_ms = 300;
  auto source = source_for(o);
  ASSERT_TRUE(source);
  expect_both_fetches_fail(*source, status::timeout);
}

// Rule: close() ends a pending fetch_async cancelled before it returns, and
// every fetch after it ends cancelled at once.
TEST(rpc_descriptor_source, closing_ends_pending_and_later_fetches_cancelled) {
  faultlane::testing::silent_peer silent;
  client_options o;
  o.server = {"127.0.0.1", silent.port()};
  o.overall_timeout_ms = 20'000;
  auto source = source_for(o);
  ASSERT_TRUE(source);
  std::promise<status> pending;
  source->fetch_async(
      [&](result<segment_descriptor> r) { pending.set_value(r.ok() ? status::ok : r.code()); });
  source->close();
  auto ended = pending.get_future();
  ASSERT_EQ(ended.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(ended.get(), status::cancelled);
  expect_both_fetches_fail(*source, status::cancelled);
}

}  // namespace
}  // namespace faultlane::rpc
