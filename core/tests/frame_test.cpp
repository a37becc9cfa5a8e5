#include "faultlane/core/frame.hpp"

#include "faultlane/core/crc32c.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <set>
#include <vector>

namespace faultlane::wire {
namespace {

constexpr std::uint64_t max_len = 1ull << 30;

request_frame sample_request() {
  request_frame f;
  f.op = opcode::write;
  f.request_id = 0x0102030405060708ull;
  f.registration_id = 0x1112131415161718ull;
  f.remote_offset = 0x2122232425262728ull;
  f.length = 4096;
  return f;
}

std::uint8_t byte_at(const request_bytes& b, std::size_t i) {
  return std::to_integer<std::uint8_t>(b[i]);
}

// Seals the header first, so the check under test is the one that fires
// (a header changed by hand fails its checksum otherwise).
decode_error request_error(request_bytes b, std::uint64_t limit = max_len) {
  seal(b);
  auto d = decode_request(b, limit);
  EXPECT_FALSE(d.ok());
  return d.ok() ? decode_error::truncated : d.error();
}

TEST(frame, request_round_trips_and_is_big_endian_at_fixed_offsets) {
  auto bytes = encode(sample_request());
  const std::uint8_t expected[request_frame_bytes] = {
      'F',  'L',  'R',  'Q',  0,    2,    2,    0,     // magic, version, opcode, flags
      1,    2,    3,    4,    5,    6,    7,    8,     // request_id
      0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,  // registration_id
      0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,  // remote_offset
      0,    0,    0,    0,    0,    0,    0x10, 0,     // length 4096
      0,    0,    0,    0,    0,    0,    0,    0};    // checksum (below), reserved
  for (std::size_t i = 0; i < 40; ++i) {
    EXPECT_EQ(byte_at(bytes, i), expected[i]) << "byte " << i;
  }
  for (std::size_t i = 44; i < request_frame_bytes; ++i) EXPECT_EQ(byte_at(bytes, i), 0) << i;
  // The checksum is CRC32C of the header with its own four bytes as zero,
  // big-endian at offset 40.
  auto zeroed = bytes;
  for (std::size_t i = 40; i < 44; ++i) zeroed[i] = std::byte{0};
  const std::uint32_t crc = crc32c(zeroed);
  EXPECT_EQ(byte_at(bytes, 40), crc >> 24);
  EXPECT_EQ(byte_at(bytes, 41), (crc >> 16) & 0xff);
  EXPECT_EQ(byte_at(bytes, 42), (crc >> 8) & 0xff);
  EXPECT_EQ(byte_at(bytes, 43), crc & 0xff);
  auto decoded = decode_request(bytes, max_len);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded.value(), sample_request());
}

TEST(frame, crc32c_matches_the_standard_check_value) {
  const char* text = "123456789";
  EXPECT_EQ(crc32c(std::as_bytes(std::span(text, 9))), 0xE3069283u);
  EXPECT_EQ(crc32c({}), 0u);
  // Continuing from an earlier result equals one pass over both parts.
  auto all = std::as_bytes(std::span(text, 9));
  EXPECT_EQ(crc32c(all.subspan(4), crc32c(all.first(4))), 0xE3069283u);
  // Every length 0..64 and every split point agree with a bitwise reference,
  // so the 8-byte steps and the byte tail of the fast path are both right.
  auto reference = [](std::span<const std::byte> d) {
    std::uint32_t c = ~0u;
    for (auto b : d) {
      c ^= std::to_integer<std::uint32_t>(b);
      for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
  };
  std::vector<std::byte> data(64);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<std::byte>(i * 37 + 11);
  for (std::size_t n = 0; n <= data.size(); ++n) {
    auto d = std::span(data).first(n);
    EXPECT_EQ(crc32c(d), reference(d)) << n;
    for (std::size_t cut = 0; cut <= n; ++cut) {
      ASSERT_EQ(crc32c(d.subspan(cut), crc32c(d.first(cut))), reference(d)) << n << "/" << cut;
    }
  }
}

// Every single-bit flip past magic and version is caught by the checksum,
// in both frame kinds: a damaged header is never a different valid frame.
TEST(frame, any_flipped_bit_after_the_preamble_is_a_checksum_error) {
  const auto request = encode(sample_request());
  for (std::size_t i = 6; i < request_frame_bytes; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bytes = request;
      bytes[i] ^= static_cast<std::byte>(1 << bit);
      auto d = decode_request(bytes, max_len);
      ASSERT_FALSE(d.ok()) << i << ":" << bit;
      EXPECT_EQ(d.error(), decode_error::bad_checksum) << i << ":" << bit;
    }
  }
  const auto response = encode(response_frame{wire_status::ok, 7, 4096});
  for (std::size_t i = 6; i < response_frame_bytes; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      auto bytes = response;
      bytes[i] ^= static_cast<std::byte>(1 << bit);
      auto d = decode_response(bytes);
      ASSERT_FALSE(d.ok()) << i << ":" << bit;
      EXPECT_EQ(d.error(), decode_error::bad_checksum) << i << ":" << bit;
    }
  }
}

