// The timeline's model, rule by rule (docs/scenarios.md, "Timeline"; the
// rules of timeline.hpp): an exchange's bar coloured by its outcome and
// ending when its op ended, the page's time span, and the rows of target
// incarnations and relay connections with their spans and frame colours.
// timeline.hpp is private to sim/src.
#include <gtest/gtest.h>

#include "faultlane/core/frame.hpp"
#include "report_fixtures.hpp"
#include "reports/timeline.hpp"

namespace faultlane::sim {
namespace {

using namespace report_fixtures;
namespace tl = timeline;

// Rule: a bar's colour says how the exchange ended: ok, ambiguous_write,
// timeout and connection errors, cancelled, anything else.
TEST(timeline_rows, each_outcome_has_its_colour_class) {
  EXPECT_EQ(tl::status_class(status::ok), "ok");
  EXPECT_EQ(tl::status_class(status::ambiguous_write), "amb");
  EXPECT_EQ(tl::status_class(status::timeout), "err");
  EXPECT_EQ(tl::status_class(status::connection_failed), "err");
  EXPECT_EQ(tl::status_class(status::cancelled), "cxl");
  EXPECT_EQ(tl::status_class(status::busy), "oth");
  EXPECT_EQ(tl::status_class(status::stale_registration), "oth");
}

// Rule: the time axis ends at the last thing the history holds, whichever
// kind it is, and is at least 1 us long.
TEST(timeline_rows, the_axis_ends_at_the_latest_record_of_any_kind) {
  EXPECT_EQ(tl::end_of(history{}), 1u);
  auto with = [](auto&& add) {
    history h;
    h.ops.push_back(op_of(1, 1, status::ok, 10));
    h.ops[0].submit_us = 1;
    add(h);
    return tl::end_of(h);
  };
  EXPECT_EQ(with([](history&) {}), 10u);
  EXPECT_EQ(with([](history& h) { h.ops[0].submit_us = 20, h.ops[0].complete_us = 0; }), 20u);
  EXPECT_EQ(with([](history& h) { h.events.push_back(event_of(1, 30, "c#0", {})); }), 30u);
  EXPECT_EQ(with([](history& h) { h.incarnations.push_back({.start_us = 31}); }), 31u);
  EXPECT_EQ(with([](history& h) { h.incarnations.push_back({.end_us = 32}); }), 32u);
  EXPECT_EQ(with([](history& h) { h.shutdowns.push_back({.end_us = 40}); }), 40u);
  EXPECT_EQ(with([](history& h) { h.marks.push_back({.time_us = 50}); }), 50u);
  EXPECT_EQ(with([](history& h) { h.phases.push_back({.start_us = 55}); }), 55u);
  EXPECT_EQ(with([](history& h) { h.phases.push_back({.end_us = 60}); }), 60u);
  EXPECT_EQ(with([](history& h) {
              h.links.push_back({});
              h.links[0].tap.push_back(tap_of(relays::record_kind::frame, 70));
            }),
            70u);
}

history one_slice(std::uint64_t complete_seq, bool finalized) {
  history h;
  auto op = op_of(1, 101, status::ok, 300);
  op.complete_seq = complete_seq;
  h.ops.push_back(op);
  auto slice = event_of(1, 100, "client#0", event_kind::slice_dispatched);
  slice.task_id = 101;
  h.events.push_back(slice);
  if (finalized) {
    auto fin = event_of(2, 250, "client#0", event_kind::task_finalized);
    fin.task_id = 101;
    fin.outcome = status::timeout;
    h.events.push_back(fin);
  }
  return h;
}

// Rule: an exchange's bar runs from its dispatch to its op's end, coloured
// by the op's outcome; an op that never ended ends its bar where its task
// was finalized, or else at the end of the axis as "not completed".
TEST(timeline_rows, a_bar_ends_at_the_op_else_the_finalize_else_the_axis) {
  struct expected {
    std::uint64_t complete_seq;
    bool finalized;
    std::uint64_t end_us;
    std::string_view css;
    std::string_view status;
  };
  for (const expected& x :
       {expected{7, true, 300, "ok", "status ok"}, expected{0, true, 250, "err", "status timeout"},
        expected{0, false, 900, "oth", "status not completed"}}) {
    const auto group = tl::lane_rows(one_slice(x.complete_seq, x.finalized), 900);
    ASSERT_EQ(group.rows.size(), 1u);
    ASSERT_EQ(group.rows[0].items.size(), 1u);
    const auto& bar = group.rows[0].items[0];
    EXPECT_EQ(bar.start_us, 100u);
    EXPECT_EQ(bar.end_us, x.end_us) << x.status;
    EXPECT_EQ(bar.css, x.css) << x.status;
    EXPECT_EQ(bar.op_id, 1u);
    EXPECT_NE(bar.title.find(x.status), std::string::npos) << bar.title;
  }
}

// Rule: one row per target incarnation; its life is a span under its
// ticks, to its end, or to the end of the axis while it is still up.
TEST(timeline_rows, a_target_incarnation_row_spans_its_life) {
  history h;
  for (std::uint32_t inc : {0u, 1u}) {
    auto opened = event_of(1 + inc, 100 + inc, "server", event_kind::session_opened);
    opened.incarnation = inc;
    h.events.push_back(opened);
  }
  h.incarnations = {{.transport = "server",
                     .index = 0,
                     .end_seq = 5,
                     .start_us = 10,
                     .end_us = 400,
                     .end_reason = "restart"},
                    {.transport = "server", .index = 1, .start_us = 410}};
  const auto group = tl::session_rows(h, 900);
  ASSERT_EQ(group.rows.size(), 2u);
  EXPECT_EQ(group.rows[0].label, "sessions of server i0");
  EXPECT_EQ(group.rows[1].label, "sessions of server i1");
  const auto& first = group.rows[0].items.front();
  EXPECT_EQ(first.kind, tl::shape::span);
  EXPECT_EQ(std::tie(first.start_us, first.end_us), std::make_tuple(10u, 400u));
  EXPECT_NE(first.title.find("(restart)"), std::string::npos) << first.title;
  const auto& second = group.rows[1].items.front();
  EXPECT_EQ(second.kind, tl::shape::span);
  EXPECT_EQ(std::tie(second.start_us, second.end_us), std::make_tuple(410u, 900u));
  EXPECT_NE(second.title.find("(still up)"), std::string::npos) << second.title;
}

// Rule: a relay connection's row spans open to close (from 0 when it
// opened before the tap, to the axis end while open); a frame up, a frame
// down and a response with an error status (any but 0) each have their
// colour.
TEST(timeline_rows, a_relay_connection_spans_open_to_close_with_coloured_frames) {
  history h;
  h.links.push_back({});
  auto& tap = h.links[0].tap;
  tap.push_back(tap_of(relays::record_kind::close, 500));  // connection 1, opened untapped
  auto open = tap_of(relays::record_kind::open, 50);
  open.connection = 2;
  tap.push_back(open);
  for (auto [dir, wire_status, us] :
       {std::tuple{relays::direction::up, 0, 60}, std::tuple{relays::direction::down, 0, 70},
        std::tuple{relays::direction::down, 1, 80}}) {
    auto frame = tap_of(relays::record_kind::frame, us);
    frame.connection = 2;
    frame.dir = dir;
    frame.status = static_cast<std::uint16_t>(wire_status);
    frame.request = dir == relays::direction::up;
    tap.push_back(frame);
  }
  const auto group = tl::relay_rows(h, 900);
  ASSERT_EQ(group.rows.size(), 2u);
  const auto& untapped = group.rows[0].items.front();
  EXPECT_EQ(std::tie(untapped.start_us, untapped.end_us), std::make_tuple(0u, 500u));
  EXPECT_NE(untapped.title.find("opened before the tap"), std::string::npos);
  const auto& items = group.rows[1].items;
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(std::tie(items[0].start_us, items[0].end_us), std::make_tuple(50u, 900u));
  EXPECT_EQ(items[1].css, "fu");
  EXPECT_EQ(items[2].css, "fd");
  EXPECT_EQ(items[3].css, "fe");
}

// Rule: a frame's title names the status of a response, error or not, and
// a request has none to name.
TEST(timeline_rows, a_frame_title_names_the_status_of_a_response_only) {
  history h;
  h.links.push_back({});
  h.links[0].tap.push_back(tap_of(relays::record_kind::open, 50));
  for (auto [request, wire_status, us] :
       {std::tuple{true, 0, 60}, std::tuple{false, 0, 70}, std::tuple{false, 1, 80}}) {
    auto frame = tap_of(relays::record_kind::frame, us);
    frame.dir = request ? relays::direction::up : relays::direction::down;
    frame.status = static_cast<std::uint16_t>(wire_status);
    frame.request = request;
    h.links[0].tap.push_back(frame);
  }
  const auto group = tl::relay_rows(h, 900);
  ASSERT_EQ(group.rows.size(), 1u);
  const auto& items = group.rows[0].items;
  ASSERT_EQ(items.size(), 4u);  // the connection's span, then the frames
  EXPECT_EQ(items[1].title.find("status"), std::string::npos) << items[1].title;
  const auto named = [](int s) {
    return " status " + std::string(wire::to_string(static_cast<wire::wire_status>(s))) + " ";
  };
  EXPECT_NE(items[2].title.find(named(0)), std::string::npos) << items[2].title;
  EXPECT_NE(items[3].title.find(named(1)), std::string::npos) << items[3].title;
}

// Rule: the session rows show only what a target saw, a session opened or a
// request executed; the initiator's lane and task events have rows of their
// own elsewhere.
TEST(timeline_rows, session_rows_hold_only_sessions_and_executions) {
  history h;
  for (auto kind : {event_kind::lane_connected, event_kind::slice_dispatched,
                    event_kind::task_finalized, event_kind::lane_closed}) {
    h.events.push_back(event_of(h.events.size() + 1, 10, "client", kind));
  }
  h.events.push_back(event_of(10, 20, "server", event_kind::session_opened));
  auto ran = event_of(11, 30, "server", event_kind::server_executed);
  ran.outcome = status::timeout;
  h.events.push_back(ran);
  h.events.push_back(event_of(12, 40, "server", event_kind::lease_acquired));
  const auto group = tl::session_rows(h, 900);
  ASSERT_EQ(group.rows.size(), 1u);
  EXPECT_EQ(group.rows[0].label, "sessions of server i0");
  const auto& items = group.rows[0].items;
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].css, "sess");
  EXPECT_EQ(items[0].start_us, 20u);
  EXPECT_EQ(items[1].css, "err");  // coloured by how it ended
  EXPECT_EQ(items[1].start_us, 30u);
}

