// Parsing and description of fault specs; see fault.hpp and docs/faults.md.
//
// Every form of a fault (text, a YAML mapping, a Toxiproxy toxic) gives its
// kind and its keys as (key, value) pairs to build_fault(), which reads each
// through its row of FAULTLANE_RELAY_FAULT_KEYS: one reader per way a value
// is written, bound here to the member the row names. The same rows write
// fault_fields(), so what describe() shows reads back to the same fault.
#include "faultlane/relays/fault.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <optional>
#include <set>
#include <span>
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

// Each key_value's reader, into the member its row names: read_<value>(key,
// text, member). A reader's error leaves its place's key to build_fault.

template <typename T>
result<void> read_number(std::string_view key, std::string_view value, T& out) {
  auto n = number(key, value);
  if (!n.ok()) return n.error();
  if (n.value() > std::numeric_limits<T>::max())
    return bad(fmt::format("{}={} is too large", key, value));
  out = static_cast<T>(n.value());
  return {};
}

template <typename T>
result<void> read_number(std::string_view key, std::string_view value, std::optional<T>& out) {
  T n = 0;
  if (auto r = read_number(key, value, n); !r.ok()) return r;
  out = n;
  return {};
}

result<void> read_mask(std::string_view, std::string_view value, std::uint8_t& out) {
  auto n = mask_number(value);
  if (!n.ok()) return n.error();
  out = n.value();
  return {};
}

result<void> read_direction(std::string_view, std::string_view value, direction& out) {
  if (value == "up") out = direction::up;
  else if (value == "down") out = direction::down;
  else return bad(fmt::format("dir must be up or down, got {}", value));
  return {};
}

result<void> read_opcode(std::string_view, std::string_view value,
                         std::optional<wire::opcode>& out) {
  if (value == "read") out = wire::opcode::read;
  else if (value == "write") out = wire::opcode::write;
  else return bad(fmt::format("opcode must be read or write, got {}", value));
  return {};
}

result<void> read_status(std::string_view key, std::string_view value,
                         std::optional<std::uint16_t>& out) {
  for (std::uint16_t s = 0; s <= wire::wire_status_max; ++s) {
    if (wire::to_string(static_cast<wire::wire_status>(s)) == value) {
      out = s;
      return {};
    }
  }
  return read_number(key, value, out);
}

result<void> read_probability(std::string_view, std::string_view value, double& out) {
  std::string text(value);
  char* end = nullptr;
  double p = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(p >= 0.0 && p <= 1.0)) {
    return bad(fmt::format("probability must be in [0, 1], got {}", value));
  }
  out = p;
  return {};
}

result<void> read_word(std::string_view, std::string_view value, std::string& out) {
  out = value;
  return {};
}

// Each key_value's writer: the value as the text form writes it.
template <typename T>
std::string write_number(const T& v) {
  return fmt::format("{}", v);
}
template <typename T>
std::string write_number(const std::optional<T>& v) {
  return v ? fmt::format("{}", *v) : std::string();
}
std::string write_mask(std::uint8_t v) { return fmt::format("{:#04x}", v); }
std::string write_direction(direction d) { return std::string(to_string(d)); }
std::string write_opcode(const std::optional<wire::opcode>& v) {
  return v ? std::string(wire::to_string(*v)) : std::string();
}
std::string write_status(const std::optional<std::uint16_t>& v) { return write_number(v); }
std::string write_probability(double p) { return fmt::format("{}", p); }
std::string write_word(const std::string& v) { return v; }

// The member a row names lives in the spec or in its trigger.
template <key_owner owner, typename Spec>
auto& on(Spec& f) {
  if constexpr (owner == key_owner::spec) {
    return f;
  } else {
    return f.when;
  }
}

const fault_spec default_spec{};

// What FAULTLANE_RELAY_FAULT_KEYS makes of a row: its reader and writer
// bound to its member.
struct key_codec {
  result<void> (*read)(fault_spec& f, std::string_view value);
  std::string (*write)(const fault_spec& f);
  bool (*set)(const fault_spec& f);  // differs from a default fault_spec's
};

