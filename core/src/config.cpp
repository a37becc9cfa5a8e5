// Validation and YAML loading of transport_config. The settings list
// (config.hpp) drives one loop each for the bound checks and the reads; the
// fields in FAULTLANE_TRANSPORT_FIELDS_BY_HAND are checked and read here by hand.
#include "faultlane/core/config.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

namespace faultlane {
namespace {

error config_error(std::string_view field, const std::string& what) {
  FL_ASSERT(!field.empty() && !what.empty());  // every error names its field and problem
  return error{status::invalid_argument, fmt::format("config: {}: {}", field, what)};
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

// Reads one scalar field if present, with a typed error naming the field.
template <typename T>
result<void> read_field(const YAML::Node& root, std::string_view name, T& out) {
  FL_ASSERT(known_fields.count(name) == 1);  // a field the unknown-key check allows
  const YAML::Node node = root[std::string(name)];
  if (!node) return {};
  try {
    if constexpr (std::is_same_v<T, bool>) {
      out = node.as<bool>();
    } else if constexpr (std::is_unsigned_v<T>) {
      auto text = node.as<std::string>();
      if (!text.empty() && text[0] == '-') {
        return config_error(name, fmt::format("must not be negative, got {}", text));
      }
      auto wide = node.as<unsigned long long>();
      if (wide > std::numeric_limits<T>::max()) {
        return config_error(name, fmt::format("{} is too large", wide));
      }
      out = static_cast<T>(wide);
    } else {
      out = node.as<T>();
    }
  } catch (const YAML::Exception&) {
    return config_error(name, fmt::format("line {}: not a valid value", node.Mark().line + 1));
  }
  return {};
}

}  // namespace

result<transport_config> parse_config(const YAML::Node& root) {
  transport_config c;
  if (!root.IsMap()) return config_error("(document)", "expected a mapping of config fields");
  for (const auto& kv : root) {
    auto key = kv.first.as<std::string>();
    if (!known_fields.count(key)) return config_error(key, "unknown field");
  }
  result<void> r;
  if (!(r = read_field(root, "bind_address", c.bind_address))) return r.error();
  if (!(r = read_field(root, "advertise_address", c.advertise_address))) return r.error();
  if (!(r = read_field(root, "port", c.port))) return r.error();
  for_each_transport_setting([&](const auto& setting) {
    if (r) r = read_field(root, setting.name, c.*setting.field);
  });
  if (!r) return r.error();
  if (!(r = read_field(root, "rpc_bind_address", c.rpc_bind_address))) return r.error();
  if (!(r = read_field(root, "rpc_port", c.rpc_port))) return r.error();
  if (root["rpc_worker_count"] && root["rpc_worker_count"].IsScalar() &&
      root["rpc_worker_count"].Scalar() == "inline") {
    c.rpc_inline = true;
  } else if (!(r = read_field(root, "rpc_worker_count", c.rpc_worker_count))) {
    return r.error();
  }
  if (const auto rails = root["rail_addresses"]) {
    if (!rails.IsSequence()) return config_error("rail_addresses", "expected a list of addresses");
    for (const auto& rail : rails) c.rail_addresses.push_back(rail.as<std::string>());
  }
  if (auto valid = validate(c); !valid) return valid.error();
  FL_ASSERT(c.rail_addresses.size() <= limits::rail_count_max);
  return c;
}

result<transport_config> parse_config_yaml(std::string_view yaml_text) {
  try {
    return parse_config(YAML::Load(std::string(yaml_text)));
  } catch (const YAML::Exception& e) {
    return error{status::invalid_argument, fmt::format("config: YAML: {}", e.what())};
  }
}

result<transport_config> load_config_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{status::invalid_argument, fmt::format("config: cannot open {}", path)};
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_config_yaml(text.str());
  if (!parsed.ok()) {
    return error{parsed.code(), fmt::format("{}: {}", path, parsed.error().message)};
  }
  return parsed;
}

}  // namespace faultlane
