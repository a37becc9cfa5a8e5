// checkers_test_world: a hand-built history the checker tests start from.
//
// One client (two rails) and one server with a 64 KiB region, two tapped
// links, a fault phase and a liveness phase. Ops are played as the runner
// would record them: submit, observer events on both sides, tap frames,
// callback. clean_world() is a run every checker must pass; each test then
// plants one violation into a copy of it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "faultlane/core/pattern.hpp"
#include "faultlane/core/slice_plan.hpp"
#include "faultlane/sim/checkers.hpp"
#include "faultlane/sim/history.hpp"
#include "faultlane/sim/scenario.hpp"

namespace faultlane::sim::test {

inline constexpr std::uint64_t region_size = 64 * 1024;
inline constexpr std::uint64_t region_id = 0x5000;
inline constexpr std::uint64_t step_bytes = 4096;
inline constexpr std::uint64_t region_seed = 7;

class world {
 public:
  history h;
  std::vector<std::byte> model;  // what the region holds now
  std::uint64_t now_us = 0;

  world() {
    h.seed = 1;
    h.slice_step_bytes = step_bytes;
    for (const char* name : {"client", "server"}) {
      incarnation_record inc;
      inc.transport = name;
      inc.incarnation = 0xabc;
      inc.start_seq = tick();
      inc.rails = 2;
      inc.max_outstanding_tasks = 8;
      inc.max_outstanding_bytes = 1 << 20;
      inc.max_connections = 16;
      inc.shutdown_timeout_ms = 1000;
      h.incarnations.push_back(inc);
    }
    h.registrations.push_back(registration_record{.transport = "server",
                                                  .region = "buf",
                                                  .id = region_id,
                                                  .registered_seq = tick(),
                                                  .fill_seed = region_seed,
                                                  .size = region_size});
    model.resize(region_size);
    fill_pattern(model.data(), model.size(), region_seed);
    for (std::size_t rail = 0; rail < 2; ++rail) {
      link_record link;
      link.name = "client-server-r" + std::to_string(rail);
      link.initiator = "client";
      link.target = "server";
      link.rail = rail;
      link.tapped = true;
      h.links.push_back(link);
    }
    h.phases.push_back(phase_record{.name = "fault", .start_seq = tick(), .start_us = now_us});
  }

  std::uint64_t tick() {
    now_us += 10;
    return ++seq_;
  }
  // The server's region `region` registered now, on its incarnation
  // `incarnation`, filled from `fill_seed` (0: carried over).
  void register_region(std::uint32_t incarnation, std::uint64_t fill_seed,
                       const std::string& region = "buf", std::uint64_t id = 0x5001) {
    h.registrations.push_back(registration_record{.transport = "server",
                                                  .incarnation = incarnation,
                                                  .region = region,
                                                  .id = id,
                                                  .registered_seq = tick(),
                                                  .fill_seed = fill_seed,
                                                  .size = region_size});
  }
  op_record& op(std::uint64_t id) { return h.ops[id - 1]; }

  core_event& event(event_kind k, const std::string& transport) {
    core_event e;
    e.seq = tick();
    e.time_us = now_us;
    e.transport = transport;
    e.kind = k;
    h.events.push_back(e);
    return h.events.back();
  }

  relays::tap_record& frame(std::size_t rail, relays::direction dir, bool request, wire::opcode op,
                            std::uint64_t request_id) {
    relays::tap_record t;
    t.kind = relays::record_kind::frame;
    t.time_us = now_us;
    t.relay = h.links[rail].name;
    t.rail = rail;
    t.connection = 1;
    t.dir = dir;
    t.request = request;
    t.op = op;
    t.request_id = request_id;
    t.registration_id = region_id;
    auto& tap = h.links[rail].tap;
    t.frame_index = tap.size();
    tap.push_back(t);
    return tap.back();
  }

  // Submits an op and dispatches its slices (taps included); returns its id.
  std::uint64_t start(wire::opcode opcode, std::uint64_t offset, std::uint64_t length,
                      std::uint64_t data_seed = 0, const std::string& phase = "fault") {
    op_record op;
    op.id = h.ops.size() + 1;
    op.stream = phase == "live" ? "live" : (opcode == wire::opcode::write ? "writes" : "reads");
    op.phase = phase;
    op.liveness = phase == "live";
    op.initiator = "client";
    op.target = "server";
    op.region = "buf";
    op.op = opcode;
    op.registration_id = region_id;
    op.offset = offset;
    op.length = length;
    op.data_seed = data_seed;
    op.task_id = next_task_++;
    op.submit_seq = tick();
    op.submit_us = now_us;
    h.ops.push_back(op);
    tasks_live_ += 1;
    bytes_live_ += length;
    auto& adm = event(event_kind::admission_changed, "client");
    adm.tasks = tasks_live_;
    adm.admitted_bytes = bytes_live_;
    auto& sub = event(event_kind::task_submitted, "client");
    sub.task_id = op.task_id;
    sub.op = opcode;
    sub.length = length;
    for (const auto& s : plan(opcode, length)) dispatch(op.id, s);
    return op.id;
  }

