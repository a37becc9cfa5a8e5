// A transport's own control plane: its built-in methods answer from the
// live transport, its configuration is validated by name, and a segment
// opened by control endpoint alone works and refreshes a stale id.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>
#include <set>

#include "faultlane/control/rpc_client.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane::rpc {

using namespace std::chrono_literals;
namespace {

// A transport's own control plane.

std::unique_ptr<client> client_of(const transport& t) {
  client_options o;
  o.server = control::endpoint_of(t).value();
  return client::create(o).value();
}

TEST(transport_control, describe_list_stats_and_ready_answer_from_the_live_transport) {
  auto target = testing::start(testing::loopback_config());
  std::vector<std::byte> a(4096), b(8192), c(64);
  target->register_buffer(a.data(), a.size(), permission::remote_read, "kv/1").value();
  target->register_buffer(b.data(), b.size(), permission::remote_read_write, "kv/22").value();
  target->register_buffer(c.data(), c.size(), permission::remote_read, "weights").value();
  auto rpc = client_of(*target);
  EXPECT_TRUE(rpc->ping().ok());
  EXPECT_TRUE(rpc->service_ready().value());
  auto d = rpc->describe();
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d.value(), target->descriptor());
  auto kv = rpc->list_registrations("^kv/[0-9]+$");
  ASSERT_TRUE(kv.ok()) << kv.error().message;
  std::set<std::string> names;
  for (const auto& r : kv.value()) names.insert(r.name);
  EXPECT_EQ(names, (std::set<std::string>{"kv/1", "kv/22"}));
  EXPECT_TRUE(rpc->list_registrations("matches nothing").value().empty());
  auto broken = rpc->list_registrations("([unclosed");
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.code(), status::invalid_argument);
  EXPECT_NE(broken.error().message.find("ECMAScript"), std::string::npos);
  auto stats = rpc->stats();
  ASSERT_TRUE(stats.ok()) << stats.error().message;
  std::map<std::string, std::uint64_t> by_key(stats.value().begin(), stats.value().end());
  EXPECT_EQ(by_key.count("tasks_submitted"), 1u);
  EXPECT_EQ(by_key.at("rpc.calls.describe.ok"), 1u);
  EXPECT_EQ(by_key.at("rpc.calls.list_registrations.ok"), 2u);
  EXPECT_EQ(by_key.at("rpc.calls.list_registrations.bad_request"), 1u);
  EXPECT_EQ(by_key.at("rpc.workers"), testing::loopback_config().worker_count);
  auto m = control::metrics_of(*target);
  EXPECT_EQ(m.calls_of("stats", rpc_status::ok), 1u);  // this very call, answered after
  // metrics_of() carries the same figures the method sent.
  EXPECT_EQ(m.calls_of("describe", rpc_status::ok), by_key.at("rpc.calls.describe.ok"));
  EXPECT_EQ(m.calls_of("list_registrations", rpc_status::bad_request),
            by_key.at("rpc.calls.list_registrations.bad_request"));
  EXPECT_EQ(m.calls_of("ping", rpc_status::ok), 1u);
  EXPECT_EQ(m.workers, by_key.at("rpc.workers"));
}

