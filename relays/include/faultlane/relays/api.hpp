// api_server: faultlane relays driven at runtime through Toxiproxy's HTTP
// API (version 2.x), plus GET /metrics in Prometheus text format.
//
//   api_config c;
//   c.http = address{"127.0.0.1", 8474};
//   auto api = api_server::start(c).value();
//   // any Toxiproxy client: POST /proxies {"name": "redis", "listen":
//   // "127.0.0.1:0", "upstream": "127.0.0.1:6379"}, then toxics...
//
// Each proxy is a relay; Toxiproxy's toxics map onto relay faults, and every
// faultlane fault (drop_frame, corrupt, stall with frame triggers...) is a
// toxic type of its own. Relays from the command line or a configuration
// file are added with add_relay and listed as proxies, their faults as
// toxics. docs/relay-api.md is the reference.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "faultlane/relays/relay.hpp"

namespace faultlane::relays {

struct api_config {
  // Where the HTTP API listens (port 0 picks one); none: no HTTP, the
  // relays and their counters only.
  std::optional<address> http;
  bool allow_non_loopback = false;  // for the API's own address
  // What a proxy created through the API takes besides its name, listen
  // and upstream (protocol, seed, buffer size, loopback rule...).
  relay_config proxy_defaults;
};

class api_server {
 public:
  static result<std::unique_ptr<api_server>> start(api_config config);
  ~api_server();
  api_server(const api_server&) = delete;
  api_server& operator=(const api_server&) = delete;

  // Where the HTTP API listens, if it does.
  std::optional<address> endpoint() const;
  // Starts a relay and lists it as a proxy; where it listens.
  result<address> add_relay(const relay_config& config);
  // What GET /metrics answers.
  std::string metrics() const;
  // Every proxy's counters as "relay NAME counters:" and one line each.
  std::string report() const;
  // Stops the HTTP API, then every relay; idempotent.
  void stop();

  class impl;

 private:
  explicit api_server(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace faultlane::relays
