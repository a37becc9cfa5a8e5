// One relayed connection: the accepted client socket, the upstream socket,
// and a pipe per direction. Everything here runs on the relay's io thread.
#pragma once

#include <asio/ip/tcp.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "frame_stream.hpp"
#include "pipe.hpp"
#include "relay_internal.hpp"

#include "faultlane/core/net.hpp"

namespace faultlane::relays::detail {

class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(std::shared_ptr<relay_state> state, net::socket client, std::uint64_t index);
  ~connection();
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  void start();
  void recheck();  // the fault list changed
  // RST both ways (reset fault, or a peer's reset), or FIN-close both;
  // `reason` goes into the tap's close record.
  void abort(bool with_reset, std::string_view reason);
  // "client read: Connection reset by peer": which side of direction `dir`
  // failed (its source or its destination), and how.
  static std::string failure_reason(direction dir, bool at_source, const std::error_code& ec);
  // A direction is over; the connection closes once both are.
  void pipe_finished();

  relay_state& state() noexcept { return *state_; }
  std::uint64_t index() const noexcept { return index_; }
  bool decoding() const noexcept { return decode_; }
  pairing& pairs() noexcept { return pairs_; }
  std::shared_ptr<connection> self() { return shared_from_this(); }
  // A tap record with this connection's and the direction's fields set.
  tap_record record_for(direction dir) const;

 private:
  enum class phase : std::uint8_t {
    created,     // accepted; start() not yet called
    connecting,  // the upstream connect is in flight
    relaying,    // both pipes run
    closed,      // sockets closed; handlers still queued return at once
  };

  void on_upstream_connected(const std::error_code& ec);
  void upstream_failed(const std::string& target, const std::error_code& ec);
  void record(record_kind kind, std::string_view reason = {});  // open/close, to the tap

  std::shared_ptr<relay_state> state_;
  net::socket client_;
  net::socket upstream_;
  const std::uint64_t index_;
  // Frames are decoded when a tap or a frame-aware fault exists at accept.
  const bool decode_;
  pairing pairs_;
  std::unique_ptr<pipe> up_;
  std::unique_ptr<pipe> down_;
  std::string client_address_;
  std::string upstream_local_;
  std::string upstream_remote_;
  std::string upstream_target_;  // where the connect went
  std::uint64_t opened_us_ = 0;  // the open record's time (taps only)
  phase phase_ = phase::created;
};

}  // namespace faultlane::relays::detail
