// Socket steps are bounded: send_now writes at most io_chunk_bytes_max per
// call, as each later step does (send_now.hpp says why: 64 MiB transfers
// moved 0.70-0.80x raw TCP when a write took all the socket buffer would).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <asio/connect.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/testing/read_within.hpp"
#include "runtime/send_now.hpp"

namespace faultlane {
namespace {

using asio::ip::tcp;
using detail::buffers_prefix;
constexpr std::size_t step = limits::io_chunk_bytes_max;

std::size_t bytes_of(const buffers_prefix& p) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < p.count(); ++i) n += p[i].size();
  EXPECT_EQ(n, p.bytes());
  return n;
}

TEST(send_step, a_sequence_within_the_bound_passes_whole) {
  std::vector<std::byte> a(100), b(200);
  const std::array<asio::const_buffer, 2> out{asio::buffer(a), asio::buffer(b)};
  const buffers_prefix p(out, step);
  ASSERT_EQ(p.count(), 2u);
  EXPECT_EQ(p[0].data(), a.data());
  EXPECT_EQ(p[1].size(), 200u);
  EXPECT_EQ(bytes_of(p), 300u);
}

// One buffer exactly the bound, and one byte over it.
TEST(send_step, sizes_on_both_sides_of_the_bound) {
  std::vector<std::byte> at(step), over(step + 1);
  EXPECT_EQ(bytes_of(buffers_prefix(asio::buffer(at), step)), step);
  const buffers_prefix cut(asio::buffer(over), step);
  ASSERT_EQ(cut.count(), 1u);
  EXPECT_EQ(cut[0].data(), over.data());
  EXPECT_EQ(cut[0].size(), step);
}

// A header and a large payload: the payload is cut so the two fill the
// bound; a first buffer that fills it alone leaves no empty second one.
TEST(send_step, the_bound_cuts_inside_a_later_buffer_or_ends_at_one) {
  std::vector<std::byte> header(64), payload(std::size_t{1} << 20);
  const std::array<asio::const_buffer, 2> out{asio::buffer(header), asio::buffer(payload)};
  const buffers_prefix p(out, step);
  ASSERT_EQ(p.count(), 2u);
  EXPECT_EQ(p[1].data(), payload.data());
  EXPECT_EQ(p[1].size(), step - 64);

  std::vector<std::byte> whole(step);
  const std::array<asio::const_buffer, 2> exact{asio::buffer(whole), asio::buffer(payload)};
  const buffers_prefix q(exact, step);
  EXPECT_EQ(q.count(), 1u);
  EXPECT_EQ(bytes_of(q), step);
}

TEST(send_step, a_long_gather_list_is_cut_to_its_first_buffers) {
  std::vector<std::byte> bytes(buffers_prefix::buffers_max + 10);
  std::vector<asio::const_buffer> out;
  for (auto& b : bytes) out.emplace_back(&b, 1);
  const buffers_prefix p(out, step);
  EXPECT_EQ(p.count(), buffers_prefix::buffers_max);
  EXPECT_EQ(p[p.count() - 1].data(), &bytes[buffers_prefix::buffers_max - 1]);
}

// A bound of 0 takes nothing, and empty buffers take no bytes.
TEST(send_step, a_zero_bound_takes_nothing_and_empty_buffers_no_bytes) {
  std::vector<std::byte> a(10);
  EXPECT_EQ(buffers_prefix(asio::buffer(a), 0).count(), 0u);
  const std::array<asio::const_buffer, 3> out{asio::const_buffer(), asio::buffer(a),
                                              asio::const_buffer()};
  EXPECT_EQ(bytes_of(buffers_prefix(out, step)), 10u);
  EXPECT_EQ(bytes_of(buffers_prefix(out, 4)), 4u);
}

struct socket_pair_fixture {
  asio::io_context context;
  tcp::socket sender{context}, receiver{context};
  socket_pair_fixture() {
    tcp::acceptor acceptor(context, {asio::ip::make_address("127.0.0.1"), 0});
    sender.connect(acceptor.local_endpoint());  // the listener's backlog takes it
    EXPECT_FALSE(testing::accept_within(acceptor, receiver));
    sender.non_blocking(true);
  }
};

