// rpc_server: the control plane's service side. Methods are registered by
// name with a placement: inline handlers (ping, service_ready) run on the
// io thread that read the request; pooled handlers run on a bounded worker
// pool, so a slow one never holds an io thread, and a full queue answers
// `busy` at once. A transport's control plane (control_plane.hpp) runs one, and
// a program may run its own on an io_pool with its own methods.
//
// Each connection lives on one io shard. Requests on it may be pipelined;
// pooled calls finish in any order and responses carry the request id.
// A malformed header or an over-long payload closes that connection only.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "faultlane/control/rpc_frame.hpp"
#include "faultlane/control/rpc_metrics.hpp"
#include "faultlane/core/endpoint.hpp"
#include "faultlane/core/io_pool.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane::rpc {

enum class placement { inline_on_io, pooled };

struct call {
  std::span<const std::byte> body;
  // Raised when the service stops: a long handler checks it now and then
  // and returns (its answer is then dropped or sent as it is).
  const std::atomic<bool>* stopping = nullptr;
  bool stop_requested() const noexcept {
    return stopping != nullptr && stopping->load(std::memory_order_acquire);
  }
};

struct reply {
  rpc_status status = rpc_status::ok;
  std::vector<std::byte> body;
  static reply ok(std::vector<std::byte> body = {}) { return {rpc_status::ok, std::move(body)}; }
  static reply failure(rpc_status s, std::string_view message) { return {s, error_body(message)}; }
};

using handler = std::function<reply(const call&)>;

struct server_options {
  std::string bind_address = "127.0.0.1";
  std::uint16_t port = 0;  // 0: any free port
  // Worker threads for pooled handlers; 0 runs every handler inline (the
  // pool is off).
  std::size_t workers = 1;
  std::size_t queue_max = 1024;  // pooled calls waiting for a worker, most
  std::uint32_t request_bytes_max = 64 * 1024;
  std::uint32_t response_bytes_max = 64u << 20;
  // Calls read from one connection and not yet answered, most: past it the
  // connection is not read until an answer leaves (TCP pushes back).
  std::size_t unanswered_per_connection_max = 256;
  // Bytes of answers made and not yet written, past which a connection is
  // not read either. Answers to calls already running still land, so a
  // connection holds at most this plus those.
  std::size_t unwritten_bytes_per_connection_max = 8u << 20;
  std::size_t connections_max = 1024;
};

class server {
 public:
  // Listens at once; methods may be added at any time (a call for a name
  // not added yet is answered unknown_method).
  static result<std::unique_ptr<server>> start(io_pool& pool, const server_options& options);
  // stop() if the owner did not; then waits, unbounded, for handlers still
  // running (a handler that ignores stop_requested() holds it).
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // FL_ASSERT: a valid, unused name (valid_method_name).
  void add(std::string name, placement where, handler h);

  // The address and port listen() bound, also after stop(). Any thread.
  endpoint local_endpoint() const;
  metrics_snapshot metrics() const;

  // Stops accepting; calls still queued are answered `cancelled`; running
  // handlers see stopping() and are waited for until `deadline`; then
  // every connection closes. Must run while the io threads still run, not
  // on one of them. timeout if a handler was still running at the deadline
  // (it is waited for, unbounded, when the server is destroyed). Idempotent.
  result<void> stop(net::clock::time_point deadline);

  class impl;

 private:
  explicit server(std::shared_ptr<impl> i);
  // Shared with the io and worker handlers still in flight.
  std::shared_ptr<impl> impl_;
};

}  // namespace faultlane::rpc
