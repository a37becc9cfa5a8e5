// The control plane's codec: headers round-trip, every decode rule on both
// sides of its bound, and the bodies of the built-in methods (rejections
// name their field; counts are checked before anything is reserved).
#include "faultlane/control/rpc_frame.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "faultlane/control/rpc_messages.hpp"
#include "faultlane/control/rpc_metrics.hpp"
#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/core/limits.hpp"

namespace faultlane::rpc {
namespace {

header request(std::uint8_t method_length = 4, std::uint32_t payload = 4) {
  return {kind::request, method_length, rpc_status::ok, 0x1122334455667788, payload};
}

// The header with byte `at` set to `value`, resealed so the checksum holds.
header_bytes_array edited(const header& h, std::size_t at, std::uint8_t value) {
  auto bytes = encode(h);
  bytes[at] = std::byte{value};
  seal(bytes);
  return bytes;
}

rpc_decode_error error_of(std::span<const std::byte> bytes, std::uint32_t payload_max = 1024) {
  auto d = decode(bytes, payload_max);
  EXPECT_FALSE(d.ok());
  return d.ok() ? rpc_decode_error::truncated : d.error();
}

TEST(rpc_frame, headers_round_trip_with_every_field_at_its_extremes) {
  for (const auto& h : {request(1, 1), request(method_length_max, limits::rpc_request_bytes_max),
                        header{kind::response, 0, rpc_status::internal_error, ~0ull, 0},
                        header{kind::response, 0, rpc_status::ok, 0, 0xffffffffu}}) {
    auto bytes = encode(h);
    auto back = decode(bytes, 0xffffffffu);
    ASSERT_TRUE(back.ok()) << to_string(back.error());
    EXPECT_EQ(back.value(), h);
  }
}

TEST(rpc_frame, the_layout_is_pinned_byte_by_byte) {
  auto bytes = encode(request(4, 9));
  const unsigned char want[20] = {'F',  'L',  'C',  'P',  1,    1,    4, 0, 0x11, 0x22,
                                  0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0, 0, 0,    9};
  EXPECT_EQ(std::memcmp(bytes.data(), want, sizeof want), 0);
}

TEST(rpc_frame, each_rule_is_its_own_error) {
  const auto h = request();
  auto bytes = encode(h);
  EXPECT_EQ(error_of(std::span(bytes).first(header_bytes - 1)), rpc_decode_error::truncated);
  EXPECT_EQ(error_of(edited(h, 0, 'X')), rpc_decode_error::bad_magic);
  EXPECT_EQ(error_of(edited(h, 4, 2)), rpc_decode_error::bad_version);
  auto damaged = bytes;
  damaged[9] ^= std::byte{1};  // not resealed
  EXPECT_EQ(error_of(damaged), rpc_decode_error::bad_checksum);
  EXPECT_EQ(error_of(edited(h, 5, 0)), rpc_decode_error::bad_kind);
  EXPECT_EQ(error_of(edited(h, 5, 3)), rpc_decode_error::bad_kind);
  EXPECT_EQ(error_of(edited(h, 7, 1)), rpc_decode_error::bad_status);  // a request's status
  EXPECT_EQ(error_of(encode(request(4, 3))), rpc_decode_error::length_short);
  EXPECT_TRUE(decode(encode(request(4, 4)), 1024).ok());
}

TEST(rpc_frame, method_length_on_both_sides_of_each_bound) {
  EXPECT_EQ(error_of(encode(request(0, 4))), rpc_decode_error::bad_method_length);
  EXPECT_TRUE(decode(encode(request(1, 4)), 1024).ok());
  EXPECT_TRUE(decode(encode(request(method_length_max, 64)), 1024).ok());
  EXPECT_EQ(error_of(encode(request(method_length_max + 1, 64))),
            rpc_decode_error::bad_method_length);
  header answer{kind::response, 0, rpc_status::ok, 1, 0};
  EXPECT_TRUE(decode(encode(answer), 1024).ok());
  answer.method_length = 1;
  EXPECT_EQ(error_of(encode(answer)), rpc_decode_error::bad_method_length);
}

TEST(rpc_frame, status_and_payload_length_on_both_sides_of_each_bound) {
  header answer{kind::response, 0, static_cast<rpc_status>(rpc_status_max), 1, 0};
  EXPECT_TRUE(decode(encode(answer), 1024).ok());
  EXPECT_EQ(error_of(edited(answer, 7, rpc_status_max + 1)), rpc_decode_error::bad_status);
  EXPECT_TRUE(decode(encode(request(4, 1024)), 1024).ok());
  EXPECT_EQ(error_of(encode(request(4, 1025)), 1024), rpc_decode_error::length_too_large);
}

TEST(rpc_frame, method_names_are_lowercase_words) {
  for (std::string_view ok :
       {std::string_view("a"), std::string_view("list_registrations"), std::string_view("x9_"),
        std::string_view("abcdefghijklmnopqrstuvwxyz012345")}) {
    EXPECT_TRUE(valid_method_name(ok)) << ok;
  }
  for (std::string_view bad :
       {std::string_view(""), std::string_view("Ping"), std::string_view("a-b"),
        std::string_view("a b"), std::string_view("\xc3\xa9"),
        std::string_view("abcdefghijklmnopqrstuvwxyz0123456")}) {
    EXPECT_FALSE(valid_method_name(bad)) << bad;
  }
}

TEST(rpc_body, the_reader_names_the_first_field_that_did_not_fit_and_left_over_bytes) {
  auto body = rpc_body_writer().u64(7).text("hi").take();
  rpc_body_reader full(body);
  EXPECT_EQ(full.u64("a"), 7u);
  EXPECT_EQ(full.text("b"), "hi");
  EXPECT_TRUE(full.finish().ok());
  rpc_body_reader short_read(std::span<const std::byte>(body).first(body.size() - 1));
  (void)short_read.u64("a");
  (void)short_read.text("name");
  ASSERT_FALSE(short_read.finish().ok());
  EXPECT_NE(short_read.finish().error().message.find("name"), std::string::npos);
  rpc_body_reader extra(body);
  (void)extra.u64("a");
  ASSERT_FALSE(extra.finish().ok());
  EXPECT_NE(extra.finish().error().message.find("left over"), std::string::npos);
}

segment_descriptor sample() {
  return {0x9c3e,
          {{"127.0.0.1", 41234}, {"127.0.0.2", 41235}},
          1u << 30,
          {{5, 4096, permission::remote_read, "weights"},
           {6, 65536, permission::remote_read_write, ""}}};
}

TEST(rpc_messages, bodies_round_trip) {
  auto d = decode_descriptor(encode_descriptor(sample()));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d.value(), sample());
  std::vector<named_registration> list{{1, "a"}, {2, std::string(300, 'x')}};
  EXPECT_EQ(decode_registrations(encode_registrations(list)).value(), list);
  stat_list stats{{"rpc.queue_depth", 3}, {"x", ~0ull}};
  EXPECT_EQ(decode_stats(encode_stats(stats)).value(), stats);
  EXPECT_EQ(decode_pattern(encode_pattern("^kv/[0-9]+$")).value(), "^kv/[0-9]+$");
  EXPECT_TRUE(decode_ready(encode_ready(true)).value());
  EXPECT_FALSE(decode_ready(encode_ready(false)).value());
}

void expect_rejected(const segment_descriptor& d, std::string_view field) {
  auto r = decode_descriptor(encode_descriptor(d));
  ASSERT_FALSE(r.ok()) << field;
  EXPECT_EQ(r.code(), status::invalid_argument);
  EXPECT_NE(r.error().message.find(field), std::string::npos) << r.error().message;
}

TEST(rpc_messages, a_descriptor_no_transport_could_send_is_refused_by_field) {
  auto d = sample();
  d.incarnation = 0;
  expect_rejected(d, "incarnation");
  d = sample();
  d.max_transfer_bytes = 0;
  expect_rejected(d, "max_transfer_bytes");
  d.max_transfer_bytes = limits::transfer_bytes_max + 1;
  expect_rejected(d, "max_transfer_bytes");
  d = sample();
  d.endpoints.clear();
  expect_rejected(d, "endpoint_count");
  d.endpoints.assign(limits::rail_count_max + 1, {"127.0.0.1", 1});
  expect_rejected(d, "endpoint_count");
  d = sample();
  d.endpoints[1].address = "0.0.0.0";
  expect_rejected(d, "endpoints[1].address");
  d.endpoints[1].address = "host";
  expect_rejected(d, "endpoints[1].address");
  d = sample();
  d.endpoints[0].port = 0;
  expect_rejected(d, "endpoints[0].port");
  d = sample();
  d.registrations[1].id = 0;
  expect_rejected(d, "registrations[1].id");
  d.registrations[1].id = d.registrations[0].id;
  expect_rejected(d, "appears twice");
  d = sample();
  d.registrations[0].length = 0;
  expect_rejected(d, "registrations[0].length");
  d = sample();
  d.registrations[0].perm = permission::local_only;
  expect_rejected(d, "registrations[0].permission");
  d = sample();
  d.registrations[0].name = "\xff";
  expect_rejected(d, "registrations[0].name");
}

TEST(rpc_messages, a_count_the_body_cannot_hold_is_refused_before_any_reservation) {
  // Four billion registrations claimed in a 13-byte body.
  auto body = rpc_body_writer().u32(0xffffffffu).take();
  auto r = decode_registrations(body);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot fit"), std::string::npos) << r.error().message;
  auto stats = decode_stats(rpc_body_writer().u32(2).text("a").u64(1).take());
  EXPECT_FALSE(stats.ok());
  auto d = encode_descriptor(sample());
  d.resize(d.size() - 1);
  EXPECT_FALSE(decode_descriptor(d).ok());
  EXPECT_FALSE(decode_empty(rpc_body_writer().u8(0).take()).ok());
  EXPECT_FALSE(decode_ready(rpc_body_writer().u8(2).take()).ok());
  auto long_pattern = rpc_body_writer().text(std::string(pattern_bytes_max + 1, 'a')).take();
  EXPECT_FALSE(decode_pattern(long_pattern).ok());
  EXPECT_TRUE(decode_pattern(rpc_body_writer().text(std::string(pattern_bytes_max, 'a')).take()));
}

// Rule: a descriptor cut inside its last registration is refused naming
// the field that ran out of bytes, never a value read past the end (a
// missing length read as 0 is not "length is 0"). The count still fits:
// the sample's second registration has 19 bytes, the least one takes.
TEST(rpc_messages, a_registration_cut_short_is_refused_naming_the_field_that_ran_out) {
  const auto whole = encode_descriptor(sample());
  for (std::size_t cut = 1; cut <= 7; ++cut) {
    auto body = whole;
    body.resize(body.size() - cut);
    auto r = decode_descriptor(body);
    ASSERT_FALSE(r.ok()) << cut;
    EXPECT_EQ(r.code(), status::invalid_argument);
    const std::string field = cut <= 2   ? "registrations.name"
                              : cut == 3 ? "registrations.permission"
                                         : "registrations.length";
    EXPECT_NE(r.error().message.find(field + " needs"), std::string::npos)
        << cut << " byte(s) cut: " << r.error().message;
  }
}

// Rule: an error body keeps a message of up to 1024 bytes whole and cuts a
// longer one to 1024.
TEST(rpc_body, error_messages_are_kept_to_1024_bytes_and_cut_past_them) {
  const std::string fits(1024, 'a');
  EXPECT_EQ(read_error_body(error_body(fits)), fits);
  EXPECT_EQ(read_error_body(error_body(fits + "b")), fits);
  EXPECT_EQ(read_error_body(error_body("")), "");
}

// Rule: fits() holds while `count` items of `item_bytes_min` fill at most
// what is left, and fails one item past it.
TEST(rpc_body, a_count_fits_exactly_what_is_left_and_not_one_more) {
  const std::vector<std::byte> body(12);
  EXPECT_TRUE(rpc_body_reader(body).fits(3, 4, "items"));
  rpc_body_reader over(body);
  EXPECT_FALSE(over.fits(4, 4, "items"));
  EXPECT_FALSE(over.ok());
  EXPECT_TRUE(rpc_body_reader(body).fits(1'000'000, 0, "empty items"));
}

// Rule: after the first failure every read fails and reads nothing, fits()
// included (even a count that would fit what is left), and finish() names
// the field that failed first.
TEST(rpc_body, after_a_failure_every_read_and_fits_fail_and_the_first_field_is_named) {
  const std::vector<std::byte> body{std::byte{1}, std::byte{2}, std::byte{3}, std::byte{4}};
  rpc_body_reader read_failed(body);
  EXPECT_EQ(read_failed.u64("first"), 0u);  // 8 bytes wanted, 4 left
  EXPECT_FALSE(read_failed.fits(1, 1, "count"));
  EXPECT_FALSE(read_failed.fits(0, 0, "nothing"));
  EXPECT_EQ(read_failed.u8("next"), 0u);
  EXPECT_EQ(read_failed.text("name"), "");
  EXPECT_EQ(read_failed.left(), 4u);
  ASSERT_FALSE(read_failed.finish().ok());
  EXPECT_NE(read_failed.finish().error().message.find("first"), std::string::npos);
  EXPECT_EQ(read_failed.finish().error().message.find("next"), std::string::npos);
  rpc_body_reader fits_failed(body);
  EXPECT_FALSE(fits_failed.fits(5, 1, "items"));
  EXPECT_FALSE(fits_failed.fits(1, 1, "items again"));
  EXPECT_EQ(fits_failed.u8("after"), 0u);
  EXPECT_EQ(fits_failed.left(), 4u);
  ASSERT_FALSE(fits_failed.finish().ok());
  EXPECT_NE(fits_failed.finish().error().message.find("items: 5 item(s)"), std::string::npos)
      << fits_failed.finish().error().message;
}

TEST(rpc_metrics, percentiles_are_within_a_sixteenth_and_the_max_is_exact) {
  latency_histogram h;
  EXPECT_EQ(h.percentile(50), 0u);
  for (std::uint64_t us = 1; us <= 1000; ++us) h.record(us);
  EXPECT_EQ(h.count(), 1000u);
  EXPECT_EQ(h.max(), 1000u);
  const auto p50 = h.percentile(50);
  const auto p99 = h.percentile(99);
  EXPECT_GE(p50, 500u);
  EXPECT_LE(p50, 500u + 500u / 16);
  EXPECT_GE(p99, 990u);
  EXPECT_LE(p99, 1000u);  // never above the max
  h.record(~0ull);
  EXPECT_EQ(h.percentile(100), ~0ull);
  latency_histogram small;
  for (std::uint64_t us : {0, 1, 15, 16, 17}) small.record(us);
  EXPECT_EQ(small.percentile(20), 0u);
  EXPECT_EQ(small.percentile(60), 15u);
  EXPECT_EQ(small.percentile(80), 16u);
}

// Rule: the stats method sends every figure of the metrics snapshot under
// its key of docs/control-plane.md ("Metrics"), each with its own value.
TEST(rpc_metrics, every_figure_of_the_snapshot_is_flattened_under_its_documented_key) {
  metrics_snapshot m;
  m.calls[{"ping", rpc_status::ok}] = 1;
  m.busy_rejections = 2;
  m.queue_depth = 3;
  m.queue_max = 4;
  m.workers = 5;
  m.connections_accepted = 6;
  m.connections_live = 7;
  m.malformed_frames = 8;
  m.queue_wait = {9, 10, 11, 12};
  m.handler_time = {13, 14, 15, 16};
  const auto flat = m.flatten();
  const std::map<std::string, std::uint64_t> by_key(flat.begin(), flat.end());
  EXPECT_EQ(by_key.size(), flat.size()) << "a key appears twice";
  const std::map<std::string, std::uint64_t> documented{
      {"rpc.calls.ping.ok", 1},
      {"rpc.busy_rejections", 2},
      {"rpc.queue_depth", 3},
      {"rpc.queue_max", 4},
      {"rpc.workers", 5},
      {"rpc.connections_accepted", 6},
      {"rpc.connections_live", 7},
      {"rpc.malformed_frames", 8},
      {"rpc.queue_wait_us.count", 9},
      {"rpc.queue_wait_us.p50", 10},
      {"rpc.queue_wait_us.p99", 11},
      {"rpc.queue_wait_us.max", 12},
      {"rpc.handler_time_us.count", 13},
      {"rpc.handler_time_us.p50", 14},
      {"rpc.handler_time_us.p99", 15},
      {"rpc.handler_time_us.max", 16},
  };
  EXPECT_EQ(by_key, documented);
}

}  // namespace
}  // namespace faultlane::rpc
