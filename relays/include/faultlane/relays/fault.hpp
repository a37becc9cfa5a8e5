// Faults a relay injects, and the triggers that decide when.
//
// A fault acts on one direction of a relayed connection: `up` is client to
// server (requests), `down` is server to client (responses). Triggers are
// logical (bytes, frames, opcodes, statuses, connection and rail indexes),
// so a schedule replays the same way however slowly the program runs, and a
// probability is drawn from the relay's seed keyed by (connection, frame),
// so one seed always yields one schedule. docs/faults.md is the reference.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane::yaml {
class reader;
}  // namespace faultlane::yaml

namespace YAML {
class Node;
}

namespace faultlane::relays {

enum class direction : std::uint8_t { up, down };

// What a kind of fault acts on, which decides where the relay applies it.
enum class fault_class : std::uint8_t {
  rate_shaping,  // when bytes leave (each chunk's time, the direction's rate)
  positional,    // the rest of the stream, from a position on; once per connection
  frame,         // each decoded frame that matches
  close,         // a close (FIN) from the source
  connection,    // a connection at accept: no direction of its own
};

// A lasting effect (a held stall, a delayed chunk) takes a slot in the
// relay's active-fault cap (relay_config::active_faults_max) while it lasts.
enum class fault_effect : std::uint8_t { lasting, momentary };

// A Toxiproxy attribute and the fault key it sets, with its unit's factor.
struct toxic_attribute {
  std::string_view attribute;
  std::string_view key;
  std::uint64_t scale = 1;
};

inline constexpr std::size_t fault_value_keys_max = 3;

// FAULTLANE_RELAY_FAULT_KINDS is the one list of fault kinds (docs/faults.md,
// "Adding a fault kind"). It generates fault_kind and the fault_kinds table
// that the parser, the fault chain, the Toxiproxy API, the property
// generator and the docs check read; relay_fault_kinds_test fails if a row
// is missing from any of them.
//
// X(kind, class, effect, (value keys it takes), Toxiproxy type or "",
//   ({Toxiproxy attribute, key, scale}...)). Trigger keys, dir and name
// apply to every kind. Toxiproxy's attributes apply under its type only.
#define FAULTLANE_RELAY_FAULT_KINDS(X)                                                  \
  /* each chunk leaves ms +- jitter_ms after it arrived */                              \
  X(latency, rate_shaping, lasting, ("ms", "jitter_ms"), "latency",                     \
    ({"latency", "ms"}, {"jitter", "jitter_ms"}))                                       \
  /* the direction paced at bytes_per_s */                                              \
  X(bandwidth, rate_shaping, lasting, ("bytes_per_s"), "bandwidth",                     \
    ({"rate", "bytes_per_s", 1000}))                                                    \
  /* writes of size +- variation bytes, delay_us apart */                               \
  X(slicer, rate_shaping, lasting, ("size", "variation", "delay_us"), "slicer",         \
    ({"average_size", "size"}, {"size_variation", "variation"}, {"delay", "delay_us"})) \
  /* `bytes` bytes of the direction, then FIN and close */                              \
  X(truncate, positional, momentary, ("bytes"), "limit_data", ({"bytes", "bytes"}))     \
  /* RST both ways at the trigger, or ms after it */                                    \
  X(reset, positional, momentary, ("ms"), "reset_peer", ({"timeout", "ms"}))            \
  /* forwarding stops at the trigger; the sockets stay open */                          \
  X(stall, positional, lasting, (), "", ())                                             \
  /* everything swallowed from the trigger on; with ms, closed ms after it */           \
  X(blackhole, positional, lasting, ("ms"), "timeout", ({"timeout", "ms"}))             \
  /* new connections reset at accept */                                                 \
  X(refuse, connection, momentary, (), "", ())                                          \
  /* a decoded frame swallowed, header and payload */                                   \
  X(drop_frame, frame, momentary, (), "", ())                                           \
  /* bits flipped in a named header field or a payload byte */                          \
  X(corrupt, frame, momentary, ("field", "payload_byte", "mask"), "", ())               \
  /* FIN in this direction at the trigger; the other stays open */                      \
  X(half_close, positional, momentary, (), "", ())                                      \
  /* a FIN from the source held for ms before it is passed on */                        \
  X(slow_close, close, momentary, ("ms"), "slow_close", ({"delay", "ms"}))

enum class fault_kind : std::uint8_t {
#define FAULTLANE_FAULT_KIND_ENUMERATOR(kind, ...) kind,
  FAULTLANE_RELAY_FAULT_KINDS(FAULTLANE_FAULT_KIND_ENUMERATOR)
#undef FAULTLANE_FAULT_KIND_ENUMERATOR
};

struct fault_kind_traits {
  fault_kind kind;
  std::string_view name;  // in fault text, YAML `type:` and counter names
  fault_class category;
  fault_effect effect;
  std::array<std::string_view, fault_value_keys_max> keys;  // unused entries are empty
  std::string_view toxic;                                   // Toxiproxy's type; empty if none
  std::array<toxic_attribute, fault_value_keys_max> toxic_attributes;

