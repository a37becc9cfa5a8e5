// relay: a TCP relay on loopback that forwards each accepted connection to
// an upstream and injects faults into either direction, frame by frame.
//
//   relay_config c;
//   c.upstream = {"127.0.0.1", 9000};
//   c.faults.push_back(parse_fault("drop_frame dir=down opcode=write").value());
//   auto r = relay::start(c).value();       // listens on 127.0.0.1:0
//   ... connect to r->listen_endpoint() ...
//   r->counters();                          // every fault's firings, zeros included
//
// Each direction runs the bytes through its faults in order. With no fault
// and no tap on a direction the bytes do not pass through user space: they
// go socket -> kernel pipe -> socket with splice(2) (or, on a connection
// that decodes frames, are written out of the read buffer as they came).
// With `protocol::faultlane` the relay decodes frames (with the core's
// codec) across any read boundaries, which is what frame triggers,
// drop_frame, corrupt and taps need; `protocol::raw` relays any TCP
// protocol. docs/faults.md is the reference.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "faultlane/core/endpoint.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/relays/fault.hpp"
#include "faultlane/relays/tap.hpp"

namespace faultlane::relays {

enum class protocol : std::uint8_t { faultlane, raw };
// How a client is closed when its upstream cannot be reached: a reset (as
// a refused connection would be) or a FIN after nothing (as Toxiproxy does).
enum class close_mode : std::uint8_t { reset, fin };

// The relays use the core's one address type; HOST:PORT text is read with
// faultlane::parse_endpoint.
using address = faultlane::endpoint;

struct relay_config {
  std::string name = "relay";
  address listen{"127.0.0.1", 0};  // port 0 picks a free port
  address upstream;
  std::optional<std::string> upstream_source;  // bind the upstream side (rails)
  std::size_t rail = 0;                        // reported in taps; matched by rail= triggers
  protocol proto = protocol::faultlane;
  std::vector<fault_spec> faults;
  std::uint64_t seed = 0;
  bool tap = false;         // record to memory
  std::string tap_path;     // and to this JSONL file
  bool tap_append = false;  // add to tap_path rather than start it afresh
  bool allow_non_loopback = false;
  std::size_t active_faults_max = 1024;
  std::size_t buffer_bytes = 1u << 20;
  // > 0: after it reads bytes, the relay's thread polls its sockets
  // without blocking for this long (each read extends it) before it sleeps
  // in the kernel again, so an answer that comes back within the window
  // finds the thread awake. Each relay has its own thread: it costs a core
  // per relay while traffic flows, none once it stops. At most
  // busy_poll_us_max.
  std::uint32_t busy_poll_us = 0;
  close_mode on_upstream_failure = close_mode::reset;
  // Upstream connect failures are written to stderr, once per burst.
  bool log_connect_failures = true;
};

using fault_id = std::uint64_t;

// FAULTLANE_RELAY_COUNTERS is the one list of the relay's own counters
// (relay::counters() adds one per fault name). It generates the atomics the
// relay bumps, the names counters() reports, the Prometheus counters the
// HTTP API exports at /metrics, and the rows docs/faults.md and
// docs/relay-api.md show (a test checks all of them).
//
// X(field, name, Prometheus metric, help).
#define FAULTLANE_RELAY_COUNTERS(X)                                                       \
  X(accepted, "connections.accepted", "faultlane_relay_connections_accepted_total",       \
    "Connections the relay accepted.")                                                    \
  X(refused, "connections.refused", "faultlane_relay_connections_refused_total",          \
    "Connections a refuse fault reset at once.")                                          \
  X(accept_errors, "accept.errors", "faultlane_relay_accept_errors_total",                \
    "Failed accepts (each followed by a backoff).")                                       \
  X(decode_errors, "frames.decode_errors", "faultlane_relay_decode_errors_total",         \
    "Streams that stopped decoding as faultlane frames (then passed through untouched).") \
  X(connect_failures, "upstream.connect_failures",                                        \
    "faultlane_relay_upstream_connect_failures_total",                                    \
    "Connections whose upstream could not be reached.")                                   \
  X(overflow, "faults.overflow", "faultlane_relay_faults_overflow_total",                 \
    "Lasting fault effects skipped over the active-fault cap.")

struct relay_counter {
  std::string_view counter;  // its name in relay::counters()
  std::string_view metric;
  std::string_view help;
};
#define FAULTLANE_RELAY_COUNTER_INFO(field, name, metric, help) relay_counter{name, metric, help},
inline constexpr std::array relay_counters{FAULTLANE_RELAY_COUNTERS(FAULTLANE_RELAY_COUNTER_INFO)};
#undef FAULTLANE_RELAY_COUNTER_INFO
// Whether `name` is one of relay_counters (a fault may not take it).
bool is_relay_counter(std::string_view name) noexcept;

class relay {
 public:
  // Validates (loopback only unless allowed), binds, and starts one io
  // thread. The bound address is listen_endpoint().
  static result<std::unique_ptr<relay>> start(relay_config config);
  // start()'s checks without starting anything: addresses, sizes, faults.
  static result<void> check(const relay_config& config);
  ~relay();
  relay(const relay&) = delete;
  relay& operator=(const relay&) = delete;

  address listen_endpoint() const;
  // The configuration it started with (config().upstream included).
  const relay_config& config() const;

  // Where new connections go from now on; connections already relayed
  // keep theirs. For an upstream that restarted on another port (the
  // scenario runner re-points a link after a target restart). Checked as
  // relay_config::upstream is.
  result<void> set_upstream(address upstream);
  address upstream() const;

  // Thread-safe, with effect on live connections. The spec comes from
  // parse_fault or passed validate(); start() returns validate's error for
  // a configured fault.
  fault_id add_fault(fault_spec spec);
  bool remove_fault(fault_id id);
  // Puts `spec` in the place of fault `id`: same position in the chain and
  // the same probability draws. Live connections keep what the fault did
  // there (a stall keeps holding, a blackhole keeps swallowing, a fault
  // counted once is not counted again) and take up the new values; the
  // firings left of `count` carry over unless the count changed. Firings
  // so far stay counted under the old name. False if no such fault.
  bool replace_fault(fault_id id, fault_spec spec);
  // The chain, in order: each fault with its id (configured faults first).
  std::vector<std::pair<fault_id, fault_spec>> faults() const;

  // Firings per fault name (every configured fault appears, zeros
  // included), plus each of relay_counters (FAULTLANE_RELAY_COUNTERS).
  std::map<std::string, std::uint64_t> counters() const;
  std::uint64_t counter(const std::string& name) const;

  tap& taps();
  std::size_t live_connections() const;
  // Bytes read from the sources of each direction (up: from clients),
  // relay-wide, whatever became of them.
  std::uint64_t bytes_received(direction d) const;
  // Lasting fault effects in force now (see active_faults_peak).
  std::size_t active_faults() const;
  // The most lasting fault effects (held stalls, delayed chunks...) ever in
  // effect at once: never above relay_config::active_faults_max; what did
  // not fit was skipped and counted in "faults.overflow".
  std::size_t active_faults_peak() const;

  // Resets (RST) every relayed connection, both sides, dropping whatever
  // bytes a fault held; the listener goes on accepting. Returns once done
  // (false if the relay's thread did not answer within `timeout`). The
  // scenario runner uses it so that no WRITE held in a relay can land after
  // the range it wrote is handed to new work.
  bool reset_connections(std::chrono::milliseconds timeout);

  // Closes the listener and every connection; joins the io thread.
  void stop();

  class impl;

 private:
  explicit relay(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace faultlane::relays
