// The control-plane wire format: length-prefixed RPC frames.
//
// A frame is a 24-byte header, then a payload: a request's payload is the
// method name (method_length bytes) followed by the call's body; a
// response's is its body, or for an error a message. Fields are big-endian
// at fixed offsets, the header carries a CRC32C, and decoding is total: any
// 24 bytes decode to a header or to exactly one typed rpc_decode_error,
// checked in a fixed order before any payload is read or allocated.
// Bodies are read with rpc_body_reader, which is total as well.
// docs/protocol.md gives every byte.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane::rpc {

inline constexpr std::uint32_t magic = 0x464C4350;  // "FLCP"
inline constexpr std::uint8_t protocol_version = 1;
inline constexpr std::size_t header_bytes = 24;
inline constexpr std::size_t method_length_max = 32;

enum class kind : std::uint8_t { request = 1, response = 2 };

// A response's status, one row a status: X(name, code, what a caller makes
// of it, meaning). Part of the protocol: never renumber, only append. The
// list generates the enum, rpc_status_max, to_string() and status_for(),
// and docs/protocol.md's status table (a test holds the page to it).
#define FAULTLANE_RPC_STATUSES(X)                                                         \
  X(ok, 0, ok, "the body is the method's answer")                                         \
  X(unknown_method, 1, invalid_argument, "no method by that name")                        \
  X(bad_request, 2, invalid_argument, "the body is not the method's arguments")           \
  X(busy, 3, busy, "the worker queue is full (`rpc_queue_max`); retry later")             \
  X(shutting_down, 4, shutting_down, "the service is stopping")                           \
  X(cancelled, 5, cancelled, "the call was queued, or running, when the service stopped") \
  X(too_large, 6, invalid_argument, "the answer would exceed 64 MiB")                     \
  X(internal_error, 7, internal_error, "the handler threw")

#define FAULTLANE_RPC_STATUS_ENUM(name, code, caller, meaning) name = (code),
enum class rpc_status : std::uint8_t { FAULTLANE_RPC_STATUSES(FAULTLANE_RPC_STATUS_ENUM) };
#undef FAULTLANE_RPC_STATUS_ENUM

#define FAULTLANE_RPC_STATUS_CODE(name, code, caller, meaning) (code),
inline constexpr std::uint8_t rpc_status_codes[] = {
    FAULTLANE_RPC_STATUSES(FAULTLANE_RPC_STATUS_CODE)};
#undef FAULTLANE_RPC_STATUS_CODE
// The last row's code: codes run 0..max in the list's order with no gap, so
// a decoder that accepts 0..max accepts exactly the statuses the list has.
inline constexpr std::uint8_t rpc_status_max = std::size(rpc_status_codes) - 1;
static_assert(codes_run_from_zero(rpc_status_codes), "rpc_status codes are 0, 1, 2, ... in order");

struct header {
  kind type = kind::request;
  std::uint8_t method_length = 0;      // requests: 1..method_length_max; responses: 0
  rpc_status status = rpc_status::ok;  // requests: always ok
  std::uint64_t request_id = 0;
  std::uint32_t payload_length = 0;  // bytes after the header

  friend bool operator==(const header&, const header&) = default;
};

enum class rpc_decode_error : std::uint8_t {
  truncated = 1,
  bad_magic,
  bad_version,
  bad_kind,
  bad_checksum,
  bad_method_length,  // a request without a name or a longer one; a response with one
  bad_status,         // a request with a status; a response with an unknown one
  length_too_large,   // more payload than the receiver takes
  length_short,       // a request's payload shorter than its method name
};

std::string_view to_string(rpc_status s) noexcept;
std::string_view to_string(rpc_decode_error e) noexcept;
// What a caller makes of a response status (ok stays ok).
faultlane::status status_for(rpc_status s) noexcept;

// A header, or the one rule it broke.
using decoded_header = wire::decoded<header, rpc_decode_error>;

using header_bytes_array = std::array<std::byte, header_bytes>;

// Writes and seals (checksums) a header. The caller keeps payload_length
// within what its peer takes.
header_bytes_array encode(const header& h) noexcept;
// Rewrites the checksum over the header's other bytes as they are now, for
// tests and corpora that build headers by hand.
void seal(std::span<std::byte, header_bytes> bytes) noexcept;
// `payload_max` is the receiver's bound on payload_length. Input shorter
// than a header is `truncated`; bytes past the header are ignored.
decoded_header decode(std::span<const std::byte> in, std::uint32_t payload_max) noexcept;

// A method name is 1..method_length_max bytes of [a-z0-9_].
bool valid_method_name(std::string_view name) noexcept;

// Builds a body: big-endian integers and u16- or u32-length-prefixed text.
class rpc_body_writer {
 public:
  rpc_body_writer& u8(std::uint8_t v);
  rpc_body_writer& u16(std::uint16_t v);
  rpc_body_writer& u32(std::uint32_t v);
  rpc_body_writer& u64(std::uint64_t v);
  // At most 65535 bytes (FL_ASSERT): callers bound what they write.
  rpc_body_writer& text(std::string_view s);
  std::vector<std::byte>& bytes() noexcept { return out_; }
  std::vector<std::byte> take() noexcept { return std::move(out_); }

 private:
  template <std::size_t Size>
  rpc_body_writer& append(std::uint64_t v);
  std::vector<std::byte> out_;
};

// Reads a body. Every read checks what is left; after the first failure
// every read fails and ok() is false. finish() also requires that nothing
// is left over. `what` names the first field that did not fit.
class rpc_body_reader {
 public:
  explicit rpc_body_reader(std::span<const std::byte> body) noexcept : in_(body) {}
  std::uint8_t u8(std::string_view field);
  std::uint16_t u16(std::string_view field);
  std::uint32_t u32(std::string_view field);
  std::uint64_t u64(std::string_view field);
  std::string text(std::string_view field);
  std::size_t left() const noexcept { return in_.size() - at_; }
  // Count fields: fails unless `count` items of at least `item_bytes_min`
  // each can still fit, so no caller reserves memory the body cannot fill.
  bool fits(std::uint64_t count, std::size_t item_bytes_min, std::string_view field);
  bool ok() const noexcept { return failed_.empty(); }
  // ok, with every byte read; or an invalid_argument error naming the field.
  result<void> finish() const;

 private:
  bool take(std::size_t n, std::string_view field);
  template <std::size_t Size>
  std::uint64_t next(std::string_view field);
  std::span<const std::byte> in_;
  std::size_t at_ = 0;
  std::string failed_;
};

// The error body: a message (u16-prefixed text, cut to fit).
std::vector<std::byte> error_body(std::string_view message);
std::string read_error_body(std::span<const std::byte> body);

}  // namespace faultlane::rpc
