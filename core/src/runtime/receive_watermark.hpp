// receive_watermark: fewer wake-ups for large receives.
//
// While a large payload or body streams in, the reader is woken (epoll) only
// when at least `watermark_bytes` wait in the socket (SO_RCVLOWAT), instead
// of for every segment. The watermark never exceeds what is still to come,
// or the last bytes would never wake the reader; it is back to 1 afterwards.
// Small transfers (the latency path) are untouched.
#pragma once

#include <algorithm>
#include <cstddef>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::detail {

class receive_watermark {
 public:
  static constexpr std::size_t bulk_bytes_min = 1u << 20;
  static constexpr std::size_t watermark_bytes = 256u << 10;

  // `total` bytes are still to come of a transfer of `whole` bytes (its
  // first bytes may have come with its header already): a large transfer
  // is large however it started.
  void begin(net::socket& socket, std::size_t total, std::size_t whole) {
    FL_ASSERT(current_ == 1);  // end() ran after the last receive
    FL_ASSERT(total > 0 && total <= whole);
    total_ = total;
    queued_at_check_ = 0;
    if (whole >= bulk_bytes_min) set(socket, std::min(total, watermark_bytes));
  }
  // From a completion condition: `transferred` of `total` have arrived.
  void progress(net::socket& socket, std::size_t transferred) {
    FL_ASSERT(transferred <= total_);
    queued_at_check_ = 0;  // the reader took what was waiting
    std::size_t left = total_ - std::min(transferred, total_);
    if (left < current_) set(socket, std::max<std::size_t>(left, 1));
  }
  void end(net::socket& socket) {
    if (current_ != 1) set(socket, 1);
    current_ = 1;  // even if the kernel refused: the next begin() starts over
  }

  // For a progress deadline that passed: true when more bytes wait in the
  // socket, below the watermark, than at the last check. A slow but steady
  // link is then still making progress; a stalled one is not, however many
  // bytes arrived before it stalled.
  bool queued_bytes_grew(net::socket& socket) {
    if (current_ <= 1) return false;  // every byte wakes the reader already
    std::error_code ec;
    const std::size_t queued = net::bytes_readable(socket, ec);
    if (ec) return false;
    const bool grew = queued > queued_at_check_;
    queued_at_check_ = queued;
    return grew;
  }

  std::size_t current() const noexcept { return current_; }

 private:
  // Records only what the kernel took: a refused watermark leaves the old
  // one, so progress() and end() never act on a value that is not in force.
  void set(net::socket& socket, std::size_t bytes) {
    if (net::set_receive_watermark(socket, bytes)) current_ = bytes;
  }

  std::size_t total_ = 0;
  std::size_t current_ = 1;
  std::size_t queued_at_check_ = 0;
};

}  // namespace faultlane::detail
