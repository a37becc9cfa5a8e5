// What the multi-rail tests share: loopback rails 127.0.0.1..127.0.0.N, a
// config over them, and an observer that records slices, lanes, sessions
// and settlements (rail_test.cpp, rail_stale_test.cpp).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane::testing {

inline std::vector<std::string> rails(std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= n; ++i) out.push_back("127.0.0." + std::to_string(i));
  return out;
}

inline transport_config rail_config(std::size_t rail_count, std::size_t lanes) {
  auto c = loopback_config();
  c.bind_address = rail_count > 1 ? "" : "127.0.0.1";
  c.rail_addresses = rails(rail_count);
  c.connections_per_peer = lanes;
  c.worker_count = 2;
  return c;
}

// Records slices and connections, per task and per lane.
class rail_observer : public transport_observer {
 public:
  void slice_dispatched(const slice_event& e) override {
    std::lock_guard lock(mutex_);
    slices_[e.task_id].push_back(e);
  }
  void lane_connected(const lane_event& e) override {
    std::lock_guard lock(mutex_);
    lanes_.push_back(e);
  }
  void session_opened(const endpoint& local, const endpoint& remote) override {
    std::lock_guard lock(mutex_);
    sessions_.emplace_back(local, remote);
  }
  void task_finalized(const task_event& t, status s, std::uint64_t) override {
    std::lock_guard lock(mutex_);
    finalized_[t.task_id].push_back(s);
  }
  std::vector<slice_event> slices_of_last_task() const {
    std::lock_guard lock(mutex_);
    return slices_.empty() ? std::vector<slice_event>{} : slices_.rbegin()->second;
  }
  std::map<std::uint64_t, std::vector<slice_event>> slices() const {
    std::lock_guard lock(mutex_);
    return slices_;
  }
  std::vector<lane_event> lanes() const {
    std::lock_guard lock(mutex_);
    return lanes_;
  }
  std::vector<std::pair<endpoint, endpoint>> sessions() const {
    std::lock_guard lock(mutex_);
    return sessions_;
  }
  std::map<std::uint64_t, std::vector<status>> finalized() const {
    std::lock_guard lock(mutex_);
    return finalized_;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uint64_t, std::vector<slice_event>> slices_;
  std::vector<lane_event> lanes_;
  std::vector<std::pair<endpoint, endpoint>> sessions_;
  std::map<std::uint64_t, std::vector<status>> finalized_;
};

}  // namespace faultlane::testing
