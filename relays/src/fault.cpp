// Parsing and description of fault specs; see fault.hpp and docs/faults.md.
#include "faultlane/relays/fault.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <map>
#include <set>
#include <sstream>

#include "faultlane/core/yaml_reader.hpp"
#include "faultlane/relays/limits.hpp"

namespace faultlane::relays {
namespace {

error bad(std::string_view key, const std::string& what) {
  return error{status::invalid_argument, "fault: " + what, input_place{{}, std::string(key), what}};
}
error bad(const std::string& what) { return bad("", what); }

// The key an error is about, where the error does not say it yet.
error about(std::string_view key, error e) {
  if (e.place && e.place->key.empty()) e.place->key = key;
  return e;
}

// A whole number as every faultlane file spells it (yaml::parse_decimal):
// decimal digits, no sign or leading zero.
result<std::uint64_t> number(std::string_view key, std::string_view value) {
  if (auto n = yaml::parse_decimal(value)) return *n;
  if (yaml::is_digits(value) && value[0] != '0')
    return bad(fmt::format("{}={} is too large", key, value));
  return bad(
      fmt::format("{}={} is not a non-negative integer (decimal digits, no sign or "
                  "leading zero)",
                  key, value));
}

template <typename T>
result<void> small_number(std::string_view key, std::string_view value, T& out) {
  auto n = number(key, value);
  if (!n.ok()) return n.error();
  if (n.value() > std::numeric_limits<T>::max())
    return bad(fmt::format("{}={} is too large", key, value));
  out = static_cast<T>(n.value());
  return {};
}

// A byte, in hex (0x06, as masks are usually written) or in decimal.
result<std::uint8_t> mask_number(std::string_view value) {
  bool hex = value.size() > 2 && value[0] == '0' && (value[1] == 'x' || value[1] == 'X');
  auto digits = hex ? value.substr(2) : value;
  // Decimal as every number is spelled (no leading zero); hex as masks are written.
  std::uint64_t out = 0;
  bool good = false;
  if (hex) {
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out, 16);
    good = ec == std::errc() && end == digits.data() + digits.size();
  } else if (auto n = yaml::parse_decimal(digits)) {
    out = *n;
    good = true;
  }
  if (!good || out == 0 || out > 0xff) {
    return bad(
        fmt::format("mask={} is not a byte with a bit set (0x01 to 0xff, or 1 to 255)", value));
  }
  return static_cast<std::uint8_t>(out);
}

result<std::uint16_t> parse_status(std::string_view value) {
  for (std::uint16_t s = 0; s <= wire::wire_status_max; ++s) {
    if (wire::to_string(static_cast<wire::wire_status>(s)) == value) return s;
  }
  std::uint16_t n = 0;
  if (auto r = small_number("status", value, n); !r.ok()) return r.error();
  return n;
}

result<void> apply_probability(trigger& w, std::string_view value) {
  std::string text(value);
  char* end = nullptr;
  double p = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(p >= 0.0 && p <= 1.0)) {
    return bad(fmt::format("probability must be in [0, 1], got {}", value));
  }
  w.probability = p;
  return {};
}

// Applies one trigger key=value; nothing if `key` is not a trigger key.
std::optional<result<void>> apply_trigger(trigger& w, std::string_view key,
                                          std::string_view value) {
  auto set_u64 = [&](std::optional<std::uint64_t>& field) -> result<void> {
    auto n = number(key, value);
    if (!n.ok()) return n.error();
    field = n.value();
    return {};
  };
  if (key == "after_bytes") return set_u64(w.after_bytes);
  if (key == "frame") return set_u64(w.frame);
  if (key == "header_byte") return set_u64(w.header_byte);
  if (key == "request_id") return set_u64(w.request_id);
  if (key == "connection") return set_u64(w.connection);
  if (key == "count") return set_u64(w.count);
  if (key == "probability") return apply_probability(w, value);
  if (key == "rail") {
    std::size_t rail = 0;
    if (auto r = small_number(key, value, rail); !r.ok()) return r;
    w.rail = rail;
    return result<void>{};
  }
  if (key == "opcode") {
    if (value == "read") w.opcode = wire::opcode::read;
    else if (value == "write") w.opcode = wire::opcode::write;
    else return bad(fmt::format("opcode must be read or write, got {}", value));
    return result<void>{};
  }
  if (key == "status") {
    auto s = parse_status(value);
    if (!s.ok()) return s.error();
    w.status = s.value();
    return result<void>{};
  }
  return std::nullopt;
}

