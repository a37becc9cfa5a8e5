// The data-plane wire format: fixed-size request and response frames.
//
// Every field is encoded explicitly, big-endian, at a fixed offset (no struct
// memcpy, no padding), and decoding is total: any 48 or 32 bytes decode to a
// frame or to exactly one typed decode_error, checked in a fixed order before
// anything is allocated. docs/protocol.md gives every byte.
//
// One codec serves the core, the relays' frame decoder and the fuzz target.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <variant>

#include "faultlane/core/status.hpp"

namespace faultlane::wire {

inline constexpr std::uint32_t request_magic = 0x464C5251;   // "FLRQ"
inline constexpr std::uint32_t response_magic = 0x464C5253;  // "FLRS"
// Version 2 added the header checksum (CRC32C) in the first half of what
// was the reserved field.
inline constexpr std::uint16_t protocol_version = 2;
inline constexpr std::size_t request_frame_bytes = 48;
inline constexpr std::size_t response_frame_bytes = 32;

enum class opcode : std::uint8_t { read = 1, write = 2 };

// Request flags: none are defined in version 1, so any set bit is rejected.
inline constexpr std::uint8_t request_flags_known = 0;

// Status carried in a response, one row a status: X(name, code, what the
// initiator makes of it, meaning). Values are part of the protocol: never
// renumber, only append. The list generates the enum, wire_status_max,
// to_string(), status_for() and wire_status_for(status), and
// docs/protocol.md's status table (a test holds the page to it). A row read
// as protocol_error is a header rejection: a target sends it only for a
// header it could not decode.
#define FAULTLANE_WIRE_STATUSES(X)                                                          \
  X(ok, 0, ok, "done")                                                                      \
  X(bad_version, 1, protocol_error, "the request's version is not 2")                       \
  X(bad_opcode, 2, protocol_error, "the opcode is not READ or WRITE")                       \
  X(bad_length, 3, protocol_error,                                                          \
    "length is 0, above the target's limit, or offset+length overflows")                    \
  X(range_rejected, 4, range_rejected, "the range is outside the registration")             \
  X(permission_denied, 5, permission_denied, "the registration does not allow this access") \
  X(stale_registration, 6, stale_registration,                                              \
    "the registration id is unknown (unregistered, or from an earlier incarnation)")        \
  X(shutting_down, 7, shutting_down, "the target is closing")                               \
  X(internal_error, 8, internal_error, "the target failed while serving")                   \
  X(bad_frame, 9, protocol_error, "any other malformed header (magic, flags, reserved)")    \
  X(bad_checksum, 10, protocol_error, "the header's checksum does not match: it was damaged")

#define FAULTLANE_WIRE_STATUS_ENUM(name, code, initiator, meaning) name = (code),
enum class wire_status : std::uint16_t { FAULTLANE_WIRE_STATUSES(FAULTLANE_WIRE_STATUS_ENUM) };
#undef FAULTLANE_WIRE_STATUS_ENUM

#define FAULTLANE_WIRE_STATUS_CODE(name, code, initiator, meaning) (code),
inline constexpr std::uint16_t wire_status_codes[] = {
    FAULTLANE_WIRE_STATUSES(FAULTLANE_WIRE_STATUS_CODE)};
#undef FAULTLANE_WIRE_STATUS_CODE
// The last row's code: codes run 0..max in the list's order with no gap, so
// a decoder that accepts 0..max accepts exactly the statuses the list has.
inline constexpr std::uint16_t wire_status_max = std::size(wire_status_codes) - 1;
static_assert(codes_run_from_zero(wire_status_codes),
              "wire_status codes are 0, 1, 2, ... in order");

struct request_frame {
  opcode op = opcode::read;
  std::uint8_t flags = 0;
  std::uint64_t request_id = 0;
  std::uint64_t registration_id = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t length = 0;

  friend bool operator==(const request_frame&, const request_frame&) = default;
};

struct response_frame {
  wire_status status = wire_status::ok;
  std::uint64_t request_id = 0;
  std::uint64_t committed_bytes = 0;

  friend bool operator==(const response_frame&, const response_frame&) = default;
};

// Each rejection has its own code, so a test, a relay tap or a log line can
// say exactly which rule a frame broke.
enum class decode_error : std::uint8_t {
  truncated = 1,
  bad_magic,
  bad_version,
  bad_opcode,
  bad_flags,
  bad_reserved,
  zero_length,
  length_too_large,
  offset_overflow,
  bad_status,
  bad_checksum,  // the header's CRC32C does not match: it was damaged
};

std::string_view to_string(opcode op) noexcept;
std::string_view to_string(wire_status s) noexcept;
std::string_view to_string(decode_error e) noexcept;

// What a target answers for a request it rejects while decoding.
wire_status wire_status_for(decode_error e) noexcept;
// True for the statuses a target sends only for a header it could not
// decode (always with request id 0: it had no id it could trust): those the
// initiator reads as protocol_error.
bool is_header_rejection(wire_status s) noexcept;
// What the initiator makes of a response status.
faultlane::status status_for(wire_status s) noexcept;
// What a target answers for a request it rejects after decoding it (the
// inverse of status_for for the statuses a target sends).
wire_status wire_status_for(faultlane::status s) noexcept;

// A frame, or the one rule it broke. The control plane (rpc_frame.hpp)
// uses it with its own error type.
template <typename Frame, typename Error = decode_error>
class [[nodiscard]] decoded {
 public:
  decoded(Frame f) : state_(f) {}
  decoded(Error e) : state_(e) {}
  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  const Frame& value() const {
    FL_ASSERT(ok());
    return std::get<0>(state_);
  }
  Error error() const {
    FL_ASSERT(!ok());
    return std::get<1>(state_);
  }

 private:
  std::variant<Frame, Error> state_;
};

using request_bytes = std::array<std::byte, request_frame_bytes>;
using response_bytes = std::array<std::byte, response_frame_bytes>;

void encode(const request_frame& frame, std::span<std::byte, request_frame_bytes> out) noexcept;
void encode(const response_frame& frame, std::span<std::byte, response_frame_bytes> out) noexcept;
request_bytes encode(const request_frame& frame) noexcept;
response_bytes encode(const response_frame& frame) noexcept;

// Rewrites the checksum field to match the header's other bytes as they are
// now. encode() seals what it writes; this is for tests, corpora and tools
// that build a header by hand and want it checked field by field.
void seal(std::span<std::byte, request_frame_bytes> header) noexcept;
void seal(std::span<std::byte, response_frame_bytes> header) noexcept;

// `transfer_bytes_max` is the receiver's limit: a longer request is rejected
// before any buffer is looked up. Input shorter than a frame is `truncated`;
// extra bytes past the frame are ignored (the caller reads frames whole).
decoded<request_frame> decode_request(std::span<const std::byte> in,
                                      std::uint64_t transfer_bytes_max) noexcept;
decoded<response_frame> decode_response(std::span<const std::byte> in) noexcept;

// Field layout, shared with the relays (which corrupt and stall at named
// fields) and with docs/protocol.md.
struct field_layout {
  std::string_view name;
  std::size_t offset;
  std::size_t size;
};
std::span<const field_layout> request_fields() noexcept;
std::span<const field_layout> response_fields() noexcept;
std::optional<field_layout> find_request_field(std::string_view name) noexcept;
std::optional<field_layout> find_response_field(std::string_view name) noexcept;

}  // namespace faultlane::wire
