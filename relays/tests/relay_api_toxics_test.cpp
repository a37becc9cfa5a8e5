// Toxiproxy's toxics as relay faults (relays/src/api/toxics.cpp), the keys
// each fault kind takes, and the timed faults the timeout and reset_peer
// toxics stand for.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/toxics.hpp"
#include "faultlane/relays/config.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays::testing {
namespace {

using api::toxic;
using nlohmann::json;

fault_spec fault_of(const std::string& type, json attributes, direction d = direction::down,
                    double toxicity = 1.0) {
  toxic t{"t", type, d, toxicity, std::move(attributes)};
  auto f = api::to_fault(t);
  EXPECT_TRUE(f.ok()) << type << " " << t.attributes.dump() << ": "
                      << (f.ok() ? "" : f.error().message);
  return f.ok() ? f.value() : fault_spec{};
}

std::string problem(const std::string& type, json attributes, double toxicity = 1.0) {
  auto f = api::to_fault({"t", type, direction::up, toxicity, std::move(attributes)});
  return f.ok() ? "" : f.error().message;
}

TEST(relay_api_toxics, toxiproxy_types_map_with_their_units) {
  auto latency = fault_of("latency", {{"latency", 300}, {"jitter", 20}});
  EXPECT_EQ(latency.kind, fault_kind::latency);
  EXPECT_EQ(latency.ms, 300u);
  EXPECT_EQ(latency.jitter_ms, 20u);
  EXPECT_EQ(latency.dir, direction::down);
  EXPECT_EQ(latency.name, "t");
  EXPECT_EQ(fault_of("bandwidth", {{"rate", 500}}).bytes_per_s, 500'000u);  // KB = 1000 bytes
  auto slicer = fault_of("slicer", {{"average_size", 64}, {"size_variation", 8}, {"delay", 10}});
  EXPECT_EQ(slicer.kind, fault_kind::slicer);
  EXPECT_EQ(slicer.size, 64u);
  EXPECT_EQ(slicer.variation, 8u);
  EXPECT_EQ(slicer.delay_us, 10u);
  auto slow_close = fault_of("slow_close", {{"delay", 150}});
  EXPECT_EQ(slow_close.kind, fault_kind::slow_close);
  EXPECT_EQ(slow_close.ms, 150u);
  auto timeout = fault_of("timeout", {{"timeout", 250}});
  EXPECT_EQ(timeout.kind, fault_kind::blackhole);
  EXPECT_EQ(timeout.ms, 250u);
  auto reset_peer = fault_of("reset_peer", {{"timeout", 40}}, direction::up);
  EXPECT_EQ(reset_peer.kind, fault_kind::reset);
  EXPECT_EQ(reset_peer.ms, 40u);
  EXPECT_EQ(reset_peer.dir, direction::up);
  auto limit = fault_of("limit_data", {{"bytes", 1000}});
  EXPECT_EQ(limit.kind, fault_kind::truncate);
  EXPECT_EQ(limit.bytes, 1000u);
  EXPECT_DOUBLE_EQ(fault_of("latency", {{"latency", 5}}, direction::up, 0.25).when.probability,
                   0.25);
}

TEST(relay_api_toxics, faultlane_faults_are_types_with_their_keys_and_triggers) {
  auto drop = fault_of("drop_frame", {{"opcode", "write"}, {"count", 1}}, direction::up);
  EXPECT_EQ(drop.kind, fault_kind::drop_frame);
  EXPECT_EQ(drop.when.opcode, wire::opcode::write);
  EXPECT_EQ(drop.when.count, 1u);
  auto stall = fault_of("stall", {{"frame", 3}, {"header_byte", 7}});
  EXPECT_EQ(stall.when.frame, 3u);
  EXPECT_EQ(stall.when.header_byte, 7u);
  auto corrupt = fault_of("corrupt", {{"field", "length"}, {"mask", "0x06"}}, direction::up);
  EXPECT_EQ(corrupt.field, "length");
  EXPECT_EQ(corrupt.mask, 0x06);
  // Trigger keys are attributes of Toxiproxy's types too.
  EXPECT_EQ(fault_of("latency", {{"latency", 5}, {"connection", 2}}).when.connection, 2u);
}

TEST(relay_api_toxics, bad_toxics_say_what_is_wrong) {
  EXPECT_EQ(problem("no_such", json::object()), "invalid toxic type");
  EXPECT_NE(problem("latency", json::array()).find("attributes must be an object"),
            std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", -5}}).find("whole number"), std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", 2.5}}).find("whole number"), std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", true}}).find("must be a number"), std::string::npos);
  EXPECT_NE(problem("stall", {{"after_bytes", true}}).find("number or a word"), std::string::npos);
  EXPECT_NE(problem("corrupt", {{"field", "len gth"}}).find("one word"), std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", 5}, {"probability", 0.5}}).find("toxicity"),
            std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", 5}}, 1.5).find("toxicity must be in [0, 1]"),
            std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", 5}, {"bytes", 3}}).find("latency does not take bytes="),
            std::string::npos);
  EXPECT_NE(problem("latency", {{"latency", 5}, {"sead", 3}}).find("unknown key 'sead'"),
            std::string::npos);
  // Toxiproxy's types are checked in their own attribute names.
  EXPECT_EQ(problem("latency", json::object()), "latency needs latency above 0 (ms)");
  EXPECT_EQ(problem("latency", {{"jitter", 5}}), "latency needs latency above 0 (ms)");
  EXPECT_EQ(problem("latency", {{"latency", 5}, {"jitter", 6}}),
            "latency: jitter must not exceed latency");
  EXPECT_EQ(problem("bandwidth", {{"rate", 0}}), "bandwidth needs rate above 0 (KB/s)");
  EXPECT_EQ(problem("slow_close", {{"delay", 0}}), "slow_close needs delay above 0 (ms)");
  EXPECT_EQ(problem("slicer", {{"average_size", 4}, {"size_variation", 4}}),
            "slicer needs average_size above size_variation");
  // ...and take numbers only; 2^64 and up is refused, not converted.
  EXPECT_NE(problem("latency", {{"latency", "100"}}).find("must be a number"), std::string::npos);
  EXPECT_NE(problem("slow_close", {{"delay", 1e20}}).find("from 0 to 2^64 - 1"), std::string::npos);
  EXPECT_NE(problem("latency", json::parse(R"({"latency": 99999999999999999999})"))
                .find("from 0 to 2^64 - 1"),
            std::string::npos);
  // The relay's own messages lose the fault text they quote.
  EXPECT_EQ(problem("corrupt", {{"field", "nope"}}),
            "corrupt toxic: corrupt: no field 'nope' in a request header");
  // 2^64 / 1000 KB/s and up would overflow bytes_per_s.
  EXPECT_NE(problem("bandwidth", {{"rate", 18446744073709552ull}}).find("too large"),
            std::string::npos);
}

