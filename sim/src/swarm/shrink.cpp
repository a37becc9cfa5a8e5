// shrink: delta debugging of a failing scenario (shrink.hpp).
#include "faultlane/sim/shrink.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace faultlane::sim {
namespace {

// A removable part: a link's fault or an event.
struct part {
  bool is_event = false;
  std::size_t link = 0;
  std::size_t index = 0;
};

std::vector<part> parts_of(const scenario& s) {
  std::vector<part> out;
  for (std::size_t l = 0; l < s.links.size(); ++l) {
    for (std::size_t f = 0; f < s.links[l].faults.size(); ++f) out.push_back({false, l, f});
  }
  for (std::size_t e = 0; e < s.events.size(); ++e) out.push_back({true, 0, e});
  return out;
}

bool same(const part& a, const part& b) {
  return a.is_event == b.is_event && a.link == b.link && a.index == b.index;
}

// `s` without the parts in `drop`; expectations naming a dropped fault go too.
scenario without(const scenario& s, const std::vector<part>& drop) {
  auto dropped = [&](const part& p) {
    return std::any_of(drop.begin(), drop.end(), [&](const part& d) { return same(d, p); });
  };
  scenario out = s;
  out.events.clear();
  for (std::size_t e = 0; e < s.events.size(); ++e) {
    if (!dropped({true, 0, e})) out.events.push_back(s.events[e]);
  }
  for (std::size_t l = 0; l < s.links.size(); ++l) {
    out.links[l].faults.clear();
    for (std::size_t f = 0; f < s.links[l].faults.size(); ++f) {
      if (!dropped({false, l, f})) {
        out.links[l].faults.push_back(s.links[l].faults[f]);
        continue;
      }
      const auto& name = s.links[l].faults[f].spec.name;
      out.expect.faults.erase(name);
      out.expect.faults.erase(s.links[l].name + "/" + name);
    }
  }
  out.needs_failpoints = std::any_of(out.events.begin(), out.events.end(),
                                     [](const auto& e) { return e.action == event_action::arm; });
  return out;
}

}  // namespace

std::vector<scenario> lowered(const scenario& s) {
  std::vector<scenario> out;
  for (std::size_t i = 0; i < s.streams.size(); ++i) {
    const auto& st = s.streams[i];
    auto with = [&](auto change) {
      scenario c = s;
      change(c.streams[i]);
      out.push_back(std::move(c));
    };
    if (st.count > 1)
      with([](stream_spec& x) { x.count = std::max<std::uint64_t>(1, x.count / 2); });
    if (st.depth > 1)
      with([](stream_spec& x) {
        x.depth = std::max<std::size_t>(1, x.depth / 2);
        x.batch = std::min(x.batch, x.depth);
      });
    if (st.batch > 1) with([](stream_spec& x) { x.batch = 1; });
    if (st.size.range && st.size.hi > st.size.lo) {
      with([](stream_spec& x) { x.size.hi = x.size.lo + (x.size.hi - x.size.lo) / 2; });
    }
    if (!st.size.range && st.size.values.size() > 1) {
      with([](stream_spec& x) { x.size.values.resize(x.size.values.size() / 2); });
      with([](stream_spec& x) { x.size.values.erase(x.size.values.begin()); });
    }
  }
  for (std::size_t e = 0; e < s.events.size(); ++e) {
    if (s.events[e].when == trigger_kind::stream_ops && s.events[e].ops > 1) {
      scenario c = s;
      c.events[e].ops /= 2;
      out.push_back(std::move(c));
    }
  }
  return out;
}

// Each run of decimal digits, and each 0x with the lowercase hex digits
// after it, becomes one '#'.
std::string evidence_form(const std::string& evidence) {
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const auto hex = [&](char c) { return digit(c) || (c >= 'a' && c <= 'f'); };
  std::string out;
  for (std::size_t i = 0; i < evidence.size();) {
    const bool prefixed =
        evidence.compare(i, 2, "0x") == 0 && i + 2 < evidence.size() && hex(evidence[i + 2]);
    if (!prefixed && !digit(evidence[i])) {
      out += evidence[i++];
      continue;
    }
    i += prefixed ? 2 : 0;
    while (i < evidence.size() && (prefixed ? hex(evidence[i]) : digit(evidence[i]))) ++i;
    out += '#';
  }
  return out;
}

