// rpc_client: calls a control plane (rpc_server) over one persistent
// connection, from any number of threads at once. Calls are pipelined and
// matched by request id, so a slow call never holds up a quick one.
//
//   auto c = rpc::client::create({.server = control::endpoint_of(*peer).value()}).value();
//   auto d = c->describe();                 // a segment_descriptor, or an error
//
// Every call has two bounds: call_timeout_ms for one attempt (a call sent
// and not answered that long resets its connection, as a stalled one would
// be, and is sent again: keep it above the slowest handler you call), and
// overall_timeout_ms for all attempts. A connection that fails (refused,
// reset, closed, a malformed answer) is reconnected after
// reconnect_cooldown_ms and the calls it carried are sent again within the
// overall bound: every built-in method is read-only, so sending one twice is
// safe (a program's own methods must be too, or set retry_sent false).
// `busy` answers are retried too with retry_busy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/control/rpc_messages.hpp"
#include "faultlane/core/endpoint.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane::rpc {

struct client_options {
  endpoint server;
  std::uint32_t connect_timeout_ms = 1000;
  // Above the slowest handler: a list_registrations over a million names
  // takes a second or two. control::open_segment uses 2 s and 5 s for its
  // describe, which answers in microseconds.
  std::uint32_t call_timeout_ms = 10'000;
  std::uint32_t overall_timeout_ms = 30'000;
  std::uint32_t reconnect_cooldown_ms = 50;
  bool retry_busy = false;
  bool retry_sent = true;  // send again a call whose answer was lost with its connection
  std::uint32_t response_bytes_max = limits::rpc_response_bytes_max;
};

struct client_counters {
  std::uint64_t connects = 0;
  std::uint64_t connect_failures = 0;
  std::uint64_t connections_reset = 0;  // failed, or reset after a call timed out
  std::uint64_t calls = 0;
  std::uint64_t attempts = 0;  // > calls when some were sent again
  std::uint64_t timeouts = 0;  // calls that ended timeout
};

class client {
 public:
  using callback = unique_function<void(result<std::vector<std::byte>>)>;

  // Validates the options and starts the client's io thread; the first
  // call connects.
  static result<std::unique_ptr<client>> create(const client_options& options);
  // Calls still pending end `cancelled`. Not from a callback.
  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  // `done` runs once, on the client's io thread (or on the thread that
  // destroys the client), with the answer's body or an error: the
  // server's status and message, timeout, connection_failed, or
  // protocol_error. It must not block or destroy the client.
  void call_async(std::string method, std::vector<std::byte> body, callback done);
  result<std::vector<std::byte>> call(std::string_view method, std::span<const std::byte> body);

  result<void> ping();
  result<bool> service_ready();
  result<segment_descriptor> describe();
  result<std::vector<named_registration>> list_registrations(std::string_view pattern);
  result<stat_list> stats();

  client_counters counters() const;
  const client_options& options() const noexcept;

  class impl;

 private:
  explicit client(std::shared_ptr<impl> i);
  std::shared_ptr<impl> impl_;
};

// A descriptor_source that asks a peer's control plane: control::open_segment
// uses one, and a stale_registration answer refreshes through it.
class rpc_descriptor_source : public descriptor_source {
 public:
  static result<std::shared_ptr<rpc_descriptor_source>> create(const client_options& options);
  result<segment_descriptor> fetch() override;
  void fetch_async(unique_function<void(result<segment_descriptor>)> done) override;
  // Closes the client: pending fetches end cancelled, later ones at once.
  void close() override;

 private:
  explicit rpc_descriptor_source(std::shared_ptr<rpc::client> c) : client_(std::move(c)) {}
  std::shared_ptr<rpc::client> current() const;
  mutable std::mutex mutex_;
  std::shared_ptr<rpc::client> client_;  // null once closed
};

}  // namespace faultlane::rpc
