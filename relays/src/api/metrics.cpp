// proxy_set::metrics and report: every proxy's counters, in Prometheus text
// format and as plain lines.
#include <fmt/format.h>

#include "proxies.hpp"

namespace faultlane::relays::api {
namespace {

// A label value, escaped as the exposition format asks.
std::string label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

struct proxy_numbers {
  std::string name;
  std::map<std::string, std::uint64_t> counters;  // carried + live
  std::uint64_t bytes[2] = {0, 0};
  std::uint64_t live = 0;
  std::uint64_t active = 0;
  std::uint64_t peak = 0;
  bool enabled = false;
  std::size_t toxics = 0;
};

void header(std::string& out, std::string_view metric, std::string_view type,
            std::string_view help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", metric, help, metric, type);
}

// The gauges: what holds now, not what happened.
void append_gauges(std::string& out, const std::vector<proxy_numbers>& all) {
  struct gauge {
    std::string_view metric;
    std::string_view help;
    std::uint64_t proxy_numbers::*value;
  };
  const gauge gauges[] = {
      {"faultlane_relay_live_connections", "Connections relayed now.", &proxy_numbers::live},
      {"faultlane_relay_active_faults", "Lasting fault effects in force now.",
       &proxy_numbers::active},
      {"faultlane_relay_active_faults_peak",
       "The most lasting fault effects ever in force at once.", &proxy_numbers::peak},
  };
  for (const auto& g : gauges) {
    header(out, g.metric, "gauge", g.help);
    for (const auto& n : all) {
      out += fmt::format("{}{{proxy=\"{}\"}} {}\n", g.metric, label(n.name), n.*g.value);
    }
  }
  header(out, "faultlane_relay_toxics", "gauge", "Toxics (faults) installed on the proxy.");
  for (const auto& n : all) {
    out += fmt::format("faultlane_relay_toxics{{proxy=\"{}\"}} {}\n", label(n.name), n.toxics);
  }
  header(out, "faultlane_relay_enabled", "gauge", "1 while the proxy listens, 0 when disabled.");
  for (const auto& n : all) {
    out += fmt::format("faultlane_relay_enabled{{proxy=\"{}\"}} {}\n", label(n.name),
                       n.enabled ? 1 : 0);
  }
}

}  // namespace

std::string proxy_set::metrics() const {
  std::vector<proxy_numbers> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& p : proxies_) {
      proxy_numbers n{p->name, p->carried, {p->carried_bytes[0], p->carried_bytes[1]}};
      n.enabled = p->running != nullptr;
      n.peak = p->carried_peak;
      n.toxics = p->toxics.size();
      if (p->running) {
        for (const auto& [name, count] : p->running->counters()) n.counters[name] += count;
        n.bytes[0] += p->running->bytes_received(direction::up);
        n.bytes[1] += p->running->bytes_received(direction::down);
        n.live = p->running->live_connections();
        n.active = p->running->active_faults();
        n.peak = std::max<std::uint64_t>(n.peak, p->running->active_faults_peak());
      }
      all.push_back(std::move(n));
    }
  }
  std::string out;
  for (const auto& c : relay_counters) {
    header(out, c.metric, "counter", c.help);
    for (const auto& n : all) {
      auto it = n.counters.find(std::string(c.counter));
      out += fmt::format("{}{{proxy=\"{}\"}} {}\n", c.metric, label(n.name),
                         it == n.counters.end() ? 0 : it->second);
    }
  }
  header(out, "faultlane_relay_received_bytes_total", "counter",
         "Bytes read from each direction's source (upstream: from clients).");
  for (const auto& n : all) {
    for (int d = 0; d < 2; ++d) {
      out +=
          fmt::format("faultlane_relay_received_bytes_total{{proxy=\"{}\",direction=\"{}\"}} {}\n",
                      label(n.name), d == 0 ? "upstream" : "downstream", n.bytes[d]);
    }
  }
  header(out, "faultlane_relay_fault_firings_total", "counter",
         "Times each fault (toxic) fired, by name; removed faults keep their count.");
  for (const auto& n : all) {
    for (const auto& [name, count] : n.counters) {
      if (is_relay_counter(name)) continue;
      out += fmt::format("faultlane_relay_fault_firings_total{{proxy=\"{}\",fault=\"{}\"}} {}\n",
                         label(n.name), label(name), count);
    }
  }
  append_gauges(out, all);
  return out;
}

std::string proxy_set::report() const {
  std::lock_guard lock(mutex_);
  std::string out;
  for (const auto& p : proxies_) {
    auto counters = p->carried;
    if (p->running) {
      for (const auto& [name, count] : p->running->counters()) counters[name] += count;
    }
    out += fmt::format("relay {} counters:\n", p->name);
    for (const auto& [name, count] : counters) out += fmt::format("  {:<28} {}\n", name, count);
  }
  return out;
}

}  // namespace faultlane::relays::api
