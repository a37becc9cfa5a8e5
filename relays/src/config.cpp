// YAML relay configuration; see config.hpp.
#include "faultlane/relays/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

namespace faultlane::relays {
namespace {

error bad(const YAML::Node& at, const std::string& what) {
  return error{status::invalid_argument,
               fmt::format("relays: line {}: {}", at.Mark().line + 1, what)};
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
                                           "on_upstream_failure"};
  if (!node.IsMap()) return bad(node, "each relay is a mapping");
  for (const auto& kv : node) {
    auto key = kv.first.as<std::string>();
    if (!known.count(key)) return bad(kv.first, fmt::format("unknown relay key '{}'", key));
  }
  relay_config c;
  c.seed = seed;
  c.name = node["name"] ? node["name"].as<std::string>() : fmt::format("relay{}", index);
  if (!node["upstream"]) {
    return bad(node, fmt::format("relay {} needs upstream: HOST:PORT", c.name));
  }
  auto upstream = parse_endpoint(node["upstream"].as<std::string>());
  if (!upstream.ok()) return bad(node["upstream"], upstream.error().message);
  c.upstream = upstream.value();
  if (node["listen"]) {
    auto listen = parse_endpoint(node["listen"].as<std::string>());
    if (!listen.ok()) return bad(node["listen"], listen.error().message);
    c.listen = listen.value();
  }
  if (node["upstream_source"]) c.upstream_source = node["upstream_source"].as<std::string>();
  if (node["rail"]) c.rail = node["rail"].as<std::size_t>();
  if (node["seed"]) c.seed = node["seed"].as<std::uint64_t>();
  if (node["tap"]) {
    c.tap = true;
    c.tap_path = node["tap"].as<std::string>();
  }
  if (node["allow_non_loopback"]) c.allow_non_loopback = node["allow_non_loopback"].as<bool>();
  if (node["active_faults_max"]) c.active_faults_max = node["active_faults_max"].as<std::size_t>();
  if (node["protocol"]) {
    auto p = node["protocol"].as<std::string>();
    if (p == "faultlane") c.proto = protocol::faultlane;
    else if (p == "raw") c.proto = protocol::raw;
    else return bad(node["protocol"], fmt::format("protocol must be faultlane or raw, got {}", p));
  }
  if (node["on_upstream_failure"]) {
    auto m = node["on_upstream_failure"].as<std::string>();
    if (m == "reset") c.on_upstream_failure = close_mode::reset;
    else if (m == "fin") c.on_upstream_failure = close_mode::fin;
    else
      return bad(node["on_upstream_failure"],
                 fmt::format("on_upstream_failure must be reset or fin, got {}", m));
  }
  if (const auto faults = node["faults"]) {
    if (!faults.IsSequence()) return bad(faults, "faults is a list");
    for (const auto& f : faults) {
      auto spec = parse_fault(f);
      if (!spec.ok()) return bad(f, spec.error().message);
      c.faults.push_back(spec.value());
    }
  }
  return c;
}

}  // namespace

result<std::vector<relay_config>> parse_relays(const YAML::Node& root) {
  try {
    if (!root.IsMap() || !root["relays"] || !root["relays"].IsSequence()) {
      return error{status::invalid_argument, "relays: expected a mapping with a 'relays' list"};
    }
    std::uint64_t seed = root["seed"] ? root["seed"].as<std::uint64_t>() : 0;
    std::vector<relay_config> out;
    for (const auto& node : root["relays"]) {
      auto c = parse_one(node, seed, out.size());
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
