// transport_config: everything a transport is started with.
//
// validate() checks every field against its bound (limits.hpp) and names the
// field in its error; nothing is silently clamped. load_config_file() and
// parse_config_yaml() read the same fields from YAML (docs/configuration.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/status.hpp"

namespace YAML {
class Node;
}

namespace faultlane {

class transport_observer;

struct transport_config {
  // Listener. Port 0 picks a free port; transport::descriptor() reports it.
  std::string bind_address = "127.0.0.1";
  // Published endpoint; empty means bind_address (which must then not be a
  // wildcard).
  std::string advertise_address;
  std::uint16_t port = 0;
  // Ordered numeric IPv4 source addresses, one per rail (multi-rail issue).
  std::vector<std::string> rail_addresses;

  std::size_t worker_count = 1;
  // io threads poll this long after their last event before blocking; trades
  // CPU for latency. 0 (the default) blocks at once.
  std::uint32_t busy_poll_us = 0;
  std::size_t connections_per_peer = 4;
  // Exchanges one lane may have in flight at once (pipelining): requests
  // leave in order and their answers come back in order. 1 is one exchange
  // at a time. See docs/architecture.md, "Pipelined lanes".
  std::size_t lane_inflight_max = limits::lane_inflight_default;
  std::uint64_t max_outstanding_tasks = limits::outstanding_tasks_default;
  std::uint64_t max_outstanding_bytes = limits::outstanding_bytes_default;
  std::uint64_t max_transfer_bytes = limits::transfer_bytes_default;
  std::size_t max_connections = 1024;

  std::uint32_t connect_timeout_ms = limits::connect_timeout_ms_default;
  std::uint32_t progress_timeout_ms = limits::progress_timeout_ms_default;
  std::uint32_t idle_connection_timeout_ms = limits::idle_connection_timeout_ms_default;
  std::uint32_t reconnect_cooldown_ms = limits::reconnect_cooldown_ms_default;
  std::uint32_t shutdown_timeout_ms = limits::shutdown_timeout_ms_default;

  // Control plane (docs/control-plane.md): an RPC listener serving ping,
  // service_ready, describe, list_registrations and stats.
  bool rpc_enabled = true;
  // Empty: bind_address, or with rails the first rail's address.
  std::string rpc_bind_address;
  std::uint16_t rpc_port = 0;
  // Threads for the pooled handlers; 0 means worker_count. Signed so a
  // negative value from a flag or a file is an error, not 2^64 - 1.
  std::int64_t rpc_worker_count = 0;
  // Every handler inline on the io threads; no pool (YAML:
  // `rpc_worker_count: inline`). A slow handler then stalls its io thread.
  bool rpc_inline = false;
  std::size_t rpc_queue_max = limits::rpc_queue_max_default;

  // Optional; not owned; must outlive the transport. Null costs nothing.
  transport_observer* observer = nullptr;
};

result<void> validate(const transport_config& config);

result<transport_config> parse_config_yaml(std::string_view yaml_text);
// The same from a parsed mapping (the scenario loader's `config:` blocks).
// Errors name the field as "config: FIELD: what".
result<transport_config> parse_config(const YAML::Node& root);
result<transport_config> load_config_file(const std::string& path);

}  // namespace faultlane
