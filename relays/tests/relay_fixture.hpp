// Helpers for relay tests: a plain TCP peer (echo, sink or source), a
// blocking client with timeouts, and exact counter checks.
#pragma once

#include <gtest/gtest.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "faultlane/relays/relay.hpp"

namespace faultlane::relays::testing {

using namespace std::chrono_literals;
using asio::ip::tcp;

// A plain TCP server on 127.0.0.1:0, a thread per connection: echo (send
// back what arrives, the FIN included), sink (count and keep what arrives),
// or source (send `source_bytes`, then FIN).
class plain_peer {
 public:
  enum class mode { echo, sink, source };
  explicit plain_peer(mode m, std::size_t source_bytes = 0)
      : mode_(m),
        source_bytes_(source_bytes),
        acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { accept_loop(); });
  }
  ~plain_peer() {
    stop_ = true;
    std::error_code ignored;
    tcp::socket poke(context_);  // wakes the blocking accept
    poke.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
    {
      std::lock_guard lock(mutex_);
      for (auto& s : sockets_) s->shutdown(tcp::socket::shutdown_both, ignored);
    }
    for (auto& w : workers_) w.join();
  }
  address where() const { return {"127.0.0.1", acceptor_.local_endpoint().port()}; }
  std::uint64_t received() const { return received_.load(); }
  // What a sink received, in order, over all its connections.
  std::vector<char> received_bytes() const {
    std::lock_guard lock(mutex_);
    return kept_;
  }
  bool saw_eof() const { return eof_.load(); }
  std::size_t connections() const { return connections_.load(); }

 private:
  void accept_loop() {
    while (!stop_) {
      auto s = std::make_shared<tcp::socket>(context_);
      std::error_code ec;
      acceptor_.accept(*s, ec);
      if (ec || stop_) return;
      ++connections_;
      std::lock_guard lock(mutex_);
      sockets_.push_back(s);
      workers_.emplace_back([this, s] { serve(*s); });
    }
  }
  void serve(tcp::socket& s) {
    std::error_code ec;
    std::vector<char> buf(64 << 10);
    if (mode_ == mode::source) {
      std::vector<char> out(source_bytes_);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(i * 131 + 7);
      asio::write(s, asio::buffer(out), ec);
      s.shutdown(tcp::socket::shutdown_send, ec);
    }
    while (true) {
      auto n = s.read_some(asio::buffer(buf), ec);
      if (ec) {
        if (ec == asio::error::eof) eof_ = true;
        if (ec == asio::error::eof && mode_ == mode::echo) {
          s.shutdown(tcp::socket::shutdown_send, ec);
        }
        return;
      }
      if (mode_ == mode::sink) {
        std::lock_guard lock(mutex_);
        kept_.insert(kept_.end(), buf.data(), buf.data() + n);
      }
      received_ += n;
      if (mode_ == mode::echo) asio::write(s, asio::buffer(buf.data(), n), ec);
    }
  }

  mode mode_;
  std::size_t source_bytes_;
  asio::io_context context_;
  tcp::acceptor acceptor_;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<tcp::socket>> sockets_;
  std::vector<char> kept_;
  std::vector<std::thread> workers_;
  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> received_{0};
  std::atomic<bool> eof_{false};
  std::atomic<std::size_t> connections_{0};
};

// A blocking client whose reads all have deadlines.
class client {
 public:
  explicit client(const address& a) : socket_(context_) { connect(a); }
  // Takes its descriptor now and connects later (connecting needs none).
  client() : socket_(context_) { socket_.open(tcp::v4()); }
  void connect(const address& a) {
    socket_.connect({asio::ip::make_address(a.address), a.port});
    socket_.set_option(tcp::no_delay(true));
    socket_.non_blocking(true);
  }
  void send(const std::vector<char>& data) {
    socket_.non_blocking(false);
    asio::write(socket_, asio::buffer(data));
    socket_.non_blocking(true);
  }
  void send_fin() { socket_.shutdown(tcp::socket::shutdown_send); }

  struct read_result {
    std::vector<char> data;
    std::vector<std::size_t> chunks;  // size of each read
    std::error_code end;              // eof, reset, or would_block at the deadline
  };
  // Reads until `want` bytes, the stream ends, or `timeout` passes.
  read_result read(std::size_t want, std::chrono::milliseconds timeout) {
    read_result r;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<char> buf(1 << 20);
    while (r.data.size() < want) {
      std::error_code ec;
      auto n = socket_.read_some(
          asio::buffer(buf.data(), std::min(buf.size(), want - r.data.size())), ec);
      if (ec == asio::error::would_block) {
        if (std::chrono::steady_clock::now() > deadline) {
          r.end = ec;
          return r;
        }
        // sleep-ok: polls a non-blocking socket until data or the deadline
        std::this_thread::sleep_for(200us);
        continue;
      }
      if (ec) {
        r.end = ec;
        return r;
      }
      r.data.insert(r.data.end(), buf.data(), buf.data() + n);
      r.chunks.push_back(n);
    }
    return r;
  }

 private:
  asio::io_context context_;
  tcp::socket socket_;
};

inline std::vector<char> bytes(std::size_t n, int salt = 0) {
  std::vector<char> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<char>(i * 31 + salt);
  return out;
}

inline std::unique_ptr<relay> start_relay(relay_config c) {
  auto r = relay::start(std::move(c));
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r).value() : nullptr;
}

inline relay_config config_to(const address& upstream, std::vector<std::string> faults,
                              protocol p = protocol::raw) {
  relay_config c;
  c.listen = {"127.0.0.1", 0};
  c.upstream = upstream;
  c.proto = p;
  for (const auto& f : faults) {
    auto spec = parse_fault(f);
    EXPECT_TRUE(spec.ok()) << f << ": " << (spec.ok() ? "" : spec.error().message);
    if (spec.ok()) c.faults.push_back(spec.value());
  }
  return c;
}

// Every counter the relay reports must equal `expected`, and any counter not
// named there must be zero, except connections.accepted, checked on its own.
inline void expect_counters(const std::map<std::string, std::uint64_t>& all,
                            const std::map<std::string, std::uint64_t>& expected,
                            std::uint64_t accepted) {
  for (const auto& [name, value] : all) {
    if (name == "connections.accepted") {
      EXPECT_EQ(value, accepted) << name;
      continue;
    }
    auto it = expected.find(name);
    EXPECT_EQ(value, it == expected.end() ? 0u : it->second) << name;
  }
  for (const auto& [name, value] : expected) {
    EXPECT_TRUE(all.count(name)) << "no counter " << name;
  }
}
inline void expect_counters(const relay& r, const std::map<std::string, std::uint64_t>& expected,
                            std::uint64_t accepted) {
  expect_counters(r.counters(), expected, accepted);
}

inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);  // sleep-ok: polls the condition until the deadline
  }
  return true;
}

}  // namespace faultlane::relays::testing
