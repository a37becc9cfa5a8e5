// Helpers for the transport's loopback tests: configs, seeded patterns,
// a recording observer, bounded waits and raw sockets that misbehave.
#pragma once

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "faultlane/control/control_plane.hpp"
#include "faultlane/core/observer.hpp"
#include "faultlane/core/pattern.hpp"
#include "faultlane/core/transport.hpp"
#include "faultlane/testing/read_within.hpp"

namespace faultlane::testing {

using namespace std::chrono_literals;

inline transport_config loopback_config() {
  transport_config c;
  c.bind_address = "127.0.0.1";
  c.port = 0;
  c.worker_count = 2;
  c.connections_per_peer = 2;
  c.connect_timeout_ms = 2000;
  c.progress_timeout_ms = 5000;
  c.idle_connection_timeout_ms = 60000;
  c.reconnect_cooldown_ms = 200;
  c.shutdown_timeout_ms = 10000;
  return c;
}

// A transport with its control plane, as c's rpc_* settings say.
inline std::unique_ptr<transport> start(const transport_config& c) {
  auto t = control::start_transport(c);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? std::move(t).value() : nullptr;
}

using faultlane::fill_pattern;

inline std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
  std::vector<std::byte> v(n);
  fill_pattern(v.data(), n, seed);
  return v;
}

// Polls `condition` until it holds or `timeout` passes. For state that has
// no event to wait on (counters another thread updates).
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    // sleep-ok: the polling interval of a wait bounded by `timeout`.
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

// Every counter of `s` equals `expected` (by name), and every counter not
// named there is zero.
inline ::testing::AssertionResult counters_equal(
    const transport_stats& s, const std::map<std::string, std::uint64_t>& expected) {
  std::string wrong;
  for (const auto& [name, value] : expected) {
    bool known = false;
    for (const auto& c : transport_counters) known = known || c.name == name;
    if (!known) wrong += " no counter named " + name + ";";
  }
  for (const auto& c : transport_counters) {
    auto it = expected.find(std::string(c.name));
    const std::uint64_t want = it == expected.end() ? 0 : it->second;
    const std::uint64_t have = s.*c.field;
    if (have != want) {
      wrong += " " + std::string(c.name) + " is " + std::to_string(have) + ", expected " +
               std::to_string(want) + ";";
    }
  }
  if (wrong.empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "counters:" << wrong;
}

struct outcome {
  status code = status::internal_error;
  std::uint64_t bytes = 0;
};

// Submits one request and waits for it.
inline outcome run_one(transport& t, const transfer_request& r,
                       std::chrono::milliseconds timeout = 20s) {
  auto batch = t.submit(std::span(&r, 1));
  if (!batch.ok()) return {batch.code(), 0};
  EXPECT_TRUE(batch.value()->wait(timeout)) << "task did not settle";
  auto s = batch.value()->status(0);
  EXPECT_TRUE(s.done);
  return {s.code, s.transferred_bytes};
}

inline transfer_request read_req(segment_id seg, registration_id id, std::uint64_t offset,
                                 void* local, std::uint64_t length) {
  return {wire::opcode::read, local, length, seg, id, offset};
}

inline transfer_request write_req(segment_id seg, registration_id id, std::uint64_t offset,
                                  void* local, std::uint64_t length) {
  return {wire::opcode::write, local, length, seg, id, offset};
}

// Records what the core reports. Its mutex also orders the target's I/O
// thread before the test thread: a test reads target memory only after
// seeing the server_executed event that follows the data landing.
class recording_observer : public transport_observer {
 public:
  void server_executed(const served_event& e) override {
    std::lock_guard lock(mutex_);
    served_.push_back(e);
  }
  void task_finalized(const task_event& t, status s, std::uint64_t) override {
    std::lock_guard lock(mutex_);
    finalized_.emplace_back(t.task_id, s);
  }
  void stale_handler_dropped(const lane_event&) override {
    std::lock_guard lock(mutex_);
    ++stale_;
  }
  std::vector<served_event> served() const {
    std::lock_guard lock(mutex_);
    return served_;
  }
  std::size_t served_count(wire::opcode op, status outcome) const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (auto& e : served_) n += e.op == op && e.outcome == outcome;
    return n;
  }
  std::vector<std::pair<std::uint64_t, status>> finalized() const {
    std::lock_guard lock(mutex_);
    return finalized_;
  }
  // Runs `fn` under the observer's lock (see the class comment).
  template <typename Fn>
  auto synchronized(Fn fn) const {
    std::lock_guard lock(mutex_);
    return fn();
  }

 private:
  mutable std::mutex mutex_;
  std::vector<served_event> served_;
  std::vector<std::pair<std::uint64_t, status>> finalized_;
  std::size_t stale_ = 0;
};

// A peer that accepts TCP connections (the kernel completes them from the
// backlog) and never reads or answers: a stalled target.
class silent_peer {
 public:
  silent_peer() : acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}) {}
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  segment_descriptor descriptor(std::uint64_t incarnation = 0x5113) const {
    return {incarnation, {{"127.0.0.1", port()}}, 1u << 30, {}};
  }

 private:
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
};

// A listener whose accept queue is full: Linux drops new SYNs, so a
// connect to it stays in progress until the queue has room.
class full_backlog_listener {
 public:
  full_backlog_listener() : acceptor_(context_), filler_(context_) {
    asio::ip::tcp::endpoint any(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(any.protocol());
    acceptor_.bind(any);
    acceptor_.listen(0);  // one queued connection fills it
    filler_.connect(acceptor_.local_endpoint());
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // Makes room: the next retransmitted SYN is answered.
  void make_room() {
    asio::ip::tcp::socket s(context_);
    ASSERT_FALSE(accept_within(acceptor_, s)) << "no connection to take";
    taken_.push_back(std::move(s));
  }

 private:
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket filler_;
  std::vector<asio::ip::tcp::socket> taken_;
};

// A blocking raw client for sending arbitrary bytes to a target.
class raw_client {
 public:
  explicit raw_client(const endpoint& e) : socket_(context_) {
    socket_.connect({asio::ip::make_address(e.address), e.port});
  }
  void send(const void* p, std::size_t n) { asio::write(socket_, asio::buffer(p, n)); }
  // True when the peer closed (EOF or reset) within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    socket_.non_blocking(true);
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::byte sink[256];
    while (std::chrono::steady_clock::now() < deadline) {
      std::error_code ec;
      socket_.read_some(asio::buffer(sink), ec);
      if (ec == asio::error::would_block) {
        // sleep-ok: the polling interval of a wait bounded by `timeout`.
        std::this_thread::sleep_for(1ms);
        continue;
      }
      if (ec) return true;  // eof or reset
    }
    return false;
  }

 private:
  asio::io_context context_;
  asio::ip::tcp::socket socket_;
};

}  // namespace faultlane::testing
