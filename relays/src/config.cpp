// YAML relay configuration; see config.hpp.
#include "faultlane/relays/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "faultlane/relays/limits.hpp"

namespace faultlane::relays {
namespace {

error bad(const YAML::Node& at, const std::string& what) {
  return error{status::invalid_argument,
               fmt::format("relays: line {}: {}", at.Mark().line + 1, what)};
}

// Every key of `node` is one of `known` and appears once.
result<void> check_keys(const YAML::Node& node, const std::set<std::string>& known,
                        std::string_view where) {
  std::set<std::string> seen;
  for (const auto& kv : node) {
    auto key = kv.first.as<std::string>();
    if (!known.count(key)) return bad(kv.first, fmt::format("unknown {} key '{}'", where, key));
    if (!seen.insert(key).second) return bad(kv.first, fmt::format("duplicate key '{}'", key));
  }
  return {};
}

// node[key] as a T, or an error naming the key, what it must be, and the
// line; `fallback` when absent.
template <typename T>
result<T> value(const YAML::Node& node, const char* key, T fallback, std::string_view what) {
  const auto v = node[key];
  if (!v) return fallback;
  T out{};
  if (!v.IsScalar() || !YAML::convert<T>::decode(v, out)) {
    return bad(v, fmt::format("{} must be {}", key, what));
  }
  if constexpr (std::is_unsigned_v<T>) {
    if (v.Scalar().find('-') != std::string::npos) {  // yaml-cpp reads "-1" as 2^64 - 1
      return bad(v, fmt::format("{} must be {}", key, what));
    }
  }
  return out;
}

result<address> address_value(const YAML::Node& node, const char* key) {
  auto text = value<std::string>(node, key, "", "HOST:PORT");
  if (!text.ok()) return text.error();
  auto a = parse_relay_address(text.value());
  if (!a.ok()) return bad(node[key], fmt::format("{}: {}", key, a.error().message));
  return a;
}

// One of two words for a setting; `first` when absent.
template <typename E>
result<E> choice(const YAML::Node& node, const char* key, std::pair<const char*, E> first,
                 std::pair<const char*, E> second) {
  auto word = value<std::string>(node, key, first.first, "a word");
  if (!word.ok()) return word.error();
  if (word.value() == first.first) return first.second;
  if (word.value() == second.first) return second.second;
  return bad(node[key], fmt::format("{} must be {} or {}, got {}", key, first.first, second.first,
                                    word.value()));
}

template <typename... R>
const error* first_error(const R&... results) {
  const error* first = nullptr;
  ((first = first ? first : (results.ok() ? nullptr : &results.error())), ...);
  return first;
}

result<void> read_faults(const YAML::Node& node, relay_config& c) {
  const auto faults = node["faults"];
  if (!faults) return {};
  if (!faults.IsSequence()) return bad(faults, "faults is a list");
  for (const auto& f : faults) {
    auto spec = parse_fault(f);
    if (!spec.ok()) return bad(f, spec.error().message);
    c.faults.push_back(spec.value());
  }
  return {};
}

result<relay_config> parse_one(const YAML::Node& node, std::uint64_t seed, std::size_t index) {
  static const std::set<std::string> known{"name",
                                           "listen",
                                           "upstream",
                                           "upstream_source",
                                           "rail",
                                           "protocol",
                                           "tap",
                                           "faults",
                                           "seed",
                                           "allow_non_loopback",
                                           "active_faults_max",
                                           "busy_poll_us",
                                           "on_upstream_failure"};
  if (!node.IsMap()) return bad(node, "each relay is a mapping");
  if (auto r = check_keys(node, known, "relay"); !r.ok()) return r.error();
  relay_config c;
  auto name = value<std::string>(node, "name", fmt::format("relay{}", index), "a name");
  if (!name.ok()) return name.error();
  c.name = name.value();
  if (!node["upstream"])
    return bad(node, fmt::format("relay {} needs upstream: HOST:PORT", c.name));
  auto upstream = address_value(node, "upstream");
  if (!upstream.ok()) return upstream.error();
  c.upstream = upstream.value();
  if (node["listen"]) {
    auto listen = address_value(node, "listen");
    if (!listen.ok()) return listen.error();
    c.listen = listen.value();
  }
  auto source = value<std::string>(node, "upstream_source", "", "an IPv4 address");
  auto rail = value<std::size_t>(node, "rail", 0, "a whole number");
  auto own_seed = value<std::uint64_t>(node, "seed", seed, "a whole number");
  auto tap = value<std::string>(node, "tap", "", "a file path");
  auto anywhere = value<bool>(node, "allow_non_loopback", false, "true or false");
  auto cap = value<std::size_t>(node, "active_faults_max", c.active_faults_max, "a whole number");
  auto poll_us = value<std::uint32_t>(node, "busy_poll_us", 0, "a whole number of microseconds");
  auto proto = choice(node, "protocol", std::pair{"faultlane", protocol::faultlane},
                      std::pair{"raw", protocol::raw});
  auto closing = choice(node, "on_upstream_failure", std::pair{"reset", close_mode::reset},
                        std::pair{"fin", close_mode::fin});
  if (auto* e = first_error(source, rail, own_seed, tap, anywhere, cap, poll_us, proto, closing))
    return *e;
  if (poll_us.value() > busy_poll_us_max) {
    return bad(node["busy_poll_us"],
               fmt::format("busy_poll_us must be at most {}", busy_poll_us_max));
  }
  if (!source.value().empty()) c.upstream_source = source.value();
  c.rail = rail.value();
  c.seed = own_seed.value();
  c.tap = !tap.value().empty();
  c.tap_path = tap.value();
  c.allow_non_loopback = anywhere.value();
  c.active_faults_max = cap.value();
  c.busy_poll_us = poll_us.value();
  c.proto = proto.value();
  c.on_upstream_failure = closing.value();
  if (auto r = read_faults(node, c); !r.ok()) return r.error();
  return c;
}

}  // namespace

result<address> parse_relay_address(std::string_view text) {
  auto e = parse_endpoint(text);
  if (!e.ok()) return e.error();
  auto a = e.value();
  if (a.address == "localhost") a.address = "127.0.0.1";
  if (a.address.size() > 2 && a.address.front() == '[' && a.address.back() == ']') {
    a.address = a.address.substr(1, a.address.size() - 2);
  }
  return a;
}

result<std::vector<relay_config>> parse_relays(const YAML::Node& root) {
  try {
    if (!root.IsMap() || !root["relays"] || !root["relays"].IsSequence()) {
      return error{status::invalid_argument, "relays: expected a mapping with a 'relays' list"};
    }
    if (auto r = check_keys(root, {"seed", "relays"}, "top-level"); !r.ok()) return r.error();
    auto seed = value<std::uint64_t>(root, "seed", 0, "a whole number");
    if (!seed.ok()) return seed.error();
    std::vector<relay_config> out;
    for (const auto& node : root["relays"]) {
      auto c = parse_one(node, seed.value(), out.size());
      if (!c.ok()) return c.error();
      out.push_back(std::move(c).value());
    }
    if (out.empty()) return error{status::invalid_argument, "relays: the list is empty"};
    return out;
  } catch (const YAML::Exception& e) {
    return error{status::invalid_argument, fmt::format("relays: {}", e.what())};
  }
}

result<std::vector<relay_config>> parse_relays_yaml(std::string_view text) {
  try {
    return parse_relays(YAML::Load(std::string(text)));
  } catch (const YAML::Exception& e) {
    return error{status::invalid_argument, fmt::format("relays: YAML: {}", e.what())};
  }
}

result<std::vector<relay_config>> load_relays_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{status::invalid_argument, fmt::format("cannot open {}", path)};
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_relays_yaml(text.str());
  if (!parsed.ok()) {
    return error{parsed.code(), fmt::format("{}: {}", path, parsed.error().message)};
  }
  return parsed;
}

}  // namespace faultlane::relays
