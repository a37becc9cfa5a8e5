// The target side of a transport: listeners and the sessions they accept.
//
// Accepted sockets are assigned round-robin to shards and kept in
// shard-owned session sets (touched only on their shard). A global limit
// bounds live sessions; a closed session leaves its set at once. Each
// session serves its requests in order, those that arrived together in one
// pass, and sends their answers together: READ payloads leave straight
// from the registered buffer, WRITE bodies land in it, always under a
// lease.
#pragma once

#include <asio/ip/tcp.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "faultlane/core/accept_loop.hpp"
#include "faultlane/core/net.hpp"
#include "runtime/runtime.hpp"

namespace faultlane::detail {

class server_session;

class server {
 public:
  explicit server(runtime& rt);
  ~server();

  // Binds the listener(s) and starts accepting.
  result<void> listen();
  std::vector<endpoint> endpoints() const { return endpoints_; }

  // Shutdown steps, each run on `shard` (the transport runs them on every
  // shard).
  void stop_accepting(std::size_t shard);
  void close_sessions(std::size_t shard);

  // Called by sessions, on their shard.
  void session_started(std::size_t shard, const std::shared_ptr<server_session>& s);
  void session_ended(std::size_t shard, server_session* s);

 private:
  struct listener {
    std::unique_ptr<accept_loop> loop;
    std::size_t shard = 0;
  };
  result<std::uint16_t> open_listener(const std::string& address, std::uint16_t port);
  accept_hooks listener_hooks();
  void on_accept(std::size_t shard, net::socket socket);
  void start_session(std::size_t shard, net::socket socket);

  runtime& rt_;
  std::vector<listener> listeners_;
  std::vector<endpoint> endpoints_;
  // One set per shard; each touched only on its shard. Each session with
  // the order it started in: the set is keyed by address, and what is done
  // to every session goes in that order, not the addresses' (one seed, one
  // run in the dsim build).
  struct started_session {
    std::uint64_t order = 0;
    std::shared_ptr<server_session> session;
  };
  std::vector<std::unordered_map<server_session*, started_session>> sessions_;
  std::atomic<std::uint64_t> started_{0};
};

}  // namespace faultlane::detail
