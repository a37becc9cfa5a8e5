// Properties of the frame codec: valid frames round-trip, and decoding any
// bytes is total and canonical (a decoded frame re-encodes to its bytes).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstring>
#include <limits>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "planted.hpp"

namespace faultlane::props {
namespace {

namespace wire = faultlane::wire;
constexpr std::uint64_t limit = 1ull << 30;

rc::Gen<wire::request_frame> valid_request() {
  return rc::gen::exec([] {
    wire::request_frame f;
    f.op = *rc::gen::element(wire::opcode::read, wire::opcode::write);
    f.request_id = *rc::gen::arbitrary<std::uint64_t>();
    f.registration_id = *rc::gen::arbitrary<std::uint64_t>();
    f.length = *rc::gen::inRange<std::uint64_t>(1, limit + 1);
    auto offset_max = std::numeric_limits<std::uint64_t>::max() - f.length;
    f.remote_offset =
        *rc::gen::oneOf(rc::gen::inRange<std::uint64_t>(0, 1 << 20),
                        rc::gen::inRange<std::uint64_t>(0, offset_max), rc::gen::just(offset_max));
    return f;
  });
}

rc::Gen<wire::response_frame> valid_response() {
  return rc::gen::exec([] {
    wire::response_frame f;
    f.status = static_cast<wire::wire_status>(*rc::gen::inRange<int>(0, wire::wire_status_max + 1));
    f.request_id = *rc::gen::arbitrary<std::uint64_t>();
    f.committed_bytes = *rc::gen::arbitrary<std::uint64_t>();
    return f;
  });
}

// Bytes that are sometimes noise and often a valid frame with a few bytes
// changed, so every decoder rule is reached.
rc::Gen<std::vector<std::uint8_t>> frame_like_bytes() {
  auto noise = rc::gen::container<std::vector<std::uint8_t>>(rc::gen::arbitrary<std::uint8_t>());
  auto mutated = rc::gen::exec([] {
    bool request = *rc::gen::arbitrary<bool>();
    std::vector<std::uint8_t> bytes;
    if (request) {
      auto b = wire::encode(*valid_request());
      for (auto x : b) bytes.push_back(std::to_integer<std::uint8_t>(x));
    } else {
      auto b = wire::encode(*valid_response());
      for (auto x : b) bytes.push_back(std::to_integer<std::uint8_t>(x));
    }
    // Each edit flips bits in one byte of one named field, so every field
    // (and so every decoder rule) is hit about equally often.
    auto fields = request ? wire::request_fields() : wire::response_fields();
    auto edits = *uniform_in_range(0, 3);
    for (int i = 0; i < edits; ++i) {
      const auto& field = fields[*uniform_in_range<std::size_t>(0, fields.size())];
      auto at = field.offset + *uniform_in_range<std::size_t>(0, field.size);
      bytes[at] ^= static_cast<std::uint8_t>(*uniform_in_range(1, 256));
    }
    // Mostly resealed, so the rules behind the checksum are reached too;
    // sometimes not, so the checksum rule is.
    if (edits > 0 && *rc::gen::weightedElement<bool>({{3, true}, {1, false}})) {
      auto* raw = reinterpret_cast<std::byte*>(bytes.data());
      if (request) {
        wire::seal(std::span<std::byte, wire::request_frame_bytes>(raw, wire::request_frame_bytes));
      } else {
        wire::seal(
            std::span<std::byte, wire::response_frame_bytes>(raw, wire::response_frame_bytes));
      }
    }
    auto cut = *rc::gen::inRange<std::size_t>(0, bytes.size() + 1);
    if (*rc::gen::weightedElement<bool>({{1, true}, {4, false}})) bytes.resize(cut);
    return bytes;
  });
  return rc::gen::weightedOneOf<std::vector<std::uint8_t>>({{1, noise}, {3, mutated}});
}

// The codec under test, as a value so a planted variant can stand in.
struct codec {
  wire::request_bytes (*encode_request)(const wire::request_frame&);
  wire::decoded<wire::request_frame> (*decode_request)(std::span<const std::byte>, std::uint64_t);
};

const codec real_codec{[](const wire::request_frame& f) { return wire::encode(f); },
                       &wire::decode_request};

void request_round_trips(const codec& c, const wire::request_frame& f) {
  auto decoded = c.decode_request(c.encode_request(f), limit);
  RC_ASSERT(decoded.ok());
  RC_ASSERT(decoded.value() == f);
}

void decoding_is_total_and_canonical(const codec& c, const std::vector<std::uint8_t>& bytes) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  auto decoded = c.decode_request(in, limit);
  if (!decoded.ok()) {
    RC_ASSERT(wire::to_string(decoded.error()) != "unknown");
    return;
  }
  RC_ASSERT(bytes.size() >= wire::request_frame_bytes);
  auto again = c.encode_request(decoded.value());
  RC_ASSERT(std::memcmp(again.data(), bytes.data(), wire::request_frame_bytes) == 0);
}

RC_GTEST_PROP(codec_properties, request_round_trips, ()) {
  request_round_trips(real_codec, *valid_request());
}

RC_GTEST_PROP(codec_properties, response_round_trips, ()) {
  auto f = *valid_response();
  auto decoded = wire::decode_response(wire::encode(f));
  RC_ASSERT(decoded.ok());
  RC_ASSERT(decoded.value() == f);
}

RC_GTEST_PROP(codec_properties, request_decoding_is_total_and_canonical, ()) {
  decoding_is_total_and_canonical(real_codec, *frame_like_bytes());
}

RC_GTEST_PROP(codec_properties, response_decoding_is_total_and_canonical, ()) {
  auto bytes = *frame_like_bytes();
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size());
  auto decoded = wire::decode_response(in);
  if (decoded.ok()) {
    auto again = wire::encode(decoded.value());
    RC_ASSERT(std::memcmp(again.data(), bytes.data(), wire::response_frame_bytes) == 0);
  } else {
    RC_ASSERT(wire::to_string(decoded.error()) != "unknown");
  }
}

// Planted: an encoder that keeps only the low 32 bits of the request id.
const codec narrow_request_id_codec{[](const wire::request_frame& f) {
                                      auto copy = f;
                                      copy.request_id &= 0xffffffffu;
                                      return wire::encode(copy);
                                    },
                                    &wire::decode_request};

// Planted: a decoder that ignores the reserved field (accepts any value).
const codec lax_reserved_codec{
    [](const wire::request_frame& f) { return wire::encode(f); },
    [](std::span<const std::byte> in, std::uint64_t max) -> wire::decoded<wire::request_frame> {
      if (in.size() < wire::request_frame_bytes) return wire::decode_error::truncated;
      wire::request_bytes copy;
      std::memcpy(copy.data(), in.data(), copy.size());
      std::memset(copy.data() + 44, 0, 4);
      wire::seal(copy);
      return wire::decode_request(copy, max);
    }};

TEST(codec_properties_planted, round_trip_catches_a_narrowed_field) {
  EXPECT_TRUE(finds_counterexample(
      "narrow request id", [] { request_round_trips(narrow_request_id_codec, *valid_request()); }));
}

TEST(codec_properties_planted, canonical_decoding_catches_an_ignored_field) {
  EXPECT_TRUE(finds_counterexample("lax reserved", [] {
    decoding_is_total_and_canonical(lax_reserved_codec, *frame_like_bytes());
  }));
}

}  // namespace
}  // namespace faultlane::props