TEST(relay_api_toxics, every_kind_refuses_a_key_only_another_kind_takes) {
  for (const char* text : {"stall dir=up ms=5", "drop_frame dir=up bytes=3",
                           "latency dir=up ms=5 size=3", "truncate dir=up bytes=5 mask=1",
                           "reset dir=up bytes_per_s=5", "corrupt dir=up field=length jitter_ms=1",
                           "half_close dir=up delay_us=1", "refuse variation=1"}) {
    auto f = parse_fault(text);
    ASSERT_FALSE(f.ok()) << text;
    EXPECT_NE(f.error().message.find("does not take"), std::string::npos) << f.error().message;
  }
  for (const char* text :
       {"reset dir=up ms=5", "blackhole dir=down ms=5", "slow_close dir=up ms=5",
        "truncate dir=up bytes=5", "corrupt dir=up field=payload payload_byte=2"}) {
    EXPECT_TRUE(parse_fault(text).ok()) << text;
  }
}

TEST(relay_api_toxics, configured_faults_show_as_toxics_that_map_back) {
  for (const char* text :
       {"latency dir=down ms=5 jitter_ms=1", "bandwidth dir=up bytes_per_s=2000",
        "bandwidth dir=up bytes_per_s=1500", "slicer dir=down size=10 variation=2 delay_us=5",
        "slow_close dir=up ms=7", "stall dir=down frame=2 header_byte=3 probability=0.5",
        "drop_frame dir=up opcode=write count=2", "corrupt dir=down field=status mask=0x06",
        "truncate dir=up bytes=9", "blackhole dir=down ms=100",
        "reset dir=up after_bytes=4 ms=3"}) {
    auto f = parse_fault(text).value();
    auto shown = api::from_fault(f);
    auto back = api::to_fault(shown);
    ASSERT_TRUE(back.ok()) << text << " -> " << api::to_json(shown).dump() << ": "
                           << back.error().message;
    EXPECT_EQ(describe(back.value()), describe(f)) << api::to_json(shown).dump();
    EXPECT_EQ(back.value().name, f.name);
  }
  auto bw = api::from_fault(parse_fault("bandwidth dir=up bytes_per_s=2000").value());
  EXPECT_EQ(bw.attributes, (json{{"rate", 2}}));  // Toxiproxy's name and unit where exact
  EXPECT_EQ(bw.dir, direction::up);
  auto odd = api::from_fault(parse_fault("bandwidth dir=up bytes_per_s=1500").value());
  EXPECT_EQ(odd.attributes, (json{{"bytes_per_s", 1500}}));
}

