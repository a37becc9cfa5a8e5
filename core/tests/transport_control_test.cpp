// A transport's own control plane: its built-in methods answer from the
// live transport, its configuration is validated by name, and a segment
// opened by control endpoint alone works and refreshes a stale id.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>
#include <set>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/rpc_client.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane::rpc {
namespace {

// A transport's own control plane.

std::unique_ptr<client> client_of(const transport& t) {
  client_options o;
  o.server = t.control_endpoint().value();
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
  auto m = target->control_metrics();
  EXPECT_EQ(m.calls_of("stats", rpc_status::ok), 1u);  // this very call, answered after
  // stats() carries the same figures.
  const auto s = target->stats().control;
  EXPECT_EQ(s.calls_of("describe", rpc_status::ok), 1u);
  EXPECT_EQ(s.calls_of("list_registrations", rpc_status::bad_request), 1u);
  EXPECT_EQ(s.calls_of("stats", rpc_status::ok), 1u);
  EXPECT_EQ(s.calls_total(), m.calls_total());
  EXPECT_EQ(s.workers, testing::loopback_config().worker_count);
}

// A pattern that backtracks exponentially in a backtracking matcher
// answers in bounded time (the polynomial matcher), one with a
// back-reference is refused, and a scan still running when the transport
// shuts down ends there: no handler outlives shutdown, or destruction.
TEST(transport_control, hostile_patterns_are_bounded_and_a_running_scan_ends_at_shutdown) {
  auto target = testing::start(testing::loopback_config());
  const std::size_t names = 2000;
  std::vector<std::byte> memory(names);
  for (std::size_t i = 0; i < names; ++i) {
    (void)target
        ->register_buffer(memory.data() + i, 1, permission::remote_read,
                          std::string(40 + i % 8, 'a'))
        .value();
  }
  auto rpc = client_of(*target);
  auto none = rpc->list_registrations("^(a*)*b$");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none.value().empty());
  auto backref = rpc->list_registrations("(a)\\1");
  ASSERT_FALSE(backref.ok());
  EXPECT_EQ(backref.code(), status::invalid_argument);
  // Scans back to back on another client while the transport shuts down.
  std::atomic<bool> done{false};
  client_options quick;  // after the shutdown, each call fails fast
  quick.server = target->control_endpoint().value();
  quick.overall_timeout_ms = 300;
  std::thread scanner([&, c = client::create(quick).value()] {
    while (!done.load()) (void)c->list_registrations("^(a*)*b$");
  });
  ASSERT_TRUE(testing::eventually([&] {
    return target->control_metrics().calls_of("list_registrations", rpc_status::ok) >= 2;
  }));
  EXPECT_TRUE(target->shutdown().ok());
  done = true;
  scanner.join();
  target.reset();  // with no handler left to read the names it frees
}

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
  EXPECT_EQ(t->control_metrics().workers, c.worker_count);
  c.rpc_queue_max = 0;
  EXPECT_FALSE(validate(c).ok());
  auto yaml = parse_config_yaml("bind_address: 127.0.0.1\nrpc_worker_count: -3\n");
  ASSERT_FALSE(yaml.ok());
  EXPECT_NE(yaml.error().message.find("rpc_worker_count"), std::string::npos);
  auto inline_yaml = parse_config_yaml("bind_address: 127.0.0.1\nrpc_worker_count: inline\n");
  ASSERT_TRUE(inline_yaml.ok()) << inline_yaml.error().message;
  EXPECT_TRUE(inline_yaml.value().rpc_inline);
  auto inline_transport = testing::start(inline_yaml.value());
  EXPECT_EQ(inline_transport->control_metrics().workers, 0u);
  EXPECT_TRUE(client_of(*inline_transport)->describe().ok());
  auto off = parse_config_yaml("bind_address: 127.0.0.1\nrpc_enabled: false\n").value();
  EXPECT_FALSE(testing::start(off)->control_endpoint().has_value());
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
  auto seg = initiator->open_segment(target->control_endpoint()->str());
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
  EXPECT_EQ(target->control_metrics().calls_of("describe", rpc_status::ok), 2u);
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
using namespace std::chrono_literals;

// The window that once held an id without its name: a register paused
// right after it published. A peer's describe and list there see the id
// with its name, and a stale id refreshed by name there finds the new one
// (it once ended stale_registration for good).
TEST(transport_control, a_registration_is_visible_with_its_name_or_not_at_all) {
  auto target = testing::start(testing::loopback_config());
  auto initiator = testing::start(testing::loopback_config());
  auto memory = testing::pattern(8192, 5);
  auto id = target->register_buffer(memory.data(), 8192, permission::remote_read_write, "cache")
                .value();
  auto seg = initiator->open_segment(target->control_endpoint()->str());
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
#endif

TEST(transport_control, opening_an_address_nobody_serves_fails_within_the_bound) {
  std::uint16_t port = 0;
  {
    testing::silent_peer gone;
    port = gone.descriptor().endpoints[0].port;
  }
  auto initiator = testing::start(testing::loopback_config());
  EXPECT_FALSE(initiator->open_segment("127.0.0.1:" + std::to_string(port)).ok());
  auto bad = initiator->open_segment("not an endpoint");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), status::invalid_argument);
}

}  // namespace
}  // namespace faultlane::rpc
