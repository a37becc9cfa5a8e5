// YAML relay configuration; see config.hpp.
#include "faultlane/relays/config.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "faultlane/core/yaml_reader.hpp"
#include "faultlane/relays/limits.hpp"

namespace faultlane::relays {
namespace {

// node[key] as a T, or an error at the value saying what it must be;
// `fallback` when absent. Numbers and switches are spelled as in every
// faultlane file (yaml::parse_decimal, `true`/`false`).
template <typename T>
result<T> value(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                const char* key, T fallback, std::string_view what) {
  const auto v = node[key];
  if (!v) return fallback;
  const auto bad = [&] {
    return rd.fail(v, yaml::key_path(path, key), fmt::format("must be {}", what));
  };
  if (!v.IsScalar()) return bad();
  const std::string& text = v.Scalar();
  if constexpr (std::is_same_v<T, bool>) {
    if (text != "true" && text != "false") return bad();
    return text == "true";
  } else if constexpr (std::is_unsigned_v<T>) {
    const auto n = yaml::parse_decimal(text);
    if (!n || *n > std::numeric_limits<T>::max()) return bad();
    return static_cast<T>(*n);
  } else {
    return text;
  }
}

result<address> address_value(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                              const char* key) {
  auto text = value<std::string>(rd, node, path, key, "", "HOST:PORT");
  if (!text.ok()) return text.error();
  auto a = parse_relay_address(text.value());
  if (!a.ok()) return rd.fail(node[key], yaml::key_path(path, key), a.error().message);
  return a;
}

// One of two words for a setting; `first` when absent.
template <typename E>
result<E> choice(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                 const char* key, std::pair<const char*, E> first,
                 std::pair<const char*, E> second) {
  auto word = value<std::string>(rd, node, path, key, first.first, "a word");
  if (!word.ok()) return word.error();
  if (word.value() == first.first) return first.second;
  if (word.value() == second.first) return second.second;
  return rd.fail(node[key], yaml::key_path(path, key),
                 fmt::format("must be {} or {}, got {}", first.first, second.first, word.value()));
}

template <typename... R>
const error* first_error(const R&... results) {
  const error* first = nullptr;
  ((first = first ? first : (results.ok() ? nullptr : &results.error())), ...);
  return first;
}

result<void> read_faults(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                         relay_config& c) {
  const auto faults = node["faults"];
  if (!faults) return {};
  const auto faults_path = yaml::key_path(path, "faults");
  if (!faults.IsSequence()) return rd.fail(faults, faults_path, "expected a list of faults");
  for (std::size_t i = 0; i < faults.size(); ++i) {
    auto spec = parse_fault(faults[i]);
    if (!spec.ok()) {
      return place_fault_error(rd, faults[i], yaml::item_path(faults_path, i), spec.error());
    }
    c.faults.push_back(spec.value());
  }
  return {};
}

struct relay_settings {
  result<std::string> source, tap;
  result<std::size_t> rail, cap;
  result<std::uint64_t> seed;
  result<bool> anywhere;
  result<std::uint32_t> poll_us;
  result<protocol> proto;
  result<close_mode> closing;
};

relay_settings read_settings(const yaml::reader& rd, const YAML::Node& node, std::string_view path,
                             std::uint64_t seed, std::size_t faults_max) {
  const auto whole = "a whole number";
  return {value<std::string>(rd, node, path, "upstream_source", "", "an IPv4 address"),
          value<std::string>(rd, node, path, "tap", "", "a file path"),
          value<std::size_t>(rd, node, path, "rail", 0, whole),
          value<std::size_t>(rd, node, path, "active_faults_max", faults_max, whole),
          value<std::uint64_t>(rd, node, path, "seed", seed, whole),
          value<bool>(rd, node, path, "allow_non_loopback", false, "true or false"),
          value<std::uint32_t>(rd, node, path, "busy_poll_us", 0, "a whole number of microseconds"),
          choice(rd, node, path, "protocol", std::pair{"faultlane", protocol::faultlane},
                 std::pair{"raw", protocol::raw}),
          choice(rd, node, path, "on_upstream_failure", std::pair{"reset", close_mode::reset},
                 std::pair{"fin", close_mode::fin})};
}

result<relay_config> parse_one(const yaml::reader& rd, const YAML::Node& node,
                               std::string_view path, std::uint64_t seed, std::size_t index) {
  if (auto r = rd.mapping(node, path,
                          {"name", "listen", "upstream", "upstream_source", "rail", "protocol",
                           "tap", "faults", "seed", "allow_non_loopback", "active_faults_max",
                           "busy_poll_us", "on_upstream_failure"});
      !r.ok()) {
    return r.error();
  }
  relay_config c;
  auto name = value<std::string>(rd, node, path, "name", fmt::format("relay{}", index), "a name");
  if (!name.ok()) return name.error();
  c.name = name.value();
  if (!node["upstream"])
    return rd.fail(node, yaml::key_path(path, "upstream"), "required (HOST:PORT)");
  auto upstream = address_value(rd, node, path, "upstream");
  if (!upstream.ok()) return upstream.error();
  c.upstream = upstream.value();
  if (node["listen"]) {
    auto listen = address_value(rd, node, path, "listen");
    if (!listen.ok()) return listen.error();
    c.listen = listen.value();
  }
  auto s = read_settings(rd, node, path, seed, c.active_faults_max);
  if (auto* e = first_error(s.source, s.rail, s.seed, s.tap, s.anywhere, s.cap, s.poll_us, s.proto,
                            s.closing)) {
    return *e;
  }
  if (s.poll_us.value() > busy_poll_us_max) {
    return rd.fail(node["busy_poll_us"], yaml::key_path(path, "busy_poll_us"),
                   fmt::format("must be at most {}", busy_poll_us_max));
  }
  if (!s.source.value().empty()) c.upstream_source = s.source.value();
  c.rail = s.rail.value();
  c.seed = s.seed.value();
  c.tap = !s.tap.value().empty();
  c.tap_path = s.tap.value();
  c.allow_non_loopback = s.anywhere.value();
  c.active_faults_max = s.cap.value();
  c.busy_poll_us = s.poll_us.value();
  c.proto = s.proto.value();
  c.on_upstream_failure = s.closing.value();
  if (auto r = read_faults(rd, node, path, c); !r.ok()) return r.error();
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

result<std::vector<relay_config>> parse_relays(const YAML::Node& root, const yaml::reader& rd) {
  if (!root.IsMap() || !root["relays"] || !root["relays"].IsSequence()) {
    return rd.fail(root, "", "expected a mapping with a 'relays' list");
  }
  if (auto r = rd.mapping(root, "", {"seed", "relays"}); !r.ok()) return r.error();
  auto seed = value<std::uint64_t>(rd, root, "", "seed", 0, "a whole number");
  if (!seed.ok()) return seed.error();
  const auto list = root["relays"];
  if (list.size() == 0) return rd.fail(list, "relays", "the list is empty");
  std::vector<relay_config> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto c = parse_one(rd, list[i], yaml::item_path("relays", i), seed.value(), i);
    if (!c.ok()) return c.error();
    out.push_back(std::move(c).value());
  }
  return out;
}

result<std::vector<relay_config>> parse_relays_yaml(std::string_view text,
                                                    const std::string& label) {
  const yaml::reader rd(label);
  try {
    return parse_relays(YAML::Load(std::string(text)), rd);
  } catch (const YAML::Exception& e) {
    return rd.syntax_error(e);
  }
}

result<std::vector<relay_config>> load_relays_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return error{status::invalid_argument, fmt::format("cannot open {}", path)};
  std::stringstream text;
  text << in.rdbuf();
  return parse_relays_yaml(text.str(), path);
}

}  // namespace faultlane::relays
