// pipe; see pipe.hpp.
#include "pipe.hpp"

#include <asio/post.hpp>
#include <asio/write.hpp>
#include <fcntl.h>
#include <unistd.h>

#include "connection.hpp"
#include "faultlane/base/assert.hpp"
#include "faultlane/base/probe.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/relays/limits.hpp"

namespace faultlane::relays::detail {

using asio::ip::tcp;

namespace {
// Splices in one handler before the pipe lets other connections run.
constexpr int splice_rounds_max = 16;
constexpr unsigned splice_flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;
}  // namespace

pipe::pipe(connection& owner, direction dir, net::socket& src, net::socket& dst)
    : owner_(owner),
      dir_(dir),
      src_(src),
      dst_(dst),
      out_(owner, dir, dst, [this] { on_room(); }),
      chain_(owner, dir, out_),
      buffer_(owner.state().config.buffer_bytes) {}

pipe::~pipe() {
  for (int fd : splice_pipe_) {
    if (fd >= 0) ::close(fd);
  }
}

void pipe::start() {
  FL_ASSERT(state_ == state::created);
  chain_.refresh();
  state_ = state::deciding;
  out_.pump();  // a fault that applies at once may have queued a timed close
  if (state_ == state::closed) return;
  read_next();
}

void pipe::cancel() {
  state_ = state::closed;
  out_.cancel();
}

void pipe::recheck() {
  if (state_ == state::created || state_ == state::closed) return;
  chain_.refresh();
  out_.pump();  // as in start()
  if (state_ == state::closed) return;
  if (state_ != state::held || !chain_.release_if_unstalled()) return;
  // The stall was removed: what it held goes on, and so does reading.
  FAULTLANE_PROBE(relay_stall_lifted);
  state_ = state::deciding;
  out_.pump();
  if (state_ == state::closed) return;
  if (source_ended_pending_) return on_source_ended();
  read_next();
}

void pipe::fail(bool at_source, const std::error_code& ec) {
  owner_.abort(true, connection::failure_reason(dir_, at_source, ec));
}

void pipe::read_next() {
  FL_ASSERT(state_ == state::deciding);
  FL_ASSERT(in_splice_pipe_ == 0);
  if (chain_.holding()) {
    state_ = state::held;
    return;
  }
  if (can_splice()) return splice_step();
  if (out_.queued_bytes() > queued_bytes_max) {
    FAULTLANE_PROBE(relay_paused_for_room);
    state_ = state::paused;  // the send queue calls on_room() as it drains
    return;
  }
  state_ = state::reading;
  src_.async_read_some(
      asio::buffer(buffer_),
      [self = owner_.self(), this](std::error_code ec, std::size_t n) { on_read(ec, n); });
}

void pipe::on_read(const std::error_code& ec, std::size_t n) {
  if (state_ == state::closed) return;
  FL_ASSERT(state_ == state::reading);
  state_ = state::deciding;
  if (ec == asio::error::eof) return on_source_eof();
  if (ec) {
    FAULTLANE_PROBE(relay_reset_passed_on);
    return fail(true, ec);  // pass a reset on
  }
  chain_.refresh();
  if (chain_.transparent() && out_.idle()) return write_through(n);
  chain_.process(buffer_.data(), n);
  out_.pump();
  if (state_ == state::closed) return;  // a reset, a close, or both directions over
  read_next();
}

// Nothing to apply and nothing queued: the read buffer goes out as it is.
void pipe::write_through(std::size_t n) {
  FL_ASSERT(state_ == state::deciding);
  chain_.passed_by(buffer_.data(), n);
  state_ = state::writing_through;
  asio::async_write(dst_, asio::buffer(buffer_.data(), n),
                    [self = owner_.self(), this](std::error_code ec, std::size_t) {
                      if (state_ == state::closed) return;
                      FL_ASSERT(state_ == state::writing_through);
                      state_ = state::deciding;
                      if (ec) return fail(false, ec);
                      read_next();
                    });
}

void pipe::on_room() {
  if (state_ != state::paused) return;  // reading never stopped
  state_ = state::deciding;
  read_next();
}

// The source sent FIN. Part of a header the decoder held goes on first;
// if a stall fires on those bytes, the FIN waits behind it.
void pipe::on_source_eof() {
  FL_ASSERT(state_ == state::deciding);
  chain_.end_of_stream();
  out_.pump();
  if (state_ == state::closed) return;
  if (chain_.holding()) {
    FAULTLANE_PROBE(relay_fin_held_behind_stall);
    source_ended_pending_ = true;
    state_ = state::held;
    return;
  }
  on_source_ended();
}

void pipe::on_source_ended() {
  FL_ASSERT(state_ == state::deciding);
  FL_ASSERT(!chain_.holding());  // a held stream is not read
  state_ = state::source_ended;
  auto when = chain_.close_time();
  // A dropping direction passes nothing on, not the FIN either: a black
  // hole keeps the socket open, and a half_close or truncate sent its own.
  out_.push({chain_.dropping() ? out_item::kind::end_without_fin : out_item::kind::fin, when, {}});
  out_.pump();
}

// The splice path applies to the transparent case when frames need not be
// seen. The sockets go non-blocking first: a blocking splice(2) would hold
// the io thread, so if that fails the pipe copies instead.
bool pipe::can_splice() {
  // The simulated network has no descriptors to splice between.
  if constexpr (net::simulated) return false;
  if (owner_.decoding() || !chain_.transparent() || !out_.idle()) return false;
  if (splice_pipe_[0] >= 0) return true;
  std::error_code ec;
  src_.native_non_blocking(true, ec);
  if (!ec) dst_.native_non_blocking(true, ec);
  if (ec || ::pipe2(splice_pipe_, O_NONBLOCK | O_CLOEXEC) != 0) return false;
  // A kernel that refuses the size keeps its default: smaller splices, same bytes.
  ::fcntl(splice_pipe_[1], F_SETPIPE_SZ, static_cast<int>(owner_.state().config.buffer_bytes));
  return true;
}

// Moves bytes socket -> kernel pipe -> socket until a socket would block,
// the source ends, or a fault or tap makes the chain take over.
void pipe::splice_step() {
  FL_ASSERT(state_ == state::deciding);
  for (int round = 0; round < splice_rounds_max; ++round) {
    if (!splice_out()) return;
    chain_.refresh();
    if (!chain_.transparent()) return read_next();
    auto n = ::splice(src_.native_handle(), nullptr, splice_pipe_[1], nullptr,
                      owner_.state().config.buffer_bytes, splice_flags);
    if (n > 0) {
      in_splice_pipe_ = static_cast<std::size_t>(n);
      chain_.spliced(in_splice_pipe_);
      continue;
    }
    if (n == 0) return on_source_ended();
    if (errno == EAGAIN) return wait_for(state::splice_waiting_source);
    return fail(true, std::error_code(errno, std::system_category()));
  }
  state_ = state::splice_yielded;
  asio::post(owner_.state().context, [self = owner_.self(), this] {
    if (state_ == state::closed) return;
    FL_ASSERT(state_ == state::splice_yielded);
    state_ = state::deciding;
    splice_step();
  });
}

// Empties the kernel pipe into dst; false when it has to wait for dst or
// the connection closed.
bool pipe::splice_out() {
  while (in_splice_pipe_ > 0) {
    auto n = ::splice(splice_pipe_[0], nullptr, dst_.native_handle(), nullptr, in_splice_pipe_,
                      splice_flags);
    if (n > 0) {
      in_splice_pipe_ -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && errno == EAGAIN) {
      wait_for(state::splice_waiting_sink);
      return false;
    }
    // A destination that is gone raised SIGPIPE (splice has no
    // MSG_NOSIGNAL): the relay's thread blocks it; take it off.
    std::error_code ec(n < 0 ? errno : EPIPE, std::system_category());
    consume_sigpipe();
    fail(false, ec);
    return false;
  }
  return true;
}

void pipe::wait_for(state waiting) {
  FL_ASSERT(state_ == state::deciding);
  FL_ASSERT(waiting == state::splice_waiting_source || waiting == state::splice_waiting_sink);
  bool source = waiting == state::splice_waiting_source;
  state_ = waiting;
  (source ? src_ : dst_)
      .async_wait(source ? net::socket::wait_read : net::socket::wait_write,
                  [self = owner_.self(), this, waiting](std::error_code ec) {
                    if (state_ == state::closed) return;
                    FL_ASSERT(state_ == waiting);
                    state_ = state::deciding;
                    if (ec) return fail(waiting == state::splice_waiting_source, ec);
                    splice_step();
                  });
}

}  // namespace faultlane::relays::detail