// A pattern that backtracks exponentially in a backtracking matcher
// answers in bounded time (the polynomial matcher), one with a
// back-reference is refused, and a scan still running when the transport
// shuts down ends there: no handler outlives shutdown, or destruction.
TEST(transport_control, hostile_patterns_are_bounded_and_a_running_scan_ends_at_shutdown) {
  auto target = testing::start(testing::loopback_config());
  const std::size_t names = 500;
  std::vector<std::byte> memory(names);
  for (std::size_t i = 0; i < names; ++i) {
    (void)target
        ->register_buffer(memory.data() + i, 1, permission::remote_read,
                          std::string(40 + i % 8, 'a'))
        .value();
  }
  // Bounded, not quick: a backtracking matcher takes about 2^40 steps on
  // one of these names (hours), while this scan took over 10 s, the
  // default call bound, under ASan with three test suites beside it (the
  // call was sent again and again until its overall bound). 120 s still
  // fails the exponential matcher by far.
  client_options patient;
  patient.server = control::endpoint_of(*target).value();
  patient.call_timeout_ms = 120'000;
  patient.overall_timeout_ms = 120'000;
  auto rpc = client::create(patient).value();
  auto none = rpc->list_registrations("^(a*)*b$");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none.value().empty());
  auto backref = rpc->list_registrations("(a)\\1");
  ASSERT_FALSE(backref.ok());
  EXPECT_EQ(backref.code(), status::invalid_argument);
  // Scans back to back on another client while the transport shuts down.
  std::atomic<bool> done{false};
  client_options quick;  // after the shutdown, each call fails fast
  quick.server = control::endpoint_of(*target).value();
  quick.overall_timeout_ms = 300;
  std::thread scanner([&, c = client::create(quick).value()] {
    while (!done.load()) (void)c->list_registrations("^(a*)*b$");
  });
  // Joined on every way out: a failed wait must report, not terminate on
  // a joinable thread.
  struct joiner {
    std::atomic<bool>& done;
    std::thread& t;
    ~joiner() {
      done = true;
      t.join();
    }
  } join_scanner{done, scanner};
  ASSERT_TRUE(testing::eventually([&] {
    return control::metrics_of(*target).calls_of("list_registrations", rpc_status::ok) >= 2;
  }));
  EXPECT_TRUE(target->shutdown().ok());
  done = true;
}  // the scanner joined, then the target goes, with no handler left to read the names it frees

TEST(transport_control, thread_counts_are_validated_by_name) {
  auto c = testing::loopback_config();
  c.rpc_worker_count = -1;
  auto r = validate(c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("rpc_worker_count"), std::string::npos);
  EXPECT_NE(r.error().message.find("negative"), std::string::npos);
  c.rpc_worker_count = limits::rpc_worker_count_max + 1;
  EXPECT_FALSE(validate(c).ok());
  c.rpc_worker_count = limits::rpc_worker_count_max;
  EXPECT_TRUE(validate(c).ok());
  c.rpc_worker_count = 0;  // as many as io threads
  auto t = testing::start(c);
  EXPECT_EQ(control::metrics_of(*t).workers, c.worker_count);
  c.rpc_queue_max = 0;
  EXPECT_FALSE(validate(c).ok());
  auto yaml = parse_config_yaml("bind_address: 127.0.0.1\nrpc_worker_count: -3\n");
  ASSERT_FALSE(yaml.ok());
  EXPECT_NE(yaml.error().message.find("rpc_worker_count"), std::string::npos);
  auto inline_yaml = parse_config_yaml("bind_address: 127.0.0.1\nrpc_worker_count: inline\n");
  ASSERT_TRUE(inline_yaml.ok()) << inline_yaml.error().message;
  EXPECT_TRUE(inline_yaml.value().rpc_inline);
  auto inline_transport = testing::start(inline_yaml.value());
  EXPECT_EQ(control::metrics_of(*inline_transport).workers, 0u);
  EXPECT_TRUE(client_of(*inline_transport)->describe().ok());
  auto off = parse_config_yaml("bind_address: 127.0.0.1\nrpc_enabled: false\n").value();
  EXPECT_FALSE(control::endpoint_of(*testing::start(off)).has_value());
}

// Rule: the control plane's pool takes rpc_worker_count workers when it is
// set (not worker_count), and rpc_queue_max as its bound; rpc_inline wins
// over rpc_worker_count.
TEST(transport_control, rpc_worker_count_and_rpc_queue_max_size_the_pool_unless_inline) {
  auto c = testing::loopback_config();
  c.rpc_worker_count = static_cast<std::int64_t>(c.worker_count) + 2;
  c.rpc_queue_max = 7;
  auto t = testing::start(c);
  const auto m = control::metrics_of(*t);
  EXPECT_EQ(m.workers, c.worker_count + 2);
  EXPECT_EQ(m.queue_max, 7u);
  c.rpc_inline = true;
  auto inline_transport = testing::start(c);
  EXPECT_EQ(control::metrics_of(*inline_transport).workers, 0u);
  EXPECT_EQ(control::metrics_of(*inline_transport).queue_max, 0u);
}

