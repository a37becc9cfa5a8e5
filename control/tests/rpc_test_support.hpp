// What the control plane's tests share: a gate a handler waits at, a raw
// connection that speaks the frames by hand, a listener a test answers
// from by hand (scripted_peer), and a server on an io pool of its own with
// an inline `ping`.
#pragma once

#include <gtest/gtest.h>

#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "faultlane/control/rpc_client.hpp"
#include "faultlane/control/rpc_server.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/testing/read_within.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane::rpc::test {

using namespace std::chrono_literals;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

// A gate a handler waits at until the test opens it (or the service
// stops); every wait is bounded. Declare it before the server, so that a
// failed assertion's early return stops the server (and releases its
// handlers) while the gate they wait at still exists.
class gate {
 public:
  void open() {
    {
      std::lock_guard lock(mutex_);
      open_ = true;
    }
    changed_.notify_all();
  }
  // True when opened; false when the call's service stopped or 30 s passed.
  bool pass(const call& c) {
    std::unique_lock lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    const auto until = clock_type::now() + 30s;
    while (!open_ && !c.stop_requested() && clock_type::now() < until) {
      changed_.wait_for(lock, 1ms);  // also notices stop_requested()
    }
    --waiting_;
    return open_;
  }
  bool wait_for_waiters(int n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = false;
  int waiting_ = 0;
};

// A blocking connection that speaks the frames by hand: pipelining,
// malformed headers and half-sent requests.
class raw_connection {
 public:
  explicit raw_connection(const endpoint& e) : socket_(context_) {
    socket_.connect({asio::ip::make_address(e.address), e.port});
    socket_.set_option(tcp::no_delay(true));
  }
  void send_call(std::uint64_t id, std::string_view method, std::span<const std::byte> body = {}) {
    header h{kind::request, static_cast<std::uint8_t>(method.size()), rpc_status::ok, id,
             static_cast<std::uint32_t>(method.size() + body.size())};
    auto head = encode(h);
    std::vector<std::byte> frame(head.begin(), head.end());
    const auto* m = reinterpret_cast<const std::byte*>(method.data());
    frame.insert(frame.end(), m, m + method.size());
    frame.insert(frame.end(), body.begin(), body.end());
    send(frame);
  }
  void send(std::span<const std::byte> bytes) {
    asio::write(socket_, asio::buffer(bytes.data(), bytes.size()));
  }
  struct answer {
    header h;
    std::vector<std::byte> body;
  };
  answer read_answer() {
    header_bytes_array head{};
    auto ec = faultlane::testing::read_within(socket_, asio::buffer(head));
    EXPECT_FALSE(ec) << "no answer: " << ec.message();
    auto h = decode(head, 1u << 30);
    EXPECT_TRUE(h.ok());
    if (ec || !h.ok()) return {};
    answer a{h.value(), std::vector<std::byte>(h.value().payload_length)};
    ec = faultlane::testing::read_within(socket_, asio::buffer(a.body));
    EXPECT_FALSE(ec) << "no body: " << ec.message();
    return a;
  }
  // True when the peer closed within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout) {
    socket_.non_blocking(true);
    const auto until = clock_type::now() + timeout;
    std::byte sink[256];
    while (clock_type::now() < until) {
      std::error_code ec;
      socket_.read_some(asio::buffer(sink), ec);
      if (ec == asio::error::would_block) {
        std::this_thread::sleep_for(1ms);  // sleep-ok: the poll interval of a bounded wait
        continue;
      }
      if (ec) return true;
    }
    return false;
  }

 private:
  asio::io_context context_;
  tcp::socket socket_;
};

// A listener the test answers from by hand: it accepts, reads requests and
// answers them (or closes, or sends garbage) as each test says.
class scripted_peer {
 public:
  scripted_peer() : acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}) {}
  client_options options() const {
    client_options o;
    o.server = {"127.0.0.1", acceptor_.local_endpoint().port()};
    return o;
  }
  // The next connection; nullopt when none came within `timeout`.
  std::optional<tcp::socket> accept(std::chrono::milliseconds timeout = 10s) {
    tcp::socket s(context_);
    if (faultlane::testing::accept_within(acceptor_, s, timeout)) return std::nullopt;
    return s;
  }
  struct request {
    header h;
    std::string method;
  };
  static std::optional<request> read_request(tcp::socket& s) {
    header_bytes_array head{};
    if (faultlane::testing::read_within(s, asio::buffer(head))) return std::nullopt;
    auto h = decode(head, limits::rpc_request_bytes_max);
    if (!h) return std::nullopt;
    std::string payload(h.value().payload_length, '\0');
    if (faultlane::testing::read_within(s, asio::buffer(payload))) return std::nullopt;
    return request{h.value(), payload.substr(0, h.value().method_length)};
  }
  static void answer(tcp::socket& s, std::uint64_t id, std::size_t body_bytes = 0) {
    const header h{kind::response, 0, rpc_status::ok, id, static_cast<std::uint32_t>(body_bytes)};
    auto head = encode(h);
    asio::write(s, asio::buffer(head));
    std::vector<std::byte> body(body_bytes, std::byte{0x5a});
    asio::write(s, asio::buffer(body));
  }

 private:
  asio::io_context context_;
  tcp::acceptor acceptor_;
};

// A port nothing listens on (it was free a moment ago).
inline std::uint16_t free_port() {
  faultlane::testing::silent_peer gone;
  return gone.port();
}

struct served {
  std::unique_ptr<io_pool> pool;
  std::unique_ptr<server> srv;
};

inline served serve(std::size_t io_threads, server_options o) {
  served s;
  s.pool = io_pool::create(io_threads).value();
  s.srv = server::start(*s.pool, o).value();
  s.srv->add("ping", placement::inline_on_io, [](const call&) { return reply::ok(); });
  return s;
}

inline client_options to(const served& s) {
  client_options o;
  o.server = s.srv->local_endpoint();
  return o;
}

inline std::vector<std::byte> bytes(std::string_view text) {
  const auto* p = reinterpret_cast<const std::byte*>(text.data());
  return {p, p + text.size()};
}

}  // namespace faultlane::rpc::test
