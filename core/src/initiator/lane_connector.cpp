// lane_connector: a lane's connect, from opening the socket on its rail to
// a connected lane or a connect that ended failed or cancelled; see
// lane_connector.hpp.
#include "initiator/lane_connector.hpp"

#include <asio/ip/tcp.hpp>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "initiator/lane.hpp"
#include "initiator/peer_group.hpp"

namespace faultlane::detail {

using asio::ip::tcp;
using namespace std::chrono;

void lane_connector::start() {
  auto& l = lane_;
  FL_ASSERT(state_ == state::idle && l.state_ == lane::state::disconnected);
  const auto& remote = l.group_.descriptor().endpoints[l.rail_];
  std::error_code ec;
  tcp::endpoint peer(asio::ip::make_address(remote.address, ec), remote.port);
  FL_ASSERT(!ec);  // descriptors are validated at open_segment
  l.state_ = lane::state::connecting;
  l.timed_out_ = false;
  dropped_ = false;
  l.abort_status_.reset();
  ++epoch_;
  bump(l.rt_.stats.lanes_connecting);
  state_ = state::opening;
  l.socket_.open(tcp::v4(), ec);
  if (!ec && !l.rt_.config.rail_addresses.empty()) {
    // Bind the source address to this lane's rail so its bytes use it.
    auto local = asio::ip::make_address(l.rt_.config.rail_addresses[l.rail_]);
    l.socket_.bind(tcp::endpoint(local, 0), ec);
  }
  if (ec) return on_connected(ec);
  l.deadline_kind_ = lane::deadline_kind::connect;
  l.deadline_.set(milliseconds(l.rt_.config.connect_timeout_ms), l.shared_from_this());
  state_ = state::pending;
  l.socket_.async_connect(peer, l.guarded([this](std::error_code e) {
    FL_ASSERT(state_ == state::pending);
    on_connected(e);
  }));
}

void lane_connector::on_connected(const std::error_code& ec) {
  auto& l = lane_;
  FL_ASSERT((state_ == state::opening || state_ == state::pending) &&
            l.state_ == lane::state::connecting);
  uncount();
  state_ = state::finishing;
  l.deadline_.clear();
  std::error_code blocking;
  // send_now must never block the io thread: a connection that cannot be
  // made non-blocking is a failed connect.
  if (!ec && !l.abort_status_ && !dropped_) l.socket_.non_blocking(true, blocking);
  if (auto injected = FAULTLANE_FAILPOINT("lane.set_non_blocking"); injected && !ec) {
    blocking = std::make_error_code(std::errc::invalid_argument);
  }
  if (ec || l.abort_status_ || dropped_ || blocking) return on_failed();
  std::error_code ignored;
  l.socket_.set_option(tcp::no_delay(true), ignored);
  if constexpr (reads_skip_the_probe) (void)unprobed_read::report_bytes_left(l.socket_);
  bump(l.rt_.stats.connects);
  bump(l.rt_.stats.lanes_connected);
  if (connections_++ > 0) bump(l.rt_.stats.reconnects);
  // Connected before anything that may throw (the observer): a throw from
  // here on closes a connected lane (close_socket undoes lanes_connected),
  // and the group's connect gate is already open again.
  state_ = state::idle;
  l.state_ = lane::state::idle;
  l.group_.connect_finished(peer_group::connect_outcome::connected);
  l.on_connected();
}

// A connect that failed, or that we cancelled ourselves. Only the first is
// the peer's failure: it counts, and it starts the group's reconnect
// cooldown. Work queued behind a cancelled connect (drop_connections) just
// connects again; behind a shutdown it fails as shutting_down.
void lane_connector::on_failed() {
  auto& l = lane_;
  FL_ASSERT(state_ == state::finishing && l.state_ == lane::state::connecting);
  std::error_code ignored;
  l.socket_.close(ignored);
  const bool closing = l.closing_;
  state_ = state::idle;
  l.state_ = closing ? lane::state::closed : lane::state::disconnected;
  if (closing || dropped_) {
    FAULTLANE_PROBE(connect_cancelled);
    bump(l.rt_.stats.connects_cancelled);
    l.group_.connect_finished(peer_group::connect_outcome::cancelled);
    dropped_ = false;
    return closing ? l.fail_queue(*l.abort_status_) : l.pump();
  }
  FAULTLANE_PROBE(connect_failed);
  auto why = l.io_failure();
  if (l.timed_out_) bump(l.rt_.stats.timeouts);
  bump(l.rt_.stats.connect_failures);
  l.group_.connect_finished(peer_group::connect_outcome::failed);
  l.fail_queue(why);
}

void lane_connector::drop() noexcept {
  // Pending, unless a throw outside the lane's handlers (a posted
  // probe_finished) left the connect opening: closing is harmless then.
  FL_ASSERT(state_ != state::idle && lane_.state_ == lane::state::connecting);
  dropped_ = true;
  std::error_code ignored;
  lane_.socket_.close(ignored);
}

// Cancelled when we dropped or closed it, failed otherwise.
void lane_connector::end_thrown() noexcept {
  auto& l = lane_;
  FL_ASSERT(state_ == state::opening || state_ == state::finishing);
  FAULTLANE_PROBE(connect_ended_by_throw);
  std::error_code ignored;
  l.socket_.close(ignored);
  l.deadline_.cancel();
  uncount();
  const bool cancelled = l.closing_ || dropped_;
  dropped_ = false;
  state_ = state::idle;
  l.state_ = l.closing_ ? lane::state::closed : lane::state::disconnected;
  bump(cancelled ? l.rt_.stats.connects_cancelled : l.rt_.stats.connect_failures);
  l.group_.connect_finished(cancelled ? peer_group::connect_outcome::cancelled
                                      : peer_group::connect_outcome::failed);
}

void lane_connector::uncount() noexcept {
  if (state_ != state::opening && state_ != state::pending) return;
  lane_.rt_.stats.lanes_connecting.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace faultlane::detail
