// Bodies of the built-in control-plane methods; see rpc_messages.hpp.
#include "faultlane/control/rpc_messages.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>

#include <limits>
#include <unordered_set>

#include "faultlane/control/rpc_frame.hpp"
#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/core/limits.hpp"

namespace faultlane::rpc {
namespace {

// The fewest bytes an item of each list takes, for rpc_body_reader::fits.
constexpr std::size_t endpoint_bytes_min = 2 + 2;              // empty text, port
constexpr std::size_t registration_bytes_min = 8 + 8 + 1 + 2;  // id, length, perm, text
constexpr std::size_t named_registration_bytes_min = 8 + 2;    // id, text
constexpr std::size_t stat_bytes_min = 2 + 8;                  // text, value

error bad(std::string what) { return error{status::invalid_argument, "rpc body: " + what}; }

result<endpoint> read_endpoint(rpc_body_reader& in, std::size_t i) {
  endpoint e;
  e.address = in.text("endpoints.address");
  e.port = in.u16("endpoints.port");
  if (!in.ok()) return in.finish().error();
  in_addr parsed{};
  if (inet_pton(AF_INET, e.address.c_str(), &parsed) != 1 || parsed.s_addr == INADDR_ANY) {
    return bad(fmt::format("endpoints[{}].address {:?} is not a specific numeric IPv4 address", i,
                           e.address));
  }
  if (e.port == 0) return bad(fmt::format("endpoints[{}].port is 0", i));
  return e;
}

result<advertised_registration> read_registration(rpc_body_reader& in, std::size_t i) {
  advertised_registration r;
  r.id = in.u64("registrations.id");
  r.length = in.u64("registrations.length");
  const auto perm = in.u8("registrations.permission");
  r.name = in.text("registrations.name");
  if (!in.ok()) return in.finish().error();
  if (r.id == 0) return bad(fmt::format("registrations[{}].id is 0", i));
  if (r.length == 0) return bad(fmt::format("registrations[{}].length is 0", i));
  if (perm != static_cast<std::uint8_t>(permission::remote_read) &&
      perm != static_cast<std::uint8_t>(permission::remote_read_write)) {
    return bad(
        fmt::format("registrations[{}].permission {} is not remote_read or "
                    "remote_read_write",
                    i, perm));
  }
  r.perm = static_cast<permission>(perm);
  if (!valid_registration_name(r.name)) {
    return bad(fmt::format("registrations[{}].name is not a valid registration name", i));
  }
  return r;
}

}  // namespace

std::vector<std::byte> encode_descriptor(const segment_descriptor& d) {
  rpc_body_writer out;
  out.u64(d.incarnation).u64(d.max_transfer_bytes);
  FL_ASSERT(d.endpoints.size() <= std::numeric_limits<std::uint8_t>::max());
  out.u8(static_cast<std::uint8_t>(d.endpoints.size()));
  for (const auto& e : d.endpoints) out.text(e.address).u16(e.port);
  FL_ASSERT(d.registrations.size() <= std::numeric_limits<std::uint32_t>::max());
  out.u32(static_cast<std::uint32_t>(d.registrations.size()));
  for (const auto& r : d.registrations) {
    out.u64(r.id).u64(r.length).u8(static_cast<std::uint8_t>(r.perm)).text(r.name);
  }
  return out.take();
}

result<segment_descriptor> decode_descriptor(std::span<const std::byte> body) {
  rpc_body_reader in(body);
  segment_descriptor d;
  d.incarnation = in.u64("incarnation");
  d.max_transfer_bytes = in.u64("max_transfer_bytes");
  const auto endpoints = in.u8("endpoint_count");
  if (!in.ok()) return in.finish().error();
  if (d.incarnation == 0) return bad("incarnation is 0");
  if (d.max_transfer_bytes == 0 || d.max_transfer_bytes > limits::transfer_bytes_max) {
    return bad(fmt::format("max_transfer_bytes {} is outside 1..{}", d.max_transfer_bytes,
                           limits::transfer_bytes_max));
  }
  if (endpoints == 0 || endpoints > limits::rail_count_max) {
    return bad(
        fmt::format("endpoint_count {} is outside 1..{}", endpoints, limits::rail_count_max));
  }
  if (!in.fits(endpoints, endpoint_bytes_min, "endpoints")) return in.finish().error();
  for (std::size_t i = 0; i < endpoints; ++i) {
    auto e = read_endpoint(in, i);
    if (!e) return e.error();
    d.endpoints.push_back(std::move(e).value());
  }
  const auto count = in.u32("registration_count");
  if (!in.fits(count, registration_bytes_min, "registrations")) return in.finish().error();
  d.registrations.reserve(count);
  std::unordered_set<registration_id> ids;
  for (std::size_t i = 0; i < count; ++i) {
    auto r = read_registration(in, i);
    if (!r) return r.error();
    if (!ids.insert(r.value().id).second) {
      return bad(fmt::format("registrations[{}].id {:#x} appears twice", i, r.value().id));
    }
    d.registrations.push_back(std::move(r).value());
  }
  if (auto done = in.finish(); !done) return done.error();
  return d;
}

std::vector<std::byte> encode_pattern(std::string_view pattern) {
  FL_ASSERT(pattern.size() <= pattern_bytes_max);
  return rpc_body_writer().text(pattern).take();
}

result<std::string> decode_pattern(std::span<const std::byte> body) {
  rpc_body_reader in(body);
  auto pattern = in.text("pattern");
  if (auto done = in.finish(); !done) return done.error();
  if (pattern.size() > pattern_bytes_max) {
    return bad(fmt::format("pattern is {} bytes, most {}", pattern.size(), pattern_bytes_max));
  }
  return pattern;
}

std::vector<std::byte> encode_registrations(const std::vector<named_registration>& list) {
  rpc_body_writer out;
  FL_ASSERT(list.size() <= std::numeric_limits<std::uint32_t>::max());
  out.u32(static_cast<std::uint32_t>(list.size()));
  for (const auto& r : list) out.u64(r.id).text(r.name);
  return out.take();
}

result<std::vector<named_registration>> decode_registrations(std::span<const std::byte> body) {
  rpc_body_reader in(body);
  const auto count = in.u32("count");
  if (!in.fits(count, named_registration_bytes_min, "registrations")) return in.finish().error();
  std::vector<named_registration> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count && in.ok(); ++i) {
    named_registration r;
    r.id = in.u64("id");
    r.name = in.text("name");
    out.push_back(std::move(r));
  }
  if (auto done = in.finish(); !done) return done.error();
  return out;
}

