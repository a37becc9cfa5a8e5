// scenario: a fault scenario as the simulator runs it, read from YAML.
//
// docs/scenarios.md is the reference for the file form. load_scenario()
// checks everything that can be checked before a run: every key known,
// every value typed and in range, every name defined, every event able to
// trigger. An error is "FILE:LINE:COLUMN: KEY: what", KEY the dotted path of
// the value (`workload[1].size`). to_yaml() writes a scenario back as a file
// load_scenario() reads to an equal scenario (the shrinker writes its
// minimal scenario with it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/config.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/core/registry.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/relays/fault.hpp"
#include "faultlane/relays/relay.hpp"

namespace faultlane::sim {

// The bounds of a scenario file, each checked by the loader and listed in
// docs/scenarios.md.
namespace scenario_bounds {
inline constexpr std::size_t transports_max = 8;
inline constexpr std::size_t rails_max = 4;
inline constexpr std::size_t regions_max = 64;
inline constexpr std::size_t links_max = 64;
inline constexpr std::size_t streams_max = 32;
inline constexpr std::size_t events_max = 64;
inline constexpr std::size_t phases_max = 16;
inline constexpr std::size_t faults_per_link_max = 32;
inline constexpr std::size_t size_values_max = 64;  // a stream's `size:` list
inline constexpr std::uint64_t region_bytes_max = 1ull << 30;
inline constexpr std::uint32_t timeout_ms_min = 1000;  // the whole run
inline constexpr std::uint32_t timeout_ms_max = 600000;
inline constexpr std::uint32_t timeout_ms_default = 120000;
inline constexpr std::uint64_t stream_ops_max = 1000000;
inline constexpr std::uint32_t duration_ms_max = 600000;  // a stream's, a phase's deadline
inline constexpr std::size_t depth_max = 1024;
inline constexpr std::size_t batch_max = 256;
inline constexpr std::uint32_t liveness_deadline_ms_default = 10000;
inline constexpr std::uint32_t failpoint_delay_ms_max = 600000;
inline constexpr std::uint32_t perturb_max_us = 10000;
inline constexpr std::uint32_t load_cost_us_max = 100000;  // `load:`, per handler
inline constexpr std::uint32_t load_hiccup_ms_max = 60000;
inline constexpr std::uint64_t region_count_max = 1u << 20;  // registrations of one counted region
inline constexpr std::size_t callers_max = 16;               // `control:` callers
inline constexpr std::size_t caller_clients_max = 64;
inline constexpr std::uint64_t caller_calls_max = 1000000;  // calls per client
inline constexpr std::uint32_t call_timeout_ms_default = 10000;
inline constexpr std::size_t pattern_bytes_max = 4096;  // list_registrations' pattern
static_assert(rails_max <= limits::rail_count_max, "scenario rails are core rails");
static_assert(batch_max <= depth_max, "a batch never exceeds the depth");
static_assert(region_bytes_max <= limits::transfer_bytes_default,
              "a whole-region op fits the default max_transfer_bytes");
}  // namespace scenario_bounds

// An inclusive range of counts: "3" is [3, 3], ">=1" is [1, max], "<=2" is
// [0, 2], "2..5" is [2, 5], ">0" is [1, max].
struct count_range {
  std::uint64_t min = 0;
  std::uint64_t max = UINT64_MAX;
  bool contains(std::uint64_t v) const noexcept { return min <= v && v <= max; }
  friend bool operator==(const count_range&, const count_range&) = default;
};
std::string to_string(const count_range& r);  // the shortest form that parses back
// "3", ">=1", ">0", "<=2", "<3", "2..5"; errors say what is wrong, without a place.
result<count_range> parse_count_range(std::string_view text);

enum class process_kind : std::uint8_t { local, child };

struct transport_spec {
  std::string name;
  process_kind process = process_kind::local;  // child: a separate process (target only)
  std::size_t rails = 1;                       // 1..4, rail r on 127.0.0.(r + 1)
  // Any transport_config field (docs/configuration.md) under `config:`;
  // bind_address, port and rail_addresses are the runner's and rejected.
  transport_config config;
  source_mark mark;
  // Every config field counts (transport_config's own ==); the mark does not.
  friend bool operator==(const transport_spec& a, const transport_spec& b) {
    return a.name == b.name && a.process == b.process && a.rails == b.rails && a.config == b.config;
  }
};

struct region_spec {
  std::string name;       // unique in the scenario; registered under this name
  std::string transport;  // the transport that registers (serves) it
  std::uint64_t size = 0;
  permission perm = permission::remote_read_write;
  // Above 1: `count` registrations of `size` bytes each, named NAME/K (K
  // from 0, seven digits), for the control plane to list and describe; a
  // stream cannot use it.
  std::uint64_t count = 1;
  source_mark mark;
  friend bool operator==(const region_spec&, const region_spec&) = default;
};

// A fault of a link: the relay YAML form of docs/faults.md, plus `optional`.
struct link_fault {
  relays::fault_spec spec;  // spec.name is the counter name ("<kind>.<dir>" by default)
  bool optional = false;    // may never fire without failing the scenario
  source_mark mark;
};

// One relay between an initiator and a target on one rail, or (`control`)
// in front of the target's control endpoint, for `control:` callers.
struct link_spec {
  std::string name;  // default "<initiator>-<target>-r<rail>", or "<target>-control"
  // A control link is raw and untapped; callers name it with `link:`. With
  // an initiator, that transport opens its segment to the target by this
  // link's address: descriptor and refreshes over the control plane, lanes
  // straight to the target (no data relay).
  bool control = false;
  std::string initiator;
  std::string target;
  std::size_t rail = 0;
  relays::protocol proto = relays::protocol::faultlane;
  bool tap = true;
  std::vector<link_fault> faults;
  source_mark mark;
};

// Sizes of a stream's ops: one of `values` drawn uniformly, or uniformly
// from [lo, hi] when `range`. Text forms: 4096, 4KiB, "1MiB-1", "1..64KiB",
// [1, 4KiB, "2MiB+1"].
struct size_dist {
  std::vector<std::uint64_t> values;
  bool range = false;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  std::uint64_t max() const noexcept;
  friend bool operator==(const size_dist&, const size_dist&) = default;
};
result<std::uint64_t> parse_size(std::string_view text);  // "4KiB", "2MiB+1", "17"

enum class offset_mode : std::uint8_t { random, sequential };

struct stream_spec {
  std::string name;
  std::string from;        // initiator transport (local)
  std::string region;      // a region of the target; its transport is the target
  double read_weight = 1;  // op mix: `ops: {read: 3, write: 1}`
  double write_weight = 0;
  size_dist size;
  offset_mode offsets = offset_mode::random;  // random: aligned to nothing
  std::uint64_t count = 0;                    // ops to submit; 0 = run for duration_ms
  std::uint32_t duration_ms = 0;              // with count 0
  std::size_t depth = 1;                      // tasks in flight
  std::size_t batch = 1;                      // tasks per submit()
  std::uint32_t start_deadline_ms = 0;
  std::string phase;                      // default: the first phase
  std::vector<status> allow{status::ok};  // outcomes that are not violations
  source_mark mark;
};

// A caller of a transport's control plane (docs/control-plane.md): `clients`
// connections, each calling `method` back to back or every `interval_ms`,
// `count` times or for `duration_ms`, in one phase.
enum class control_method : std::uint8_t {
  ping,
  service_ready,
  describe,
  list_registrations,
  stats
};

struct caller_spec {
  std::string name;
  std::string target;  // the transport whose control plane is called
  control_method method = control_method::ping;
  std::string pattern;  // list_registrations: an ECMAScript regex
  std::string link;     // a control link to call through; empty: directly
  std::size_t clients = 1;
  std::uint64_t count = 0;        // calls per client; 0 = for duration_ms
  std::uint32_t duration_ms = 0;  // with count 0
  std::uint32_t interval_ms = 0;  // from one call's start to the next; 0 = back to back
  std::uint32_t call_timeout_ms = scenario_bounds::call_timeout_ms_default;
  std::string phase;                      // default: the first phase
  std::vector<status> allow{status::ok};  // outcomes that are not violations
  source_mark mark;
};

enum class trigger_kind : std::uint8_t {
  stream_ops,    // after `ops` ops of `stream` were submitted
  fault_fired,   // after fault `fault` fired `times` times (summed over links)
  phase_start,   // when `phase` begins
  phase_end,     // when `phase` ends
  caller_calls,  // after the `calls`-th call of control caller `caller` ended
};

// Every event action, once, in the enum's order: X(name, its spelling in
// `do:`, the keys it takes beside at: and do:, space-separated). The list
// generates the enum, to_string(), the loader's reading of `do:` and the
// keys it accepts; docs/scenarios.md's action table has a row for each (a
// test holds the page to the list). What each does: that table. How its keys
// are read, written back and run: read_action_keys()
// (loader/scenario_events.cpp), action_keys() (loader/scenario_write.cpp)
// and event_engine::run() (runner/event_engine.cpp), each a switch the
// compiler checks for every action.
#define FAULTLANE_EVENT_ACTIONS(X)                            \
  X(restart, "restart", "transport")                          \
  X(kill, "kill", "transport")                                \
  X(unregister, "unregister", "region")                       \
  X(register_region, "register", "region")                    \
  X(drop_connections, "drop_connections", "transport target") \
  X(add_fault, "add_fault", "link fault")                     \
  X(remove_fault, "remove_fault", "link fault")               \
  X(arm, "arm", "failpoint")                                  \
  X(disarm, "disarm", "failpoint")                            \
  X(shutdown, "shutdown", "transport")

#define FAULTLANE_EVENT_ACTION_ENUM(name, spelling, keys) name,
enum class event_action : std::uint8_t { FAULTLANE_EVENT_ACTIONS(FAULTLANE_EVENT_ACTION_ENUM) };
#undef FAULTLANE_EVENT_ACTION_ENUM

struct event_action_row {
  event_action action;
  std::string_view spelling;  // in `do:`
  std::string_view keys;      // beside at: and do:, space-separated
};

#define FAULTLANE_EVENT_ACTION_ROW(name, spelling, keys) {event_action::name, spelling, keys},
inline constexpr event_action_row event_action_rows[] = {
    FAULTLANE_EVENT_ACTIONS(FAULTLANE_EVENT_ACTION_ROW)};
#undef FAULTLANE_EVENT_ACTION_ROW

struct event_spec {
  trigger_kind when = trigger_kind::stream_ops;
  std::string stream;  // stream_ops
  std::uint64_t ops = 0;
  std::string fault;  // fault_fired
  std::uint64_t times = 1;
  std::string phase;   // phase_start, phase_end
  std::string caller;  // caller_calls
  std::uint64_t calls = 0;