TEST(frame, response_round_trips) {
  response_frame r{wire_status::stale_registration, 42, 1234};
  auto bytes = encode(r);
  EXPECT_EQ(std::to_integer<int>(bytes[0]), 'F');
  EXPECT_EQ(std::to_integer<int>(bytes[3]), 'S');
  EXPECT_EQ(std::to_integer<int>(bytes[7]), 6);  // status, low byte
  auto decoded = decode_response(bytes);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded.value(), r);
}

TEST(frame, truncated_input_is_rejected_for_both_kinds) {
  auto bytes = encode(sample_request());
  EXPECT_EQ(decode_request(std::span(bytes).first(request_frame_bytes - 1), max_len).error(),
            decode_error::truncated);
  EXPECT_EQ(decode_request({}, max_len).error(), decode_error::truncated);
  auto resp = encode(response_frame{});
  EXPECT_EQ(decode_response(std::span(resp).first(response_frame_bytes - 1)).error(),
            decode_error::truncated);
}

TEST(frame, bad_magic) {
  auto bytes = encode(sample_request());
  bytes[3] = std::byte{'S'};  // a response magic is not a request
  EXPECT_EQ(request_error(bytes), decode_error::bad_magic);
  auto resp = encode(response_frame{});
  resp[0] = std::byte{0};
  EXPECT_EQ(decode_response(resp).error(), decode_error::bad_magic);
}

TEST(frame, bad_version) {
  auto bytes = encode(sample_request());
  bytes[5] = std::byte{1};  // version 1 had no checksum
  EXPECT_EQ(request_error(bytes), decode_error::bad_version);
  bytes[5] = std::byte{0};
  EXPECT_EQ(request_error(bytes), decode_error::bad_version);
  bytes[5] = std::byte{3};
  EXPECT_EQ(request_error(bytes), decode_error::bad_version);
  auto resp = encode(response_frame{});
  resp[4] = std::byte{1};
  EXPECT_EQ(decode_response(resp).error(), decode_error::bad_version);
}

TEST(frame, bad_opcode) {
  auto bytes = encode(sample_request());
  for (int op : {0, 3, 0x81, 0xff}) {
    bytes[6] = static_cast<std::byte>(op);
    EXPECT_EQ(request_error(bytes), decode_error::bad_opcode) << op;
  }
}

TEST(frame, bad_flags) {
  auto bytes = encode(sample_request());
  for (int bit = 0; bit < 8; ++bit) {
    bytes[7] = static_cast<std::byte>(1 << bit);
    EXPECT_EQ(request_error(bytes), decode_error::bad_flags) << bit;
  }
}

TEST(frame, bad_reserved_in_every_reserved_byte) {
  for (std::size_t i = 44; i < 48; ++i) {
    auto bytes = encode(sample_request());
    bytes[i] = std::byte{1};
    EXPECT_EQ(request_error(bytes), decode_error::bad_reserved) << i;
  }
  for (std::size_t i = 28; i < 32; ++i) {
    auto resp = encode(response_frame{});
    resp[i] = std::byte{0x80};
    seal(resp);
    EXPECT_EQ(decode_response(resp).error(), decode_error::bad_reserved) << i;
  }
}

TEST(frame, zero_length) {
  auto f = sample_request();
  f.length = 0;
  EXPECT_EQ(request_error(encode(f)), decode_error::zero_length);
}

