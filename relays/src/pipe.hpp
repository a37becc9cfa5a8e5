// pipe: one direction of a relayed connection, the part that moves bytes.
//
// It reads from `src` and hands the bytes to the fault chain, which queues
// what survives in the send queue, which writes it to `dst`. When no fault
// and no tap applies (the chain is transparent) and nothing is queued, the
// pipe moves the bytes itself: with splice(2) (socket -> kernel pipe ->
// socket, never through user space) when it need not decode frames, else
// with one write of its read buffer. Runs on the relay's io thread.
#pragma once

#include <asio/ip/tcp.hpp>

#include <vector>

#include "fault_chain.hpp"
#include "relay_internal.hpp"
#include "send_queue.hpp"

#include "faultlane/core/net.hpp"

namespace faultlane::relays::detail {

class connection;

class pipe {
 public:
  pipe(connection& owner, direction dir, net::socket& src, net::socket& dst);
  ~pipe();
  pipe(const pipe&) = delete;
  pipe& operator=(const pipe&) = delete;

  void start();
  void recheck();  // the fault list changed
  void cancel();   // the connection is closing
  // Nothing more will be written to dst (a FIN went out, or the direction
  // ended without one).
  bool finished() const noexcept { return out_.ended(); }
  // Bytes read from the source so far (the tap's close record).
  std::uint64_t received() const noexcept { return chain_.received(); }

 private:
  enum class state : std::uint8_t {
    created,                // before start()
    deciding,               // inside a handler: about to read, wait or stop
    reading,                // an async_read_some is in flight
    writing_through,        // the read buffer is being written out whole (transparent)
    splice_waiting_source,  // splicing: waiting for the source to be readable
    splice_waiting_sink,    // splicing: bytes in the kernel pipe wait for dst to be writable
    splice_yielded,         // splicing: posted itself so other connections run
    paused,                 // more than queued_bytes_max wait to leave: reading waits
    held,                   // a stall holds the stream: the source is not read
    source_ended,           // the source sent FIN: nothing more is read
    closed,                 // the connection closed; handlers still queued return at once
  };

  void read_next();
  void on_read(const std::error_code& ec, std::size_t n);
  void write_through(std::size_t n);
  bool can_splice();
  void splice_step();
  bool splice_out();
  void wait_for(state waiting);
  void on_room();
  void on_source_eof();
  void on_source_ended();
  // Closes the connection with a reset, naming the side that failed.
  void fail(bool at_source, const std::error_code& ec);

  connection& owner_;
  const direction dir_;
  net::socket& src_;
  net::socket& dst_;
  send_queue out_;
  fault_chain chain_;
  std::vector<std::byte> buffer_;
  int splice_pipe_[2] = {-1, -1};  // the kernel pipe splice(2) moves bytes through
  std::size_t in_splice_pipe_ = 0;
  state state_ = state::created;
  // The source ended while a stall held the stream: the FIN waits for it.
  bool source_ended_pending_ = false;
};

}  // namespace faultlane::relays::detail
