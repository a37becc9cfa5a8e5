// runner_source: what an initiator of a scenario run is told about a
// target.
#pragma once

#include <mutex>

#include "faultlane/core/transport.hpp"

namespace faultlane::sim {

// What an initiator is told about a target: its descriptor with each
// rail's endpoint replaced by the relay in front of it.
class runner_source final : public descriptor_source {
 public:
  result<segment_descriptor> fetch() override {
    std::lock_guard lock(mutex_);
    return descriptor_;
  }
  void set(segment_descriptor d) {
    std::lock_guard lock(mutex_);
    descriptor_ = std::move(d);
  }

 private:
  std::mutex mutex_;
  segment_descriptor descriptor_;
};

}  // namespace faultlane::sim
