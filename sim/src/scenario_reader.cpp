// The scenario loader's typed reads and name lookups (scenario_reader.hpp).
#include "scenario_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace faultlane::sim::detail {
namespace {

std::string_view kind_of(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  if (node.IsNull()) return "null";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "a scalar";
}

std::string quoted_list(const std::vector<std::string_view>& names) {
  std::string out;
  for (auto n : names) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
  return out;
}

}  // namespace

std::string key_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string item_path(std::string_view path, std::size_t index) {
  return fmt::format("{}[{}]", path, index);
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) noexcept {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::uint64_t out = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

std::optional<status> parse_status_name(std::string_view text) noexcept {
  for (int i = 0; i < status_count; ++i) {
    if (to_string(static_cast<status>(i)) == text) return static_cast<status>(i);
  }
  return std::nullopt;
}

source_mark reader::mark(const YAML::Node& node) const {
  const YAML::Mark m = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  if (m.is_null()) return source_mark{file_, 1, 1};
  return source_mark{file_, m.line + 1, m.column + 1};
}

error reader::fail(const YAML::Node& where, std::string_view path, std::string_view what) const {
  const auto m = mark(where);
  return error{status::invalid_argument, fmt::format("{}:{}:{}: {}: {}", m.file, m.line, m.column,
                                                     path.empty() ? "(top level)" : path, what)};
}

result<void> reader::mapping(const YAML::Node& node, std::string_view path,
                             const std::vector<std::string_view>& known) const {
  if (!node.IsMap())
    return fail(node, path, fmt::format("expected a mapping, got {}", kind_of(node)));
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return fail(kv.first, path, "a key must be a plain name");
    const std::string& key = kv.first.Scalar();
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return fail(kv.first, key_path(path, key),
                  fmt::format("unknown key (known: {})", quoted_list(known)));
    }
    if (!seen.insert(key).second) return fail(kv.first, key_path(path, key), "duplicate key");
  }
  return {};
}

result<void> reader::sequence(const YAML::Node& node, std::string_view path, std::size_t lo,
                              std::size_t hi) const {
  if (!node.IsSequence())
    return fail(node, path, fmt::format("expected a list, got {}", kind_of(node)));
  if (node.size() < lo || node.size() > hi) {
    return fail(node, path, fmt::format("needs {}..{} items, got {}", lo, hi, node.size()));
  }
  return {};
}

result<YAML::Node> reader::required(const YAML::Node& map, std::string_view path,
                                    const char* key) const {
  YAML::Node node = map[key];
  if (!node.IsDefined()) return fail(map, key_path(path, key), "required");
  return node;
}

result<std::string> reader::text(const YAML::Node& node, std::string_view path) const {
  if (!node.IsScalar())
    return fail(node, path, fmt::format("expected a string, got {}", kind_of(node)));
  return node.Scalar();
}

result<std::string> reader::name(const YAML::Node& node, std::string_view path,
                                 std::size_t length_max, bool dots) const {
  auto t = text(node, path);
  if (!t.ok()) return t;
  const std::string& s = t.value();
  const bool good = std::all_of(s.begin(), s.end(), [dots](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           (dots && c == '.');
  });
  // "null" would be written back as YAML's null (to_yaml() writes names plain).
  if (s.empty() || s.size() > length_max || !good || s == "null") {
    return fail(node, path,
                fmt::format("'{}' is not a name: 1..{} characters from [a-z0-9_-{}]", s, length_max,
                            dots ? "." : ""));
  }
  return t;
}

result<std::uint64_t> reader::integer(const YAML::Node& node, std::string_view path,
                                      std::uint64_t lo, std::uint64_t hi) const {
  if (!node.IsScalar())
    return fail(node, path, fmt::format("expected an integer, got {}", kind_of(node)));
  auto n = parse_decimal(node.Scalar());
  if (!n) return fail(node, path, fmt::format("expected an integer, got '{}'", node.Scalar()));
  if (*n < lo || *n > hi) {
    return fail(node, path, fmt::format("must be in {}..{}, got {}", lo, hi, *n));
  }
  return *n;
}

result<double> reader::number(const YAML::Node& node, std::string_view path, double lo,
                              double hi) const {
  if (!node.IsScalar())
    return fail(node, path, fmt::format("expected a number, got {}", kind_of(node)));
  const std::string& s = node.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) {
    return fail(node, path, fmt::format("expected a number, got '{}'", s));
  }
  if (v < lo || v > hi)
    return fail(node, path, fmt::format("must be in {}..{}, got {}", lo, hi, s));
  return v;
}

result<bool> reader::boolean(const YAML::Node& node, std::string_view path) const {
  if (node.IsScalar() && node.Scalar() == "true") return true;
  if (node.IsScalar() && node.Scalar() == "false") return false;
  return fail(node, path,
              fmt::format("expected true or false, got {}",
                          node.IsScalar() ? fmt::format("'{}'", node.Scalar()) : kind_of(node)));
}

result<std::uint64_t> reader::size(const YAML::Node& node, std::string_view path, std::uint64_t lo,
                                   std::uint64_t hi) const {
  if (!node.IsScalar())
    return fail(node, path, fmt::format("expected a size, got {}", kind_of(node)));
  auto n = parse_size(node.Scalar());
  if (!n.ok()) return fail(node, path, n.error().message);
  if (n.value() < lo || n.value() > hi) {
    return fail(node, path, fmt::format("must be in {}..{}, got {}", lo, hi, n.value()));
  }
  return n;
}

result<count_range> reader::range(const YAML::Node& node, std::string_view path) const {
  if (!node.IsScalar()) {
    return fail(node, path, fmt::format("expected a count range, got {}", kind_of(node)));
  }
  auto r = parse_count_range(node.Scalar());
  if (!r.ok()) return fail(node, path, r.error().message);
  return r;
}

result<status> reader::status_name(const YAML::Node& node, std::string_view path) const {
  auto t = text(node, path);
  if (!t.ok()) return t.error();
  auto s = parse_status_name(t.value());
  if (!s) return fail(node, path, fmt::format("'{}' is not a status name", t.value()));
  return *s;
}

namespace {
template <typename T>
const T* find_named(const std::vector<T>& items, std::string_view name) {
  auto it = std::find_if(items.begin(), items.end(), [&](const T& t) { return t.name == name; });
  return it == items.end() ? nullptr : &*it;
}
}  // namespace

const transport_spec* builder::transport(std::string_view n) const {
  return find_named(s.transports, n);
}
const region_spec* builder::region(std::string_view n) const { return find_named(s.regions, n); }
const link_spec* builder::link(std::string_view n) const { return find_named(s.links, n); }
const stream_spec* builder::stream(std::string_view n) const { return find_named(s.streams, n); }
const phase_spec* builder::phase(std::string_view n) const { return find_named(s.phases, n); }
const caller_spec* builder::caller(std::string_view n) const { return find_named(s.control, n); }

result<const transport_spec*> builder::transport_ref(const YAML::Node& node, std::string_view path,
                                                     bool local_only) const {
  auto n = rd.text(node, path);
  if (!n.ok()) return n.error();
  const transport_spec* t = transport(n.value());
  if (t == nullptr) return rd.fail(node, path, fmt::format("no transport '{}'", n.value()));
  if (local_only && t->process == process_kind::child) {
    return rd.fail(node, path,
                   fmt::format("'{}' is a child process, which can only be a target", t->name));
  }
  return t;
}

}  // namespace faultlane::sim::detail