  std::vector<slice> plan(wire::opcode opcode, std::uint64_t length) const {
    if (opcode == wire::opcode::write || !read_is_sliced(length, 2, step_bytes)) {
      return {slice{0, 0, length}};
    }
    auto p = plan_read_slices(length, 2, step_bytes);
    return {p.begin(), p.end()};
  }

  void dispatch(std::uint64_t id, const slice& s) {
    const auto& o = op(id);
    auto request = next_request_++;
    auto& d = event(event_kind::slice_dispatched, "client");
    d.task_id = o.task_id;
    d.request_id = request;
    d.rail = s.rail;
    d.offset = s.offset;
    d.length = s.length;
    dispatched_[id].push_back(d);
    auto& f = frame(s.rail, relays::direction::up, true, o.op, request);
    f.remote_offset = o.offset + s.offset;
    f.length = s.length;
  }

  // The target serves every dispatched request, the task settles with
  // `outcome` and the callback runs once. An ok WRITE updates the model; an
  // ok READ returns the model's bytes.
  void end(std::uint64_t id, status outcome = status::ok) {
    for (const auto& d : dispatched_[id]) serve(id, d, outcome);
    auto& o = op(id);
    if (outcome == status::ok && o.op == wire::opcode::write) {
      fill_pattern(model.data() + o.offset, o.length, o.data_seed);
    }
    if (outcome == status::ok && o.op == wire::opcode::read) {
      o.data.assign(model.begin() + static_cast<std::ptrdiff_t>(o.offset),
                    model.begin() + static_cast<std::ptrdiff_t>(o.offset + o.length));
    }
    tasks_live_ -= 1;
    bytes_live_ -= o.length;
    auto& fin = event(event_kind::task_finalized, "client");
    fin.task_id = o.task_id;
    fin.op = o.op;
    fin.outcome = outcome;
    fin.bytes = outcome == status::ok ? o.length : 0;
    auto& adm = event(event_kind::admission_changed, "client");
    adm.tasks = tasks_live_;
    adm.admitted_bytes = bytes_live_;
    auto& done = op(id);
    done.complete_seq = tick();
    done.complete_us = now_us;
    done.outcome = outcome;
    done.batch_status = outcome;
    done.callbacks = 1;
    done.bytes = outcome == status::ok ? done.length : 0;
    ++completed_;
  }

  void serve(std::uint64_t id, const core_event& d, status outcome) {
    auto o = op(id);
    bool runs = outcome == status::ok || outcome == status::ambiguous_write;
    if (runs) event(event_kind::lease_acquired, "server").registration_id = region_id;
    auto& ex = event(event_kind::server_executed, "server");
    ex.op = o.op;
    ex.request_id = d.request_id;
    ex.registration_id = region_id;
    ex.remote_offset = o.offset + d.offset;
    ex.length = d.length;
    ex.outcome = runs ? status::ok : outcome;
    if (runs) event(event_kind::lease_released, "server").registration_id = region_id;
    auto& f = frame(d.rail, relays::direction::down, false, o.op, d.request_id);
    f.status = runs ? 0 : 6;
  }

  std::uint64_t write(std::uint64_t offset, std::uint64_t length, std::uint64_t seed,
                      const std::string& phase = "fault") {
    auto id = start(wire::opcode::write, offset, length, seed, phase);
    end(id);
    return id;
  }
  std::uint64_t read(std::uint64_t offset, std::uint64_t length,
                     const std::string& phase = "fault") {
    auto id = start(wire::opcode::read, offset, length, 0, phase);
    end(id);
    return id;
  }

  void begin_liveness() {
    h.phases.back().end_seq = tick();
    h.phases.back().end_us = now_us;
    h.phases.push_back(phase_record{.name = "live",
                                    .liveness = true,
                                    .deadline_ms = 5000,
                                    .start_seq = tick(),
                                    .start_us = now_us});
  }

  // Stats, clean shutdowns of both transports and the region's final bytes.
  void finish() {
    h.phases.back().end_seq = tick();
    h.phases.back().end_us = now_us;
    for (auto& inc : h.incarnations) {
      stats_record st{.transport = inc.transport, .seq = tick(), .time_us = now_us};
      if (inc.transport == "client")
        st.stats.tasks_submitted = st.stats.tasks_completed = completed_;
      h.stats.push_back(st);
      shutdown_record s{.transport = inc.transport,
                        .start_seq = tick(),
                        .start_us = now_us,
                        .bound_ms = inc.shutdown_timeout_ms};
      now_us += 50'000;
      s.end_seq = tick();
      s.end_us = now_us;
      s.after = st.stats;
      h.shutdowns.push_back(s);
      inc.end_seq = s.end_seq;
      inc.end_us = now_us;
      inc.end_reason = "shutdown";
    }
    h.finals.push_back(
        region_final{.transport = "server", .region = "buf", .seq = tick(), .bytes = model});
  }