TEST(frame, length_at_the_limit_passes_and_one_past_is_rejected) {
  auto f = sample_request();
  f.remote_offset = 0;
  f.length = max_len;
  EXPECT_TRUE(decode_request(encode(f), max_len).ok());
  f.length = max_len + 1;
  EXPECT_EQ(request_error(encode(f)), decode_error::length_too_large);
}

TEST(frame, offset_plus_length_overflow) {
  auto f = sample_request();
  f.length = 16;
  f.remote_offset = std::numeric_limits<std::uint64_t>::max() - 16;
  EXPECT_TRUE(decode_request(encode(f), max_len).ok());  // ends exactly at 2^64 - 1
  f.remote_offset += 1;
  EXPECT_EQ(request_error(encode(f)), decode_error::offset_overflow);
}

TEST(frame, unknown_response_status) {
  for (int status : {static_cast<int>(wire_status_max) + 1, 0xff, 0xffff}) {
    auto resp = encode(response_frame{});
    resp[6] = static_cast<std::byte>(status >> 8);
    resp[7] = static_cast<std::byte>(status & 0xff);
    seal(resp);
    EXPECT_EQ(decode_response(resp).error(), decode_error::bad_status) << status;
  }
}

// Rule: every status up to wire_status_max decodes, the last one included.
TEST(frame, the_last_known_response_status_decodes) {
  auto resp = encode(response_frame{static_cast<wire_status>(wire_status_max), 7, 0});
  auto decoded = decode_response(resp);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(static_cast<std::uint16_t>(decoded.value().status), wire_status_max);
}

TEST(frame, errors_map_to_wire_statuses_and_names) {
  EXPECT_EQ(wire_status_for(decode_error::bad_version), wire_status::bad_version);
  EXPECT_EQ(wire_status_for(decode_error::length_too_large), wire_status::bad_length);
  EXPECT_EQ(wire_status_for(decode_error::bad_magic), wire_status::bad_frame);
  EXPECT_EQ(status_for(wire_status::stale_registration), faultlane::status::stale_registration);
  EXPECT_EQ(status_for(wire_status::bad_frame), faultlane::status::protocol_error);
  std::set<std::string_view> names;
  for (int e = 1; e <= static_cast<int>(decode_error::bad_checksum); ++e) {
    names.insert(to_string(static_cast<decode_error>(e)));
  }
  EXPECT_EQ(names.size(), static_cast<std::size_t>(decode_error::bad_checksum));
  EXPECT_EQ(wire_status_for(decode_error::bad_checksum), wire_status::bad_checksum);
  EXPECT_EQ(status_for(wire_status::bad_checksum), faultlane::status::protocol_error);
  EXPECT_TRUE(is_header_rejection(wire_status::bad_checksum));
  EXPECT_TRUE(is_header_rejection(wire_status::bad_frame));
  EXPECT_FALSE(is_header_rejection(wire_status::stale_registration));
  EXPECT_FALSE(is_header_rejection(wire_status::ok));
  // One mapping each way for the statuses a target answers with.
  for (auto s : {faultlane::status::stale_registration, faultlane::status::range_rejected,
                 faultlane::status::permission_denied, faultlane::status::shutting_down}) {
    EXPECT_EQ(status_for(wire_status_for(s)), s) << to_string(s);
  }
  EXPECT_EQ(names.count("unknown"), 0u);
  for (int s = 0; s <= wire_status_max; ++s) {
    EXPECT_NE(to_string(static_cast<wire_status>(s)), "unknown");
  }
}

TEST(frame, field_layouts_tile_the_frames) {
  std::size_t next = 0;
  for (const auto& f : request_fields()) {
    EXPECT_EQ(f.offset, next) << f.name;
    next += f.size;
  }
  EXPECT_EQ(next, request_frame_bytes);
  next = 0;
  for (const auto& f : response_fields()) {
    EXPECT_EQ(f.offset, next) << f.name;
    next += f.size;
  }
  EXPECT_EQ(next, response_frame_bytes);
  ASSERT_TRUE(find_request_field("length").has_value());
  EXPECT_EQ(find_request_field("length")->offset, 32u);
  EXPECT_FALSE(find_request_field("nonsense").has_value());
  EXPECT_EQ(find_response_field("status")->offset, 6u);
}

}  // namespace
}  // namespace faultlane::wire
