// send_queue; see send_queue.hpp.
#include "send_queue.hpp"

#include <asio/write.hpp>

#include "connection.hpp"
#include "faultlane/base/assert.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/relays/limits.hpp"

namespace faultlane::relays::detail {

using asio::ip::tcp;

send_queue::send_queue(connection& owner, direction dir, net::socket& dst,
                       std::function<void()> on_room)
    : owner_(owner),
      dir_(dir),
      dst_(dst),
      timer_(owner.state().context),
      on_room_(std::move(on_room)) {}

void send_queue::push(out_item item) {
  FL_ASSERT(state_ != state::closed);
  if (state_ == state::ended) {
    // Only the source's FIN behind a half_close comes after the end, and
    // the end already said everything it would.
    FL_ASSERT(item.what == out_item::kind::end_without_fin);
    return;
  }
  queued_bytes_ += item.bytes.size();
  items_.push_back(std::move(item));
}

void send_queue::pump() {
  while (state_ == state::idle && !items_.empty()) {
    auto& item = items_.front();
    if (item.not_before > clock_type::now()) return wait_for_front();
    switch (item.what) {
      case out_item::kind::data: return write_front();
      case out_item::kind::fin: {
        std::error_code ignored;
        dst_.shutdown(net::socket::shutdown_send, ignored);
        items_.pop_front();
        return end_direction();
      }
      case out_item::kind::end_without_fin: items_.pop_front(); return end_direction();
      case out_item::kind::reset:
      case out_item::kind::close: {
        bool with_reset = item.what == out_item::kind::reset;
        const char* reason = item.reason  ? item.reason
                             : with_reset ? "a reset fault fired"
                                          : "a truncate fault closed it";
        items_.clear();
        queued_bytes_ = 0;
        return owner_.abort(with_reset, reason);
      }
    }
  }
}

void send_queue::wait_for_front() {
  FL_ASSERT(state_ == state::idle);
  state_ = state::waiting;
  timer_.expires_at(items_.front().not_before);
  timer_.async_wait([self = owner_.self(), this](std::error_code ec) {
    if (state_ == state::closed) return;
    FL_ASSERT(state_ == state::waiting);
    // Only cancel() (which closes the queue) and expedite_closes() cancel
    // the timer; after the latter the front may go sooner.
    FL_ASSERT(!ec || ec == asio::error::operation_aborted);
    state_ = state::idle;
    pump();
  });
}

void send_queue::expedite_closes() {
  auto now = clock_type::now();
  bool sooner = false;
  for (auto& item : items_) {
    if ((item.what == out_item::kind::close || item.what == out_item::kind::reset) &&
        item.not_before > now) {
      item.not_before = now;
      sooner = true;
    }
  }
  if (sooner && state_ == state::waiting) timer_.cancel();
}

void send_queue::write_front() {
  FL_ASSERT(state_ == state::idle);
  auto& bytes = items_.front().bytes;
  FL_ASSERT(!bytes.empty());
  state_ = state::writing;
  record_write(bytes.size(), items_.front().not_before);
  written_ += bytes.size();
  asio::async_write(
      dst_, asio::buffer(bytes),
      [self = owner_.self(), this](std::error_code ec, std::size_t) { on_written(ec); });
}

void send_queue::on_written(const std::error_code& ec) {
  if (state_ == state::closed) return;  // the write was cut short by the close
  FL_ASSERT(state_ == state::writing);
  state_ = state::idle;
  // The destination failed: pass it on as a reset.
  if (ec) return owner_.abort(true, connection::failure_reason(dir_, false, ec));
  FL_ASSERT(queued_bytes_ >= items_.front().bytes.size());
  queued_bytes_ -= items_.front().bytes.size();
  items_.pop_front();
  if (queued_bytes_ <= queued_bytes_max) on_room_();
  pump();
}

// The direction is over: the connection closes once both are. A close
// queued behind a FIN (truncate) is acted on now.
void send_queue::end_direction() {
  FL_ASSERT(state_ == state::idle);
  state_ = state::ended;
  owner_.pipe_finished();
  while (state_ == state::ended && !items_.empty()) {
    auto what = items_.front().what;
    FL_ASSERT(what == out_item::kind::close || what == out_item::kind::end_without_fin);
    const char* reason = items_.front().reason;
    items_.pop_front();
    if (what == out_item::kind::close) {
      owner_.abort(false, reason ? reason : "a truncate fault closed it");
    }
  }
}

void send_queue::cancel() {
  // Items stay: an async_write in flight may still hold the front one's bytes.
  state_ = state::closed;
  timer_.cancel();
}

// With taps on, every write goes through this queue (nothing bypasses it),
// so the records give each write the relay made, in order.
void send_queue::record_write(std::size_t size, clock_type::time_point due) {
  auto& relay = owner_.state();
  if (!relay.taps_on()) return;
  auto r = owner_.record_for(dir_);
  r.kind = record_kind::write;
  r.stream_offset = written_;
  r.length = size;
  r.due_us = relay.us_since_start(due);
  relay.recorder.record(std::move(r));
}

}  // namespace faultlane::relays::detail
