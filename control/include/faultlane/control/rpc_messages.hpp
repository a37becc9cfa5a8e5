// The bodies of the control plane's built-in methods, each written and read
// by one pair of functions shared by the service and the client. Readers
// are total: a body that does not decode, or decodes to a value a
// transport could not have sent, is an invalid_argument error naming the
// field. docs/protocol.md gives every byte.
//
//   method              request body        response body
//   ping                (empty)             (empty)
//   service_ready       (empty)             u8 ready
//   describe            (empty)             descriptor
//   list_registrations  text pattern        u32 n, n x (u64 id, text name)
//   stats               (empty)             u32 n, n x (text key, u64 value)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "faultlane/core/status.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane::rpc {

inline constexpr std::size_t pattern_bytes_max = 4096;

std::vector<std::byte> encode_descriptor(const segment_descriptor& d);
result<segment_descriptor> decode_descriptor(std::span<const std::byte> body);

std::vector<std::byte> encode_pattern(std::string_view pattern);
result<std::string> decode_pattern(std::span<const std::byte> body);

struct named_registration {
  registration_id id = 0;
  std::string name;
  friend bool operator==(const named_registration&, const named_registration&) = default;
};
std::vector<std::byte> encode_registrations(const std::vector<named_registration>& list);
result<std::vector<named_registration>> decode_registrations(std::span<const std::byte> body);

using stat_list = std::vector<std::pair<std::string, std::uint64_t>>;
std::vector<std::byte> encode_stats(const stat_list& stats);
result<stat_list> decode_stats(std::span<const std::byte> body);

std::vector<std::byte> encode_ready(bool ready);
result<bool> decode_ready(std::span<const std::byte> body);

result<void> decode_empty(std::span<const std::byte> body);

}  // namespace faultlane::rpc
