// Helpers for tests that send faultlane frames through a relay: headers as
// bytes, a scripted upstream that answers once it has heard enough, and
// the way to collect what a sink received once the client's FIN arrived.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "faultlane/core/frame.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays::testing {

inline std::vector<char> as_chars(std::span<const std::byte> b) {
  std::vector<char> out(b.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

// A request header (a length of 0 is not a frame); a WRITE's payload
// (`length` bytes) follows it.
inline std::vector<char> request(wire::opcode op, std::uint64_t id, std::uint64_t length = 8) {
  wire::request_frame f;
  f.op = op;
  f.request_id = id;
  f.registration_id = 9;
  f.remote_offset = 4096;
  f.length = length;
  auto out = as_chars(wire::encode(f));
  if (op == wire::opcode::write) {
    auto body = bytes(length, static_cast<int>(id));
    out.insert(out.end(), body.begin(), body.end());
  }
  return out;
}

// A response header with no payload (a WRITE's, or not ok).
inline std::vector<char> response(std::uint64_t id, wire::wire_status s = wire::wire_status::ok,
                                  std::uint64_t committed = 0) {
  wire::response_frame f;
  f.status = s;
  f.request_id = id;
  f.committed_bytes = committed;
  return as_chars(wire::encode(f));
}

inline std::vector<char> joined(const std::vector<std::vector<char>>& parts) {
  std::vector<char> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// An upstream for one connection: reads `wait_bytes` (so the requests the
// answers pair with were decoded first), or until the FIN with `until_fin`,
// sends `reply`, then FIN.
class responder {
 public:
  static constexpr std::size_t until_fin = SIZE_MAX;
  responder(std::size_t wait_bytes, std::vector<char> reply)
      : acceptor_(context_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this, wait_bytes, reply = std::move(reply)] {
      tcp::socket s(context_);
      std::error_code ec;
      acceptor_.accept(s, ec);
      if (ec) return;
      if (wait_bytes == until_fin) {
        std::vector<char> in(4096);
        while (!ec) s.read_some(asio::buffer(in), ec);
        if (ec != asio::error::eof) return;
        ec.clear();
      } else {
        std::vector<char> in(wait_bytes);
        asio::read(s, asio::buffer(in), ec);
        if (ec) return;
      }
      asio::write(s, asio::buffer(reply), ec);
      s.shutdown(tcp::socket::shutdown_send, ec);
      std::vector<char> rest(4096);
      while (!ec) s.read_some(asio::buffer(rest), ec);  // until the relay closes
    });
  }
  ~responder() {
    {
      std::error_code ignored;
      tcp::socket poke(context_);  // wakes an accept still waiting; closes at once
      poke.connect(acceptor_.local_endpoint(), ignored);
    }
    thread_.join();
  }
  address where() const { return {"127.0.0.1", port_}; }

 private:
  asio::io_context context_;
  tcp::acceptor acceptor_;
  std::uint16_t port_ = acceptor_.local_endpoint().port();
  std::thread thread_;
};

// Sends `data` and a FIN on a new connection to a fresh sink (the relay's
// upstream from now on), and returns what the sink holds once that FIN
// arrived (or after 10 s).
inline std::vector<char> through(relay& r, const std::vector<char>& data) {
  plain_peer sink(plain_peer::mode::sink);
  EXPECT_TRUE(r.set_upstream(sink.where()).ok());
  client c(r.listen_endpoint());
  c.send(data);
  c.send_fin();
  EXPECT_TRUE(eventually([&] { return sink.saw_eof(); }));
  return sink.received_bytes();
}

}  // namespace faultlane::relays::testing
