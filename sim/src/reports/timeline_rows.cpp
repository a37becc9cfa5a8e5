// timeline_rows: a history as the timeline's rows. Lanes come from the
// initiator's observer events (lane_connected/lane_closed, slice_dispatched)
// and end each bar at its op's completion; sessions from the target's
// (session_opened, server_executed); relay connections from the taps.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "faultlane/core/frame.hpp"
#include "reports/timeline.hpp"

namespace faultlane::sim::timeline {

std::string_view status_class(status s) noexcept {
  switch (s) {
    case status::ok: return "ok";
    case status::ambiguous_write: return "amb";
    case status::timeout:
    case status::connection_failed: return "err";
    case status::cancelled: return "cxl";
    default: return "oth";
  }
}

std::string_view op_name(wire::opcode op) noexcept {
  return op == wire::opcode::write ? "WRITE" : "READ";
}

std::string time_text(std::uint64_t us) {
  return fmt::format("{:.3f} ms", static_cast<double>(us) / 1000.0);
}

std::uint64_t end_of(const history& h) {
  std::uint64_t end = 1;
  auto see = [&end](std::uint64_t us) { end = std::max(end, us); };
  for (const auto& op : h.ops) see(std::max(op.submit_us, op.complete_us));
  for (const auto& e : h.events) see(e.time_us);
  for (const auto& i : h.incarnations) see(std::max(i.start_us, i.end_us));
  for (const auto& s : h.shutdowns) see(s.end_us);
  for (const auto& m : h.marks) see(m.time_us);
  for (const auto& p : h.phases) see(std::max(p.start_us, p.end_us));
  for (const auto& link : h.links) {
    for (const auto& t : link.tap) see(t.time_us);
  }
  return end;
}

namespace {

// An initiator's task: (transport, incarnation, task id).
using task_key = std::tuple<std::string_view, std::uint32_t, std::uint64_t>;
// An initiator's lane: (transport, incarnation, segment, lane).
using lane_key = std::tuple<std::string_view, std::uint32_t, std::uint64_t, std::size_t>;

struct task_index {
  std::map<task_key, const op_record*> ops;
  std::map<task_key, const core_event*> finalized;
};

task_index index_tasks(const history& h) {
  task_index index;
  for (const auto& op : h.ops) {
    if (op.task_id != 0) index.ops[{op.initiator, op.initiator_incarnation, op.task_id}] = &op;
  }
  for (const auto& e : h.events) {
    if (e.kind == event_kind::task_finalized) {
      index.finalized[{e.transport, e.incarnation, e.task_id}] = &e;
    }
  }
  return index;
}

item slice_bar(const core_event& e, const task_index& index, std::uint64_t end_us) {
  task_key key{e.transport, e.incarnation, e.task_id};
  auto op_it = index.ops.find(key);
  const op_record* op = op_it == index.ops.end() ? nullptr : op_it->second;
  auto fin_it = index.finalized.find(key);
  const core_event* fin = fin_it == index.finalized.end() ? nullptr : fin_it->second;
  item bar{shape::bar, "oth", e.time_us, end_us, 0, {}};
  std::string outcome = "not completed";
  if (op != nullptr && op->complete_seq != 0) {
    bar.end_us = op->complete_us;
    bar.css = status_class(op->outcome);
    outcome = to_string(op->outcome);
  } else if (fin != nullptr) {
    bar.end_us = fin->time_us;
    bar.css = status_class(fin->outcome);
    outcome = to_string(fin->outcome);
  }
  bar.end_us = std::max(bar.end_us, bar.start_us);
  std::string head = fmt::format("task {} request {:#x}", e.task_id, e.request_id);
  if (op != nullptr) {
    bar.op_id = op->id;
    head = fmt::format("op {} {} {}", op->id, op->stream, head);
  }
  bar.title = fmt::format(
      "{}\n{} offset {} length {} (slice +{} length {}, rail {})\nstatus {}, {} to {}", head,
      op_name(op != nullptr ? op->op : e.op), op != nullptr ? op->offset : e.remote_offset,
      op != nullptr ? op->length : e.length, e.offset, e.length, e.rail, outcome,
      time_text(bar.start_us), time_text(bar.end_us));
  return bar;
}

std::string lane_label(const lane_key& k) {
  return fmt::format("{} i{} s{} lane {}", std::get<0>(k), std::get<1>(k), std::get<2>(k),
                     std::get<3>(k));
}

}  // namespace

row_group lane_rows(const history& h, std::uint64_t end_us) {
  auto index = index_tasks(h);
  std::map<lane_key, row> rows;
  std::map<lane_key, std::size_t> open_span;  // the item of a connected lane's span
  for (const auto& e : h.events) {
    lane_key key{e.transport, e.incarnation, e.segment, e.lane};
    switch (e.kind) {
      case event_kind::lane_connected: {
        auto& r = rows[key];
        open_span[key] = r.items.size();
        r.items.push_back(
            {shape::span, "span", e.time_us, end_us, 0,
             fmt::format("connected {} to {} at {}", e.local, e.remote, time_text(e.time_us))});
        break;
      }
      case event_kind::lane_closed: {
        auto& r = rows[key];
        auto it = open_span.find(key);
        if (it == open_span.end()) {
          r.items.push_back({shape::span, "span", e.time_us, e.time_us, 0, {}});
          it = open_span.emplace(key, r.items.size() - 1).first;
        }
        auto& span = r.items[it->second];
        span.end_us = std::max(e.time_us, span.start_us);
        span.title +=
            fmt::format("\nclosed ({}) at {}", to_string(e.outcome), time_text(e.time_us));
        open_span.erase(it);
        break;
      }
      case event_kind::slice_dispatched:
        rows[key].items.push_back(slice_bar(e, index, end_us));
        break;
      default: break;
    }
  }
  row_group group{"lanes", {}};
  for (auto& [key, r] : rows) {
    r.label = lane_label(key);
    r.title = fmt::format("lane {} of {} (incarnation {}, segment {})", std::get<3>(key),
                          std::get<0>(key), std::get<1>(key), std::get<2>(key));
    group.rows.push_back(std::move(r));
  }
  return group;
}

namespace {

item session_tick(const core_event& e) {
  if (e.kind == event_kind::session_opened) {
    return {
        shape::tick,
        "sess",
        e.time_us,
        e.time_us,
        0,
        fmt::format("session opened: {} from {} at {}", e.local, e.remote, time_text(e.time_us))};
  }
  return {shape::tick,
          status_class(e.outcome),
          e.time_us,
          e.time_us,
          0,
          fmt::format("executed {} request {:#x}\nregistration {} offset {} length {}\n"
                      "status {} at {}",
                      op_name(e.op), e.request_id, e.registration_id, e.remote_offset, e.length,
                      to_string(e.outcome), time_text(e.time_us))};
}

// The incarnation's life as a span under the ticks, when the history has it.
void add_incarnation_span(row& r, const history& h, std::string_view transport, std::uint32_t index,
                          std::uint64_t end_us) {
  for (const auto& inc : h.incarnations) {
    if (inc.transport != transport || inc.index != index) continue;
    std::uint64_t end = inc.end_seq != 0 ? std::max(inc.end_us, inc.start_us) : end_us;
    std::string reason = inc.end_reason.empty() ? "still up" : inc.end_reason;
    r.items.insert(r.items.begin(),
                   {shape::span, "span", inc.start_us, end, 0,
                    fmt::format("incarnation {} of {}: {} to {} ({})", index, transport,
                                time_text(inc.start_us), time_text(end), reason)});
    return;
  }
}

}  // namespace

row_group session_rows(const history& h, std::uint64_t end_us) {
  std::map<std::tuple<std::string_view, std::uint32_t>, row> rows;
  for (const auto& e : h.events) {
    if (e.kind != event_kind::session_opened && e.kind != event_kind::server_executed) continue;
    rows[{e.transport, e.incarnation}].items.push_back(session_tick(e));
  }
  row_group group{"sessions", {}};
  for (auto& [key, r] : rows) {
    auto [transport, index] = key;
    add_incarnation_span(r, h, transport, index, end_us);
    r.label = fmt::format("sessions of {} i{}", transport, index);
    r.title = fmt::format("sessions of {} (incarnation {})", transport, index);
    group.rows.push_back(std::move(r));
  }
  return group;
}

namespace {

item frame_tick(const relays::tap_record& t) {
  bool up = t.dir == relays::direction::up;
  std::string_view css = up ? "fu" : (t.status != 0 ? "fe" : "fd");
  std::string what = t.request ? "request" : "response";
  std::string status_part;
  if (!t.request) {
    status_part =
        fmt::format(" status {}", wire::to_string(static_cast<wire::wire_status>(t.status)));
  }
  return {
      shape::frame,
      css,
      t.time_us,
      t.time_us,
      0,
      fmt::format("{} {} {} {:#x} frame {}\nregistration {} offset {} length {}{} at {}",
                  relays::to_string(t.dir), op_name(t.op), what, t.request_id, t.frame_index,
                  t.registration_id, t.remote_offset, t.length, status_part, time_text(t.time_us))};
}

item tap_item(const relays::tap_record& t) {
  switch (t.kind) {
    case relays::record_kind::frame: return frame_tick(t);
    case relays::record_kind::fault:
      return {
          shape::fault,
          "fault-mark",
          t.time_us,
          t.time_us,
          0,
          fmt::format("fault {} ({}) frame {} request {:#x} at {}", t.fault,
                      relays::to_string(t.dir), t.frame_index, t.request_id, time_text(t.time_us))};
    case relays::record_kind::connect_failed:
      return {shape::decode_error,
              "decode-error",
              t.time_us,
              t.time_us,
              0,
              fmt::format("upstream connect to {} failed: {} at {}", t.upstream_remote, t.reason,
                          time_text(t.time_us))};
    default:
      return {shape::decode_error,
              "decode-error",
              t.time_us,
              t.time_us,
              0,
              fmt::format("decode error ({}): {} at {}", relays::to_string(t.dir), t.fault,
                          time_text(t.time_us))};
  }
}

void add_connection_record(row& r, const relays::tap_record& t, std::uint64_t end_us) {
  if (t.kind == relays::record_kind::open) {
    r.items.insert(r.items.begin(),
                   {shape::span, "span", t.time_us, end_us, 0,
                    fmt::format("{} -> relay -> {} (from {}), opened at {}", t.client_address,
                                t.upstream_remote, t.upstream_local, time_text(t.time_us))});
  } else if (t.kind == relays::record_kind::close) {
    if (r.items.empty() || r.items.front().kind != shape::span) {
      r.items.insert(r.items.begin(), {shape::span, "span", 0, end_us, 0, "opened before the tap"});
    }
    auto& span = r.items.front();
    span.end_us = std::max(t.time_us, span.start_us);
    span.title += fmt::format("\nclosed at {} ({}; {} bytes up, {} down)", time_text(t.time_us),
                              t.reason, t.bytes_up, t.bytes_down);
  } else if (t.kind != relays::record_kind::write) {
    r.items.push_back(tap_item(t));
  }
}

}  // namespace

row_group relay_rows(const history& h, std::uint64_t end_us) {
  row_group group{"relay connections", {}};
  for (const auto& link : h.links) {
    std::map<std::uint64_t, row> rows;
    for (const auto& t : link.tap) add_connection_record(rows[t.connection], t, end_us);
    for (auto& [connection, r] : rows) {
      r.label = fmt::format("{} c{}", link.name, connection);
      r.title = fmt::format("relay {} ({} to {}, rail {}), connection {}", link.name,
                            link.initiator, link.target, link.rail, connection);
      group.rows.push_back(std::move(r));
    }
  }
  return group;
}

}  // namespace faultlane::sim::timeline