// On a socket that would take the whole 2 MiB at once, send_now takes one
// step of it; the steps after it carry the rest, in order.
TEST(send_step, send_now_writes_one_step_of_what_the_socket_would_take) {
  std::vector<std::byte> out(std::size_t{2} << 20);
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::byte(i * 131 % 251);
  {
    // What this kernel takes from one write on a fresh loopback connection
    // (about 4 MiB with Linux's default socket buffers): with less than two
    // steps there is no bound to see.
    socket_pair_fixture calibration;
    const auto taken = ::send(calibration.sender.native_handle(), out.data(), out.size(),
                              MSG_DONTWAIT | MSG_NOSIGNAL);
    if (taken <= static_cast<ssize_t>(2 * step)) {
      GTEST_SKIP() << "one write takes " << taken << " bytes here, not more than two steps";
    }
  }
  socket_pair_fixture pair;
  std::error_code ec;
  const std::size_t first = detail::send_now(pair.sender, asio::buffer(out), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(first, step);

  std::size_t sent = first;
  std::vector<std::byte> in(out.size());
  std::size_t received = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (received < out.size() && std::chrono::steady_clock::now() < deadline) {
    if (sent < out.size()) {
      const std::size_t n = detail::send_now(pair.sender, asio::buffer(out) + sent, ec);
      ASSERT_FALSE(ec) << ec.message();
      EXPECT_LE(n, step);
      sent += n;
    }
    const std::size_t chunk = std::min<std::size_t>(sent - received, 64u << 10);
    if (chunk == 0) continue;
    ASSERT_FALSE(testing::read_within(pair.receiver, asio::buffer(in.data() + received, chunk)));
    received += chunk;
  }
  ASSERT_EQ(received, out.size());
  EXPECT_EQ(in, out);
}

// A socket that takes nothing more: send_now sends nothing and says no
// error, so the caller goes on with an asynchronous write.
TEST(send_step, a_full_socket_takes_nothing_and_is_no_error) {
  socket_pair_fixture pair;
  std::vector<std::byte> block(std::size_t{1} << 20);
  std::error_code ec;
  std::size_t n = 1;
  // The receiver reads nothing, so the buffers fill; bounded, as each call
  // takes at most a step and the buffers hold tens of MiB at most.
  for (int i = 0; i < 4096 && n > 0; ++i) {
    n = detail::send_now(pair.sender, asio::buffer(block), ec);
    ASSERT_FALSE(ec) << ec.message();
  }
  ASSERT_EQ(n, 0u) << "the socket never filled";
  // Another call may take a little (an ACK can free room meanwhile), but
  // it is no error either.
  (void)detail::send_now(pair.sender, asio::buffer(block), ec);
  EXPECT_FALSE(ec) << ec.message();
}

// A peer that reset the connection: send_now reports the error, having
// sent nothing, and does not raise SIGPIPE, which would end this process.
TEST(send_step, a_reset_connection_is_an_error_not_a_signal) {
  socket_pair_fixture pair;
  const linger abort_on_close{1, 0};
  ASSERT_EQ(::setsockopt(pair.receiver.native_handle(), SOL_SOCKET, SO_LINGER, &abort_on_close,
                         sizeof abort_on_close),
            0);
  pair.receiver.close();  // sends a reset
  std::vector<std::byte> block(64);
  std::error_code ec;
  std::size_t n = 0;
  // The reset may still be on its way: bounded retries until it is seen.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    n = detail::send_now(pair.sender, asio::buffer(block), ec);
  } while (!ec && std::chrono::steady_clock::now() < deadline);
  ASSERT_TRUE(ec) << "the reset was never reported";
  EXPECT_TRUE(ec == asio::error::connection_reset || ec == asio::error::broken_pipe)
      << ec.message();
  EXPECT_EQ(n, 0u);
  // The first error is the reset itself. The send after it finds the
  // connection shut (EPIPE), and that is the one that raises SIGPIPE
  // unless the send says MSG_NOSIGNAL.
  EXPECT_EQ(detail::send_now(pair.sender, asio::buffer(block), ec), 0u);
  EXPECT_EQ(ec, asio::error::broken_pipe) << ec.message();
}

}  // namespace
}  // namespace faultlane
