// The scenario loader's reading tools, shared by its parts.
//
// A `reader` is the shared YAML reader (faultlane/core/yaml_reader.hpp):
// typed values, and every problem one error "FILE:LINE:COLUMN: KEY: what"
// with its place as data. A `builder` carries the
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

#include "faultlane/core/yaml_reader.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim::detail {

// The scenario's reads on top of the shared YAML reader
// (faultlane/core/yaml_reader.hpp): sizes, count ranges and status names.
class reader : public yaml::reader {
 public:
  using yaml::reader::reader;

  result<std::uint64_t> size(const YAML::Node& node, std::string_view path, std::uint64_t lo,
                             std::uint64_t hi) const;
  result<count_range> range(const YAML::Node& node, std::string_view path) const;
  result<status> status_name(const YAML::Node& node, std::string_view path) const;
};

using yaml::item_path;
using yaml::key_node;
using yaml::key_path;
using yaml::kind_of;
using yaml::parse_decimal;
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