  constexpr bool takes(std::string_view key) const {
    return !key.empty() && std::find(keys.begin(), keys.end(), key) != keys.end();
  }
  constexpr bool lasting() const { return effect == fault_effect::lasting; }
};

// Every entry of a row's keys written out (keys_of's defaults), not left
// to the array's brace elision: GCC 12 cannot copy an element an aggregate
// initializer left out in a constant expression ("modification of
// fault_kinds is not a constant expression"), which the static_asserts
// below do.
constexpr std::array<std::string_view, fault_value_keys_max> keys_of(std::string_view a = {},
                                                                    std::string_view b = {},
                                                                    std::string_view c = {}) {
  return {a, b, c};
}
#define FAULTLANE_FAULT_KIND_UNPAREN(...) __VA_ARGS__
#define FAULTLANE_FAULT_KIND_TRAITS(kind, category, effect, keys, toxic, attributes) \
  fault_kind_traits{fault_kind::kind,                                                \
                    #kind,                                                           \
                    fault_class::category,                                           \
                    fault_effect::effect,                                            \
                    keys_of(FAULTLANE_FAULT_KIND_UNPAREN keys),                      \
                    toxic,                                                           \
                    {{FAULTLANE_FAULT_KIND_UNPAREN attributes}}},
inline constexpr std::array fault_kinds{FAULTLANE_RELAY_FAULT_KINDS(FAULTLANE_FAULT_KIND_TRAITS)};
#undef FAULTLANE_FAULT_KIND_TRAITS
#undef FAULTLANE_FAULT_KIND_UNPAREN

namespace detail {
#define FAULTLANE_FAULT_KIND_VALUE(kind, ...) fault_kind::kind,
inline constexpr fault_kind every_fault_kind[] = {
    FAULTLANE_RELAY_FAULT_KINDS(FAULTLANE_FAULT_KIND_VALUE)};
#undef FAULTLANE_FAULT_KIND_VALUE
}  // namespace detail
// The enumerators of fault_kind, counted from the list, not from its last.
inline constexpr std::size_t fault_kind_count = std::size(detail::every_fault_kind);

namespace detail {
constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < fault_kinds.size(); ++i) {
    if (fault_kinds[i].kind != static_cast<fault_kind>(i)) return false;
  }
  return true;
}
// A Toxiproxy type is looked up before the kinds' names: one that is
// another kind's name would hide that kind from the HTTP API. Names and
// types are unique, and each Toxiproxy attribute sets a key its kind takes.
constexpr bool names_distinct() {
  for (const auto& a : fault_kinds) {
    for (const auto& b : fault_kinds) {
      if (a.kind == b.kind) continue;
      if (a.name == b.name || a.toxic == b.name) return false;
      if (!a.toxic.empty() && a.toxic == b.toxic) return false;
    }
    for (const auto& t : a.toxic_attributes) {
      if (!t.attribute.empty() && (a.toxic.empty() || !a.takes(t.key) || t.scale == 0)) {
        return false;
      }
    }
  }
  return true;
}
}  // namespace detail
static_assert(fault_kinds.size() == fault_kind_count, "one traits row per fault_kind");
static_assert(detail::in_enum_order(), "fault_kinds[i] describes fault_kind i");
static_assert(detail::names_distinct(), "kind names and Toxiproxy types each name one kind");

