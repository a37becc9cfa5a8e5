// Test peers for pipelined lanes: a scripted target the test drives by
// hand, a raw client of the real target, and the helpers both sides use
// (transport_pipeline_test.cpp, transport_batching_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <asio/ip/tcp.hpp>
#include <asio/write.hpp>

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "faultlane/testing/read_within.hpp"
#include "faultlane/testing/transport_fixture.hpp"
#include "runtime/unprobed_read.hpp"

namespace faultlane::pipeline_testing {

using faultlane::testing::read_within;

// A target the test drives by hand: it accepts when told, reads whole
// requests (a WRITE's body included), and sends whatever answer the test
// gives it. Every wait is bounded.
class scripted_peer {
 public:
  // Each peer is its own incarnation (one segment each); another 127.x
  // address serves as another rail's end.
  explicit scripted_peer(std::uint64_t incarnation = 0x5c1, std::string address = "127.0.0.1")
      : incarnation_(incarnation),
        address_(std::move(address)),
        acceptor_(context_, {asio::ip::make_address(address_), 0}) {
    acceptor_.non_blocking(true);
  }
  segment_descriptor descriptor() const { return {incarnation_, {endpoint()}, 1u << 30, {}}; }
  faultlane::endpoint endpoint() const {
    return {address_, acceptor_.local_endpoint().port()};
  }