std::vector<std::byte> encode_stats(const stat_list& stats) {
  rpc_body_writer out;
  out.u32(static_cast<std::uint32_t>(stats.size()));
  for (const auto& [key, value] : stats) out.text(key).u64(value);
  return out.take();
}

result<stat_list> decode_stats(std::span<const std::byte> body) {
  rpc_body_reader in(body);
  const auto count = in.u32("count");
  if (!in.fits(count, stat_bytes_min, "stats")) return in.finish().error();
  stat_list out;
  out.reserve(count);
  for (std::size_t i = 0; i < count && in.ok(); ++i) {
    auto key = in.text("key");
    const auto value = in.u64("value");
    out.emplace_back(std::move(key), value);
  }
  if (auto done = in.finish(); !done) return done.error();
  return out;
}

std::vector<std::byte> encode_ready(bool ready) { return rpc_body_writer().u8(ready).take(); }

result<bool> decode_ready(std::span<const std::byte> body) {
  rpc_body_reader in(body);
  const auto ready = in.u8("ready");
  if (auto done = in.finish(); !done) return done.error();
  if (ready > 1) return bad(fmt::format("ready is {}, not 0 or 1", ready));
  return ready == 1;
}

result<void> decode_empty(std::span<const std::byte> body) {
  if (!body.empty())
    return bad(fmt::format("{} byte(s) where no arguments are taken", body.size()));
  return {};
}

}  // namespace faultlane::rpc