std::string first_failing_checker(const run_result& r) {
  for (const auto& c : r.checkers) {
    if (!c.passed()) return c.name;
  }
  return {};
}

namespace {

class shrinker {
 public:
  explicit shrinker(const shrink_options& o) : o_(o), form_(evidence_form(o.evidence)) {}

  // Valid (the loader accepts its YAML) and still failing the same checker.
  bool fails(const scenario& candidate) {
    auto reloaded = parse_scenario(to_yaml(candidate), candidate.file);
    if (!reloaded) return false;
    for (int i = 0; i < o_.runs_per_candidate; ++i) {
      ++runs_;
      auto r = run_scenario(reloaded.value(), o_.run);
      for (const auto& c : r.checkers) {
        if (c.name != o_.checker) continue;
        for (const auto& v : c.violations) {
          if (o_.evidence.empty() || same_failure(v.evidence)) return true;
        }
      }
    }
    return false;
  }

  // Expectations name their numbers ("writes.ok: 198 ops, expected 199"):
  // a candidate that changed a count fails them differently, so they must
  // match exactly; other checkers' numbers are ids and offsets.
  bool same_failure(const std::string& evidence) const {
    return o_.checker == "expectations" ? evidence == o_.evidence
                                        : evidence_form(evidence) == form_;
  }

  void log(const std::string& line) {
    if (o_.log) o_.log(line);
  }

  std::size_t runs_ = 0;

 private:
  const shrink_options& o_;
  const std::string form_;
};

// ddmin over the removable parts: try dropping chunks, halving the chunk
// size whenever no chunk can go.
scenario drop_parts(const scenario& s, shrinker& sh, std::size_t& kept) {
  scenario current = s;
  auto parts = parts_of(current);
  std::size_t chunk = std::max<std::size_t>(1, parts.size() / 2);
  while (!parts.empty()) {
    bool progressed = false;
    for (std::size_t start = 0; start < parts.size(); start += chunk) {
      std::vector<part> drop(
          parts.begin() + static_cast<std::ptrdiff_t>(start),
          parts.begin() + static_cast<std::ptrdiff_t>(std::min(parts.size(), start + chunk)));
      auto candidate = without(current, drop);
      if (!sh.fails(candidate)) continue;
      sh.log(fmt::format("dropped {} part(s): {} fault(s) and {} event(s) left", drop.size(),
                         parts_of(candidate).size() - candidate.events.size(),
                         candidate.events.size()));
      current = std::move(candidate);
      parts = parts_of(current);
      ++kept;
      progressed = true;
      break;
    }
    if (progressed) {
      chunk = std::max<std::size_t>(1, std::min(chunk, parts.size() / 2));
      continue;
    }
    if (chunk == 1) break;
    chunk /= 2;
  }
  return current;
}

}  // namespace

shrink_outcome shrink(const scenario& failing, const shrink_options& options) {
  shrinker sh(options);
  shrink_outcome out;
  out.minimal = drop_parts(failing, sh, out.steps_kept);
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& candidate : lowered(out.minimal)) {
      if (!sh.fails(candidate)) continue;
      out.minimal = std::move(candidate);
      ++out.steps_kept;
      sh.log("lowered a number");
      changed = true;
      break;
    }
  }
  // ".min" must keep the name within the loader's 64 characters.
  out.minimal.name = failing.name.substr(0, 60) + ".min";
  out.minimal.seed = options.run.seed;
  // Words for a person: the masked form the candidates were compared by
  // (evidence_form) stays in the shrinker.
  out.minimal.summary = fmt::format("Shrunk from {} (seed {}): it still fails the {} checker{}.",
                                    failing.name, options.run.seed, options.checker,
                                    options.evidence.empty() ? "" : " the same way");
  if (!options.evidence.empty()) {
    out.minimal.summary += fmt::format(
        "\nThe original run's violation: {}.\nThe same way means the same words with "
        "other ids, offsets and counts.",
        options.evidence);
  }
  out.confirmed = sh.fails(out.minimal);
  out.candidates_run = sh.runs_;
  return out;
}

}  // namespace faultlane::sim
