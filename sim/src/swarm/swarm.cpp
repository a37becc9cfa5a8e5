// swarm: seed ranges, shards, per-seed fault mixes and merged reports
// (swarm.hpp).
#include "faultlane/sim/swarm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "faultlane/base/hash.hpp"

namespace faultlane::sim {
namespace {

using json = nlohmann::json;

bool parse_u64(std::string_view text, std::uint64_t& out) {
  if (text.empty()) return false;
  const auto* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && at == end;
}

}  // namespace

result<seed_range> parse_seed_range(std::string_view text) {
  const auto dots = text.find("..");
  seed_range r;
  if (dots == std::string_view::npos || !parse_u64(text.substr(0, dots), r.first) ||
      !parse_u64(text.substr(dots + 2), r.last)) {
    return error{
        status::invalid_argument,
        fmt::format("--seeds {}: give a range A..B of seeds, both included (1..1000)", text)};
  }
  if (r.first > r.last) {
    return error{status::invalid_argument,
                 fmt::format("--seeds {}: the range is reversed: no seed is in it (give {}..{})",
                             text, r.last, r.first)};
  }
  return r;
}

result<shard> parse_shard(std::string_view text) {
  const auto slash = text.find('/');
  std::uint64_t index = 0;
  std::uint64_t count = 0;
  if (slash == std::string_view::npos || !parse_u64(text.substr(0, slash), index) ||
      !parse_u64(text.substr(slash + 1), count)) {
    return error{status::invalid_argument,
                 fmt::format("--shard {}: give I/N, shard I (from 0) of N", text)};
  }
  if (count == 0 || count > shards_max || index >= count) {
    return error{
        status::invalid_argument,
        fmt::format("--shard {}: out of range: N is 1..{} and I is 0..N-1", text, shards_max)};
  }
  return shard{static_cast<std::size_t>(index), static_cast<std::size_t>(count)};
}

std::vector<std::uint64_t> shard_seeds(seed_range range, shard part) {
  std::vector<std::uint64_t> out;
  for (std::uint64_t k = part.index;; k += part.count) {
    if (k > range.last - range.first) break;
    out.push_back(range.first + k);
    if (range.last - range.first - k < part.count) break;  // the next would overflow
  }
  return out;
}

namespace {

// Faults an event or an expectation names: a swarm keeps them as written.
std::set<std::string> named_faults(const scenario& s) {
  std::set<std::string> named;
  for (const auto& e : s.events) {
    named.insert(e.fault);
    named.insert(e.fault_name);
  }
  for (const auto& [name, range] : s.expect.faults) {
    named.insert(name);
    if (const auto slash = name.find('/'); slash != std::string::npos) {
      named.insert(name.substr(slash + 1));
    }
  }
  return named;
}

}  // namespace

std::size_t swarm_faults(const scenario& s) {
  const auto named = named_faults(s);
  std::size_t n = 0;
  for (const auto& link : s.links) {
    for (const auto& f : link.faults) n += f.optional && !named.count(f.spec.name) ? 1 : 0;
  }
  return n;
}

scenario swarm_variant(const scenario& s, std::uint64_t seed) {
  scenario out = s;
  const auto named = named_faults(s);
  std::mt19937_64 rng(stable_hash(seed ^ stable_hash(s.name) ^ 0x737761726dull));
  std::uniform_real_distribution<double> unit(0, 1);
  for (auto& link : out.links) {
    std::vector<link_fault> kept;
    for (auto& f : link.faults) {
      if (!f.optional || named.count(f.spec.name)) {
        kept.push_back(f);
        continue;
      }
      if (unit(rng) < 0.5) continue;  // left out
      // A quarter to four times the file's probability, log-uniform.
      const double scale = std::exp2(unit(rng) * 4 - 2);
      f.spec.when.probability = std::min(1.0, f.spec.when.probability * scale);
      kept.push_back(f);
    }
    link.faults = std::move(kept);
  }
  return out;
}

namespace {

json meta_json(const swarm_meta& m) {
  return {{"scenario", m.scenario},
          {"seeds", fmt::format("{}..{}", m.seeds.first, m.seeds.last)},
          {"shard", fmt::format("{}/{}", m.part.index, m.part.count)}};
}

}  // namespace

std::string swarm_report(const std::vector<run_result>& runs, const swarm_meta& meta) {
  auto doc = json::parse(to_json(runs));
  doc["swarm"] = meta_json(meta);
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

namespace {

// The shards merge_reports was given must be every shard of one swarm.
result<void> check_shards(const std::vector<named_report>& reports, const std::vector<json>& docs,
                          json& merged_meta) {
  std::optional<swarm_meta> first;
  std::map<std::size_t, std::string> shards;  // index -> input
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const auto& name = reports[i].name;
    const bool has = docs[i].contains("swarm");
    if (i > 0 && has != first.has_value()) {
      return error{status::invalid_argument,
                   fmt::format("{}: {} swarm report beside {}: merge the shards of one swarm", name,
                               has ? "a" : "not a", reports[0].name)};
    }
    if (!has) continue;
    const auto& m = docs[i]["swarm"];
    auto seeds = parse_seed_range(m.value("seeds", ""));
    auto part = parse_shard(m.value("shard", ""));
    if (!seeds || !part || !m.contains("scenario") || !m["scenario"].is_string()) {
      return error{status::invalid_argument, fmt::format("{}: a malformed \"swarm\" entry", name)};
    }
    const swarm_meta here{m["scenario"].get<std::string>(), seeds.value(), part.value()};
    if (!first) first = here;
    if (here.scenario != first->scenario || here.seeds.first != first->seeds.first ||
        here.seeds.last != first->seeds.last || here.part.count != first->part.count) {
      return error{status::invalid_argument,
                   fmt::format("{}: a shard of another swarm ({} seeds {}..{} in {} shards, not "
                               "{} seeds {}..{} in {} as {})",
                               name, here.scenario, here.seeds.first, here.seeds.last,
                               here.part.count, first->scenario, first->seeds.first,
                               first->seeds.last, first->part.count, reports[0].name)};
    }
    if (auto [at, added] = shards.emplace(here.part.index, name); !added) {
      return error{status::invalid_argument,
                   fmt::format("{}: shard {}/{} again (also {})", name, here.part.index,
                               here.part.count, at->second)};
    }
  }
  if (!first) return {};
  if (shards.size() != first->part.count) {
    std::string missing;
    for (std::size_t k = 0; k < first->part.count && missing.size() < 200; ++k) {
      if (!shards.count(k)) missing += fmt::format("{}{}", missing.empty() ? "" : ", ", k);
    }
    return error{status::invalid_argument,
                 fmt::format("shards missing of {}: {} (of {})", first->scenario, missing,
                             first->part.count)};
  }
  merged_meta = meta_json({first->scenario, first->seeds, {0, 1}});
  return {};
}

// The merged runs' probe hits, summed as one report's are; counted only
// when every input counted them.
probe_summary merged_probes(const std::vector<json>& docs,
                            const std::map<std::pair<std::string, std::uint64_t>, json>& runs) {
  probe_summary out;
  out.runs = runs.size();
  out.counted = std::all_of(docs.begin(), docs.end(),
                            [](const json& d) { return d.value("probes_counted", false); });
  for (const auto& row : probes::table) out.hits[std::string(row.name)] = 0;
  for (const auto& [key, run] : runs) {
    const auto it = run.find("probes");
    if (it == run.end() || !it->is_object()) continue;
    for (const auto& [name, hits] : it->items()) {
      if (hits.is_number_unsigned()) out.hits[name] += hits.get<std::uint64_t>();
    }
  }
  return out;
}

}  // namespace

result<merged_report> merge_reports(const std::vector<named_report>& reports) {
  std::vector<json> docs;
  for (const auto& r : reports) {
    auto doc = json::parse(r.text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("runs") ||
        !doc["runs"].is_array()) {
      return error{status::invalid_argument,
                   fmt::format("{}: not a faultlane-sim --json report", r.name)};
    }
    docs.push_back(std::move(doc));
  }
  json meta;
  if (auto ok = check_shards(reports, docs, meta); !ok) return ok.error();
  std::map<std::pair<std::string, std::uint64_t>, json> runs;
  std::map<std::pair<std::string, std::uint64_t>, std::string> from;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    for (const auto& run : docs[i]["runs"]) {
      if (!run.contains("scenario") || !run["scenario"].is_string() || !run.contains("seed") ||
          !run["seed"].is_number_unsigned()) {
        return error{status::invalid_argument,
                     fmt::format("{}: a run without its scenario and seed", reports[i].name)};
      }
      auto key =
          std::make_pair(run["scenario"].get<std::string>(), run["seed"].get<std::uint64_t>());
      if (!runs.emplace(key, run).second) {
        return error{status::invalid_argument,
                     fmt::format("{}: {} seed {} is in {} too", reports[i].name, key.first,
                                 key.second, from[key])};
      }
      from[key] = reports[i].name;
    }
  }
  const auto p = merged_probes(docs, runs);
  json list = json::array();
  for (auto& [key, run] : runs) list.push_back(std::move(run));
  json out{{"runs", std::move(list)},
           {"probes", p.hits},
           {"probes_never_reached", never_reached(p)},
           {"probes_counted", p.counted}};
  if (!meta.is_null()) out["swarm"] = std::move(meta);
  return merged_report{out.dump(2, ' ', false, json::error_handler_t::replace) + "\n", runs.size(),
                       p};
}

}  // namespace faultlane::sim
