// More of the no-replay checker (checkers_wire_test.cpp has the rest): which
// records each of its rules reads, each half of each filter on its own.
#include <gtest/gtest.h>

#include <vector>

#include "checkers_test_world.hpp"

namespace faultlane::sim::test {
namespace {

// Only a WRITE run ok twice is a replay: a READ the target ran twice is not.
TEST(no_replay, a_read_executed_twice_is_no_replay) {
  auto w = clean_world();
  auto twice = find(w, event_kind::server_executed, op1_request + 4);  // the unsliced READ
  ASSERT_EQ(twice.op, wire::opcode::read);
  twice.seq = 5000;
  w.h.events.push_back(twice);
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
}

// On the wire only a WRITE request going up counts: a READ request, a
// WRITE's response, or a frame going up that is no request, seen twice is
// no replay.
TEST(no_replay, the_tap_counts_write_requests_going_up_only) {
  auto w = clean_world();
  w.h.links[0].tap.push_back(up_frame(w, 0, op1_request + 4));  // the READ's request again
  auto not_a_request = up_frame(w, 0, op1_request);
  not_a_request.request = false;
  w.h.links[0].tap.push_back(not_a_request);
  for (const auto& t : std::vector<relays::tap_record>(w.h.links[0].tap)) {
    if (t.request_id == op1_request && !t.request) w.h.links[0].tap.push_back(t);
  }
  auto r = check_no_replay(w.h);
  EXPECT_TRUE(r.passed()) << all(r);
  EXPECT_EQ(r.checked, 2u + 2u);
}

// The refusal that allows a second dispatch is a response going down with a
// status: a status on the request going up, on a request going down or on a
// response going up is none.
TEST(no_replay, only_a_refusing_response_allows_a_second_dispatch) {
  struct frame_form {
    relays::direction dir;
    bool request;
    bool refusal;
  };
  for (const auto& form : {frame_form{relays::direction::up, true, false},
                           frame_form{relays::direction::down, true, false},
                           frame_form{relays::direction::up, false, false},
                           frame_form{relays::direction::down, false, true}}) {
    auto w = clean_world();
    dispatch_op1_again(w, w.op(1).complete_seq - 1);
    erase_executions(w, op1_request);
    for (auto& t : w.h.links[0].tap) {
      if (t.request_id != op1_request || !t.request) continue;
      t.status = 6;
      t.dir = form.dir;
      t.request = form.request;
    }
    const auto r = check_no_replay(w.h);
    EXPECT_EQ(r.passed(), form.refusal) << int(form.dir) << form.request << "\n" << all(r);
  }
}

}  // namespace
}  // namespace faultlane::sim::test
