// The frame codec; see frame.hpp and docs/protocol.md.
#include "faultlane/core/frame.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>

#include "faultlane/core/big_endian.hpp"
#include "faultlane/core/crc32c.hpp"

namespace faultlane::wire {
namespace {

constexpr std::array<field_layout, 10> request_layout{{
    {"magic", 0, 4},
    {"version", 4, 2},
    {"opcode", 6, 1},
    {"flags", 7, 1},
    {"request_id", 8, 8},
    {"registration_id", 16, 8},
    {"remote_offset", 24, 8},
    {"length", 32, 8},
    {"checksum", 40, 4},
    {"reserved", 44, 4},
}};

constexpr std::array<field_layout, 7> response_layout{{
    {"magic", 0, 4},
    {"version", 4, 2},
    {"status", 6, 2},
    {"request_id", 8, 8},
    {"committed_bytes", 16, 8},
    {"checksum", 24, 4},
    {"reserved", 28, 4},
}};

constexpr std::size_t request_checksum_offset = 40;
constexpr std::size_t response_checksum_offset = 24;
constexpr std::size_t checksum_bytes = 4;

static_assert(request_layout.back().offset + request_layout.back().size == request_frame_bytes);
static_assert(response_layout.back().offset + response_layout.back().size == response_frame_bytes);

using detail::get;
using detail::put;

// CRC32C of a whole header with its checksum field counted as zero bytes:
// over a copy with the field zeroed, in one pass (three calls over the
// pieces around the field cost twice the instructions).
template <std::size_t Size>
std::uint32_t header_checksum(const std::byte* frame, std::size_t checksum_offset) noexcept {
  FL_ASSERT(checksum_offset + checksum_bytes <= Size);
  std::array<std::byte, Size> zeroed;
  std::memcpy(zeroed.data(), frame, Size);
  std::memset(zeroed.data() + checksum_offset, 0, checksum_bytes);
  return crc32c(zeroed);
}

// The header checks both frame kinds share: magic, then version, then the
// checksum, so no field of a damaged header is ever interpreted.
template <std::size_t Size>
std::optional<decode_error> check_preamble(const std::byte* in, std::uint32_t magic,
                                           std::size_t checksum_offset) noexcept {
  if (get<4>(in) != magic) return decode_error::bad_magic;
  if (get<2>(in + 4) != protocol_version) return decode_error::bad_version;
  if (get<4>(in + checksum_offset) != header_checksum<Size>(in, checksum_offset)) {
    return decode_error::bad_checksum;
  }
  return std::nullopt;
}

std::optional<field_layout> find_field(std::span<const field_layout> fields,
                                       std::string_view name) noexcept {
  FL_ASSERT(!fields.empty());
  auto it = std::find_if(fields.begin(), fields.end(),
                         [&](const field_layout& f) { return f.name == name; });
  if (it == fields.end()) return std::nullopt;
  return *it;
}

}  // namespace

void encode(const request_frame& frame, std::span<std::byte, request_frame_bytes> out) noexcept {
  // Tests write malformed headers byte by byte; the encoder only writes frames
  // with an opcode the protocol has.
  FL_ASSERT(frame.op == opcode::read || frame.op == opcode::write);
  std::byte* p = out.data();
  put<4>(p + 0, request_magic);
  put<2>(p + 4, protocol_version);
  put<1>(p + 6, static_cast<std::uint8_t>(frame.op));
  put<1>(p + 7, frame.flags);
  put<8>(p + 8, frame.request_id);
  put<8>(p + 16, frame.registration_id);
  put<8>(p + 24, frame.remote_offset);
  put<8>(p + 32, frame.length);
  put<4>(p + 44, 0);
  put<4>(p + request_checksum_offset,
         header_checksum<request_frame_bytes>(p, request_checksum_offset));
}

void encode(const response_frame& frame, std::span<std::byte, response_frame_bytes> out) noexcept {
  FL_ASSERT(static_cast<std::uint16_t>(frame.status) <= wire_status_max);
  std::byte* p = out.data();
  put<4>(p + 0, response_magic);
  put<2>(p + 4, protocol_version);
  put<2>(p + 6, static_cast<std::uint16_t>(frame.status));
  put<8>(p + 8, frame.request_id);
  put<8>(p + 16, frame.committed_bytes);
  put<4>(p + 28, 0);
  put<4>(p + response_checksum_offset,
         header_checksum<response_frame_bytes>(p, response_checksum_offset));
}

void seal(std::span<std::byte, request_frame_bytes> header) noexcept {
  put<4>(header.data() + request_checksum_offset,
         header_checksum<request_frame_bytes>(header.data(), request_checksum_offset));
}

void seal(std::span<std::byte, response_frame_bytes> header) noexcept {
  put<4>(header.data() + response_checksum_offset,
         header_checksum<response_frame_bytes>(header.data(), response_checksum_offset));
}

request_bytes encode(const request_frame& frame) noexcept {
  request_bytes bytes;
  encode(frame, std::span<std::byte, request_frame_bytes>(bytes));
  return bytes;
}

response_bytes encode(const response_frame& frame) noexcept {
  response_bytes bytes;
  encode(frame, std::span<std::byte, response_frame_bytes>(bytes));
  return bytes;
}

decoded<request_frame> decode_request(std::span<const std::byte> in,
                                      std::uint64_t transfer_bytes_max) noexcept {
  FL_ASSERT(transfer_bytes_max > 0);  // a receiver that takes nothing is misconfigured
  if (in.size() < request_frame_bytes) return decode_error::truncated;
  const std::byte* p = in.data();
  if (auto e = check_preamble<request_frame_bytes>(p, request_magic, request_checksum_offset)) {
    return *e;
  }
  auto op = get<1>(p + 6);
  if (op != static_cast<std::uint8_t>(opcode::read) &&
      op != static_cast<std::uint8_t>(opcode::write)) {
    return decode_error::bad_opcode;
  }
  auto flags = static_cast<std::uint8_t>(get<1>(p + 7));
  if ((flags & ~request_flags_known) != 0) return decode_error::bad_flags;
  if (get<4>(p + 44) != 0) return decode_error::bad_reserved;

  request_frame frame;
  frame.op = static_cast<opcode>(op);
  frame.flags = flags;
  frame.request_id = get<8>(p + 8);
  frame.registration_id = get<8>(p + 16);
  frame.remote_offset = get<8>(p + 24);
  frame.length = get<8>(p + 32);
  if (frame.length == 0) return decode_error::zero_length;
  if (frame.length > transfer_bytes_max) return decode_error::length_too_large;
  if (frame.remote_offset > std::numeric_limits<std::uint64_t>::max() - frame.length) {
    return decode_error::offset_overflow;
  }
  return frame;
}

decoded<response_frame> decode_response(std::span<const std::byte> in) noexcept {
  FL_ASSERT(in.data() != nullptr || in.empty());
  if (in.size() < response_frame_bytes) return decode_error::truncated;
  const std::byte* p = in.data();
  if (auto e = check_preamble<response_frame_bytes>(p, response_magic, response_checksum_offset)) {
    return *e;
  }
  auto status = get<2>(p + 6);
  if (status > wire_status_max) return decode_error::bad_status;
  if (get<4>(p + 28) != 0) return decode_error::bad_reserved;

  response_frame frame;
  frame.status = static_cast<wire_status>(status);
  frame.request_id = get<8>(p + 8);
  frame.committed_bytes = get<8>(p + 16);
  return frame;
}

std::span<const field_layout> request_fields() noexcept { return request_layout; }
std::span<const field_layout> response_fields() noexcept { return response_layout; }

std::optional<field_layout> find_request_field(std::string_view name) noexcept {
  FL_ASSERT(request_layout.size() == 10);  // the layout docs/protocol.md gives
  return find_field(request_layout, name);
}

std::optional<field_layout> find_response_field(std::string_view name) noexcept {
  FL_ASSERT(response_layout.size() == 7);
  return find_field(response_layout, name);
}

std::string_view to_string(opcode op) noexcept {
  switch (op) {
    case opcode::read: return "read";
    case opcode::write: return "write";
  }
  return "unknown";
}

std::string_view to_string(wire_status s) noexcept {
#define FAULTLANE_WIRE_STATUS_NAME(name, code, initiator, meaning) \
  case wire_status::name: return #name;
  switch (s) { FAULTLANE_WIRE_STATUSES(FAULTLANE_WIRE_STATUS_NAME) }
#undef FAULTLANE_WIRE_STATUS_NAME
  return "unknown";
}

std::string_view to_string(decode_error e) noexcept {
  switch (e) {
    case decode_error::truncated: return "truncated";
    case decode_error::bad_magic: return "bad_magic";
    case decode_error::bad_version: return "bad_version";
    case decode_error::bad_opcode: return "bad_opcode";
    case decode_error::bad_flags: return "bad_flags";
    case decode_error::bad_reserved: return "bad_reserved";
    case decode_error::zero_length: return "zero_length";
    case decode_error::length_too_large: return "length_too_large";
    case decode_error::offset_overflow: return "offset_overflow";
    case decode_error::bad_status: return "bad_status";
    case decode_error::bad_checksum: return "bad_checksum";
  }
  return "unknown";
}

wire_status wire_status_for(decode_error e) noexcept {
  // A target answers only for a whole header, never a truncated one, and
  // never with a status it has no code for.
  FL_ASSERT(e != decode_error::truncated && e != decode_error::bad_status);
  switch (e) {
    case decode_error::bad_version: return wire_status::bad_version;
    case decode_error::bad_opcode: return wire_status::bad_opcode;
    case decode_error::zero_length:
    case decode_error::length_too_large:
    case decode_error::offset_overflow: return wire_status::bad_length;
    case decode_error::bad_checksum: return wire_status::bad_checksum;
    default: return wire_status::bad_frame;
  }
}

faultlane::status status_for(wire_status s) noexcept {
  struct reading {
    wire_status wire;
    faultlane::status read;
  };
#define FAULTLANE_WIRE_STATUS_READ(name, code, initiator, meaning) \
  reading{wire_status::name, faultlane::status::initiator},
  constexpr reading readings[] = {FAULTLANE_WIRE_STATUSES(FAULTLANE_WIRE_STATUS_READ)};
#undef FAULTLANE_WIRE_STATUS_READ
  for (const auto& r : readings) {
    if (r.wire == s) return r.read;
  }
  return faultlane::status::protocol_error;
}

bool is_header_rejection(wire_status s) noexcept {
  return status_for(s) == faultlane::status::protocol_error;
}

// The one row the initiator reads as `s`, unless that row is a header
// rejection; internal_error when no row is.
wire_status wire_status_for(faultlane::status s) noexcept {
  if (s == faultlane::status::protocol_error) return wire_status::internal_error;
#define FAULTLANE_WIRE_STATUS_ANSWER(name, code, initiator, meaning) \
  if (s == faultlane::status::initiator) return wire_status::name;
  FAULTLANE_WIRE_STATUSES(FAULTLANE_WIRE_STATUS_ANSWER)
#undef FAULTLANE_WIRE_STATUS_ANSWER
  return wire_status::internal_error;
}

}  // namespace faultlane::wire
