// The scenario loader's reading tools, shared by its parts.
//
// A `reader` turns YAML nodes into typed values and every problem into one
// message, "FILE:LINE:COLUMN: KEY: what", the mark 1-based and KEY the
// dotted path of the value (`workload[1].size`). A `builder` carries the
// scenario being read and the names defined so far, so each part of the
// file checks its references as it reads them and the error points at the
// reference itself. Nothing here throws: yaml-cpp's exceptions stop at
// parse_scenario().
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim::detail {

class reader {
 public:
  explicit reader(std::string file) : file_(std::move(file)) {}

  const std::string& file() const noexcept { return file_; }
  source_mark mark(const YAML::Node& node) const;
  error fail(const YAML::Node& where, std::string_view path, std::string_view what) const;

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
  result<std::uint64_t> integer(const YAML::Node& node, std::string_view path, std::uint64_t lo,
                                std::uint64_t hi) const;
  result<double> number(const YAML::Node& node, std::string_view path, double lo, double hi) const;
  result<bool> boolean(const YAML::Node& node, std::string_view path) const;
  result<std::uint64_t> size(const YAML::Node& node, std::string_view path, std::uint64_t lo,
                             std::uint64_t hi) const;
  result<count_range> range(const YAML::Node& node, std::string_view path) const;
  result<status> status_name(const YAML::Node& node, std::string_view path) const;

 private:
  std::string file_;
};

// "a.b" / "a[3]": the path of a key or an item under `path`.
std::string key_path(std::string_view path, std::string_view key);
std::string item_path(std::string_view path, std::size_t index);

// Strict decimal digits, no sign; nullopt when not one or too large.
std::optional<std::uint64_t> parse_decimal(std::string_view text) noexcept;
std::optional<status> parse_status_name(std::string_view text) noexcept;

struct builder {
  reader rd;
  scenario s;
  // Fault names per link: declared, then added by add_fault events in file
  // order (remove_fault may name only those added before it).
  std::map<std::string, std::set<std::string>> link_faults;
  // Every fault name declared or added anywhere, for triggers and expect.
  std::set<std::string> fault_names;

  const transport_spec* transport(std::string_view name) const;
  const region_spec* region(std::string_view name) const;
  const link_spec* link(std::string_view name) const;
  const stream_spec* stream(std::string_view name) const;
  const phase_spec* phase(std::string_view name) const;
  const caller_spec* caller(std::string_view name) const;

  // A required reference to a transport (`local_only` refuses a child).
  result<const transport_spec*> transport_ref(const YAML::Node& node, std::string_view path,
                                              bool local_only) const;
};

// The parts of the file, in the order parse_scenario() reads them.
result<void> read_transports(builder& b, const YAML::Node& node);
result<void> read_regions(builder& b, const YAML::Node& node);
result<void> read_links(builder& b, const YAML::Node& node);
result<link_fault> read_link_fault(const builder& b, const YAML::Node& node, std::string_view path);
result<void> read_phases(builder& b, const YAML::Node& node);
// `least`: 1, or 0 when `control:` has callers (the file must give work).
result<void> read_streams(builder& b, const YAML::Node& node, std::size_t least);
result<void> read_control(builder& b, const YAML::Node& node);
// Shared by streams and callers: exactly one of `count` (1..1000000) and
// `duration_ms`; a `phase:` (default the first) and an `allow:` list (ok
// alone in a liveness phase).
result<void> read_amount(const reader& rd, std::uint64_t& count, std::uint32_t& duration_ms,
                         const YAML::Node& node, const std::string& path);
result<void> read_phase_and_allow(const builder& b, std::string& phase, std::vector<status>& allow,
                                  const YAML::Node& node, const std::string& path);
result<void> read_events(builder& b, const YAML::Node& node);
result<void> read_expect(builder& b, const YAML::Node& node);

}  // namespace faultlane::sim::detail