// A key some kind takes (fault_kinds): any other kind refuses it by name,
// rather than ignore it.
bool value_key(std::string_view key) {
  return std::any_of(fault_kinds.begin(), fault_kinds.end(),
                     [&](const fault_kind_traits& t) { return t.takes(key); });
}

// Applies one key=value to the spec.
result<void> apply(fault_spec& f, std::string_view key, std::string_view value) {
  if (value_key(key) && !traits(f.kind).takes(key)) {
    return bad(fmt::format("{} does not take {}=", to_string(f.kind), key));
  }
  if (key == "dir") {
    if (value == "up") f.dir = direction::up;
    else if (value == "down") f.dir = direction::down;
    else return bad(fmt::format("dir must be up or down, got {}", value));
    return {};
  }
  if (key == "name") {
    f.name = value;
    return {};
  }
  if (key == "field") {
    f.field = value;
    return {};
  }
  if (key == "ms") return small_number(key, value, f.ms);
  if (key == "jitter_ms") return small_number(key, value, f.jitter_ms);
  if (key == "bytes_per_s") return small_number(key, value, f.bytes_per_s);
  if (key == "size") return small_number(key, value, f.size);
  if (key == "variation") return small_number(key, value, f.variation);
  if (key == "delay_us") return small_number(key, value, f.delay_us);
  if (key == "bytes") return small_number(key, value, f.bytes);
  if (key == "payload_byte") return small_number(key, value, f.payload_byte);
  if (key == "mask") {
    auto n = mask_number(value);
    if (!n.ok()) return n.error();
    f.mask = n.value();
    return {};
  }
  if (auto r = apply_trigger(f.when, key, value)) return *r;
  return bad(fmt::format("unknown key '{}'", key));
}

result<void> validate_corrupt(const fault_spec& f) {
  if (f.field.empty()) return bad("field", "corrupt needs field=<header field>|payload");
  if (f.mask == 0) return bad("mask", "corrupt mask must flip at least one bit");
  if (f.field == "payload") {
    if (f.payload_byte > corrupt_payload_byte_max) {
      return bad("payload_byte",
                 fmt::format("payload_byte={} is past the last byte of the longest payload ({})",
                             f.payload_byte, corrupt_payload_byte_max));
    }
    return {};
  }
  if (f.payload_byte != 0) return bad("payload_byte", "payload_byte needs field=payload");
  auto layout = f.dir == direction::up ? wire::find_request_field(f.field)
                                       : wire::find_response_field(f.field);
  if (!layout) {
    return bad("field", fmt::format("corrupt: no field '{}' in a {} header", f.field,
                                    f.dir == direction::up ? "request" : "response"));
  }
  return {};
}

// What the text form adds to validate(): a direction is required, and the
// counter name defaults to TYPE.DIR.
result<void> check(fault_spec& f, bool dir_given) {
  auto kind = to_string(f.kind);
  const bool own_direction = traits(f.kind).category != fault_class::connection;
  if (!dir_given && own_direction) {
    return bad("dir", fmt::format("{} needs dir=up|down", kind));
  }
  if (auto r = validate(f); !r.ok()) return r;
  if (f.name.empty()) {
    f.name = own_direction ? fmt::format("{}.{}", kind, to_string(f.dir)) : std::string(kind);
  }
  return {};
}

}  // namespace

std::string_view to_string(fault_kind k) noexcept { return traits(k).name; }

std::optional<fault_kind> find_fault_kind(std::string_view name) noexcept {
  for (const auto& t : fault_kinds) {
    if (t.name == name) return t.kind;
  }
  return std::nullopt;
}

std::string_view to_string(direction d) noexcept { return d == direction::up ? "up" : "down"; }

result<void> validate(const fault_spec& f) {
  if (f.when.header_byte && !f.when.frame) return bad("header_byte", "header_byte needs frame=");
  if (!(f.when.probability >= 0.0 && f.when.probability <= 1.0)) {
    return bad("probability",
               fmt::format("probability must be in [0, 1], got {}", f.when.probability));
  }
  switch (f.kind) {
    case fault_kind::latency:
      if (f.ms == 0 && f.jitter_ms == 0) return bad("ms", "latency needs ms=");
      if (f.jitter_ms > f.ms) return bad("jitter_ms", "latency jitter_ms must not exceed ms");
      return {};
    case fault_kind::bandwidth:
      if (f.bytes_per_s == 0) return bad("bytes_per_s", "bandwidth needs bytes_per_s= > 0");
      return {};
    case fault_kind::slicer:
      if (f.size == 0) return bad("size", "slicer needs size= > 0");
      if (f.variation >= f.size)
        return bad("variation", "slicer variation must be smaller than size");
      return {};
    case fault_kind::slow_close:
      if (f.ms == 0) return bad("ms", "slow_close needs ms=");
      return {};
    case fault_kind::corrupt: return validate_corrupt(f);
    default: return {};
  }
}