#define FAULTLANE_FAULT_KEY_CODEC(key, value, owner, shown)                                 \
  key_codec{[](fault_spec& f, std::string_view text) {                                      \
              return read_##value(#key, text, on<key_owner::owner>(f).key);                 \
            },                                                                              \
            [](const fault_spec& f) { return write_##value(on<key_owner::owner>(f).key); }, \
            [](const fault_spec& f) {                                                       \
              return on<key_owner::owner>(f).key != on<key_owner::owner>(default_spec).key; \
            }},
constexpr std::array key_codecs{FAULTLANE_RELAY_FAULT_KEYS(FAULTLANE_FAULT_KEY_CODEC)};
#undef FAULTLANE_FAULT_KEY_CODEC
static_assert(key_codecs.size() == fault_keys.size(), "one codec per fault key");

const key_codec& codec(const fault_key_traits& k) {
  return key_codecs[static_cast<std::size_t>(&k - fault_keys.data())];
}

bool shown(const fault_key_traits& k, const fault_spec& f) {
  switch (k.shown) {
    case key_shown::always: return true;
    case key_shown::never: return false;
    case key_shown::if_set: return codec(k).set(f);
    case key_shown::if_taken: return traits(f.kind).takes(k.key);
    case key_shown::with_payload: return f.field == "payload";
  }
  return false;
}

// A key some kind takes (fault_kinds): any other kind refuses it by name,
// rather than ignore it.
bool value_key(std::string_view key) {
  return std::any_of(fault_kinds.begin(), fault_kinds.end(),
                     [&](const fault_kind_traits& t) { return t.takes(key); });
}

// Applies one key=value to the spec, through the key's row.
result<void> apply(fault_spec& f, std::string_view key, std::string_view value) {
  if (value_key(key) && !traits(f.kind).takes(key)) {
    return bad(fmt::format("{} does not take {}=", to_string(f.kind), key));
  }
  const auto* row = find_fault_key(key);
  if (!row) return bad(fmt::format("unknown key '{}'", key));
  return codec(*row).read(f, value);
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

// What build_fault adds to validate(): a direction is required, and the
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

// A form's error, its message ending with the fault as text: the text
// given, or the mapping as the text form writes it.
error quoting(std::string_view text, error e) {
  e.message += fmt::format(" (in \"{}\")", text);
  return e;
}

std::string as_text(std::string_view type, std::span<const fault_pair> pairs) {
  std::string out(type);
  for (const auto& [key, value] : pairs) out += fmt::format(" {}={}", key, value);
  return out;
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

result<fault_spec> build_fault(fault_kind kind, std::span<const fault_pair> pairs) {
  fault_spec f;
  f.kind = kind;
  bool dir_given = false;
  for (const auto& [key, value] : pairs) {
    if (key == "dir") dir_given = true;
    if (auto r = apply(f, key, value); !r.ok()) return about(key, r.error());
  }
  if (auto r = check(f, dir_given); !r.ok()) return r.error();
  return f;
}

result<fault_spec> parse_fault(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string type;
  if (!(in >> type)) return bad("empty fault");
  auto kind = find_fault_kind(type);
  if (!kind) return bad("type", fmt::format("unknown fault type '{}'", type));
  std::vector<fault_pair> pairs;
  std::string token;
  while (in >> token) {
    auto eq = token.find('=');
    if (eq == std::string::npos || eq == 0) {
      return quoting(text, bad(fmt::format("'{}' is not key=value", token)));
    }
    pairs.emplace_back(token.substr(0, eq), token.substr(eq + 1));
  }
  auto f = build_fault(*kind, pairs);
  if (!f.ok()) return quoting(text, f.error());
  return f;
}

result<fault_spec> parse_fault(const YAML::Node& node) {
  if (!node.IsMap() || !node["type"] || !node["type"].IsScalar()) {
    return bad("a fault is a mapping with a type");
  }
  const std::string type = node["type"].Scalar();
  std::vector<fault_pair> pairs;
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return bad("a key must be a plain name");
    auto key = kv.first.Scalar();
    if (!seen.insert(key).second) return bad(key, fmt::format("duplicate key '{}'", key));
    if (key == "type") continue;
    if (!kv.second.IsScalar()) return bad(key, fmt::format("{} must be a single value", key));
    auto value = kv.second.Scalar();
    if (value.empty() || value.find_first_of(" \t=") != std::string::npos) {
      return bad(key, fmt::format("{} must be one word, got '{}'", key, value));
    }
    pairs.emplace_back(std::move(key), std::move(value));
  }
  auto kind = find_fault_kind(type);
  if (!kind) return bad("type", fmt::format("unknown fault type '{}'", type));
  auto f = build_fault(*kind, pairs);
  if (!f.ok()) return quoting(as_text(type, pairs), f.error());
  return f;
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

std::vector<fault_pair> fault_fields(const fault_spec& f) {
  std::vector<fault_pair> out;
  for (const auto& k : fault_keys) {
    if (shown(k, f)) out.emplace_back(k.key, codec(k).write(f));
  }
  return out;
}

std::string describe(const fault_spec& f) {
  std::string out(to_string(f.kind));
  for (const auto& [key, value] : fault_fields(f)) out += fmt::format(" {}={}", key, value);
  return out;
}

}  // namespace faultlane::relays