// The control plane is a service attached to the transport: transport::start
// alone serves none, serve() attaches one (not twice), a port already taken
// fails start_transport as a whole, and none is served once shutdown began.
TEST(transport_control, serve_attaches_one_control_plane_until_shutdown) {
  auto t = transport::start(testing::loopback_config()).value();
  EXPECT_FALSE(control::endpoint_of(*t).has_value());
  EXPECT_EQ(t->service("control"), nullptr);
  ASSERT_TRUE(control::serve(*t).ok());
  ASSERT_NE(t->service("control"), nullptr);
  const auto at = control::endpoint_of(*t);
  ASSERT_TRUE(at.has_value());
  EXPECT_EQ(control::serve(*t).code(), status::invalid_argument);
  EXPECT_EQ(control::endpoint_of(*t), at);  // the first one still serves
  EXPECT_TRUE(client_of(*t)->ping().ok());
  auto taken = testing::loopback_config();
  taken.rpc_port = at->port;
  auto second = control::start_transport(taken);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.code(), status::connection_failed);
  EXPECT_NE(second.error().message.find("rpc listen on"), std::string::npos)
      << second.error().message;
  ASSERT_TRUE(t->shutdown().ok());
  EXPECT_EQ(control::serve(*t).code(), status::shutting_down);  // stopped: never again
  auto never_served = transport::start(testing::loopback_config()).value();
  ASSERT_TRUE(never_served->shutdown().ok());
  EXPECT_EQ(control::serve(*never_served).code(), status::shutting_down);
  EXPECT_EQ(never_served->service("control"), nullptr);
}

// A service whose destruction the test can wait for: the transport
// destroys its services first when it goes.
class gone_signal final : public transport_service {
 public:
  explicit gone_signal(std::promise<void>& gone) : gone_(gone) {}
  ~gone_signal() override { gone_.set_value(); }
  std::string_view name() const noexcept override { return "gone_signal"; }
  result<void> stop(net::clock::time_point) override { return {}; }

 private:
  std::promise<void>& gone_;
};

// Destroyed from one of its completion callbacks, a transport finishes on
// another thread: the transport object is gone while its control plane
// still serves (held there by a failpoint). Every method still answers
// from the transport's state, which lives until the plane is stopped and
// destroyed (the handlers once read the freed transport object).
TEST(transport_control, a_transport_destroyed_from_a_callback_answers_until_it_stops) {
  namespace fp = failpoint;
  fp::scoped held("transport.destroyed_from_callback", {.act = fp::action::pause, .count = 1});
  auto peer = testing::start(testing::loopback_config());
  std::vector<std::byte> remote(4096), mine(4096), back(4096);
  auto rid = peer->register_buffer(remote.data(), remote.size(), permission::remote_read).value();
  auto t = testing::start(testing::loopback_config());
  t->register_buffer(mine.data(), mine.size(), permission::remote_read, "kv").value();
  const auto descriptor = t->descriptor();
  std::promise<void> gone;
  ASSERT_TRUE(t->attach(std::make_unique<gone_signal>(gone)).ok());
  auto rpc = client_of(*t);
  auto seg = t->open_segment(peer->descriptor()).value();
  std::promise<void> submitted;
  auto submit_returned = submitted.get_future().share();
  auto r = testing::read_req(seg, rid, 0, back.data(), back.size());
  auto batch =
      t->submit(std::span(&r, 1), [&, submit_returned](std::size_t, status, std::uint64_t) {
        if (submit_returned.wait_for(10s) != std::future_status::ready) return;
        t.reset();  // on an io thread: the rest runs on another one
      });
  ASSERT_TRUE(batch.ok());
  submitted.set_value();
  ASSERT_TRUE(fp::wait_paused("transport.destroyed_from_callback", 1, 10000ms));
  EXPECT_EQ(t, nullptr);
  EXPECT_TRUE(rpc->ping().ok());
  EXPECT_TRUE(rpc->service_ready().value());  // its shutdown has not begun
  auto d = rpc->describe();
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d.value(), descriptor);
  EXPECT_EQ(rpc->list_registrations("^kv$").value().size(), 1u);
  EXPECT_TRUE(rpc->stats().ok());
  fp::resume("transport.destroyed_from_callback");
  EXPECT_EQ(gone.get_future().wait_for(10s), std::future_status::ready);
}