// How a fault key's value is read and written back.
enum class key_value : std::uint8_t {
  number,       // decimal digits, no sign or leading zero, up to what the member holds
  mask,         // a byte with a bit set: 0x06 or 6; written in hex
  direction,    // up | down
  opcode,       // read | write
  status,       // a wire status's name or its number; written as the number
  probability,  // a real number in [0, 1]
  word,         // any text, kept as given
};
// Where a key's value lands: a member of fault_spec, or of its trigger.
enum class key_owner : std::uint8_t { spec, trigger };
// When fault_fields() writes a key back.
enum class key_shown : std::uint8_t {
  always,        // dir
  never,         // name: the spec's own, not one of its fields
  if_set,        // when it differs from a default fault_spec's
  if_taken,      // whenever the kind takes it: 0 is a value there (truncate bytes=0)
  with_payload,  // with field=payload, where 0 is the first byte
};

// FAULTLANE_RELAY_FAULT_KEYS is the one list of fault keys (docs/faults.md).
// The text form, the YAML form and the Toxiproxy API give their keys and
// values as pairs to build_fault(), which reads each through its row; the
// same rows write fault_fields() and describe(). Which kinds take a value
// key is FAULTLANE_RELAY_FAULT_KINDS's; trigger keys, dir and name apply to
// every kind. relay_fault_keys_test fails if a row does not round-trip
// through each form or is missing from the docs.
//
// X(key, how its value is read, where it lands, when it is written back).
// The key is the name of its member of fault_spec or of its trigger;
// fault_fields() writes the keys in this order.
#define FAULTLANE_RELAY_FAULT_KEYS(X)         \
  X(dir, direction, spec, always)             \
  X(name, word, spec, never)                  \
  X(ms, number, spec, if_set)                 \
  X(jitter_ms, number, spec, if_set)          \
  X(bytes_per_s, number, spec, if_set)        \
  X(size, number, spec, if_set)               \
  X(variation, number, spec, if_set)          \
  X(delay_us, number, spec, if_set)           \
  X(bytes, number, spec, if_taken)            \
  X(field, word, spec, if_set)                \
  X(payload_byte, number, spec, with_payload) \
  X(mask, mask, spec, if_taken)               \
  X(after_bytes, number, trigger, if_set)     \
  X(frame, number, trigger, if_set)           \
  X(header_byte, number, trigger, if_set)     \
  X(opcode, opcode, trigger, if_set)          \
  X(status, status, trigger, if_set)          \
  X(request_id, number, trigger, if_set)      \
  X(connection, number, trigger, if_set)      \
  X(rail, number, trigger, if_set)            \
  X(count, number, trigger, if_set)           \
  X(probability, probability, trigger, if_set)

struct fault_key_traits {
  std::string_view key;
  key_value value;
  key_owner owner;
  key_shown shown;
};

