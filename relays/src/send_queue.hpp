// send_queue: what one direction of a relayed connection has still to
// write to its destination, each item with the time it may leave.
//
// The fault chain fills it (data cut and delayed by latency, slicer and
// bandwidth, and the FIN, reset or close a fault or the source's FIN asks
// for); the queue writes the items out in order, one at a time, each no
// earlier than its time. It tells the pipe when there is room to read again
// and the connection when the direction is over. Runs on the relay's io
// thread.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <deque>
#include <functional>
#include <vector>

#include "relay_internal.hpp"

#include "faultlane/core/net.hpp"

namespace faultlane::relays::detail {

class connection;

struct out_item {
  enum class kind : std::uint8_t {
    data,             // bytes to write
    fin,              // shutdown(send): the destination sees the end
    end_without_fin,  // nothing more is written, but the socket stays open (black hole)
    reset,            // abort the connection with RST both ways
    close,            // close the connection (FIN both ways)
  };
  kind what = kind::data;
  clock_type::time_point not_before{};
  std::vector<std::byte> bytes;
  // reset and close: the reason the tap's close record gives.
  const char* reason = nullptr;
};

class send_queue {
 public:
  // `on_room` runs when the queued bytes fell to queued_bytes_max or below.
  send_queue(connection& owner, direction dir, net::socket& dst,
             std::function<void()> on_room);

  void push(out_item item);
  // Starts the front item if nothing is in flight; a completion pumps again.
  void pump();
  void cancel();  // the connection is closing
  // Every queued reset or close may go now rather than at its time (what
  // is queued before it still goes first).
  void expedite_closes();

  std::size_t queued_bytes() const noexcept { return queued_bytes_; }
  // Empty with nothing in flight: the pipe may write past the queue.
  bool idle() const noexcept { return state_ == state::idle && items_.empty(); }
  // The direction is over: a FIN went out, or it ended without one.
  bool ended() const noexcept { return state_ == state::ended; }

 private:
  enum class state : std::uint8_t {
    idle,     // nothing in flight
    waiting,  // the timer runs until the front item may leave
    writing,  // an async_write of the front item is in flight
    ended,    // the direction is over; only a close may follow
    closed,   // the connection closed; handlers still queued return at once
  };

  void wait_for_front();
  void write_front();
  void on_written(const std::error_code& ec);
  void end_direction();
  void record_write(std::size_t size, clock_type::time_point due);

  connection& owner_;
  const direction dir_;
  net::socket& dst_;
  net::timer timer_;
  std::function<void()> on_room_;
  std::deque<out_item> items_;
  std::size_t queued_bytes_ = 0;
  std::uint64_t written_ = 0;  // bytes written so far (taps)
  state state_ = state::idle;
};

}  // namespace faultlane::relays::detail
