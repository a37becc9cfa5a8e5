// swarm: seed ranges, shards, per-seed fault mixes and merged reports
// (swarm.hpp).
#include "faultlane/sim/swarm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "faultlane/core/hash.hpp"

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

scenario swarm_variant(const scenario& s, std::uint64_t seed) {
  scenario out = s;
  std::set<std::string> named;  // faults an event or an expectation names
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
  std::mt19937_64 rng(stable_hash(seed ^ stable_hash(s.name) ^ 0x737761726dull));
  std::uniform_real_distribution<double> unit(0, 1);
  for (auto& link : out.links) {
    std::vector<link_fault> kept;
    for (auto& f : link.faults) {
      if (!f.optional) {
        kept.push_back(f);
        continue;
      }
      if (!named.count(f.spec.name) && unit(rng) < 0.5) continue;  // left out
      // A quarter to four times the file's probability, log-uniform.
      const double scale = std::exp2(unit(rng) * 4 - 2);
      f.spec.when.probability = std::min(1.0, f.spec.when.probability * scale);
      kept.push_back(f);
    }
    link.faults = std::move(kept);
  }
  return out;
}

result<std::string> merge_reports(const std::vector<std::string>& reports) {
  std::map<std::pair<std::string, std::uint64_t>, json> runs;
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto doc = json::parse(reports[i], nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("runs") ||
        !doc["runs"].is_array()) {
      return error{status::invalid_argument,
                   fmt::format("report {}: not a faultlane-sim --json report", i + 1)};
    }
    for (const auto& run : doc["runs"]) {
      if (!run.contains("scenario") || !run["scenario"].is_string() || !run.contains("seed") ||
          !run["seed"].is_number_unsigned()) {
        return error{status::invalid_argument,
                     fmt::format("report {}: a run without its scenario and seed", i + 1)};
      }
      auto key =
          std::make_pair(run["scenario"].get<std::string>(), run["seed"].get<std::uint64_t>());
      if (!runs.emplace(key, run).second) {
        return error{status::invalid_argument,
                     fmt::format("report {}: {} seed {} is in an earlier report too (shards "
                                 "overlap, or a report was given twice)",
                                 i + 1, key.first, key.second)};
      }
    }
  }
  json list = json::array();
  for (auto& [key, run] : runs) list.push_back(std::move(run));
  return json{{"runs", std::move(list)}}.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace faultlane::sim
