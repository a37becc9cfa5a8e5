// Toxics as relay faults; see toxics.hpp.
#include "toxics.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace faultlane::relays::api {
namespace {

using toxic_attributes = std::array<toxic_attribute, fault_value_keys_max>;

// The kind whose Toxiproxy type is `type` (fault_kinds), with the
// attributes Toxiproxy names for it; null if none is.
const fault_kind_traits* find_toxiproxy_type(std::string_view type) {
  for (const auto& t : fault_kinds) {
    if (!t.toxic.empty() && t.toxic == type) return &t;
  }
  return nullptr;
}

error bad(const std::string& what) { return error{status::invalid_argument, what}; }

// An attribute's value as its fault key's value: a whole number from 0 to
// 2^64 - 1 (times the unit's factor), or, unless `number_only`, a word.
result<std::string> pair_value(const std::string& key, const nlohmann::json& v, std::uint64_t scale,
                               bool number_only) {
  std::uint64_t n = 0;
  if (v.is_number_unsigned()) {
    n = v.get<std::uint64_t>();
  } else if (v.is_number_integer() || v.is_number_float()) {
    // 2^64 and up (or NaN) must not reach the conversion: it is undefined.
    double d = v.get<double>();
    if (!(d >= 0) || d >= 18446744073709551616.0 || d != std::floor(d)) {
      return bad(fmt::format("attribute {} must be a whole number from 0 to 2^64 - 1 (got {})", key,
                             v.dump()));
    }
    n = static_cast<std::uint64_t>(d);
  } else if (v.is_string() && !number_only) {
    auto s = v.get<std::string>();
    if (s.empty() || s.find_first_of(" \t\r\n=") != std::string::npos) {
      return bad(fmt::format("attribute {} must be one word (got {})", key, v.dump()));
    }
    return s;
  } else {
    return bad(fmt::format("attribute {} must be a {} (got {})", key,
                           number_only ? "number" : "number or a word", v.dump()));
  }
  if (n > std::numeric_limits<std::uint64_t>::max() / scale) {
    return bad(fmt::format("attribute {} is too large ({})", key, v.dump()));
  }
  return std::to_string(n * scale);
}

std::uint64_t attribute_or_zero(const nlohmann::json& a, const char* key) {
  // pair_value has checked every attribute is a whole number in range.
  auto it = a.find(key);
  if (it == a.end() || !it->is_number()) return 0;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  return static_cast<std::uint64_t>(it->get<double>());
}

// What a Toxiproxy type needs to do anything, in its own attribute names
// (the relay's checks would name the relay's keys).
std::optional<std::string> toxiproxy_problem(const toxic& t) {
  const auto& a = t.attributes;
  if (t.type == "latency") {
    if (attribute_or_zero(a, "latency") == 0 && !a.contains("ms")) {
      return "latency needs latency above 0 (ms)";
    }
    if (attribute_or_zero(a, "jitter") > attribute_or_zero(a, "latency")) {
      return "latency: jitter must not exceed latency";
    }
  } else if (t.type == "bandwidth") {
    if (attribute_or_zero(a, "rate") == 0 && !a.contains("bytes_per_s")) {
      return "bandwidth needs rate above 0 (KB/s)";
    }
  } else if (t.type == "slicer") {
    if (attribute_or_zero(a, "size_variation") >= attribute_or_zero(a, "average_size") &&
        !a.contains("size")) {
      return "slicer needs average_size above size_variation";
    }
  } else if (t.type == "slow_close") {
    if (attribute_or_zero(a, "delay") == 0 && !a.contains("ms")) {
      return "slow_close needs delay above 0 (ms)";
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view stream_name(direction d) { return d == direction::up ? "upstream" : "downstream"; }

std::optional<fault_kind> toxic_kind(std::string_view type) {
  const auto* toxiproxy = find_toxiproxy_type(type);
  return toxiproxy ? std::optional(toxiproxy->kind) : find_fault_kind(type);
}

result<fault_spec> to_fault(const toxic& t) {
  const auto* toxiproxy = find_toxiproxy_type(t.type);
  auto kind = toxic_kind(t.type);
  if (!kind) return bad("invalid toxic type");
  if (!t.attributes.is_object()) return bad("attributes must be an object");
  if (!(t.toxicity >= 0.0 && t.toxicity <= 1.0)) {
    return bad(fmt::format("toxicity must be in [0, 1], got {}", t.toxicity));
  }
  std::vector<fault_pair> pairs{{"dir", std::string(to_string(t.dir))}};
  for (const auto& [attribute, value] : t.attributes.items()) {
    if (attribute == "dir" || attribute == "name" || attribute == "probability") {
      return bad(
          fmt::format("attribute {} is set by the toxic's stream, name or toxicity", attribute));
    }
    std::string_view key = attribute;
    std::uint64_t scale = 1;
    bool toxiproxy_attribute = false;
    for (const auto& r : toxiproxy ? toxiproxy->toxic_attributes : toxic_attributes{}) {
      if (!r.attribute.empty() && r.attribute == attribute) {
        key = r.key;
        scale = r.scale;
        toxiproxy_attribute = true;
      }
    }
    auto v = pair_value(attribute, value, scale, toxiproxy_attribute);
    if (!v.ok()) return v.error();
    pairs.emplace_back(std::string(key), std::move(v).value());
  }
  if (toxiproxy) {
    if (auto problem = toxiproxy_problem(t)) return bad(*problem);
  }
  if (t.toxicity < 1.0) pairs.emplace_back("probability", fmt::format("{}", t.toxicity));
  auto spec = build_fault(*kind, pairs);
  if (!spec.ok()) {
    // The complaint alone: its message is the relay's, not the toxic's.
    FL_ASSERT(spec.error().place.has_value());  // every fault error is placed
    return bad(fmt::format("{} toxic: {}", t.type, spec.error().place->what));
  }
  spec.value().name = t.name;
  return spec;
}

void normalize_numbers(toxic& t) {
  if (!t.attributes.is_object()) return;
  for (auto& [key, value] : t.attributes.items()) {
    // to_fault checked each is a whole number from 0 to 2^64 - 1.
    if (value.is_number_float()) {
      value = static_cast<std::uint64_t>(value.get<double>());
    } else if (value.is_number_integer() && !value.is_number_unsigned()) {
      value = static_cast<std::uint64_t>(value.get<std::int64_t>());
    }
  }
}

toxic from_fault(const fault_spec& f) {
  toxic t;
  t.name = f.name;
  t.type = to_string(f.kind);
  t.dir = f.dir;
  t.toxicity = f.when.probability;
  // A kind whose Toxiproxy type is its own name shows with Toxiproxy's attributes.
  const auto* toxiproxy = find_toxiproxy_type(t.type);
  for (auto [key, value] : fault_fields(f)) {
    if (key == "dir" || key == "probability") continue;
    std::uint64_t n = 0;
    bool number = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
    if (number) n = std::stoull(value);
    for (const auto& r : toxiproxy ? toxiproxy->toxic_attributes : toxic_attributes{}) {
      if (!r.key.empty() && r.key == key && n % r.scale == 0) {
        key = r.attribute;
        n /= r.scale;
      }
    }
    t.attributes[key] = number ? nlohmann::json(n) : nlohmann::json(value);
  }
  return t;
}

void fill_default_attributes(toxic& t) {
  const auto* toxiproxy = find_toxiproxy_type(t.type);
  if (!toxiproxy || !t.attributes.is_object()) return;
  for (const auto& r : toxiproxy->toxic_attributes) {
    if (r.attribute.empty() || t.attributes.contains(r.attribute) ||
        t.attributes.contains(std::string(r.key))) {
      continue;
    }
    t.attributes[std::string(r.attribute)] = 0;
  }
}

nlohmann::json to_json(const toxic& t) {
  return {{"name", t.name},
          {"type", t.type},
          {"stream", stream_name(t.dir)},
          {"toxicity", t.toxicity},
          {"attributes", t.attributes}};
}

}  // namespace faultlane::relays::api
