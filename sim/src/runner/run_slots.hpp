// The slots of a scenario run's topology: a transport and its peer, a relay
// on a link or a rail, and an initiator-target pair with its rails.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "faultlane/relays/relay.hpp"
#include "faultlane/sim/scenario.hpp"
#include "runner/peer.hpp"
#include "runner/runner_source.hpp"
#include "runner/threads.hpp"

namespace faultlane::sim {

struct transport_slot {
  const transport_spec* spec = nullptr;
  std::unique_ptr<peer> p;
  threads::shared_mutex lock;
  std::atomic<std::uint32_t> incarnation{0};
  std::atomic<bool> up{false};
  bool shut_down = false;                      // by a shutdown event: stays down (under `lock`)
  bool shutdown_recorded = false;              // this incarnation's shutdown ran and was recorded
  std::map<std::string, registration_id> ids;  // region -> current id (0: unregistered)
};

struct relay_slot {
  std::string name;                 // the link's name, or "<initiator>-<target>-r<rail>"
  const link_spec* link = nullptr;  // null: a plain pass-through
  std::string initiator;            // a control link's only if it opens the segment
  std::string target;
  std::size_t rail = 0;
  std::unique_ptr<relays::relay> r;
  std::uint64_t started_us = 0;                         // the relay's clock zero on the run's clock
  std::multimap<std::string, relays::fault_id> faults;  // name -> installed
};

struct pair_slot {
  std::string initiator;
  std::string target;
  std::vector<relay_slot> rails;  // none when opened by address
  std::string opened_by;          // the control link whose address opens the segment, if any
  std::shared_ptr<runner_source> source = std::make_shared<runner_source>();
  std::atomic<segment_id> segment{0};
};

}  // namespace faultlane::sim