  event_action action = event_action::restart;
  std::string transport;   // restart, kill, drop_connections, shutdown
  std::string target;      // drop_connections
  std::string region;      // unregister, register_region
  std::string link;        // add_fault, remove_fault
  link_fault added;        // add_fault
  std::string fault_name;  // remove_fault
  std::string failpoint;   // arm, disarm
  failpoint::config failpoint_config;
  bool failpoint_optional = false;  // arm: may never fire without failing the scenario
  source_mark mark;
};

struct phase_spec {
  std::string name;
  bool heal = false;      // removes every relay fault and disarms every failpoint first
  bool liveness = false;  // every op of its streams must end ok within deadline_ms
  std::uint32_t deadline_ms = scenario_bounds::liveness_deadline_ms_default;
  // After its streams (and a heal), wait this long before the next phase,
  // so reconnect cooldowns and idle timers run out: 0..600000, default 0.
  std::uint32_t settle_ms = 0;
  source_mark mark;
};

// `expect:` (all optional).
struct expectations {
  // "STREAM.STATUS" or "STREAM.done" -> range, e.g. {writes.ambiguous_write: 1}.
  std::map<std::string, count_range> counts;
  // A fault counter name summed over links, or "LINK/NAME" -> range. A fault
  // declared in a link and absent here must fire >= 1 (unless optional).
  std::map<std::string, count_range> faults;
  // "TRANSPORT.COUNTER" (a transport_stats field) at the end of the run.
  std::map<std::string, count_range> stats;
  // "CALLER.STATUS", "CALLER.done", "CALLER.p50_us", "CALLER.p99_us",
  // "CALLER.max_us" (over every call, whatever it ended with) or
  // "CALLER.incarnations" (distinct ones `describe` answered) -> range.
  std::map<std::string, count_range> control;
  // Checkers turned off (names from checker_names, checkers.hpp), each
  // with its reason (required).
  std::map<std::string, std::string> checkers_off;
};

// `perturb:` turns schedule perturbation on for the run (builds with
// failpoints; docs/properties.md): each pass through a perturbation point
// yields or sleeps with this probability, drawn from the run's seed.
struct perturb_spec {
  double probability = 0.05;  // 0..1
  std::uint32_t max_us = 50;  // 0..perturb_max_us; 0 only yields
  friend bool operator==(const perturb_spec&, const perturb_spec&) = default;
};

// `load:` states the machine load a scenario holds under, as a seeded load
// model on the simulated world (docs/dsim.md, "Load"): each handler costs
// its context up to cost_us of virtual time, and after one, with
// hiccup_probability, the context stalls for hiccup_ms / 2 to hiccup_ms.
// A real-time run has the machine's own load instead and notes that.
struct load_spec {
  std::uint32_t cost_us = 0;      // 0..load_cost_us_max
  double hiccup_probability = 0;  // 0..1, given with hiccup_ms
  std::uint32_t hiccup_ms = 0;    // 0..load_hiccup_ms_max
  friend bool operator==(const load_spec&, const load_spec&) = default;
};

struct scenario {
  std::string name;  // default: the file stem
  std::string file;
  std::string summary;  // the opening comment, for `faultlane-sim list`
  std::vector<std::string> tags;
  std::uint64_t seed = 1;
  std::uint32_t timeout_ms = scenario_bounds::timeout_ms_default;  // the whole run
  bool needs_failpoints = false;                                   // derived: an event arms one
  // `timing: true`: its expectations bound latencies, so it runs alone and
  // only in an optimized build without sanitizers (skipped elsewhere).
  bool timing = false;
  bool runs_alone() const noexcept { return needs_failpoints || timing; }
  std::optional<perturb_spec> perturb;
  std::optional<load_spec> load;
  std::vector<transport_spec> transports;
  std::vector<region_spec> regions;
  std::vector<link_spec> links;
  std::vector<stream_spec> streams;
  std::vector<caller_spec> control;  // `control:`
  std::vector<event_spec> events;
  std::vector<phase_spec> phases;  // default: fault, heal, liveness
  expectations expect;
};

result<scenario> parse_scenario(std::string_view text, const std::string& file);
result<scenario> load_scenario(const std::string& path);
std::string to_yaml(const scenario& s);

// The YAML spellings: `do:` names (restart ... register ... shutdown) and
// the trigger keys (stream, fault, phase, after_phase).
std::string_view to_string(event_action a) noexcept;
std::string_view to_string(trigger_kind k) noexcept;
std::string_view to_string(offset_mode m) noexcept;
std::string_view to_string(process_kind p) noexcept;
std::string_view to_string(control_method m) noexcept;
// The name of registration `k` of a counted region: "NAME/0000042".
std::string counted_name(std::string_view region, std::uint64_t k);

}  // namespace faultlane::sim