TEST(relay_api_toxics, whole_numbers_show_as_whole_numbers) {
  toxic t{"t", "latency", direction::down, 1.0, {{"latency", 1e3}, {"jitter", 2.0}}};
  ASSERT_TRUE(api::to_fault(t).ok());
  api::normalize_numbers(t);
  EXPECT_EQ(t.attributes.dump(), R"({"jitter":2,"latency":1000})");
}

TEST(relay_api_toxics, toxiproxy_types_show_every_attribute) {
  toxic t{"t", "slicer", direction::down, 1.0, {{"average_size", 10}}};
  api::fill_default_attributes(t);
  EXPECT_EQ(t.attributes, (json{{"average_size", 10}, {"size_variation", 0}, {"delay", 0}}));
  toxic own{"t", "stall", direction::down, 1.0, {{"after_bytes", 3}}};
  api::fill_default_attributes(own);
  EXPECT_EQ(own.attributes, (json{{"after_bytes", 3}}));
}

// Toxiproxy's timeout: data stops and, ms after the toxic applies, the
// connection closes, even one that never carried a byte.
TEST(relay_timed_faults, a_blackhole_with_ms_closes_an_idle_connection) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = start_relay(config_to(peer.where(), {"blackhole dir=down ms=200"}));
  ASSERT_TRUE(r);
  auto started = std::chrono::steady_clock::now();
  client c(r->listen_endpoint());
  auto got = c.read(1, 10s);
  auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_TRUE(got.data.empty());
  EXPECT_EQ(got.end, asio::error::eof) << got.end.message();
  EXPECT_GE(waited, 200ms);
  EXPECT_LT(waited, 5s);
  EXPECT_EQ(r->counter("blackhole.down"), 1u);
}

TEST(relay_timed_faults, a_blackhole_added_to_a_live_connection_starts_its_clock_then) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = start_relay(config_to(peer.where(), {}));
  ASSERT_TRUE(r);
  client c(r->listen_endpoint());
  c.send({'a', 'b'});
  EXPECT_EQ(c.read(2, 10s).data.size(), 2u);
  auto added = std::chrono::steady_clock::now();
  r->add_fault(parse_fault("blackhole dir=down ms=150").value());
  auto got = c.read(1, 10s);  // nothing more sent: only its clock closes it
  EXPECT_TRUE(got.data.empty());
  EXPECT_EQ(got.end, asio::error::eof) << got.end.message();
  EXPECT_GE(std::chrono::steady_clock::now() - added, 150ms);
}

TEST(relay_timed_faults, a_blackhole_with_a_byte_trigger_starts_its_clock_there) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = start_relay(config_to(peer.where(), {"blackhole dir=down after_bytes=2 ms=100"}));
  ASSERT_TRUE(r);
  client c(r->listen_endpoint());
  EXPECT_EQ(c.read(1, 300ms).end, asio::error::would_block);  // idle: no clock yet
  c.send({'a', 'b', 'c'});
  auto got = c.read(3, 10s);
  EXPECT_EQ(got.data.size(), 2u);
  EXPECT_EQ(got.end, asio::error::eof) << got.end.message();
}

// Bytes a blackhole swallowed cannot come back: removing it closes the
// connections it fired on (Toxiproxy closes on removing a timeout toxic),
// and leaves the others alone.
TEST(relay_timed_faults, removing_a_blackhole_closes_the_connections_it_swallowed) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = start_relay(config_to(peer.where(), {}));
  ASSERT_TRUE(r);
  client idle(r->listen_endpoint());
  client swallowed(r->listen_endpoint());
  auto id = r->add_fault(parse_fault("blackhole dir=down connection=1").value());
  swallowed.send({'a'});
  EXPECT_TRUE(eventually([&] { return r->counter("blackhole.down") == 1; }));
  EXPECT_TRUE(swallowed.read(1, 200ms).data.empty());
  ASSERT_TRUE(r->remove_fault(id));
  auto got = swallowed.read(1, 10s);
  EXPECT_TRUE(got.data.empty());
  EXPECT_EQ(got.end, asio::error::eof) << got.end.message();
  idle.send({'b'});
  EXPECT_EQ(idle.read(1, 10s).data, std::vector<char>{'b'});
}

TEST(relay_timed_faults, reset_with_ms_resets_that_long_after_its_trigger) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = start_relay(config_to(peer.where(), {"reset dir=down ms=200"}));
  ASSERT_TRUE(r);
  client c(r->listen_endpoint());
  auto sent = std::chrono::steady_clock::now();
  c.send({'a'});
  auto got = c.read(1, 10s);
  EXPECT_TRUE(got.data.empty());  // the byte that triggered it is dropped
  EXPECT_EQ(got.end, asio::error::connection_reset) << got.end.message();
  EXPECT_GE(std::chrono::steady_clock::now() - sent, 200ms);
}

}  // namespace
}  // namespace faultlane::relays::testing

