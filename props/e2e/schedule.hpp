// schedule: the generated value of the end-to-end properties.
//
// One schedule is a topology, a workload and a list of faults with logical
// triggers, plus core failpoints and events. It is drawn by rapidcheck from
// one seed (gen_schedule) and turned into a scenario the simulator runs
// (to_scenario), so a counterexample is a scenario file `faultlane-sim run`
// replays. Every number in a draw is kept in range by to_scenario (indexes
// are taken modulo what exists), so rapidcheck may shrink any field on its
// own and the result is still a valid scenario: shrinking removes faults
// and events and lowers numbers. docs/properties.md describes the space.
#pragma once

#include <rapidcheck.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "faultlane/relays/fault.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::props {

// Op sizes around every threshold: 1 byte, a page, one byte under and over
// the size at which a READ is sliced over every rail, and max_transfer_bytes.
// (One byte over it is refused at submit; the scenario loader refuses such
// a size, and core/tests cover the refusal.)
enum class size_class : std::uint8_t { one_byte, page, under_slice, over_slice, max_transfer };
inline constexpr std::size_t size_class_count = 5;

enum class trigger_draw : std::uint8_t { first_byte, bytes, frame, header_byte, opcode, status };
inline constexpr std::size_t trigger_draw_count = 6;
std::string_view to_string(trigger_draw t) noexcept;

struct fault_draw {
  relays::fault_kind kind = relays::fault_kind::reset;
  relays::direction dir = relays::direction::up;
  trigger_draw trigger = trigger_draw::first_byte;
  std::size_t peer = 0;  // modulo the peers
  std::size_t rail = 0;  // modulo the rails
  std::uint64_t at = 0;  // byte position (bytes, truncate) or frame index
  std::uint32_t header_byte = 1;
  bool on_write = true;           // opcode trigger: WRITE frames, else READ frames
  std::uint32_t status_pick = 0;  // status trigger: index into trigger_statuses
  std::uint32_t field_pick = 0;   // corrupt: index into the direction's fields
  std::uint32_t count = 1;        // fire at most this many times
  std::uint32_t amount = 1;       // latency ms, bandwidth MiB/s, slicer KiB, slow_close ms
};

// Core failpoints in the ways a schedule may arm them (failpoint_menu).
struct failpoint_draw {
  std::size_t pick = 0;  // modulo the menu
  std::uint32_t count = 1;
};

enum class event_draw_kind : std::uint8_t { restart, unregister, drop_connections, shutdown };
inline constexpr std::size_t event_draw_kind_count = 4;

struct event_draw {
  event_draw_kind kind = event_draw_kind::restart;
  std::size_t peer = 0;     // modulo the peers: whose stream triggers it, and which target
  std::uint64_t at_op = 0;  // modulo that stream's count
  std::uint64_t gap = 1;    // unregister: ops until the region is registered again
  // Instead of at an op: when relay fault `fault` (modulo the faults) first
  // fired, e.g. a shutdown while a stall holds half a header. Without
  // faults, at the op.
  bool on_fault = false;
  std::size_t fault = 0;
};

struct stream_draw {
  std::uint32_t read_percent = 50;
  std::vector<size_class> sizes{size_class::page};
  std::uint64_t count = 1;
  std::size_t depth = 1;
  std::size_t batch = 1;  // capped at depth
};

struct schedule {
  std::size_t peers = 1;  // targets, 1..3
  std::size_t rails = 1;  // 1..3
  std::size_t lanes = 1;  // connections_per_peer, 1..4
  // lane_inflight_max: 1 (one exchange at a time), 2 or 8 (pipelined).
  std::size_t lane_inflight = 1;
  std::size_t workers = 1;
  std::vector<stream_draw> streams;  // one per peer; missing ones are a single 4 KiB READ
  std::vector<fault_draw> faults;
  std::vector<failpoint_draw> failpoints;
  std::vector<event_draw> events;
  std::uint64_t seed = 1;
  std::optional<sim::perturb_spec> perturb;
  // Not drawn: a planted-bug failpoint the planted tests arm for the whole
  // fault phase (docs/testing.md). Never shrunk away, never counted.
  std::string planted;
};

// Faults that only slow bytes (the rate-shaping and close classes of
// relays::fault_kinds): they cost time but must never fail an op (the
// timeouts are far above what they add); every other kind may break an
// exchange.
bool slowing(relays::fault_kind k) noexcept;

// What a property draws: which events and failpoints may appear, and the
// bounds of the lists (rapidcheck grows them with its size).
struct gen_options {
  std::size_t faults_max = 4;
  std::size_t failpoints_max = 1;
  std::size_t events_max = 2;
  std::vector<event_draw_kind> events{event_draw_kind::restart, event_draw_kind::unregister,
                                      event_draw_kind::drop_connections};
  std::uint64_t ops_max = 24;
  std::uint32_t write_percent_min = 0;  // the no-replay property leans on WRITEs
  bool perturb = false;
  bool slowing_faults_only = false;  // only slowing() kinds
  bool shutdown_always = false;      // one initiator shutdown at a drawn op, besides `events`
  // With shutdown_always: the shutdown always comes while a stall holds a
  // request or its answer, never at an op count that timing may outrun.
  bool shutdown_on_a_stall = false;
};

rc::Gen<schedule> gen_schedule(const gen_options& options);

// The scenario a schedule stands for: client -> p0..p2, one relay per
// (target, rail) carrying that link's faults (each optional: a generated
// fault need not fire), a fault phase, a heal phase and, unless the
// initiator is shut down or a handler may throw, a liveness phase. Each
// stream's `allow:` is what its faults and events allow (allowed_statuses).
sim::scenario to_scenario(const schedule& s, const std::string& name);

// Relay faults, failpoints and events: what "a schedule of N faults" counts
// (the planted failpoint is not counted).
std::size_t fault_count(const schedule& s) noexcept;

// The failpoints a schedule may arm: (name, action, error), each safe to arm
// at any moment of a run (a pause would hold a shard until the heal phase).
struct failpoint_choice {
  std::string_view name;
  failpoint::action act;
  status error = status::internal_error;
  std::uint32_t delay_ms = 0;
};
extern const std::vector<failpoint_choice> failpoint_menu;

void showValue(const schedule& s, std::ostream& os);

}  // namespace faultlane::props
