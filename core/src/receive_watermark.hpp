// receive_watermark: fewer wake-ups for large receives.
//
// While a large payload or body streams in, the reader is woken (epoll) only
// when at least `watermark_bytes` wait in the socket (SO_RCVLOWAT), instead
// of for every segment. The watermark never exceeds what is still to come,
// or the last bytes would never wake the reader; it is back to 1 afterwards.
// Small transfers (the latency path) are untouched.
#pragma once

#include <asio/ip/tcp.hpp>

#include <algorithm>
#include <cstddef>

namespace faultlane::detail {

class receive_watermark {
 public:
  static constexpr std::size_t bulk_bytes_min = 1u << 20;
  static constexpr std::size_t watermark_bytes = 256u << 10;

  void begin(asio::ip::tcp::socket& socket, std::size_t total) {
    total_ = total;
    current_ = 1;
    if (total >= bulk_bytes_min) set(socket, watermark_bytes);
  }
  // From a completion condition: `transferred` of `total` have arrived.
  void progress(asio::ip::tcp::socket& socket, std::size_t transferred) {
    std::size_t left = total_ - std::min(transferred, total_);
    if (left < current_) set(socket, std::max<std::size_t>(left, 1));
  }
  void end(asio::ip::tcp::socket& socket) {
    if (current_ != 1) set(socket, 1);
  }

 private:
  void set(asio::ip::tcp::socket& socket, std::size_t bytes) {
    std::error_code ignored;
    socket.set_option(asio::socket_base::receive_low_watermark(static_cast<int>(bytes)), ignored);
    current_ = bytes;
  }

  std::size_t total_ = 0;
  std::size_t current_ = 1;
};

}  // namespace faultlane::detail