// No descriptor handed over in code: the initiator knows the target's
// control endpoint only, reads and writes, and when the target re-registers
// its buffer under a new id, the stale answer refreshes through the control
// plane and the retry lands on the same buffer.
TEST(transport_control, a_segment_opened_by_address_works_and_refreshes_a_stale_id) {
  auto target = testing::start(testing::loopback_config());
  auto initiator = testing::start(testing::loopback_config());
  auto memory = testing::pattern(8192, 3);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write, "cache")
          .value();
  auto seg = control::open_segment(*initiator, control::endpoint_of(*target)->str());
  ASSERT_TRUE(seg.ok()) << seg.error().message;
  std::vector<std::byte> got(8192);
  auto read = testing::run_one(*initiator, testing::read_req(seg.value(), id, 0, got.data(), 8192));
  EXPECT_EQ(read.code, status::ok);
  EXPECT_EQ(got, memory);
  ASSERT_TRUE(target->unregister_buffer(id).ok());
  auto fresh_id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read_write, "cache")
          .value();
  ASSERT_NE(fresh_id, id);
  auto block = testing::pattern(4096, 9);
  auto wrote =
      testing::run_one(*initiator, testing::write_req(seg.value(), id, 4096, block.data(), 4096));
  EXPECT_EQ(wrote.code, status::ok);
  EXPECT_TRUE(std::equal(block.begin(), block.end(), memory.begin() + 4096));
  EXPECT_EQ(initiator->stats().stale_refreshes, 1u);
  EXPECT_EQ(control::metrics_of(*target).calls_of("describe", rpc_status::ok), 2u);
}

// A local_only buffer is never advertised: not in the descriptor, not in
// describe or list_registrations from a peer, whatever the pattern; a
// remote one beside it is listed by both.
TEST(transport_control, local_only_registrations_are_invisible_to_peers) {
  auto target = testing::start(testing::loopback_config());
  std::vector<std::byte> a(64), b(64), c(64);
  target->register_buffer(a.data(), a.size(), permission::local_only, "kv/secret").value();
  auto shown =
      target->register_buffer(b.data(), b.size(), permission::remote_read, "kv/shown").value();
  target->register_buffer(c.data(), c.size(), permission::remote_read_write).value();  // unnamed
  auto rpc = client_of(*target);
  auto listed = rpc->list_registrations("");
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed.value().size(), 1u);
  EXPECT_EQ(listed.value()[0].id, shown);
  EXPECT_EQ(listed.value()[0].name, "kv/shown");
  EXPECT_TRUE(rpc->list_registrations("secret").value().empty());
  auto described = rpc->describe();
  ASSERT_TRUE(described.ok()) << described.error().message;
  EXPECT_EQ(described.value(), target->descriptor());
  ASSERT_EQ(described.value().registrations.size(), 2u);
  for (const auto& r : described.value().registrations) {
    EXPECT_NE(r.perm, permission::local_only);
    EXPECT_NE(r.name, "kv/secret");
  }
}

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
namespace fp = failpoint;