core_event lane_event(std::uint64_t seq, std::uint64_t us, event_kind kind, std::size_t lane) {
  auto e = event_of(seq, us, "c", kind);
  e.lane = lane;
  return e;
}

// Rule: one row per lane (transport, incarnation, segment, lane); a
// connected lane's span runs to its close (its status in the title), or to
// the axis end while open; a close with no open spans its own instant; a
// dispatch of a task no op carries is a bar to the axis end, titled by its
// task.
TEST(timeline_rows, a_lane_row_spans_each_connection_and_holds_its_bars) {
  history h;
  auto closed = lane_event(2, 50, event_kind::lane_closed, 0);
  closed.outcome = status::connection_failed;
  auto slice = lane_event(5, 90, event_kind::slice_dispatched, 0);
  slice.task_id = 5;
  slice.request_id = 0x2a;
  h.events = {lane_event(1, 10, event_kind::lane_connected, 0),
              closed,
              lane_event(3, 60, event_kind::lane_closed, 0),  // closed again: no span open
              lane_event(3, 70, event_kind::lane_closed, 1),
              lane_event(4, 80, event_kind::lane_connected, 0),
              slice};
  const auto group = tl::lane_rows(h, 900);
  ASSERT_EQ(group.rows.size(), 2u);
  EXPECT_EQ(group.rows[0].label, "c i0 s0 lane 0");
  EXPECT_EQ(group.rows[1].label, "c i0 s0 lane 1");
  const auto& items = group.rows[0].items;
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(std::tie(items[0].start_us, items[0].end_us), std::make_tuple(10u, 50u));
  EXPECT_NE(items[0].title.find("closed (connection_failed) at 0.050 ms"), std::string::npos)
      << items[0].title;
  EXPECT_EQ(std::tie(items[1].start_us, items[1].end_us), std::make_tuple(60u, 60u));
  EXPECT_EQ(std::tie(items[2].start_us, items[2].end_us), std::make_tuple(80u, 900u));
  EXPECT_EQ(items[3].kind, tl::shape::bar);
  EXPECT_EQ(std::tie(items[3].start_us, items[3].end_us), std::make_tuple(90u, 900u));
  EXPECT_EQ(items[3].op_id, 0u);
  EXPECT_EQ(items[3].title.rfind("task 5 request 0x2a\n", 0), 0u) << items[3].title;
  const auto& lone = group.rows[1].items;
  ASSERT_EQ(lone.size(), 1u);
  EXPECT_EQ(std::tie(lone[0].start_us, lone[0].end_us), std::make_tuple(70u, 70u));
}

