// network: see network.hpp.
#include "faultlane/dsim/network.hpp"

#include <algorithm>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/probe.hpp"
#include "state.hpp"

namespace faultlane::dsim {

namespace {

thread_local network* current_network = nullptr;
constexpr std::uint16_t ephemeral_port_first = 32768;

}  // namespace

network::network(world& w, network_options options)
    : world_(w), options_(options), previous_(current_network) {
  FL_ASSERT(options_.latency_min <= options_.latency_max);
  FL_ASSERT(options_.buffer_min > 0 && options_.buffer_min <= options_.buffer_max);
  current_network = this;
}

network::~network() {
  FL_ASSERT(current_network == this);
  FL_ASSERT(objects_ == 0);  // a socket or acceptor outlived its network
  current_network = previous_;
}

network& network::current() {
  FL_ASSERT(current_network != nullptr);
  return *current_network;
}

void network::place(asio::io_context& context, const asio::ip::address& node) {
  placed_[&context] = node;
}

asio::ip::address network::node_of(asio::io_context& context) const {
  auto it = placed_.find(&context);
  return it == placed_.end() ? asio::ip::make_address_v4("127.0.0.1") : it->second;
}

std::uint16_t network::ephemeral_port(const asio::ip::address& node) {
  auto& next = next_port_.try_emplace(node, ephemeral_port_first).first->second;
  for (;;) {
    const std::uint16_t port = next;
    next = next == 65535 ? ephemeral_port_first : static_cast<std::uint16_t>(next + 1);
    if (!port_in_use({node, port})) return port;
  }
}

bool network::port_in_use(const endpoint& at) const {
  auto it = listeners_.find(at);
  if (it != listeners_.end() && !it->second.expired()) return true;
  for (const auto& weak : connections_) {
    auto c = weak.lock();
    if (c && (c->ends[0] == at || c->ends[1] == at)) return true;
  }
  return false;
}

void network::listen(const endpoint& at, const std::shared_ptr<detail::listener>& l) {
  listeners_[at] = l;
  world_.record("listen", at.port());
}

void network::unlisten(const endpoint& at) { listeners_.erase(at); }

std::shared_ptr<detail::listener> network::listener_at(const endpoint& at) const {
  if (is_down(at.address())) return nullptr;
  auto it = listeners_.find(at);
  if (it == listeners_.end()) {
    // A listener on every address (0.0.0.0) takes the port on any node.
    it = listeners_.find(endpoint(asio::ip::address_v4::any(), at.port()));
  }
  return it == listeners_.end() ? nullptr : it->second.lock();
}

void network::opened(const std::shared_ptr<detail::connection>& c) {
  // Drop the entries of connections gone, now and then, so a long run's
  // list stays as long as what is open.
  if (connections_.size() >= 64 && connections_.size() % 64 == 0) {
    std::erase_if(connections_, [](const auto& w) { return w.expired(); });
  }
  connections_.push_back(c);
}

std::size_t network::connections_open() const {
  std::size_t n = 0;
  for (const auto& weak : connections_) {
    auto c = weak.lock();
    if (c && !c->closed[0] && !c->closed[1] && !c->reset_at[0] && !c->reset_at[1]) ++n;
  }
  return n;
}

void network::revive(const asio::ip::address& node) {
  world_.record("revive", node.is_v4() ? node.to_v4().to_uint() : 0);
  down_.erase(node);
}

void network::crash(const asio::ip::address& node) {
  world_.record("crash", node.is_v4() ? node.to_v4().to_uint() : 0);
  down_.insert(node);
  for (const auto& weak : connections_) {
    auto c = weak.lock();
    if (!c) continue;
    for (int side = 0; side < 2; ++side) {
      if (c->ends[side].address() == node && !c->closed[side]) {
        FAULTLANE_PROBE(world_node_crashed_with_connections);
        detail::crash_end(*this, c, side);
      }
    }
  }
  std::vector<std::shared_ptr<detail::listener>> gone;
  for (const auto& [at, weak] : listeners_) {
    auto l = weak.lock();
    if (l && at.address() == node) gone.push_back(l);
  }
  for (auto& l : gone) detail::close_listener(*this, l);
}

}  // namespace faultlane::dsim
