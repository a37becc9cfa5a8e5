// Internals of the relay shared by relay.cpp (accept, configuration,
// counters) and each connection: the fault list, the counters, the tap.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/core/poll_window.hpp"
#include "faultlane/relays/relay.hpp"
#include "frame_stream.hpp"

namespace faultlane::relays::detail {

using clock_type = net::clock;

struct installed_fault {
  fault_id id = 0;
  std::size_t order = 0;  // position in the chain (insertion order)
  fault_spec spec;
  std::atomic<std::uint64_t> fired{0};
  std::atomic<std::uint64_t> remaining{UINT64_MAX};  // from trigger.count
};
using fault_ptr = std::shared_ptr<installed_fault>;

class connection;

// Shared by the relay and its connections; lives as long as any of them.
struct relay_state {
  explicit relay_state(relay_config c)
      : config(std::move(c)), polling(context, std::chrono::microseconds(config.busy_poll_us)) {}

  const relay_config config;
  asio::io_context context{1};
  // config.busy_poll_us > 0: bytes read are the events that keep the
  // thread polling (io thread only).
  poll_window polling;
  clock_type::time_point started = clock_type::now();
  tap recorder;

  mutable std::mutex upstream_mutex;
  address upstream;  // where new connections go (relay::set_upstream)

  mutable std::mutex faults_mutex;
  std::vector<fault_ptr> faults;  // the chain, in order
  std::atomic<std::uint64_t> faults_generation{1};
  fault_id next_fault_id = 1;
  std::size_t next_order = 0;

#define FAULTLANE_RELAY_COUNTER_ATOMIC(field, ...) std::atomic<std::uint64_t> field{0};
  FAULTLANE_RELAY_COUNTERS(FAULTLANE_RELAY_COUNTER_ATOMIC)
#undef FAULTLANE_RELAY_COUNTER_ATOMIC
  std::atomic<std::uint64_t> received[2]{};  // bytes read, by direction (up, down)
  // The last connect failure written to stderr, and how many were not
  // written since (io thread only): one message per burst.
  std::optional<clock_type::time_point> connect_failure_logged;
  std::uint64_t connect_failures_unlogged = 0;
  std::atomic<std::size_t> active_effects{0};
  std::atomic<std::size_t> active_peak{0};
  std::atomic<std::size_t> live{0};

  address current_upstream() const {
    std::lock_guard lock(upstream_mutex);
    return upstream;
  }
  std::vector<fault_ptr> snapshot() const {
    std::lock_guard lock(faults_mutex);
    return faults;
  }
  bool taps_on() const { return config.tap || !config.tap_path.empty(); }
  std::uint64_t now_us() const { return us_since_start(clock_type::now()); }
  std::uint64_t us_since_start(clock_type::time_point t) const {
    if (t <= started) return 0;
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(t - started).count());
  }
  // Takes a slot for a lasting effect; false (and counted) over the cap.
  bool take_effect_slot() {
    auto before = active_effects.fetch_add(1, std::memory_order_acq_rel);
    if (before < config.active_faults_max) {
      // The most slots ever held at once (a granted slot, not the moment
      // an over-the-cap attempt bumps the count before giving it back).
      auto peak = active_peak.load(std::memory_order_relaxed);
      while (peak < before + 1 &&
             !active_peak.compare_exchange_weak(peak, before + 1, std::memory_order_relaxed)) {
      }
      return true;
    }
    active_effects.fetch_sub(1, std::memory_order_acq_rel);
    overflow.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  void release_effect_slot() {
    auto before = active_effects.fetch_sub(1, std::memory_order_acq_rel);
    FL_ASSERT(before > 0);  // only a slot taken is given back
  }
  void fired(installed_fault& f, const tap_record& where);
  // Counts an upstream connect failure and writes it to stderr unless one
  // was written in the last connect_failure_log_gap (io thread only).
  void note_connect_failure(const std::string& upstream, const std::error_code& ec);
};

// splice(2) into a socket whose peer is gone raises SIGPIPE: unlike send(2)
// it has no MSG_NOSIGNAL. The relay's io thread blocks the signal, so a
// library user who never ignored it is safe too, and takes a pending one
// off after a failed splice.
void block_sigpipe();
void consume_sigpipe();

// The probability draw: a pure function of (seed, fault, connection, frame),
// so one seed gives one schedule however the bytes were chunked.
double draw(std::uint64_t seed, std::size_t fault_order, std::uint64_t connection,
            std::uint64_t frame);

}  // namespace faultlane::relays::detail