// The window that once held an id without its name: a register paused
// right after it published. A peer's describe and list there see the id
// with its name, and a stale id refreshed by name there finds the new one
// (it once ended stale_registration for good).
TEST(transport_control, a_registration_is_visible_with_its_name_or_not_at_all) {
  auto target = testing::start(testing::loopback_config());
  auto initiator = testing::start(testing::loopback_config());
  auto memory = testing::pattern(8192, 5);
  auto id =
      target->register_buffer(memory.data(), 8192, permission::remote_read_write, "cache").value();
  auto seg = control::open_segment(*initiator, control::endpoint_of(*target)->str());
  ASSERT_TRUE(seg.ok()) << seg.error().message;
  ASSERT_TRUE(target->unregister_buffer(id).ok());
  fp::scoped paused("registry.after_publish", {.act = fp::action::pause, .count = 1});
  auto fresh = std::async(std::launch::async, [&] {
    return target->register_buffer(memory.data(), 8192, permission::remote_read_write, "cache");
  });
  ASSERT_TRUE(fp::wait_paused("registry.after_publish", 1, 5000ms));
  auto rpc = client_of(*target);
  auto listed = rpc->list_registrations("^cache$");
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  ASSERT_EQ(listed.value().size(), 1u);
  const auto d = rpc->describe().value();
  ASSERT_EQ(d.registrations.size(), 1u);
  EXPECT_EQ(d.registrations[0].name, "cache");
  EXPECT_EQ(d.registrations[0].id, listed.value()[0].id);
  auto block = testing::pattern(4096, 8);
  auto wrote =
      testing::run_one(*initiator, testing::write_req(seg.value(), id, 0, block.data(), 4096));
  EXPECT_EQ(wrote.code, status::ok);
  EXPECT_EQ(initiator->stats().stale_refreshes, 1u);
  fp::resume("registry.after_publish");
  ASSERT_EQ(fresh.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(fresh.get().value(), d.registrations[0].id);
  EXPECT_TRUE(std::equal(block.begin(), block.end(), memory.begin()));
}

// A scan holds the registry's lock one page at a time: with a scan paused
// between two pages, registering and unregistering complete, and the scan
// then lists every name that lived through it, and the one registered
// while it was paused (a new registration sorts after the scan's cursor;
// by id it would land before it about half the time and be missed).
TEST(transport_control, registration_never_waits_on_a_scan) {
  auto target = testing::start(testing::loopback_config());
  const std::size_t names = limits::registration_page_max + limits::registration_page_max / 2;
  std::vector<std::byte> memory(names + 1);
  for (std::size_t i = 0; i < names; ++i) {
    (void)target->register_buffer(&memory[i], 1, permission::remote_read, fmt::format("n/{}", i))
        .value();
  }
  fp::scoped paused("control.scan_page", {.act = fp::action::pause, .count = 1});
  auto rpc = client_of(*target);
  auto scan = std::async(std::launch::async, [&] { return rpc->list_registrations("^n/"); });
  ASSERT_TRUE(fp::wait_paused("control.scan_page", 1, 5000ms));
  auto meanwhile = std::async(std::launch::async, [&] {
    auto gone = target->register_buffer(&memory[names], 1, permission::remote_read, "n/gone");
    auto kept = target->register_buffer(&memory[names], 1, permission::remote_read, "n/late");
    return gone.ok() && kept.ok() && target->unregister_buffer(gone.value()).ok();
  });
  ASSERT_EQ(meanwhile.wait_for(5s), std::future_status::ready);
  EXPECT_TRUE(meanwhile.get());
  fp::resume("control.scan_page");
  ASSERT_EQ(scan.wait_for(10s), std::future_status::ready);
  auto listed = scan.get();
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed.value().size(), names + 1);
  EXPECT_EQ(listed.value().back().name, "n/late");
}

