// run_error: the first thing that went wrong in a scenario run outside its
// checkers (setup, an event that could not act, a caller that could not
// connect, a timeout). Later ones are dropped: the first is the cause.
// Any thread.
#pragma once

#include <mutex>
#include <string>

#include "runner/threads.hpp"

namespace faultlane::sim {

class run_error {
 public:
  // Keeps `what` unless an error is already kept.
  void set(std::string what) {
    std::lock_guard lock(mutex_);
    if (error_.empty()) error_ = std::move(what);
  }
  std::string get() const {
    std::lock_guard lock(mutex_);
    return error_;
  }

 private:
  mutable threads::mutex mutex_;
  std::string error_;
};

}  // namespace faultlane::sim
