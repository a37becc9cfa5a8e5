// Validation and YAML loading of transport_config. The settings list
// (config.hpp) drives one loop each for the bound checks and the reads; the
// fields in FAULTLANE_TRANSPORT_FIELDS_BY_HAND are checked and read here by hand.
#include "faultlane/core/config.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "faultlane/core/yaml_reader.hpp"

namespace faultlane {
namespace {

// validate()'s errors: "config: FIELD: what", the field and the complaint
// also as data (parse_config places them at the field's key).
error config_error(std::string_view field, const std::string& what) {
  FL_ASSERT(!field.empty() && !what.empty());  // every error names its field and problem
  return error{status::invalid_argument, fmt::format("config: {}: {}", field, what),
               input_place{{}, std::string(field), what}};
}

bool is_ipv4(const std::string& text) {
  in_addr out{};
  return inet_pton(AF_INET, text.c_str(), &out) == 1;
}

bool is_wildcard(const std::string& text) { return text.empty() || text == "0.0.0.0"; }

template <typename T>
result<void> check_range(std::string_view field, T value, T low, T high) {
  FL_ASSERT(low <= high);  // a bound pair from limits.hpp, never inverted
  if (value < low || value > high) {
    return config_error(field, fmt::format("must be in [{}, {}], got {}", low, high, value));
  }
  return {};
}

result<void> check_addresses(const transport_config& c) {
  if (!c.bind_address.empty() && !is_ipv4(c.bind_address)) {
    return config_error("bind_address",
                        fmt::format("'{}' is not a numeric IPv4 address", c.bind_address));
  }
  if (!c.advertise_address.empty() &&
      (!is_ipv4(c.advertise_address) || is_wildcard(c.advertise_address))) {
    return config_error(
        "advertise_address",
        fmt::format("'{}' is not a specific numeric IPv4 address", c.advertise_address));
  }
  if (c.rail_addresses.empty() && c.advertise_address.empty() && is_wildcard(c.bind_address)) {
    return config_error("advertise_address",
                        "required when bind_address is a wildcard and no rails are set");
  }
  std::set<std::string> seen;
  for (const auto& rail : c.rail_addresses) {
    if (!is_ipv4(rail) || is_wildcard(rail)) {
      return config_error("rail_addresses",
                          fmt::format("'{}' is not a specific numeric IPv4 address", rail));
    }
    if (!seen.insert(rail).second) {
      return config_error("rail_addresses", fmt::format("'{}' appears twice", rail));
    }
  }
  if (c.rail_addresses.size() > limits::rail_count_max) {
    return config_error(
        "rail_addresses",
        fmt::format("at most {} rails, got {}", limits::rail_count_max, c.rail_addresses.size()));
  }
  if (c.rail_addresses.size() > c.connections_per_peer) {
    return config_error("rail_addresses",
                        fmt::format("{} rails need at least as many connections_per_peer ({})",
                                    c.rail_addresses.size(), c.connections_per_peer));
  }
  if (!c.rail_addresses.empty() && !is_wildcard(c.bind_address)) {
    if (c.rail_addresses.size() > 1 || c.rail_addresses[0] != c.bind_address) {
      return config_error("bind_address",
                          "a specific bind_address must equal the sole rail; several rails need "
                          "a wildcard bind_address (empty or 0.0.0.0)");
    }
  }
  return {};
}

result<void> check_rpc(const transport_config& c) {
  if (c.rpc_worker_count < 0) {
    return config_error("rpc_worker_count",
                        fmt::format("must not be negative, got {} (0 means as many as "
                                    "worker_count; `inline` runs every handler on the io threads)",
                                    c.rpc_worker_count));
  }
  if (auto r = check_range<std::int64_t>("rpc_worker_count", c.rpc_worker_count, 0,
                                         limits::rpc_worker_count_max);
      !r) {
    return r;
  }
  if (!c.rpc_bind_address.empty() && (!is_ipv4(c.rpc_bind_address))) {
    return config_error("rpc_bind_address",
                        fmt::format("'{}' is not a numeric IPv4 address", c.rpc_bind_address));
  }
  return {};
}

}  // namespace

result<void> validate(const transport_config& c) {
  result<void> r;
  for_each_transport_setting([&](const auto& setting) {
    if (r) r = check_range(setting.name, c.*setting.field, setting.minimum, setting.maximum);
  });
  if (!r) return r;
  FL_ASSERT(c.worker_count >= limits::worker_count_min && c.connections_per_peer >= 1);
  if (auto rpc = check_rpc(c); !rpc) return rpc;
  return check_addresses(c);
}

namespace {

// Every key a file may hold: the settings, and the hand-read fields that
// have one (rpc_inline is spelled `rpc_worker_count: inline`).
const std::set<std::string, std::less<>> known_fields = [] {
  std::set<std::string, std::less<>> keys;
  for_each_transport_setting([&](const auto& setting) { keys.emplace(setting.name); });
  for (const auto& field : transport_fields_by_hand) {
    if (field.yaml) keys.emplace(field.name);
  }
  return keys;
}();

// A whole number's magnitude as every faultlane file spells it
// (yaml::parse_decimal), or why not.
result<std::uint64_t> magnitude(std::string_view digits, std::uint64_t max) {
  const auto n = yaml::parse_decimal(digits);
  const bool long_digits = yaml::is_digits(digits) && digits[0] != '0';
  if ((!n && long_digits) || (n && *n > max)) {
    return error{status::invalid_argument, fmt::format("{} is too large", digits)};
  }
  if (!n) {
    return error{status::invalid_argument,
                 fmt::format("expected a whole number (decimal digits, no sign or leading zero), "
                             "got '{}'",
                             digits)};
  }
  return *n;
}

// Reads one scalar field if present. An error points at the field's key,
// as every config error does (its value may be a list, or absent).
template <typename T>
result<void> read_field(const yaml::reader& rd, const YAML::Node& root, std::string_view path,
                        std::string_view name, T& out) {
  FL_ASSERT(known_fields.count(name) == 1);  // a field the unknown-key check allows
  const YAML::Node node = root[std::string(name)];
  if (!node) return {};
  const auto bad = [&](std::string_view what) {
    return rd.fail(yaml::key_node(root, name), yaml::key_path(path, name), what);
  };
  if (!node.IsScalar()) return bad(fmt::format("expected a value, got {}", yaml::kind_of(node)));
  const std::string& text = node.Scalar();
  if constexpr (std::is_same_v<T, bool>) {
    if (text != "true" && text != "false") {
      return bad(fmt::format("expected true or false, got '{}'", text));
    }
    out = text == "true";
  } else if constexpr (std::is_unsigned_v<T>) {
    if (!text.empty() && text[0] == '-') {
      return bad(fmt::format("must not be negative, got {}", text));
    }
    auto n = magnitude(text, std::numeric_limits<T>::max());
    if (!n) return bad(n.error().message);
    out = static_cast<T>(n.value());
  } else if constexpr (std::is_integral_v<T>) {  // signed: validate() refuses a negative
    const bool negative = !text.empty() && text[0] == '-';
    auto n = magnitude(std::string_view(text).substr(negative ? 1 : 0),
                       static_cast<std::uint64_t>(std::numeric_limits<T>::max()));
    if (!n) return bad(n.error().message);
    out = negative ? -static_cast<T>(n.value()) : static_cast<T>(n.value());
  } else {
    out = text;
  }
  return {};
}

}  // namespace

result<transport_config> parse_config(const YAML::Node& root, const yaml::reader& rd,
                                      std::string_view path) {
  transport_config c;
  if (!root.IsMap()) return rd.fail(root, path, "expected a mapping of config fields");
  std::set<std::string, std::less<>> seen;
  for (const auto& kv : root) {
    if (!kv.first.IsScalar()) return rd.fail(kv.first, path, "a key must be a plain name");
    const std::string& key = kv.first.Scalar();
    if (!known_fields.count(key))
      return rd.fail(kv.first, yaml::key_path(path, key), "unknown field");
    // yaml-cpp keeps both entries and root[key] finds the first: refused, as
    // every other reader refuses a repeated key.
    if (!seen.insert(key).second)
      return rd.fail(kv.first, yaml::key_path(path, key), "duplicate key");
  }
  const auto read = [&](std::string_view name, auto& out) {
    return read_field(rd, root, path, name, out);
  };
  result<void> r;
  if (!(r = read("bind_address", c.bind_address))) return r.error();
  if (!(r = read("advertise_address", c.advertise_address))) return r.error();
  if (!(r = read("port", c.port))) return r.error();
  for_each_transport_setting([&](const auto& setting) {
    if (r) r = read(setting.name, c.*setting.field);
  });
  if (!r) return r.error();
  if (!(r = read("rpc_bind_address", c.rpc_bind_address))) return r.error();
  if (!(r = read("rpc_port", c.rpc_port))) return r.error();
  if (root["rpc_worker_count"] && root["rpc_worker_count"].IsScalar() &&
      root["rpc_worker_count"].Scalar() == "inline") {
    c.rpc_inline = true;
  } else if (!(r = read("rpc_worker_count", c.rpc_worker_count))) {
    return r.error();
  }
  if (const auto rails = root["rail_addresses"]) {
    const auto rails_path = yaml::key_path(path, "rail_addresses");
    if (!rails.IsSequence()) {
      return rd.fail(yaml::key_node(root, "rail_addresses"), rails_path,
                     "expected a list of addresses");
    }
    for (std::size_t i = 0; i < rails.size(); ++i) {
      auto rail = rd.text(rails[i], yaml::item_path(rails_path, i));
      if (!rail) return rail.error();
      c.rail_addresses.push_back(std::move(rail).value());
    }
  }
  // validate() knows fields, not nodes: its error is placed at the key.
  if (auto valid = validate(c); !valid) {
    const auto& place = valid.error().place;
    FL_ASSERT(place.has_value());  // config_error() sets it
    return rd.fail(yaml::key_node(root, place->key), yaml::key_path(path, place->key), place->what);
  }
  FL_ASSERT(c.rail_addresses.size() <= limits::rail_count_max);
  return c;
}

result<transport_config> parse_config_yaml(std::string_view yaml_text, const std::string& label) {
  const yaml::reader rd(label);
  try {
    return parse_config(YAML::Load(std::string(yaml_text)), rd, "");
  } catch (const YAML::Exception& e) {
    return rd.syntax_error(e);
  }
}

result<transport_config> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{status::invalid_argument, fmt::format("config: cannot open {}", path)};
  std::stringstream text;
  text << in.rdbuf();
  return parse_config_yaml(text.str(), path);
}

}  // namespace faultlane
