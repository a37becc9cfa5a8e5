// A peer that never answers a connect, for tests of connects in progress
// (transport_hardening_test.cpp, transport_connect_gate_test.cpp).
#pragma once

#include <gtest/gtest.h>

#include <asio/ip/tcp.hpp>

#include <cstdint>
#include <vector>

#include "faultlane/testing/read_within.hpp"

namespace faultlane::testing {

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
    ASSERT_FALSE(faultlane::testing::accept_within(acceptor_, s)) << "no connection to take";
    taken_.push_back(std::move(s));
  }

 private:
  asio::io_context context_;
  asio::ip::tcp::acceptor acceptor_;
  asio::ip::tcp::socket filler_;
  std::vector<asio::ip::tcp::socket> taken_;
};

}  // namespace faultlane::testing
