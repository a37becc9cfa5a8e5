// The relays on the simulated world (the dsim build only): the real core
// through a real relay, one fault of every kind in docs/faults.md, with no
// fault code of the world's own. Every task ends exactly once, a READ that
// comes back ok after an ok WRITE has its bytes, and each run replays to
// the same digest and the same statuses.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "faultlane/base/hash.hpp"
#include "faultlane/core/transport.hpp"
#include "faultlane/dsim/network.hpp"
#include "faultlane/relays/relay.hpp"

namespace faultlane {
namespace {

using namespace std::chrono_literals;

// One fault of each kind, named `f`, and whether it must have fired by the
// end of the run (slow_close fires only on a FIN from the source, which
// may come after the relay stopped).
struct kind_case {
  const char* text;
  bool must_fire;
};
const std::map<std::string, kind_case> one_fault_per_kind{
    {"latency", {"latency dir=down ms=20 jitter_ms=5 name=f", true}},
    {"bandwidth", {"bandwidth dir=up bytes_per_s=400000 name=f", true}},
    {"slicer", {"slicer dir=up size=300 variation=200 delay_us=20 name=f", true}},
    {"truncate", {"truncate dir=down bytes=5000 name=f", true}},
    {"reset", {"reset dir=up frame=3 name=f", true}},
    {"stall", {"stall dir=down frame=2 name=f", true}},
    {"blackhole", {"blackhole dir=up frame=2 name=f", true}},
    {"refuse", {"refuse count=1 name=f", true}},
    {"drop_frame", {"drop_frame dir=down opcode=write count=1 name=f", true}},
    {"corrupt", {"corrupt dir=down field=request_id frame=1 name=f", true}},
    {"half_close", {"half_close dir=up frame=2 name=f", true}},
    {"slow_close", {"slow_close dir=down ms=30 name=f", false}},
};

transport_config world_config() {
  transport_config c;
  c.bind_address = "127.0.0.1";
  c.port = 0;
  c.worker_count = 2;
  c.connections_per_peer = 1;
  c.progress_timeout_ms = 2000;
  c.reconnect_cooldown_ms = 50;
  c.rpc_enabled = false;
  return c;
}

struct fault_run {
  std::uint64_t digest = 0;
  std::vector<status> ends;
  std::uint64_t fired = 0;
};

fault_run run_through_relay(const std::string& fault_text, std::uint64_t seed) {
  fault_run out;
  dsim::world w(seed);
  dsim::network net(w);
  auto target = transport::start(world_config());
  auto initiator = transport::start(world_config());
  EXPECT_TRUE(target.ok() && initiator.ok());
  if (!target.ok() || !initiator.ok()) return out;
  std::vector<std::byte> memory(1u << 20);
  auto id =
      target.value()->register_buffer(memory.data(), memory.size(), permission::remote_read_write);
  EXPECT_TRUE(id.ok());
  relays::relay_config rc;
  rc.upstream = {"127.0.0.1", target.value()->descriptor().endpoints.at(0).port};
  rc.seed = seed;
  auto fault = relays::parse_fault(fault_text);
  EXPECT_TRUE(fault.ok()) << fault_text;
  if (!fault.ok() || !id.ok()) return out;
  rc.faults.push_back(fault.value());
  auto relay = relays::relay::start(rc);
  EXPECT_TRUE(relay.ok()) << relay.error().message;
  if (!relay.ok()) return out;
  auto d = target.value()->descriptor();
  d.endpoints[0] = relay.value()->listen_endpoint();
  auto seg = initiator.value()->open_segment(d);
  EXPECT_TRUE(seg.ok());
  if (!seg.ok()) return out;

  constexpr std::size_t ops = 8;
  constexpr std::size_t slot = 16u << 10;
  std::vector<std::vector<std::byte>> sent, back;
  std::vector<transfer_request> writes, reads;
  for (std::size_t i = 0; i < ops; ++i) {
    const std::size_t size = 1 + w.draw(0, slot - 1);
    sent.emplace_back(size);
    for (std::size_t k = 0; k < size; ++k) sent.back()[k] = std::byte(stable_hash(seed + i + k));
    back.emplace_back(size);
    writes.push_back(
        {wire::opcode::write, sent[i].data(), size, seg.value(), id.value(), i * slot});
    reads.push_back({wire::opcode::read, back[i].data(), size, seg.value(), id.value(), i * slot});
  }
  std::vector<int> calls(2 * ops, 0);
  for (std::size_t pass = 0; pass < 2; ++pass) {
    auto& requests = pass == 0 ? writes : reads;
    auto batch = initiator.value()->submit(
        requests,
        [&calls, pass](std::size_t i, status, std::uint64_t) { ++calls[pass * ops + i]; });
    EXPECT_TRUE(batch.ok());
    if (!batch.ok()) return out;
    EXPECT_TRUE(batch.value()->wait(120s)) << fault_text << "\n" << w.trace_text();
    for (std::size_t i = 0; i < ops; ++i) out.ends.push_back(batch.value()->status(i).code);
  }
  for (std::size_t i = 0; i < 2 * ops; ++i) EXPECT_EQ(calls[i], 1) << fault_text << " task " << i;
  for (std::size_t i = 0; i < ops; ++i) {
    const bool written = out.ends[i] == status::ok;
    const bool read = out.ends[ops + i] == status::ok;
    if (written && read) EXPECT_TRUE(back[i] == sent[i]) << fault_text << " op " << i;
    // A WRITE that did not end ok did not land whole, or is ambiguous:
    // never ok with other bytes.
    if (written) {
      EXPECT_EQ(std::memcmp(memory.data() + i * slot, sent[i].data(), sent[i].size()), 0);
    }
  }
  out.fired = relay.value()->counter("f");
  (void)initiator.value()->shutdown();
  relay.value()->stop();
  (void)target.value()->shutdown();
  initiator.value().reset();
  relay.value().reset();
  target.value().reset();
  for (auto e : out.ends) w.record("end", static_cast<std::uint64_t>(e));
  w.record("fired", out.fired);
  out.digest = w.digest();
  return out;
}

TEST(relays_on_world, the_table_names_every_fault_kind) {
  for (const auto& k : relays::fault_kinds) {
    EXPECT_TRUE(one_fault_per_kind.count(std::string(k.name))) << "no case for " << k.name;
  }
  EXPECT_EQ(one_fault_per_kind.size(), relays::fault_kinds.size());
}

TEST(relays_on_world, every_fault_kind_runs_ends_every_task_once_and_replays) {
  for (const auto& [kind, c] : one_fault_per_kind) {
    SCOPED_TRACE(kind);
    std::uint64_t fired = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
      const auto first = run_through_relay(c.text, seed);
      const auto again = run_through_relay(c.text, seed);
      EXPECT_EQ(again.digest, first.digest) << "seed " << seed;
      EXPECT_EQ(again.ends, first.ends) << "seed " << seed;
      fired += first.fired;
    }
    if (c.must_fire) EXPECT_GT(fired, 0u) << c.text << " never fired";
  }
}

// What a dropped WRITE acknowledgement does: a WRITE in flight ends
// ambiguous_write after the progress deadline (virtual time), never
// replayed, and never ok; the READs after it, on a new connection, are ok.
TEST(relays_on_world, a_dropped_write_ack_ends_writes_ambiguous_never_failed_or_replayed) {
  const auto r = run_through_relay("drop_frame dir=down opcode=write count=1 name=f", 4);
  ASSERT_EQ(r.ends.size(), 16u);
  std::size_t ambiguous = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_TRUE(r.ends[i] == status::ok || r.ends[i] == status::ambiguous_write)
        << to_string(r.ends[i]);
    ambiguous += r.ends[i] == status::ambiguous_write;
  }
  for (std::size_t i = 8; i < 16; ++i) EXPECT_EQ(r.ends[i], status::ok) << i;
  EXPECT_GE(ambiguous, 1u);
  EXPECT_EQ(r.fired, 1u);
}

}  // namespace
}  // namespace faultlane