result<fault_spec> parse_fault(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string type;
  if (!(in >> type)) return bad("empty fault");
  auto kind = find_fault_kind(type);
  if (!kind) return bad("type", fmt::format("unknown fault type '{}'", type));
  fault_spec f;
  f.kind = *kind;
  bool dir_given = false;
  std::string token;
  while (in >> token) {
    auto eq = token.find('=');
    if (eq == std::string::npos || eq == 0) {
      auto e = bad(fmt::format("'{}' is not key=value", token));
      e.message += fmt::format(" (in \"{}\")", text);
      return e;
    }
    auto key = std::string_view(token).substr(0, eq);
    auto value = std::string_view(token).substr(eq + 1);
    if (key == "dir") dir_given = true;
    if (auto r = apply(f, key, value); !r.ok()) {
      auto e = about(key, r.error());
      e.message += fmt::format(" (in \"{}\")", text);
      return e;
    }
  }
  if (auto r = check(f, dir_given); !r.ok()) {
    auto e = r.error();
    e.message += fmt::format(" (in \"{}\")", text);
    return e;
  }
  return f;
}

result<fault_spec> parse_fault(const YAML::Node& node) {
  if (!node.IsMap() || !node["type"] || !node["type"].IsScalar()) {
    return bad("a fault is a mapping with a type");
  }
  std::string text = node["type"].as<std::string>();
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return bad("a key must be a plain name");
    auto key = kv.first.Scalar();
    if (!seen.insert(key).second) return bad(key, fmt::format("duplicate key '{}'", key));
    if (key == "type") continue;
    if (!kv.second.IsScalar()) return bad(key, fmt::format("{} must be a single value", key));
    auto value = kv.second.as<std::string>();
    if (value.empty() || value.find_first_of(" \t=") != std::string::npos) {
      return bad(key, fmt::format("{} must be one word, got '{}'", key, value));
    }
    text += " " + key + "=" + value;
  }
  return parse_fault(text);
}

error place_fault_error(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                        const error& e) {
  FL_ASSERT(e.place.has_value());  // every fault error is placed
  const auto& key = e.place->key;
  if (key.empty() || !node.IsMap() || !node[key].IsDefined()) {
    return rd.fail(node, path, e.place->what);
  }
  const YAML::Node where = key == "type" ? node["type"] : yaml::key_node(node, key);
  return rd.fail(where, yaml::key_path(path, key), e.place->what);
}

std::vector<std::pair<std::string, std::string>> fault_fields(const fault_spec& f) {
  std::vector<std::pair<std::string, std::string>> out;
  auto add = [&](const char* key, auto value) { out.emplace_back(key, fmt::format("{}", value)); };
  add("dir", to_string(f.dir));
  if (f.ms) add("ms", f.ms);
  if (f.jitter_ms) add("jitter_ms", f.jitter_ms);
  if (f.bytes_per_s) add("bytes_per_s", f.bytes_per_s);
  if (f.size) add("size", f.size);
  if (f.variation) add("variation", f.variation);
  if (f.delay_us) add("delay_us", f.delay_us);
  if (f.kind == fault_kind::truncate) add("bytes", f.bytes);
  if (!f.field.empty()) add("field", f.field);
  if (f.field == "payload") add("payload_byte", f.payload_byte);
  if (f.kind == fault_kind::corrupt) add("mask", fmt::format("{:#04x}", f.mask));
  const auto& w = f.when;
  if (w.after_bytes) add("after_bytes", *w.after_bytes);
  if (w.frame) add("frame", *w.frame);
  if (w.header_byte) add("header_byte", *w.header_byte);
  if (w.opcode) add("opcode", wire::to_string(*w.opcode));
  if (w.status) add("status", *w.status);
  if (w.request_id) add("request_id", *w.request_id);
  if (w.connection) add("connection", *w.connection);
  if (w.rail) add("rail", *w.rail);
  if (w.count) add("count", *w.count);
  if (w.probability < 1.0) add("probability", w.probability);
  return out;
}

std::string describe(const fault_spec& f) {
  std::string out(to_string(f.kind));
  for (const auto& [key, value] : fault_fields(f)) out += fmt::format(" {}={}", key, value);
  return out;
}

}  // namespace faultlane::relays
