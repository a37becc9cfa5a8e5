// Drawing a schedule; see schedule.hpp.
//
// Every part is drawn inside one gen::exec, so rapidcheck records each pick
// and shrinks it on its own: a list loses elements, a number moves toward
// the low end of its range. Picks, the topology and list lengths are drawn
// uniformly from the first case (rapidcheck's inRange would keep them near
// their low end at the small sizes a default run uses); op counts and byte
// positions grow with the size. Ranges are what to_scenario accepts, and
// indexes (peer, rail, menu picks) are taken modulo what exists there, so a
// shrunk topology never leaves a fault pointing nowhere.
#include <algorithm>
#include <optional>

#include "planted.hpp"
#include "schedule.hpp"

namespace faultlane::props {
namespace {

using relays::fault_kind;

// Every kind of relays::fault_kinds, once, in the order rapidcheck shrinks
// toward (an element drawn later shrinks to an earlier one): faults that
// break an exchange first, the slowing ones last. A kind added to the table
// fails the static_assert below until it has its place here.
constexpr fault_kind all_kinds[] = {
    fault_kind::reset,   fault_kind::drop_frame, fault_kind::stall,     fault_kind::truncate,
    fault_kind::corrupt, fault_kind::half_close, fault_kind::blackhole, fault_kind::refuse,
    fault_kind::latency, fault_kind::bandwidth,  fault_kind::slicer,    fault_kind::slow_close,
};

constexpr bool each_kind_once() {
  for (const auto& t : relays::fault_kinds) {
    if (std::count(std::begin(all_kinds), std::end(all_kinds), t.kind) != 1) return false;
  }
  return std::size(all_kinds) == relays::fault_kind_count;
}
static_assert(each_kind_once(), "all_kinds holds every kind of relays::fault_kinds once");

std::vector<fault_kind> drawn_kinds(bool slowing_only) {
  std::vector<fault_kind> out;
  for (auto k : all_kinds) {
    if (!slowing_only || slowing(k)) out.push_back(k);
  }
  return out;
}

template <typename T>
rc::Gen<T> one_of(const std::vector<T>& values) {
  return rc::gen::elementOf(values);
}

rc::Gen<fault_draw> gen_fault(const gen_options& o) {
  return rc::gen::exec([o] {
    fault_draw f;
    f.kind = *rc::gen::elementOf(drawn_kinds(o.slowing_faults_only));
    f.dir = *rc::gen::element(relays::direction::up, relays::direction::down);
    f.trigger = static_cast<trigger_draw>(*uniform_in_range<int>(0, trigger_draw_count));
    f.peer = *uniform_in_range<std::size_t>(0, 3);
    f.rail = *uniform_in_range<std::size_t>(0, 3);
    // Byte positions near the start (headers, small payloads) and deep
    // inside a large payload.
    f.at = *rc::gen::oneOf(rc::gen::inRange<std::uint64_t>(0, 200),
                           rc::gen::inRange<std::uint64_t>(0, 3u << 20));
    f.header_byte = *uniform_in_range<std::uint32_t>(1, 48);
    f.on_write = *rc::gen::arbitrary<bool>();
    f.status_pick = *uniform_in_range<std::uint32_t>(0, 3);
    f.field_pick = *uniform_in_range<std::uint32_t>(0, 10);
    f.count = *uniform_in_range<std::uint32_t>(0, 3);
    f.amount = *uniform_in_range<std::uint32_t>(0, 64);
    return f;
  });
}

rc::Gen<stream_draw> gen_stream(const gen_options& o) {
  return rc::gen::exec([o] {
    stream_draw s;
    s.read_percent = *uniform_in_range<std::uint32_t>(0, 101 - o.write_percent_min);
    s.sizes = *rc::gen::nonEmpty(rc::gen::container<std::vector<size_class>>(
        rc::gen::map(uniform_in_range<int>(0, size_class_count),
                     [](int c) { return static_cast<size_class>(c); })));
    if (s.sizes.size() > 4) s.sizes.resize(4);
    s.count = *rc::gen::inRange<std::uint64_t>(1, o.ops_max + 1);
    s.depth = *uniform_in_range<std::size_t>(1, 5);
    s.batch = *uniform_in_range<std::size_t>(1, 5);
    return s;
  });
}

template <typename T>
std::vector<T> some(const rc::Gen<T>& g, std::size_t max) {
  // Each slot holds a value 4 times in 5 and may be emptied on its own, so
  // rapidcheck can drop any one fault or event, not only the last of the
  // list. Whether a slot is filled is an inRange draw, which shrinks toward
  // 0 = empty; rapidcheck's element and elementOf never shrink, and
  // weightedOneOf never shrinks its choice, so a slot filled through them
  // stayed filled for good.
  auto n = *uniform_in_range<std::size_t>(0, max + 1);
  const auto slot = rc::gen::exec([g] {
    std::optional<T> v;
    if (*uniform_in_range<int>(0, 5) != 0) v = *g;
    return v;
  });
  std::vector<T> out;
  for (const auto& v : *rc::gen::container<std::vector<std::optional<T>>>(n, slot)) {
    if (v) out.push_back(*v);
  }
  return out;
}

}  // namespace

rc::Gen<schedule> gen_schedule(const gen_options& options) {
  return rc::gen::exec([o = options] {
    schedule s;
    s.peers = *uniform_in_range<std::size_t>(1, 4);
    s.rails = *uniform_in_range<std::size_t>(1, 4);
    s.lanes = *uniform_in_range<std::size_t>(1, 5);
    s.lane_inflight = *rc::gen::element<std::size_t>(1, 2, 8);
    s.workers = *uniform_in_range<std::size_t>(1, 3);
    s.streams = *rc::gen::container<std::vector<stream_draw>>(s.peers, gen_stream(o));
    s.faults = some(gen_fault(o), o.faults_max);
    s.failpoints = some(rc::gen::exec([] {
                          failpoint_draw d;
                          d.pick = *uniform_in_range<std::size_t>(0, failpoint_menu.size());
                          d.count = *uniform_in_range<std::uint32_t>(0, 2);
                          return d;
                        }),
                        o.failpoints_max);
    if (!o.events.empty()) {
      s.events = some(rc::gen::exec([o] {
                        event_draw e;
                        e.kind = *one_of(o.events);
                        e.peer = *uniform_in_range<std::size_t>(0, 3);
                        e.at_op = *rc::gen::inRange<std::uint64_t>(0, o.ops_max);
                        e.gap = *rc::gen::inRange<std::uint64_t>(1, 8);
                        e.on_fault = *rc::gen::arbitrary<bool>();
                        e.fault = *uniform_in_range<std::size_t>(0, 4);
                        return e;
                      }),
                      o.events_max);
    }
    if (o.shutdown_always) {
      event_draw e;
      e.kind = event_draw_kind::shutdown;
      e.peer = *uniform_in_range<std::size_t>(0, 3);
      e.at_op = *rc::gen::inRange<std::uint64_t>(0, o.ops_max);
      e.on_fault = *rc::gen::arbitrary<bool>();
      e.fault = *uniform_in_range<std::size_t>(0, 4);
      // Half the time the shutdown comes while a stall holds a request or
      // its answer (half a header, or a whole frame): work in flight.
      if (o.shutdown_on_a_stall || *rc::gen::arbitrary<bool>()) {
        auto stall = *gen_fault(o);
        stall.kind = relays::fault_kind::stall;
        stall.trigger = *rc::gen::element(trigger_draw::frame, trigger_draw::header_byte);
        e.on_fault = true;
        e.fault = s.faults.size();
        s.faults.push_back(stall);
      }
      s.events.push_back(e);
    }
    s.seed = *uniform_in_range<std::uint64_t>(1, 1u << 30);
    if (o.perturb) {
      sim::perturb_spec p;
      p.probability = *rc::gen::element(0.02, 0.1, 0.3);
      p.max_us = *rc::gen::element<std::uint32_t>(0, 20, 100);
      s.perturb = p;
    }
    return s;
  });
}

}  // namespace faultlane::props
