// proxy_set: Toxiproxy's model (named proxies, each with its toxics) over
// faultlane relays, answering each API call with an HTTP status and a JSON
// body in Toxiproxy 2.x's shapes. The HTTP server (server.cpp) only routes.
//
// A proxy is a relay while it is enabled; disabling stops the relay (its
// listener and every connection), enabling starts one again on the address
// it last bound. Toxics live in the proxy, so they outlast a disable, and
// reach live connections as soon as they are added, changed or removed.
// Counters of a relay that stopped carry over into the proxy's metrics.
// All calls are serialised by one mutex.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "faultlane/relays/relay.hpp"
#include "toxics.hpp"

namespace faultlane::relays::api {

struct reply {
  int status = 200;
  nlohmann::json body;  // null: no content
};

class proxy_set {
 public:
  // `defaults` gives what a proxy created through the API takes besides
  // its name, listen and upstream (protocol, seed, loopback rule...).
  explicit proxy_set(relay_config defaults);
  ~proxy_set();
  proxy_set(const proxy_set&) = delete;
  proxy_set& operator=(const proxy_set&) = delete;

  // A relay from the command line or a configuration file, its faults shown
  // as toxics. The error is relay::start's.
  result<address> add_configured(const relay_config& config);

  reply list() const;
  reply create(const nlohmann::json& body);
  reply show(const std::string& name) const;
  reply update(const std::string& name, const nlohmann::json& body);
  reply remove(const std::string& name);
  reply populate(const nlohmann::json& body);
  reply reset();

  reply toxics(const std::string& proxy) const;
  reply add_toxic(const std::string& proxy, const nlohmann::json& body);
  reply show_toxic(const std::string& proxy, const std::string& name) const;
  reply update_toxic(const std::string& proxy, const std::string& name, const nlohmann::json& body);
  reply remove_toxic(const std::string& proxy, const std::string& name);

  // Prometheus text exposition of every proxy's counters.
  std::string metrics() const;
  // "relay NAME counters:" and one line per counter, for each proxy.
  std::string report() const;
  // Stops every relay; the proxies stay listed, disabled.
  void stop_all();

  struct proxy;

 private:
  result<void> start(proxy& p);
  void stop(proxy& p);
  nlohmann::json to_json(const proxy& p) const;
  result<std::unique_ptr<proxy>> make_proxy(const nlohmann::json& body) const;
  proxy* find(const std::string& name) const;

  relay_config defaults_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<proxy>> proxies_;  // in creation order
};

reply error_reply(int status, const std::string& message);

}  // namespace faultlane::relays::api

namespace faultlane::relays::api {

struct proxy_set::proxy {
  struct installed {
    toxic shown;  // as the client gave it, with Toxiproxy's defaults filled in
    fault_spec spec;
    fault_id id = 0;  // in the running relay
  };
  std::string name;
  std::string listen;    // as given, then the address the relay bound
  std::string upstream;  // as given
  bool enabled = false;
  bool started_before = false;    // a restart adds to the tap file
  relay_config config;            // everything but listen and faults, which come from above
  std::vector<installed> toxics;  // in the order added (the chain's order)
  std::unique_ptr<relay> running;
  // Counters of relays this proxy ran before (disabled, moved): the
  // metrics go on from them.
  std::map<std::string, std::uint64_t> carried;
  std::uint64_t carried_bytes[2] = {0, 0};
  std::size_t carried_peak = 0;
};

}  // namespace faultlane::relays::api
