// Reading a scenario's `expect:` block: outcome counts per stream, fault
// counts, transport stats after the run, and checkers turned off. Each key
// names something the scenario defines (a stream and a status, a declared
// or added fault, a transport and a stats field, a checker), so a typo is
// an error here rather than an expectation that silently checks nothing.
#include <fmt/format.h>

#include <algorithm>

#include "faultlane/core/stats.hpp"
#include "faultlane/sim/checkers.hpp"
#include "loader/scenario_reader.hpp"

namespace faultlane::sim::detail {
namespace {

constexpr std::string_view extra_stats[] = {"tasks_admitted_now", "bytes_admitted_now",
                                            "rejected_busy", "leases_live"};

bool is_stats_field(std::string_view name) {
  for (const auto& c : transport_counters) {
    if (c.name == name) return true;
  }
  return std::find(std::begin(extra_stats), std::end(extra_stats), name) != std::end(extra_stats);
}

// Calls `check(key_node, key, value_node, path)` for each entry of a mapping
// with free-form keys; duplicate keys are errors.
template <typename F>
result<void> each_entry(const reader& rd, const YAML::Node& node, const std::string& path,
                        F check) {
  if (!node.IsMap()) return rd.fail(node, path, "expected a mapping");
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return rd.fail(kv.first, path, "a key must be a plain name");
    const std::string& key = kv.first.Scalar();
    if (!seen.insert(key).second) return rd.fail(kv.first, key_path(path, key), "duplicate key");
    if (auto r = check(kv.first, key, kv.second, key_path(path, key)); !r) return r;
  }
  return {};
}

result<void> read_counts(builder& b, const YAML::Node& node) {
  const reader& rd = b.rd;
  return each_entry(rd, node, "expect.counts",
                    [&](const YAML::Node& k, const std::string& key, const YAML::Node& v,
                        const std::string& path) -> result<void> {
                      const auto dot = key.find('.');
                      const std::string stream = key.substr(0, dot);
                      if (dot == std::string::npos || b.stream(stream) == nullptr) {
                        return rd.fail(k, path,
                                       "expected STREAM.STATUS or STREAM.done, STREAM "
                                       "a stream of the workload");
                      }
                      const std::string what = key.substr(dot + 1);
                      if (what != "done" && !parse_status_name(what)) {
                        return rd.fail(k, path, fmt::format("'{}' is not a status name", what));
                      }
                      auto r = rd.range(v, path);
                      if (!r.ok()) return r.error();
                      b.s.expect.counts[key] = r.value();
                      return {};
                    });
}

// What `expect.control` may say of a caller besides its statuses.
constexpr std::string_view caller_measures[] = {"done",   "p50_us",       "p99_us",
                                                "max_us", "incarnations", "listed"};

result<void> read_control_expect(builder& b, const YAML::Node& node) {
  const reader& rd = b.rd;
  return each_entry(
      rd, node, "expect.control",
      [&](const YAML::Node& k, const std::string& key, const YAML::Node& v,
          const std::string& path) -> result<void> {
        const auto dot = key.find('.');
        const caller_spec* c = dot == std::string::npos ? nullptr : b.caller(key.substr(0, dot));
        if (c == nullptr) {
          return rd.fail(k, path,
                         "expected CALLER.STATUS or CALLER.MEASURE, CALLER a caller of "
                         "control:");
        }
        const std::string what = key.substr(dot + 1);
        const bool measure = std::find(std::begin(caller_measures), std::end(caller_measures),
                                       what) != std::end(caller_measures);
        if (!measure && !parse_status_name(what)) {
          return rd.fail(k, path,
                         fmt::format("'{}' is neither a status name nor done, p50_us, p99_us, "
                                     "max_us, incarnations or listed",
                                     what));
        }
        if (what == "incarnations" && c->method != control_method::describe) {
          return rd.fail(k, path,
                         fmt::format("only a describe caller sees incarnations ('{}' "
                                     "calls {})",
                                     c->name, to_string(c->method)));
        }
        if (what == "listed" && c->method != control_method::describe &&
            c->method != control_method::list_registrations) {
          return rd.fail(k, path,
                         fmt::format("only describe and list_registrations list "
                                     "registrations ('{}' calls {})",
                                     c->name, to_string(c->method)));
        }
        auto r = rd.range(v, path);
        if (!r.ok()) return r.error();
        b.s.expect.control[key] = r.value();
        return {};
      });
}

result<void> read_fault_counts(builder& b, const YAML::Node& node) {
  const reader& rd = b.rd;
  return each_entry(
      rd, node, "expect.faults",
      [&](const YAML::Node& k, const std::string& key, const YAML::Node& v,
          const std::string& path) -> result<void> {
        if (const auto slash = key.find('/'); slash != std::string::npos) {
          const std::string link = key.substr(0, slash);
          if (b.link(link) == nullptr) return rd.fail(k, path, fmt::format("no link '{}'", link));
          if (b.link_faults[link].count(key.substr(slash + 1)) == 0) {
            return rd.fail(k, path,
                           fmt::format("link '{}' has no fault '{}'", link, key.substr(slash + 1)));
          }
        } else if (b.fault_names.count(key) == 0) {
          return rd.fail(k, path,
                         fmt::format("no link declares a fault '{}' and no event adds one", key));
        }
        auto r = rd.range(v, path);
        if (!r.ok()) return r.error();
        b.s.expect.faults[key] = r.value();
        return {};
      });
}

result<void> read_stats(builder& b, const YAML::Node& node) {
  const reader& rd = b.rd;
  return each_entry(rd, node, "expect.stats",
                    [&](const YAML::Node& k, const std::string& key, const YAML::Node& v,
                        const std::string& path) -> result<void> {
                      const auto dot = key.find('.');
                      if (dot == std::string::npos || b.transport(key.substr(0, dot)) == nullptr) {
                        return rd.fail(k, path,
                                       "expected TRANSPORT.FIELD, TRANSPORT a transport "
                                       "of the scenario");
                      }
                      if (!is_stats_field(key.substr(dot + 1))) {
                        return rd.fail(k, path,
                                       fmt::format("'{}' is not a transport_stats field "
                                                   "(docs/architecture.md)",
                                                   key.substr(dot + 1)));
                      }
                      auto r = rd.range(v, path);
                      if (!r.ok()) return r.error();
                      b.s.expect.stats[key] = r.value();
                      return {};
                    });
}

result<void> read_checkers(builder& b, const YAML::Node& node) {
  const reader& rd = b.rd;
  return each_entry(rd, node, "expect.checkers",
                    [&](const YAML::Node& k, const std::string& key, const YAML::Node& v,
                        const std::string& path) -> result<void> {
                      if (std::find(std::begin(checker_names), std::end(checker_names), key) ==
                          std::end(checker_names)) {
                        return rd.fail(k, path, "not a checker (docs/scenarios.md lists them)");
                      }
                      if (auto r = rd.mapping(v, path, {"run", "reason"}); !r) return r;
                      bool run = true;
                      if (const auto n = v["run"]) {
                        auto flag = rd.boolean(n, key_path(path, "run"));
                        if (!flag.ok()) return flag.error();
                        run = flag.value();
                      }
                      std::string reason;
                      if (const auto n = v["reason"]) {
                        auto text = rd.text(n, key_path(path, "reason"));
                        if (!text.ok()) return text.error();
                        reason = text.value();
                      }
                      if (!run && reason.empty()) {
                        return rd.fail(v, key_path(path, "reason"),
                                       "turning a checker off needs a reason");
                      }
                      if (!run) b.s.expect.checkers_off[key] = reason;
                      return {};
                    });
}

}  // namespace

result<void> read_expect(builder& b, const YAML::Node& node) {
  if (auto r = b.rd.mapping(node, "expect", {"counts", "faults", "stats", "control", "checkers"});
      !r) {
    return r;
  }
  if (const auto n = node["control"]) {
    if (auto r = read_control_expect(b, n); !r) return r;
  }
  if (const auto n = node["counts"]) {
    if (auto r = read_counts(b, n); !r) return r;
  }
  if (const auto n = node["faults"]) {
    if (auto r = read_fault_counts(b, n); !r) return r;
  }
  if (const auto n = node["stats"]) {
    if (auto r = read_stats(b, n); !r) return r;
  }
  if (const auto n = node["checkers"]) {
    if (auto r = read_checkers(b, n); !r) return r;
  }
  return {};
}

}  // namespace faultlane::sim::detail