namespace faultlane::relays::testing {
namespace {

// Each broken relay file gets one error placed at its line and key, in the
// shared reader's form ("<relays>:L:C: KEY: what"), with the place as data.
TEST(relay_yaml, every_mistake_is_one_error_with_its_line_and_key) {
  struct broken {
    const char* yaml;
    int line;
    const char* key;
    const char* what;
  };
  for (const auto& b : {
           broken{"sead: 7\nrelays:\n  - upstream: 127.0.0.1:9\n", 1, "sead",
                  "unknown key (known: seed, relays)"},
           broken{"seed: 1\nseed: 2\nrelays:\n  - upstream: 127.0.0.1:9\n", 2, "seed",
                  "duplicate key"},
           broken{"seed: -1\nrelays:\n  - upstream: 127.0.0.1:9\n", 1, "seed",
                  "must be a whole number"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    rail: two\n", 3, "relays[0].rail",
                  "must be a whole number"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    upstream: 127.0.0.1:8\n", 3,
                  "relays[0].upstream", "duplicate key"},
           broken{"relays:\n  - upstream: 127.0.0.1:99999\n", 2, "relays[0].upstream",
                  "'127.0.0.1:99999': bad port"},
           broken{"relays:\n  - upstream: [1, 2]\n", 2, "relays[0].upstream", "must be HOST:PORT"},
           broken{"relays:\n  - listen: 127.0.0.1:0\n", 2, "relays[0].upstream",
                  "required (HOST:PORT)"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    allow_non_loopback: maybe\n", 3,
                  "relays[0].allow_non_loopback", "must be true or false"},
           // Numbers and switches as in every faultlane file: no leading
           // zero, hex or `+`; no yes/on.
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    rail: 01\n", 3, "relays[0].rail",
                  "must be a whole number"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    seed: 0x10\n", 3, "relays[0].seed",
                  "must be a whole number"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    allow_non_loopback: yes\n", 3,
                  "relays[0].allow_non_loopback", "must be true or false"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n  - upstream: 127.0.0.1:9\n    protocol: "
                  "http\n",
                  4, "relays[1].protocol", "must be faultlane or raw, got http"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    faults:\n      - {type: stall, dir: up, "
                  "ms: 5}\n",
                  4, "relays[0].faults[0].ms", "stall does not take ms="},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    faults:\n      - {type: stall, dir: up, "
                  "dir: down}\n",
                  4, "relays[0].faults[0].dir", "duplicate key 'dir'"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    faults:\n      - {type: latency, dir: "
                  "up, ms: [5]}\n",
                  4, "relays[0].faults[0].ms", "ms must be a single value"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    faults:\n      - {type: latency, dir: "
                  "up, ms: 'a b'}\n",
                  4, "relays[0].faults[0].ms", "ms must be one word, got 'a b'"},
           broken{"relays:\n  - upstream: 127.0.0.1:9\n    faults:\n      - {type: latency, dir: "
                  "up}\n",
                  4, "relays[0].faults[0]", "latency needs ms="},
           broken{"relays: []\n", 1, "relays", "the list is empty"},
       }) {
    auto parsed = parse_relays_yaml(b.yaml);
    ASSERT_FALSE(parsed.ok()) << b.yaml;
    const auto& place = parsed.error().place;
    ASSERT_TRUE(place.has_value()) << parsed.error().message;
    EXPECT_EQ(place->at.file, "<relays>");
    EXPECT_EQ(place->at.line, b.line) << parsed.error().message;
    EXPECT_EQ(place->key, b.key) << parsed.error().message;
    EXPECT_EQ(place->what, b.what) << parsed.error().message;
    EXPECT_EQ(parsed.error().message,
              fmt::format("<relays>:{}:{}: {}: {}", b.line, place->at.column, b.key, b.what));
  }
  auto syntax = parse_relays_yaml("relays: [\n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message.rfind("<relays>:", 0), 0u) << syntax.error().message;
  auto fine = parse_relays_yaml(
      "seed: 3\nrelays:\n  - upstream: localhost:9\n    rail: 1\n    faults:\n"
      "      - {type: reset, dir: down, ms: 5}\n");
  ASSERT_TRUE(fine.ok()) << fine.error().message;
  EXPECT_EQ(fine.value()[0].upstream.address, "127.0.0.1");
  EXPECT_EQ(fine.value()[0].seed, 3u);
  EXPECT_EQ(fine.value()[0].faults[0].ms, 5u);
}

}  // namespace
}  // namespace faultlane::relays::testing
