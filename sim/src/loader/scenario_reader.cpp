// The scenario loader's typed reads and name lookups (scenario_reader.hpp).
#include "loader/scenario_reader.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace faultlane::sim::detail {

std::optional<status> parse_status_name(std::string_view text) noexcept {
  for (int i = 0; i < status_count; ++i) {
    if (to_string(static_cast<status>(i)) == text) return static_cast<status>(i);
  }
  return std::nullopt;
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