#define FAULTLANE_FAULT_KEY_TRAITS(key, value, owner, shown) \
  fault_key_traits{#key, key_value::value, key_owner::owner, key_shown::shown},
inline constexpr std::array fault_keys{FAULTLANE_RELAY_FAULT_KEYS(FAULTLANE_FAULT_KEY_TRAITS)};
#undef FAULTLANE_FAULT_KEY_TRAITS

// The row of `key`; null if no row names it.
constexpr const fault_key_traits* find_fault_key(std::string_view key) {
  for (const auto& k : fault_keys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

namespace detail {
// Keys are unique; a kind's value key is a fault_spec member of the list
// (a trigger key, dir or name applies to every kind, so no kind lists it),
// and every fault_spec key but dir and name is some kind's value key.
constexpr bool taken_by_a_kind(std::string_view key) {
  for (const auto& t : fault_kinds) {
    if (t.takes(key)) return true;
  }
  return false;
}
constexpr bool keys_hold_together() {
  for (const auto& a : fault_keys) {
    for (const auto& b : fault_keys) {
      if (&a != &b && a.key == b.key) return false;
    }
    const bool every_kind = a.key == "dir" || a.key == "name";
    if (a.owner == key_owner::spec && every_kind == taken_by_a_kind(a.key)) return false;
  }
  for (const auto& t : fault_kinds) {
    for (auto key : t.keys) {
      if (key.empty()) continue;
      const auto* k = find_fault_key(key);
      if (!k || k->owner != key_owner::spec || key == "dir" || key == "name") return false;
    }
  }
  return true;
}
}  // namespace detail
static_assert(detail::keys_hold_together(),
              "fault keys are unique, and the fault_spec keys but dir and name are the keys "
              "the kinds take");

constexpr const fault_kind_traits& traits(fault_kind k) {
  return fault_kinds[static_cast<std::size_t>(k)];
}
// The kind named `name` (as fault text and YAML `type:` write it).
std::optional<fault_kind> find_fault_kind(std::string_view name) noexcept;

std::string_view to_string(fault_kind k) noexcept;
std::string_view to_string(direction d) noexcept;

struct trigger {
  std::optional<std::uint64_t> after_bytes;  // stream position in this direction
  std::optional<std::uint64_t> frame;        // frame index in this direction, from 0
  std::optional<std::uint64_t> header_byte;  // with `frame`: bytes of its header let through
  std::optional<wire::opcode> opcode;        // a response matches its request's opcode
  std::optional<std::uint16_t> status;       // response status
  std::optional<std::uint64_t> request_id;
  std::optional<std::uint64_t> connection;  // accepted connection index, from 0
  std::optional<std::size_t> rail;          // the relay's rail
  std::optional<std::uint64_t> count;       // fire at most this many times (relay-wide)
  double probability = 1.0;

  // Conditions that need a decoded frame header.
  bool needs_frame() const noexcept { return frame || opcode || status || request_id; }
};

struct fault_spec {
  fault_kind kind = fault_kind::latency;
  direction dir = direction::up;
  trigger when;
  std::string name;  // counter name; defaults to "<kind>.<dir>"

  std::uint32_t ms = 0;            // latency, slow_close; reset: delay; blackhole: close after
  std::uint32_t jitter_ms = 0;     // latency
  std::uint64_t bytes_per_s = 0;   // bandwidth
  std::size_t size = 0;            // slicer: average write size
  std::size_t variation = 0;       // slicer
  std::uint32_t delay_us = 0;      // slicer
  std::uint64_t bytes = 0;         // truncate
  std::string field;               // corrupt: a header field name, or "payload"
  std::uint64_t payload_byte = 0;  // corrupt field=payload: index, to corrupt_payload_byte_max
  std::uint8_t mask = 0x01;        // corrupt: bits flipped (parsed as 0x06 or 6)

  // Needs the relay to decode frames: a frame fault, or a frame trigger.
  bool frame_aware() const noexcept {
    return traits(kind).category == fault_class::frame || when.needs_frame();
  }
};

// A key and its value as the text form writes them ("ms", "5").
using fault_pair = std::pair<std::string, std::string>;

// The fault of kind `kind` with these keys, each read through its row of
// fault_keys in order (a later one wins), then checked as validate() does;
// a fault with a direction of its own needs a "dir" pair, and the counter
// name defaults to TYPE.DIR. Every form of a fault ends here. An error's
// place holds the key at fault (empty when none is) and the complaint; its
// message is "fault: " and the complaint.
result<fault_spec> build_fault(fault_kind kind, std::span<const fault_pair> pairs);

// "latency dir=down ms=5 jitter_ms=1", "reset dir=down after_bytes=1000",
// "stall dir=up frame=3 header_byte=7", "drop_frame dir=down opcode=write".
// An error's message is "fault: what (in "TEXT")"; its place holds the key
// at fault (empty when none is) and the complaint alone, as data.
result<fault_spec> parse_fault(std::string_view text);
// The same keys as a YAML mapping: {type: latency, dir: down, ms: 5}. Its
// message quotes the mapping as the text form would write it.
result<fault_spec> parse_fault(const YAML::Node& node);
// A parse_fault() error `e` about the mapping `node`, read with `rd` under
// `path`: placed at the key the error names when the mapping has it (at its
// value for `type`), else at the mapping itself.
error place_fault_error(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                        const error& e);
// The checks parse_fault makes on the values (ranges, required keys, known
// fields), for a spec built in code. relay::start applies them too.
result<void> validate(const fault_spec& f);
// Every key that differs from its default, with its value as the text form
// writes it, in a fixed order: "dir" first, never "type" or "name".
// build_fault(f.kind, fault_fields(f)) gives f back, its name defaulted.
std::vector<fault_pair> fault_fields(const fault_spec& f);
// "TYPE key=value ...": the kind, then fault_fields().
std::string describe(const fault_spec& f);

}  // namespace faultlane::relays