// Rule: a relay connection's row shows each fault, decode error and failed
// upstream connect in its own shape; a write record is not drawn.
TEST(timeline_rows, a_relay_row_draws_faults_and_errors_but_not_writes) {
  history h;
  h.links.push_back({});
  auto& tap = h.links[0].tap;
  auto fault = tap_of(relays::record_kind::fault, 10);
  fault.fault = "reset.up";
  auto bad = tap_of(relays::record_kind::decode_error, 20);
  bad.fault = "bad magic";
  auto refused = tap_of(relays::record_kind::connect_failed, 30);
  refused.upstream_remote = "127.0.0.1:9";
  refused.reason = "refused";
  tap = {fault, bad, tap_of(relays::record_kind::write, 25), refused};
  const auto group = tl::relay_rows(h, 900);
  ASSERT_EQ(group.rows.size(), 1u);
  const auto& items = group.rows[0].items;
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].kind, tl::shape::fault);
  EXPECT_EQ(items[0].css, "fault-mark");
  EXPECT_EQ(items[0].title.rfind("fault reset.up (up)", 0), 0u) << items[0].title;
  EXPECT_EQ(items[1].kind, tl::shape::decode_error);
  EXPECT_EQ(items[1].title.rfind("decode error (up): bad magic", 0), 0u) << items[1].title;
  EXPECT_EQ(items[2].kind, tl::shape::decode_error);
  EXPECT_EQ(items[2].title.rfind("upstream connect to 127.0.0.1:9 failed: refused", 0), 0u)
      << items[2].title;
}

}  // namespace
}  // namespace faultlane::sim