// A scan that finds the service stopping between two pages ends there,
// `cancelled`, instead of reading the rest of the registry while shutdown
// waits for it (docs/control-plane.md, "Stopping"). The one worker is held
// by the paused scan; the call queued behind it is answered `cancelled` as
// the stop begins, so the scan is let go only once the stop is requested.
TEST(transport_control, a_scan_that_finds_the_service_stopping_ends_cancelled) {
  auto config = testing::loopback_config();
  config.rpc_worker_count = 1;
  config.shutdown_timeout_ms = 20000;
  auto target = testing::start(config);
  const std::size_t names = limits::registration_page_max + 1;  // two pages
  std::vector<std::byte> memory(names);
  for (std::size_t i = 0; i < names; ++i) {
    (void)target->register_buffer(&memory[i], 1, permission::remote_read, fmt::format("n/{}", i))
        .value();
  }
  fp::scoped paused("control.scan_page", {.act = fp::action::pause, .count = 1});
  auto scanning = client_of(*target);
  auto waiting = client_of(*target);
  auto scan = std::async(std::launch::async, [&] { return scanning->list_registrations("^n/"); });
  ASSERT_TRUE(fp::wait_paused("control.scan_page", 1, 5000ms));
  auto queued = std::async(std::launch::async, [&] { return waiting->describe(); });
  ASSERT_TRUE(testing::eventually([&] { return control::metrics_of(*target).queue_depth == 1; }));
  auto down = std::async(std::launch::async, [&] { return target->shutdown(); });
  ASSERT_EQ(queued.wait_for(10s), std::future_status::ready);
  auto refused = queued.get();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), status::cancelled);
  ASSERT_NE(refused.error().message.find("stopped before the call ran"), std::string::npos)
      << refused.error().message;  // the pool's stop answered it: the stop is requested
  fp::resume("control.scan_page");
  ASSERT_EQ(scan.wait_for(10s), std::future_status::ready);
  auto listed = scan.get();
  ASSERT_FALSE(listed.ok()) << "the scan ran on and listed " << listed.value().size();
  EXPECT_EQ(listed.code(), status::cancelled);
  EXPECT_NE(listed.error().message.find("stopped during the scan"), std::string::npos)
      << listed.error().message;
  ASSERT_EQ(down.wait_for(20s), std::future_status::ready);
  EXPECT_TRUE(down.get().ok());
}
#endif

TEST(transport_control, opening_an_address_nobody_serves_fails_within_the_bound) {
  std::uint16_t port = 0;
  {
    testing::silent_peer gone;
    port = gone.descriptor().endpoints[0].port;
  }
  auto initiator = testing::start(testing::loopback_config());
  EXPECT_FALSE(control::open_segment(*initiator, "127.0.0.1:" + std::to_string(port)).ok());
  auto bad = control::open_segment(*initiator, "not an endpoint");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), status::invalid_argument);
}

// Rule: endpoint_of may be read from any thread at any time, a shutdown
// beside it included, and names the port listen() bound throughout: a
// caller handed it after the shutdown is refused at connect (and ends
// timeout as its client tries again), not told the address is malformed.
// (It read the acceptor from the caller's thread while an io thread closed
// it: a data race under TSan. Then it said port 0 once stopped, and a
// scenario's late caller failed "not a numeric IPv4 address and port".)
TEST(transport_control, endpoint_of_keeps_the_bound_port_while_and_after_the_transport_shuts_down) {
  auto target = testing::start(testing::loopback_config());
  const auto port = control::endpoint_of(*target).value().port;
  ASSERT_NE(port, 0);
  std::atomic<bool> done{false};
  std::atomic<std::size_t> reads{0};
  std::atomic<bool> only_the_port{true};
  std::thread reader([&] {
    while (!done.load()) {
      const auto at = control::endpoint_of(*target);
      if (!at || at->port != port) only_the_port = false;
      reads.fetch_add(1);
    }
  });
  const bool read_before = testing::eventually([&] { return reads.load() >= 100; });
  const bool shut = target->shutdown().ok();
  const auto after = reads.load();
  const bool read_after = testing::eventually([&] { return reads.load() >= after + 100; });
  done = true;
  reader.join();
  ASSERT_TRUE(read_before && shut && read_after);
  EXPECT_TRUE(only_the_port.load());
  const auto stopped = control::endpoint_of(*target);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->port, port);
  client_options o;
  o.server = *stopped;
  o.overall_timeout_ms = 300;  // refused connects are tried again until then
  auto late = client::create(o);
  ASSERT_TRUE(late.ok()) << late.error().message;
  const auto r = late.value()->describe();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::timeout) << r.error().message;
  EXPECT_GE(late.value()->counters().connect_failures, 1U);
  EXPECT_EQ(late.value()->counters().connects, 0U);
}
}  // namespace
}  // namespace faultlane::rpc
