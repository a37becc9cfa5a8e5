// peer: one scenario transport, in this process or in a child process.
//
// The runner drives both kinds through this interface: start an
// incarnation, register and unregister regions, read stats and a region's
// bytes, shut down, and (a child only) SIGKILL. Only a local peer can
// initiate work (local() returns its transport); a child serves as a
// target, and streams its observer events back into the recorder.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "faultlane/core/transport.hpp"
#include "faultlane/sim/scenario.hpp"
#include "runner/recorder.hpp"

namespace faultlane::sim {

class peer {
 public:
  virtual ~peer() = default;

  // Starts incarnation `index` (0 first). The regions are not registered.
  virtual result<void> start(std::uint32_t index) = 0;
  virtual segment_descriptor descriptor() = 0;
  // Where the incarnation's control plane listens (an error when it has none).
  virtual result<endpoint> control_endpoint() = 0;
  // fill_seed != 0: the region gets fresh memory filled with that seed;
  // 0: it keeps the bytes it had in this incarnation.
  virtual result<registration_id> register_region(const region_spec& region,
                                                  std::uint64_t fill_seed) = 0;
  virtual result<void> unregister_region(const std::string& region, registration_id id) = 0;
  // A counted region: region.count registrations of region.size bytes
  // each, named NAME/K, never unregistered by the runner (a local peer).
  virtual result<void> register_counted(const region_spec& region) {
    return error{status::invalid_argument,
                 "region " + region.name + ": a counted region needs a local transport"};
  }
  virtual result<transport_stats> stats() = 0;
  virtual result<std::vector<std::byte>> dump(const std::string& region) = 0;
  virtual result<void> shutdown() = 0;
  // Ends the incarnation: destroys the transport, or waits for the child.
  virtual void stop() = 0;
  // SIGKILL (a child); a crash of the transport's node in the dsim build
  // (its connections reset, its memory gone, nothing it does reaches the
  // network); false for a local peer in the normal build.
  virtual bool kill() { return false; }
  virtual transport* local() { return nullptr; }
  virtual bool running() const = 0;
};

// bind/rail addresses for a transport with `rails` rails: rail r is
// 127.0.0.(r + 1). node != 0 (the dsim build, where an address is a node
// of the simulated network): every rail is an address of the transport's
// own, 127.0.node.(r + 1), its connections leave from it, and a kill
// crashes it.
transport_config runner_config(const transport_spec& spec, std::uint32_t node = 0);

// With `sink`, observer events go there instead of into `rec` (a child).
std::unique_ptr<peer> make_local_peer(const transport_spec& spec, recorder& rec,
                                      recording_observer::sink_fn sink = {},
                                      std::uint32_t node = 0);
std::unique_ptr<peer> make_child_peer(const transport_spec& spec, recorder& rec,
                                      std::string program);

}  // namespace faultlane::sim
