// lane_handoff: a submit's ops collected by lane, each lane's chain posted
// once.
#pragma once

#include <array>
#include <cstddef>
#include <memory>

#include "initiator/task.hpp"

namespace faultlane::detail {

class lane;

// Collects a submit's ops by lane and posts each lane's chain once, so a
// batch of 32 on 4 lanes costs 4 hand-offs, not 32, and each lane sees its
// eight requests together. Keeps up to `lanes_max` lanes; a batch spread
// over more hands off early. Ops not yet handed off when it goes settle
// as shutting_down (a submit that threw part way).
class lane_handoff {
 public:
  explicit lane_handoff(runtime& rt) : rt_(rt) {}
  lane_handoff(const lane_handoff&) = delete;
  lane_handoff& operator=(const lane_handoff&) = delete;

  // `l` must outlive the hand-off (a group's lane: next_lane()).
  void add(const std::shared_ptr<lane>& l, op_ptr op);
  void flush();

 private:
  static constexpr std::size_t lanes_max = 16;
  struct entry {
    const std::shared_ptr<lane>* to = nullptr;
    op_chain ops;
  };
  runtime& rt_;
  std::array<entry, lanes_max> entries_{};
  std::size_t used_ = 0;
};

}  // namespace faultlane::detail
