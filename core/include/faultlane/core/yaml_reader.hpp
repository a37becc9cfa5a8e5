// One YAML reader for every file and text faultlane reads: the transport
// config, descriptor text, the relay config and scenarios.
//
// A `reader` turns YAML nodes into typed values and every problem into one
// error: its message is "FILE:LINE:COLUMN: KEY: what" (the mark 1-based, KEY
// the dotted path of the value, `workload[1].size`, "(top level)" for the
// document itself), and its `place` holds the same as data. FILE is a path,
// or a label in angle brackets for text that came from no file
// ("<descriptor>"). Nothing here throws: syntax_error() turns yaml-cpp's
// exceptions into the same form where a caller catches them.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/status.hpp"

namespace faultlane::yaml {

class reader {
 public:
  explicit reader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const noexcept { return file_; }
  source_mark mark(const YAML::Node& node) const;
  error fail(const YAML::Node& where, std::string_view path, std::string_view what) const;
  error fail_at(source_mark at, std::string_view path, std::string_view what) const;
  // A syntax error from yaml-cpp, at its mark: "FILE:L:C: yaml: what".
  error syntax_error(const YAML::Exception& e) const;
  // The same at `at` (the line of `at`, and its column when it has one).
  error syntax_at(source_mark at, std::string_view what) const;

  // A mapping whose keys are all in `known` (each once); `path` names it.
  result<void> mapping(const YAML::Node& node, std::string_view path,
                       const std::vector<std::string_view>& known) const;
  // A sequence of `lo`..`hi` items.
  result<void> sequence(const YAML::Node& node, std::string_view path, std::size_t lo,
                        std::size_t hi) const;

  // map[key], which must be there.
  result<YAML::Node> required(const YAML::Node& map, std::string_view path, const char* key) const;

  result<std::string> text(const YAML::Node& node, std::string_view path) const;
  // A name of 1..`length_max` characters from [a-z0-9_-], plus '.' if `dots`.
  result<std::string> name(const YAML::Node& node, std::string_view path, std::size_t length_max,
                           bool dots = false) const;
  // A whole number as parse_decimal() reads it, in [lo, hi].
  result<std::uint64_t> integer(const YAML::Node& node, std::string_view path, std::uint64_t lo,
                                std::uint64_t hi) const;
  result<double> number(const YAML::Node& node, std::string_view path, double lo, double hi) const;
  // `true` or `false`, nothing else (not YAML 1.1's yes, on, ...).
  result<bool> boolean(const YAML::Node& node, std::string_view path) const;

 private:
  std::string file_;
};

// The node of `key` itself in the mapping `map` (where an error about the
// key's value points when the value has no node of its own), or `map`.
YAML::Node key_node(const YAML::Node& map, std::string_view key);

// What kind of node this is, for messages ("a list", "a mapping", ...).
std::string_view kind_of(const YAML::Node& node);

// "a.b" / "a[3]": the path of a key or an item under `path`.
std::string key_path(std::string_view path, std::string_view key);
std::string item_path(std::string_view path, std::size_t index);

// The one spelling of a whole number in every file faultlane reads: plain
// decimal digits, no sign, no leading zero ("010" is 8 to one YAML reader
// and 10 to another), no hex; nullopt when not one or too large.
std::optional<std::uint64_t> parse_decimal(std::string_view text) noexcept;
// Only the digits 0-9, at least one.
bool is_digits(std::string_view text) noexcept;

}  // namespace faultlane::yaml