  // Takes the next connection; false if none came within `timeout`.
  bool accept(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    pollfd p{acceptor_.native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return false;
    socket_ = std::make_unique<asio::ip::tcp::socket>(context_);
    acceptor_.accept(*socket_);
    socket_->non_blocking(false);
    return true;
  }
  // The next request, or nothing if none arrives within `timeout`.
  std::optional<wire::request_frame> next_request(
      std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    pollfd p{socket_->native_handle(), POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
    wire::request_bytes header{};
    std::error_code ec;
    ec = read_within(*socket_, asio::buffer(header));
    if (ec) return std::nullopt;
    auto decoded = wire::decode_request(header, 1u << 30);
    EXPECT_TRUE(decoded.ok());
    if (!decoded.ok()) return std::nullopt;
    auto frame = decoded.value();
    if (frame.op == wire::opcode::write) {
      std::vector<std::byte> body(frame.length);
      ec = read_within(*socket_, asio::buffer(body));
      if (ec) return std::nullopt;
    }
    return frame;
  }
  void answer(wire::wire_status s, std::uint64_t request_id, std::uint64_t committed,
              std::span<const std::byte> payload = {}) {
    auto header = wire::encode(wire::response_frame{s, request_id, committed});
    asio::write(*socket_, std::array{asio::const_buffer(header.data(), header.size()),
                                     asio::const_buffer(payload.data(), payload.size())});
  }
  void answer_ok(const wire::request_frame& r, std::span<const std::byte> payload = {}) {
    answer(wire::wire_status::ok, r.request_id, r.length, payload);
  }
  // A request's header alone (a WRITE's body stays in the socket).
  std::optional<wire::request_frame> next_header() {
    wire::request_bytes header{};
    std::error_code ec;
    ec = read_within(*socket_, asio::buffer(header));
    if (ec) return std::nullopt;
    auto decoded = wire::decode_request(header, 1u << 30);
    if (!decoded.ok()) return std::nullopt;
    return decoded.value();
  }
  bool drain(std::size_t n) {
    std::vector<std::byte> sink(1u << 20);
    std::error_code ec;
    while (n > 0 && !ec) {
      const auto step = std::min(n, sink.size());
      ec = read_within(*socket_, asio::buffer(sink.data(), step));
      n -= step;
    }
    return !ec;
  }
  void send_raw(std::span<const std::byte> bytes) {
    asio::write(*socket_, asio::const_buffer(bytes.data(), bytes.size()));
  }
  void hang_up() { socket_.reset(); }
  // Answers `r` and closes, the FIN in the answer's own segment: corked,
  // the answer waits in the socket, and shutdown(2) sends it with the FIN
  // attached. The lane's one read of the answer then takes the FIN too.
  void answer_ok_then_close(const wire::request_frame& r, std::span<const std::byte> payload) {
    const int on = 1;
    ::setsockopt(socket_->native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    answer_ok(r, payload);
    socket_->shutdown(asio::ip::tcp::socket::shutdown_send);
    socket_.reset();
  }

 private:
  std::uint64_t incarnation_;
  std::string address_;
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  std::unique_ptr<asio::ip::tcp::socket> socket_;
};

// Whether reads here can skip Asio's probe on the kernel's word that the
// read before left the socket empty: this Asio's reactor is the one
// unprobed_read knows, and this kernel has TCP_INQ (Linux 4.18 on).
inline bool reads_can_skip_the_probe() {
  if (!detail::reads_skip_the_probe) return false;
  asio::io_context context;
  asio::ip::tcp::socket socket(context, asio::ip::tcp::v4());
  return detail::unprobed_read::report_bytes_left(socket);
}

inline transport_config one_lane(std::size_t inflight) {
  auto c = testing::loopback_config();
  c.connections_per_peer = 1;
  c.lane_inflight_max = inflight;
  c.reconnect_cooldown_ms = 1;
  return c;
}

// Submits `kinds.size()` 16-byte requests (r = READ, w = WRITE) to one
// segment as one batch.
struct batch_of {
  batch_of(transport& t, segment_id seg, std::string_view kinds)
      : buffers(kinds.size(), std::vector<std::byte>(16)) {
    std::vector<transfer_request> requests;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      requests.push_back(kinds[i] == 'w' ? testing::write_req(seg, 1, 0, buffers[i].data(), 16)
                                         : testing::read_req(seg, 1, 0, buffers[i].data(), 16));
    }
    batch = t.submit(requests).value();
  }
  std::vector<status> codes(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    EXPECT_TRUE(batch->wait(timeout)) << "the batch did not settle";
    std::vector<status> out;
    for (std::size_t i = 0; i < buffers.size(); ++i) out.push_back(batch->status(i).code);
    return out;
  }
  std::vector<std::vector<std::byte>> buffers;
  std::shared_ptr<transfer_batch> batch;
};

inline const std::vector<std::byte> sixteen = testing::pattern(16, 5);

// Connects the one lane to `peer`: a READ, accepted and answered. Call it
// inside ASSERT_NO_FATAL_FAILURE.
inline void connect_lane(scripted_peer& peer, transport& t, segment_id seg) {
  batch_of first(t, seg, "r");
  ASSERT_TRUE(peer.accept());
  peer.answer_ok(peer.next_request().value(), sixteen);
  ASSERT_EQ(first.codes(), std::vector<status>{status::ok});
}

// An answer, and a READ's payload after it, as bytes.
inline std::vector<std::byte> answer_bytes(wire::wire_status s, std::uint64_t request_id,
                                           std::uint64_t committed,
                                           std::span<const std::byte> payload) {
  auto header = wire::encode(wire::response_frame{s, request_id, committed});
  std::vector<std::byte> out(header.begin(), header.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

// A client of the real target that writes bytes exactly as the test
// composes them, so requests arrive together, split, or cut wherever the
// test says. Every read is bounded.
class byte_client {
 public:
  explicit byte_client(const endpoint& to) : socket_(context_) {
    socket_.connect({asio::ip::make_address(to.address), to.port});
  }
  void send(std::span<const std::byte> bytes) {
    asio::write(socket_, asio::const_buffer(bytes.data(), bytes.size()));
  }
  // The next answer, and `payload` bytes after it for an ok READ.
  std::optional<wire::response_frame> answer(std::vector<std::byte>* payload = nullptr) {
    wire::response_bytes header{};
    std::error_code ec;
    ec = read_within(socket_, asio::buffer(header));
    if (ec) return std::nullopt;
    auto decoded = wire::decode_response(header);
    if (!decoded.ok()) return std::nullopt;
    if (payload != nullptr) {
      ec = read_within(socket_, asio::buffer(*payload));
      if (ec) return std::nullopt;
    }
    return decoded.value();
  }
  // Exactly `into`'s bytes (an answer's payload read apart from its header).
  std::error_code read(asio::mutable_buffer into) { return read_within(socket_, into); }
  void shut_down_sending() { socket_.shutdown(asio::ip::tcp::socket::shutdown_send); }
  // Sends `bytes` with the FIN in their own segment: corked, they wait in
  // the socket, and shutdown(2) sends them with the FIN attached.
  void send_then_shut_down(std::span<const std::byte> bytes) {
    const int on = 1;
    ::setsockopt(socket_.native_handle(), IPPROTO_TCP, TCP_CORK, &on, sizeof on);
    send(bytes);
    shut_down_sending();
  }
  bool readable_within(std::chrono::milliseconds t) {
    pollfd p{socket_.native_handle(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(t.count())) == 1;
  }
  bool closed_by_peer() {
    std::byte one{};
    std::error_code ec;
    ec = read_within(socket_, asio::buffer(&one, 1));
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }

 private:
  asio::io_context context_;
  asio::ip::tcp::socket socket_;
};

// Appends a request, and `body` after it for a WRITE.
inline void append(std::vector<std::byte>& out, const wire::request_frame& r,
                   std::span<const std::byte> body = {}) {
  auto header = wire::encode(r);
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), body.begin(), body.end());
}

}  // namespace faultlane::pipeline_testing
