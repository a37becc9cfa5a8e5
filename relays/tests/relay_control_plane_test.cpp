// Relays in front of a transport's control port (raw protocol): a reset
// during describe is retried within the client's bound, a stalled control
// connection holds neither the data plane nor other control calls past
// their timeouts, and a restarted peer behind the same address is
// described anew while its old ids are refused or refreshed by name.
#include <gtest/gtest.h>

#include <future>

#include "faultlane/control/rpc_client.hpp"
#include "faultlane/relays/relay.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane::relays {
namespace {

using namespace std::chrono_literals;
namespace ft = ::faultlane::testing;

std::unique_ptr<relay> control_relay(const transport& t, std::vector<fault_spec> faults) {
  relay_config c;
  c.name = "control";
  c.upstream = control::endpoint_of(t).value();
  c.proto = protocol::raw;
  c.faults = std::move(faults);
  return relay::start(c).value();
}

fault_spec fault(std::string_view text) { return parse_fault(text).value(); }

TEST(relay_control_plane, a_reset_during_describe_is_retried_within_the_bound) {
  auto target = ft::start(ft::loopback_config());
  std::vector<std::byte> memory(4096);
  (void)target->register_buffer(memory.data(), memory.size(), permission::remote_read, "w");
  // The first answer is cut 30 bytes in: past its header, into its body.
  auto r = control_relay(*target, {fault("reset dir=down after_bytes=30 count=1")});
  rpc::client_options o;
  o.server = r->listen_endpoint();
  o.overall_timeout_ms = 3000;
  auto c = rpc::client::create(o).value();
  auto d = c->describe();
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d.value(), target->descriptor());
  EXPECT_EQ(r->counter("reset.down"), 1u);
  EXPECT_EQ(c->counters().attempts, 2u);
  EXPECT_EQ(c->counters().connects, 2u);
  EXPECT_EQ(control::metrics_of(*target).calls_of("describe", rpc::rpc_status::ok), 2u);
}

TEST(relay_control_plane, a_stalled_control_connection_holds_neither_the_data_plane_nor_ping) {
  auto target = ft::start(ft::loopback_config());
  auto initiator = ft::start(ft::loopback_config());
  auto memory = ft::pattern(65536, 5);
  auto id =
      target->register_buffer(memory.data(), memory.size(), permission::remote_read, "m").value();
  auto seg = initiator->open_segment(target->descriptor()).value();
  // Every answer through this relay is held at its first byte.
  auto stalled = control_relay(*target, {fault("stall dir=down after_bytes=0")});
  rpc::client_options o;
  o.server = stalled->listen_endpoint();
  o.call_timeout_ms = 300;
  o.overall_timeout_ms = 700;
  auto c = rpc::client::create(o).value();
  auto held = std::async(std::launch::async, [&] { return c->describe(); });
  ASSERT_TRUE(ft::eventually([&] { return stalled->counter("stall.down") >= 1; }));
  // While the control call is held: the data plane moves bytes, and the
  // control plane answers a direct ping.
  std::vector<std::byte> got(65536);
  auto read = ft::run_one(*initiator, ft::read_req(seg, id, 0, got.data(), got.size()));
  EXPECT_EQ(read.code, status::ok);
  EXPECT_EQ(got, memory);
  rpc::client_options direct;
  direct.server = control::endpoint_of(*target).value();
  EXPECT_TRUE(rpc::client::create(direct).value()->ping().ok());
  // The held call ends within its bound, as a timeout.
  const bool ended = held.wait_for(10s) == std::future_status::ready;
  if (!ended) stalled.reset();  // its connections close, so the call and `held` end
  ASSERT_TRUE(ended) << "the call outlived its bound";
  auto r = held.get();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), status::timeout);
  EXPECT_GE(c->counters().connections_reset, 1u);
}

TEST(relay_control_plane, a_restarted_peer_is_described_anew_and_its_old_ids_refused) {
  auto initiator = ft::start(ft::loopback_config());
  std::vector<std::byte> memory(8192);
  auto first = ft::start(ft::loopback_config());
  auto named =
      first->register_buffer(memory.data(), 4096, permission::remote_read, "cache").value();
  auto unnamed =
      first->register_buffer(memory.data() + 4096, 4096, permission::remote_read).value();
  auto r = control_relay(*first, {});  // a stable address in front of the peer
  const auto address = r->listen_endpoint().str();
  auto before = control::open_segment(*initiator, address).value();
  std::vector<std::byte> got(4096);
  EXPECT_EQ(
      ft::run_one(*initiator, ft::read_req(before, named, 0, got.data(), 4096)).code,
      status::ok);
  // The peer restarts: a new transport (a new incarnation) behind the same
  // control address, its buffer registered again under the same name.
  ASSERT_TRUE(first->shutdown().ok());
  first.reset();
  auto second = ft::start(ft::loopback_config());
  auto renamed =
      second->register_buffer(memory.data(), 4096, permission::remote_read, "cache").value();
  ASSERT_TRUE(r->set_upstream(control::endpoint_of(*second).value()).ok());
  auto after = control::open_segment(*initiator, address);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_NE(after.value(), before);  // a new incarnation: a new segment
  // Ids of the old incarnation are refused on the new segment, named or
  // not: they name nothing there and touch nothing.
  for (auto old : {named, unnamed}) {
    EXPECT_EQ(
        ft::run_one(*initiator, ft::read_req(after.value(), old, 0, got.data(), 4096))
            .code,
        status::stale_registration);
  }
  // The name leads to the new id, through the same control address.
  rpc::client_options o;
  o.server = r->listen_endpoint();
  auto found = rpc::client::create(o).value()->list_registrations("^cache$");
  ASSERT_TRUE(found.ok()) << found.error().message;
  ASSERT_EQ(found.value().size(), 1u);
  EXPECT_EQ(found.value()[0].id, renamed);
  EXPECT_EQ(
      ft::run_one(*initiator, ft::read_req(after.value(), renamed, 0, got.data(), 4096))
          .code,
      status::ok);
}

}  // namespace
}  // namespace faultlane::relays
