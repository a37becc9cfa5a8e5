// local_peer: a scenario transport in the runner's own process.
//
// Region memory belongs to the peer; an incarnation's buffers stay
// allocated until the peer is destroyed, because a transport's registered
// memory must outlive it (transport.hpp).
#include <fmt/format.h>

#include <cstring>

#include "faultlane/control/control_plane.hpp"
#include "faultlane/core/pattern.hpp"
#include "runner/peer.hpp"

#if defined(FAULTLANE_DSIM)
#include "faultlane/dsim/network.hpp"
#include "runner/threads.hpp"
#endif

namespace faultlane::sim {

transport_config runner_config(const transport_spec& spec, std::uint32_t node) {
  transport_config c = spec.config;
  c.bind_address = "127.0.0.1";
  c.advertise_address.clear();
  c.port = 0;
  c.rail_addresses.clear();
  c.rpc_bind_address = "127.0.0.1";
  c.rpc_port = 0;
  if (node != 0) {
    // On the world, a node of its own: its rails' addresses, and its
    // control plane on the first.
    c.bind_address.clear();
    for (std::size_t r = 0; r < spec.rails; ++r) {
      c.rail_addresses.push_back(fmt::format("127.0.{}.{}", node, r + 1));
    }
    c.rpc_bind_address = c.rail_addresses.front();
    return c;
  }
  if (spec.rails > 1) {
    // With rails the core listens on each rail address, never on the
    // wildcard bind_address it then requires.
    c.bind_address.clear();
    for (std::size_t r = 0; r < spec.rails; ++r) {
      c.rail_addresses.push_back("127.0.0." + std::to_string(r + 1));
    }
  }
  return c;
}

namespace {

#if defined(FAULTLANE_DSIM)
// A killed child's replacement starts in this long (microseconds), drawn
// from the world's seed: what the real-time runner measures (more than the
// 5 ms reconnect cooldown of kill_child_mid_write; runner_test.cpp).
constexpr std::uint64_t process_start_us_min = 5'000;
constexpr std::uint64_t process_start_us_max = 20'000;
#endif

class local_peer final : public peer {
 public:
  local_peer(const transport_spec& spec, recorder& rec, recording_observer::sink_fn sink,
             std::uint32_t node)
      : spec_(spec), recorder_(rec), sink_(std::move(sink)), node_(node) {}
  ~local_peer() override { stop(); }

  result<void> start(std::uint32_t index) override {
    stop();  // a half-started incarnation never lingers
    auto c = runner_config(spec_, node_);
    if (recorder_.enabled()) {
      observer_ = std::make_unique<recording_observer>(&recorder_, spec_.name, index, sink_);
      c.observer = observer_.get();
    }
    auto t = control::start_transport(c);
    if (!t) return t.error();
    transport_ = std::move(t.value());
    return {};
  }

  segment_descriptor descriptor() override { return transport_->descriptor(); }
  result<endpoint> control_endpoint() override {
    if (!transport_) return error{status::shutting_down, "transport " + spec_.name + " is down"};
    if (auto at = control::endpoint_of(*transport_)) return *at;
    return error{status::invalid_argument, "transport " + spec_.name + " serves no control plane"};
  }

  result<void> register_counted(const region_spec& region) override {
    auto& memory = memory_[region.name];
    if (memory) retired_.push_back(std::move(memory));
    memory = std::make_unique<std::byte[]>(region.size * region.count);
    for (std::uint64_t k = 0; k < region.count; ++k) {
      auto id = transport_->register_buffer(memory.get() + k * region.size, region.size,
                                            region.perm, counted_name(region.name, k));
      if (!id) return id.error();
    }
    return {};
  }

  result<registration_id> register_region(const region_spec& region,
                                          std::uint64_t fill_seed) override {
    sizes_[region.name] = region.size;
    auto& memory = memory_[region.name];
    if (fill_seed != 0 || !memory) {
      if (memory) retired_.push_back(std::move(memory));
      memory = std::make_unique<std::byte[]>(region.size);
      fill_pattern(memory.get(), region.size, fill_seed);
    }
    return transport_->register_buffer(memory.get(), region.size, region.perm, region.name);
  }

  result<void> unregister_region(const std::string&, registration_id id) override {
    return transport_->unregister_buffer(id);
  }

  result<transport_stats> stats() override { return transport_->stats(); }

  result<std::vector<std::byte>> dump(const std::string& region) override {
    auto it = memory_.find(region);
    if (it == memory_.end() || !it->second) {
      return error{status::invalid_argument, "no memory for region " + region};
    }
    const auto size = region_size(region);
    return std::vector<std::byte>(it->second.get(), it->second.get() + size);
  }

  result<void> shutdown() override { return transport_->shutdown(); }

  void stop() override {
    transport_.reset();
    // The observer outlives the transport that reports to it.
    if (observer_) retired_observers_.push_back(std::move(observer_));
    for (auto& [name, memory] : memory_) {
      if (memory) retired_.push_back(std::move(memory));
    }
    memory_.clear();
  }

#if defined(FAULTLANE_DSIM)
  // The node goes down with everything on it; it is up again for the next
  // incarnation, as a restarted process's host is.
  //
  // A real kill and the next process's start take milliseconds (the runner
  // waits for the child to exit, then spawns and waits for its ready line),
  // while its peers' connections see the reset within a latency or two. So
  // the node stays down for a seeded process start time, and the rest of
  // the world runs meanwhile: a zero-time restart let a stream put new
  // WRITEs on connections the relay had not reset yet (kill_child_mid_write
  // found 6 ambiguous WRITEs where at most its depth, 4, can be).
  bool kill() override {
    if (node_ == 0 || !transport_) return false;
    auto& world = dsim::world::current();
    auto& network = dsim::network::current();
    const auto addresses = runner_config(spec_, node_).rail_addresses;
    for (const auto& a : addresses) network.crash(asio::ip::make_address(a));
    stop();
    threads::sleep_for(
        std::chrono::microseconds(world.draw(process_start_us_min, process_start_us_max)));
    for (const auto& a : addresses) network.revive(asio::ip::make_address(a));
    return true;
  }
#endif

  transport* local() override { return transport_.get(); }
  bool running() const override { return transport_ != nullptr; }

 private:
  std::uint64_t region_size(const std::string& region) const {
    auto it = sizes_.find(region);
    return it == sizes_.end() ? 0 : it->second;
  }

  const transport_spec spec_;
  recorder& recorder_;
  const recording_observer::sink_fn sink_;
  const std::uint32_t node_;
  std::unique_ptr<recording_observer> observer_;
  std::vector<std::unique_ptr<recording_observer>> retired_observers_;
  std::unique_ptr<transport> transport_;
  std::map<std::string, std::unique_ptr<std::byte[]>> memory_;
  std::map<std::string, std::uint64_t> sizes_;
  std::vector<std::unique_ptr<std::byte[]>> retired_;
};

}  // namespace

std::unique_ptr<peer> make_local_peer(const transport_spec& spec, recorder& rec,
                                      recording_observer::sink_fn sink, std::uint32_t node) {
  return std::make_unique<local_peer>(spec, rec, std::move(sink), node);
}

}  // namespace faultlane::sim
