// A lane's connect: opens the socket on the lane's rail and connects it
// under the connect deadline; then the lane is connected, or the connect
// ended failed (the peer's failure: counted, and the group's reconnect
// cooldown starts) or cancelled (by us: the lane's work connects again, or
// fails when the lane is closing). The lane owns the socket, its state and
// its queue; the group's connect gate says when a connect may start
// (peer_group::request_connect). See lane_connector.cpp.
#pragma once

#include <cstdint>
#include <system_error>

namespace faultlane::detail {

class lane;

class lane_connector {
 public:
  // Where the connect is; its handler asserts the state it expects.
  enum class state : std::uint8_t {
    idle,       // no connect under way
    opening,    // counted in lanes_connecting; the socket is being opened
    pending,    // counted; an async_connect is outstanding
    finishing,  // its handler runs (or opening the socket failed): the
                // lane becomes connected, or the connect ends failed or
                // cancelled
  };

  explicit lane_connector(lane& owner) : lane_(owner) {}
  lane_connector(const lane_connector&) = delete;
  lane_connector& operator=(const lane_connector&) = delete;

  bool pending() const noexcept { return state_ == state::pending; }
  // Bumped at every connect: names the lane's connection.
  std::uint64_t epoch() const noexcept { return epoch_; }
  // A disconnected lane connects.
  void start();
  // Cancels the pending connect as ours, not the peer's refusal: its
  // handler connects the lane's work again.
  void drop() noexcept;
  // A throw ended the lane's handler while the connect was opening or
  // finishing: the connect ends here as its handler would have ended it,
  // or the lane would stay connecting, and the group's gate held, for good.
  void end_thrown() noexcept;

 private:
  void on_connected(const std::error_code& ec);
  void on_failed();
  void uncount() noexcept;

  lane& lane_;
  state state_ = state::idle;
  std::uint64_t epoch_ = 0;
  std::uint64_t connections_ = 0;  // successful connects (for reconnect stats)
  bool dropped_ = false;           // drop() cancelled the pending connect
};

}  // namespace faultlane::detail
