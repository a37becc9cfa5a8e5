// The YAML reader shared by every file and text faultlane reads
// (yaml_reader.hpp).
#include "faultlane/core/yaml_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

namespace faultlane::yaml {
namespace {

std::string quoted_list(const std::vector<std::string_view>& names) {
  std::string out;
  for (auto n : names) out += fmt::format("{}{}", out.empty() ? "" : ", ", n);
  return out;
}

// A node that holds one value. A missing key of a const mapping is a node
// on which IsScalar() throws; IsDefined() comes first.
bool is_scalar(const YAML::Node& node) { return node.IsDefined() && node.IsScalar(); }

}  // namespace

bool is_digits(std::string_view text) noexcept {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string_view kind_of(const YAML::Node& node) {
  if (!node.IsDefined()) return "nothing";
  if (node.IsNull()) return "null";
  if (node.IsSequence()) return "a list";
  if (node.IsMap()) return "a mapping";
  return "a scalar";
}

std::string key_path(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

std::string item_path(std::string_view path, std::size_t index) {
  return fmt::format("{}[{}]", path, index);
}

std::optional<std::uint64_t> parse_decimal(std::string_view text) noexcept {
  if (!is_digits(text) || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::uint64_t out = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return out;
}

source_mark reader::mark(const YAML::Node& node) const {
  const YAML::Mark m = node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  if (m.is_null()) return source_mark{file_, 1, 1};
  return source_mark{file_, m.line + 1, m.column + 1};
}

error reader::fail(const YAML::Node& where, std::string_view path, std::string_view what) const {
  return fail_at(mark(where), path, what);
}

error reader::fail_at(source_mark at, std::string_view path, std::string_view what) const {
  std::string message = fmt::format("{}:{}:{}: {}: {}", at.file, at.line, at.column,
                                    path.empty() ? "(top level)" : path, what);
  return error{status::invalid_argument, std::move(message),
               input_place{std::move(at), std::string(path), std::string(what)}};
}

error reader::syntax_error(const YAML::Exception& e) const {
  const int line = e.mark.is_null() ? 1 : e.mark.line + 1;
  const int column = e.mark.is_null() ? 1 : e.mark.column + 1;
  return syntax_at(source_mark{file_, line, column}, e.msg);
}

error reader::syntax_at(source_mark at, std::string_view what) const {
  std::string message = fmt::format("{}:{}:{}: yaml: {}", at.file, at.line, at.column, what);
  return error{status::invalid_argument, std::move(message),
               input_place{std::move(at), "", std::string(what)}};
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
  if (!is_scalar(node))
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
  if (!is_scalar(node))
    return fail(node, path, fmt::format("expected an integer, got {}", kind_of(node)));
  auto n = parse_decimal(node.Scalar());
  if (!n && is_digits(node.Scalar()) && node.Scalar()[0] != '0') {
    return fail(node, path, fmt::format("{} does not fit in 64 bits", node.Scalar()));
  }
  if (!n) return fail(node, path, fmt::format("expected an integer, got '{}'", node.Scalar()));
  if (*n < lo || *n > hi) {
    return fail(node, path, fmt::format("must be in {}..{}, got {}", lo, hi, *n));
  }
  return *n;
}

result<double> reader::number(const YAML::Node& node, std::string_view path, double lo,
                              double hi) const {
  if (!is_scalar(node))
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
  if (is_scalar(node) && node.Scalar() == "true") return true;
  if (is_scalar(node) && node.Scalar() == "false") return false;
  return fail(node, path,
              fmt::format("expected true or false, got {}",
                          is_scalar(node) ? fmt::format("'{}'", node.Scalar()) : kind_of(node)));
}

YAML::Node key_node(const YAML::Node& map, std::string_view key) {
  if (map.IsDefined() && map.IsMap()) {
    for (const auto& kv : map) {
      if (kv.first.IsScalar() && kv.first.Scalar() == key) return kv.first;
    }
  }
  return map;
}

}  // namespace faultlane::yaml