 private:
  std::uint64_t seq_ = 0;
  std::uint64_t next_task_ = 100;
  std::uint64_t next_request_ = 0x1f00000000;
  std::uint64_t tasks_live_ = 0;
  std::uint64_t bytes_live_ = 0;
  std::uint64_t completed_ = 0;
  std::map<std::uint64_t, std::vector<core_event>> dispatched_;  // by op id
};

// A WRITE, an overwriting WRITE, a sliced READ over both, an unsliced READ,
// a READ in the liveness phase, then a clean shutdown.
inline world clean_world() {
  world w;
  w.write(0, 4096, 11);
  w.write(2048, 4096, 12);
  w.read(0, 8192);  // sliced over both rails: 8192 >= 2 x 4096
  w.read(100, 1000);
  w.begin_liveness();
  w.read(4096, 4096, "live");
  w.finish();
  return w;
}

inline bool mentions(const checker_result& r, const std::string& text) {
  for (const auto& v : r.violations) {
    if (describe(v).find(text) != std::string::npos) return true;
  }
  return false;
}

inline std::string all(const checker_result& r);

// Exactly one violation, naming the task and request id in its fields and
// its line, and whose line contains `text`.
inline ::testing::AssertionResult one_violation(const checker_result& r, const std::string& text,
                                                std::uint64_t task, std::uint64_t request) {
  if (r.violations.size() != 1) {
    return ::testing::AssertionFailure() << r.violations.size() << " violations, expected 1:\n"
                                         << all(r);
  }
  const auto& v = r.violations[0];
  auto line = describe(v);
  if (v.task_id != task || v.request_id != request) {
    return ::testing::AssertionFailure()
           << "task/request fields " << v.task_id << "/" << v.request_id << " in: " << line;
  }
  if (line.find(text) == std::string::npos) {
    return ::testing::AssertionFailure() << "no \"" << text << "\" in: " << line;
  }
  return ::testing::AssertionSuccess() << line;
}

inline std::string all(const checker_result& r) {
  std::string out;
  for (const auto& v : r.violations) out += describe(v) + "\n";
  return out;
}

// The request id of op 1 (its first slice) in the clean world.
inline constexpr std::uint64_t op1_request = 0x1f00000000;

// The event of kind `k` for `request`, to change in a test.
inline core_event& find(world& w, event_kind k, std::uint64_t request) {
  for (auto& e : w.h.events) {
    if (e.kind == k && e.request_id == request) return e;
  }
  throw std::logic_error("no such event");
}

// The tap's frame going up on `rail` for `request`.
inline relays::tap_record& up_frame(world& w, std::size_t rail, std::uint64_t request) {
  for (auto& t : w.h.links[rail].tap) {
    if (t.dir == relays::direction::up && t.request_id == request) return t;
  }
  throw std::logic_error("no such frame");
}

// The request id op 1's WRITE goes out under when the core sends it again.
inline constexpr std::uint64_t op1_again_request = 0x1f000000ff;

// Op 1's WRITE dispatched a second time, under op1_again_request, at `seq`.
inline core_event dispatch_op1_again(world& w, std::uint64_t seq) {
  auto again = find(w, event_kind::slice_dispatched, op1_request);
  again.request_id = op1_again_request;
  again.seq = seq;
  w.h.events.push_back(again);
  return again;
}

// The target's executions of `request` gone from the observer's events.
inline void erase_executions(world& w, std::uint64_t request) {
  std::erase_if(w.h.events, [request](const core_event& e) {
    return e.kind == event_kind::server_executed && e.request_id == request;
  });
}

// The tap of rail 0 saw the answer to `request` refuse it (status 6).
inline void refuse_on_tap(world& w, std::uint64_t request) {
  for (auto& t : w.h.links[0].tap) {
    if (t.request_id == request && !t.request) t.status = 6;
  }
}

// The tap of `rail` never saw `request` going up.
inline void erase_request_frames(world& w, std::size_t rail, std::uint64_t request) {
  std::erase_if(w.h.links[rail].tap, [request](const relays::tap_record& t) {
    return t.request_id == request && t.request;
  });
}

// `request` went up on rail 1's link, not on rail 0's.
inline void move_request_to_rail_1(world& w, std::uint64_t request) {
  w.h.links[1].tap.push_back(up_frame(w, 0, request));
  erase_request_frames(w, 0, request);
}

}  // namespace faultlane::sim::test
