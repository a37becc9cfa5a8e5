// The control-plane frame codec; see rpc_frame.hpp and docs/protocol.md.
#include "faultlane/control/rpc_frame.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "faultlane/core/big_endian.hpp"
#include "faultlane/core/crc32c.hpp"

namespace faultlane::rpc {
namespace {

// Offsets: magic 0, version 4, kind 5, method_length 6, status 7,
// request_id 8, payload_length 16, checksum 20.
constexpr std::size_t checksum_offset = 20;
static_assert(checksum_offset + 4 == header_bytes);

using detail::get;
using detail::put;

std::uint32_t checksum_of(const std::byte* header) noexcept {
  return crc32c({header, checksum_offset});
}

}  // namespace

std::string_view to_string(rpc_status s) noexcept {
#define FAULTLANE_RPC_STATUS_NAME(name, code, caller, meaning) \
  case rpc_status::name: return #name;
  switch (s) { FAULTLANE_RPC_STATUSES(FAULTLANE_RPC_STATUS_NAME) }
#undef FAULTLANE_RPC_STATUS_NAME
  return "unknown";
}

std::string_view to_string(rpc_decode_error e) noexcept {
  switch (e) {
    case rpc_decode_error::truncated: return "truncated";
    case rpc_decode_error::bad_magic: return "bad_magic";
    case rpc_decode_error::bad_version: return "bad_version";
    case rpc_decode_error::bad_kind: return "bad_kind";
    case rpc_decode_error::bad_checksum: return "bad_checksum";
    case rpc_decode_error::bad_method_length: return "bad_method_length";
    case rpc_decode_error::bad_status: return "bad_status";
    case rpc_decode_error::length_too_large: return "length_too_large";
    case rpc_decode_error::length_short: return "length_short";
  }
  return "unknown";
}

faultlane::status status_for(rpc_status s) noexcept {
  struct reading {
    rpc_status rpc;
    status read;
  };
#define FAULTLANE_RPC_STATUS_READ(name, code, caller, meaning) \
  reading{rpc_status::name, status::caller},
  constexpr reading readings[] = {FAULTLANE_RPC_STATUSES(FAULTLANE_RPC_STATUS_READ)};
#undef FAULTLANE_RPC_STATUS_READ
  for (const auto& r : readings) {
    if (r.rpc == s) return r.read;
  }
  return status::protocol_error;
}

header_bytes_array encode(const header& h) noexcept {
  header_bytes_array out{};
  put<4>(&out[0], magic);
  put<1>(&out[4], protocol_version);
  put<1>(&out[5], static_cast<std::uint8_t>(h.type));
  put<1>(&out[6], h.method_length);
  put<1>(&out[7], static_cast<std::uint8_t>(h.status));
  put<8>(&out[8], h.request_id);
  put<4>(&out[16], h.payload_length);
  seal(out);
  return out;
}

void seal(std::span<std::byte, header_bytes> bytes) noexcept {
  put<4>(&bytes[checksum_offset], checksum_of(bytes.data()));
}

decoded_header decode(std::span<const std::byte> in, std::uint32_t payload_max) noexcept {
  if (in.size() < header_bytes) return rpc_decode_error::truncated;
  const std::byte* p = in.data();
  if (get<4>(p) != magic) return rpc_decode_error::bad_magic;
  if (get<1>(p + 4) != protocol_version) return rpc_decode_error::bad_version;
  if (get<4>(p + checksum_offset) != checksum_of(p)) return rpc_decode_error::bad_checksum;
  header h;
  const auto type = get<1>(p + 5);
  if (type != static_cast<std::uint8_t>(kind::request) &&
      type != static_cast<std::uint8_t>(kind::response)) {
    return rpc_decode_error::bad_kind;
  }
  h.type = static_cast<kind>(type);
  h.method_length = static_cast<std::uint8_t>(get<1>(p + 6));
  const bool request = h.type == kind::request;
  if (request ? h.method_length == 0 || h.method_length > method_length_max
              : h.method_length != 0) {
    return rpc_decode_error::bad_method_length;
  }
  const auto code = get<1>(p + 7);
  if (request ? code != 0 : code > rpc_status_max) return rpc_decode_error::bad_status;
  h.status = static_cast<rpc_status>(code);
  h.request_id = get<8>(p + 8);
  h.payload_length = static_cast<std::uint32_t>(get<4>(p + 16));
  if (h.payload_length > payload_max) return rpc_decode_error::length_too_large;
  if (h.payload_length < h.method_length) return rpc_decode_error::length_short;
  return h;
}

bool valid_method_name(std::string_view name) noexcept {
  return !name.empty() && name.size() <= method_length_max &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

rpc_body_writer& rpc_body_writer::u8(std::uint8_t v) {
  out_.push_back(static_cast<std::byte>(v));
  return *this;
}

template <std::size_t Size>
rpc_body_writer& rpc_body_writer::append(std::uint64_t v) {
  const auto at = out_.size();
  out_.resize(at + Size);
  put<Size>(&out_[at], v);
  return *this;
}

rpc_body_writer& rpc_body_writer::u16(std::uint16_t v) { return append<2>(v); }
rpc_body_writer& rpc_body_writer::u32(std::uint32_t v) { return append<4>(v); }
rpc_body_writer& rpc_body_writer::u64(std::uint64_t v) { return append<8>(v); }

rpc_body_writer& rpc_body_writer::text(std::string_view s) {
  FL_ASSERT(s.size() <= std::numeric_limits<std::uint16_t>::max());
  u16(static_cast<std::uint16_t>(s.size()));
  const auto* bytes = reinterpret_cast<const std::byte*>(s.data());
  out_.insert(out_.end(), bytes, bytes + s.size());
  return *this;
}

bool rpc_body_reader::take(std::size_t n, std::string_view field) {
  if (!failed_.empty()) return false;
  if (n > left()) {
    failed_ = fmt::format("{} needs {} byte(s), {} left", field, n, left());
    return false;
  }
  return true;
}

template <std::size_t Size>
std::uint64_t rpc_body_reader::next(std::string_view field) {
  if (!take(Size, field)) return 0;
  const auto v = get<Size>(&in_[at_]);
  at_ += Size;
  return v;
}

std::uint8_t rpc_body_reader::u8(std::string_view field) {
  return static_cast<std::uint8_t>(next<1>(field));
}
std::uint16_t rpc_body_reader::u16(std::string_view field) {
  return static_cast<std::uint16_t>(next<2>(field));
}
std::uint32_t rpc_body_reader::u32(std::string_view field) {
  return static_cast<std::uint32_t>(next<4>(field));
}
std::uint64_t rpc_body_reader::u64(std::string_view field) { return next<8>(field); }

std::string rpc_body_reader::text(std::string_view field) {
  const auto n = u16(field);
  if (!take(n, field)) return {};
  std::string out(reinterpret_cast<const char*>(&in_[at_]), n);
  at_ += n;
  return out;
}

bool rpc_body_reader::fits(std::uint64_t count, std::size_t item_bytes_min,
                           std::string_view field) {
  if (!failed_.empty()) return false;
  if (item_bytes_min > 0 && count > left() / item_bytes_min) {
    failed_ = fmt::format("{}: {} item(s) of at least {} byte(s) cannot fit in {} byte(s)", field,
                          count, item_bytes_min, left());
    return false;
  }
  return true;
}

result<void> rpc_body_reader::finish() const {
  if (!failed_.empty()) return error{status::invalid_argument, "rpc body: " + failed_};
  if (left() != 0) {
    return error{status::invalid_argument,
                 fmt::format("rpc body: {} byte(s) left over after the last field", left())};
  }
  return {};
}

std::vector<std::byte> error_body(std::string_view message) {
  constexpr std::size_t shown_max = 1024;
  return rpc_body_writer().text(message.substr(0, std::min(message.size(), shown_max))).take();
}

std::string read_error_body(std::span<const std::byte> body) {
  rpc_body_reader in(body);
  auto message = in.text("message");
  if (!in.finish()) return "(an error body that does not decode)";
  return message;
}

}  // namespace faultlane::rpc
