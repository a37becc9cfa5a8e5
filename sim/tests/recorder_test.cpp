// The recording observer (recorder.hpp): every observer callback becomes
// one event of its kind in the history, and the tasks a submit() reports
// inside a submit_scope give their ids to the scope's ops, in order, one
// each. recorder.hpp is private to sim/src.
#include <gtest/gtest.h>

#include <vector>

#include "runner/recorder.hpp"

namespace faultlane::sim {
namespace {

// Rule: every observer callback is one event of its kind, in call order, on
// the observer's transport and incarnation; a lane's events carry the lane.
TEST(recorder, every_observer_callback_is_one_event_of_its_kind) {
  recorder rec(true);
  recording_observer obs(&rec, "client", 2);
  const lane_event lane{.segment = 1, .lane = 3, .rail = 1, .epoch = 9};
  obs.task_submitted({.task_id = 5});
  obs.task_finalized({.task_id = 5}, status::ok, 64);
  obs.slice_dispatched({.task_id = 5, .request_id = 7});
  obs.lane_connected(lane);
  obs.lane_closed(lane, status::connection_failed);
  obs.stale_handler_dropped(lane);
  obs.server_executed({.request_id = 7});
  obs.session_opened({"127.0.0.1", 1}, {"127.0.0.1", 2});
  obs.lease_acquired(0x50);
  obs.lease_released(0x50);
  obs.admission_changed(1, 64);
  const auto h = rec.take();
  const std::vector<event_kind> kinds = {
      event_kind::task_submitted,  event_kind::task_finalized,   event_kind::slice_dispatched,
      event_kind::lane_connected,  event_kind::lane_closed,      event_kind::stale_handler_dropped,
      event_kind::server_executed, event_kind::session_opened,   event_kind::lease_acquired,
      event_kind::lease_released,  event_kind::admission_changed};
  ASSERT_EQ(h.events.size(), kinds.size());
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(h.events[i].kind, kinds[i]) << i;
    EXPECT_EQ(h.events[i].transport, "client") << i;
    EXPECT_EQ(h.events[i].incarnation, 2u) << i;
  }
  const auto& dropped = h.events[5];
  EXPECT_EQ(dropped.lane, 3u);
  EXPECT_EQ(dropped.rail, 1u);
  EXPECT_EQ(dropped.epoch, 9u);
}

// Rule: inside a submit_scope the tasks submitted give their ids to the
// scope's ops in order, one each; a task past them, or submitted outside
// any scope, gives its id to no op, and is recorded all the same.
TEST(recorder, a_submit_scopes_ops_take_its_task_ids_in_order_one_each) {
  recorder rec(true);
  recording_observer obs(&rec, "client", 0);
  const std::vector<std::uint64_t> ids = {rec.add_op({}), rec.add_op({})};
  const auto spare = rec.add_op({});
  {
    const submit_scope scope(ids);
    obs.task_submitted({.task_id = 40});
    obs.task_submitted({.task_id = 41});
    obs.task_submitted({.task_id = 42});  // past the scope's ops
  }
  obs.task_submitted({.task_id = 43});  // outside any scope
  const auto h = rec.take();
  EXPECT_EQ(h.ops[ids[0] - 1].task_id, 40u);
  EXPECT_EQ(h.ops[ids[1] - 1].task_id, 41u);
  EXPECT_EQ(h.ops[spare - 1].task_id, 0u);
  EXPECT_EQ(h.events.size(), 4u);
}

// Rule: an observer with no recorder (a child process's, which sends its
// events to a sink) records nothing itself, inside a submit_scope too.
TEST(recorder, an_observer_with_only_a_sink_sends_every_event_there) {
  std::vector<core_event> sent;
  recording_observer obs(nullptr, "server", 1, [&](core_event&& e) { sent.push_back(e); });
  const std::vector<std::uint64_t> ids = {1};
  const submit_scope scope(ids);
  obs.task_submitted({.task_id = 40});
  obs.stale_handler_dropped({.lane = 2});
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[0].task_id, 40u);
  EXPECT_EQ(sent[1].kind, event_kind::stale_handler_dropped);
  EXPECT_EQ(sent[1].lane, 2u);
}

}  // namespace
}  // namespace faultlane::sim
