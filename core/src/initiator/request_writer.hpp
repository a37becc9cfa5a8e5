// A lane's request side: the requests of the exchanges the lane starts
// leave in one gather write (a header, and a WRITE's body straight from the
// caller's buffer, per request), usually all at once; what does not fit
// goes on asynchronously, one request at a time, while the answers of the
// ones out are read. The writer marks which requests had a byte leave (the
// ambiguity rule) and which are all out (their answers may be read). The
// lane owns the exchanges in flight (the newest leaving() of them are this
// write's) and the socket (request_writer.cpp, docs/architecture.md,
// "Pipelined lanes" and "The hot path").
#pragma once

#include <asio/buffer.hpp>

#include <array>
#include <cstdint>
#include <span>

#include "initiator/task.hpp"

namespace faultlane::detail {

class lane;

class request_writer {
 public:
  // What the writer is doing; the write's handler asserts the state it expects.
  enum class state : std::uint8_t {
    idle,     // no request leaving
    leaving,  // a gather write's requests are leaving: being added, written
              // by the handler running now, or cut by a broken connection
    writing,  // the rest of the gather write leaves through an async_write
              // whose handler has not run
  };

  explicit request_writer(lane& owner) : lane_(owner) {}
  request_writer(const request_writer&) = delete;
  request_writer& operator=(const request_writer&) = delete;

  bool writing() const noexcept { return state_ == state::writing; }
  // Requests of the gather write not all out yet (the newest in flight).
  std::size_t leaving() const noexcept { return leaving_; }
  // The gather write has buffers for one more request.
  bool has_room() const noexcept { return state_ == state::idle || buffers_ + 2 <= gather_.size(); }
  // `op`'s request joins the gather write being built: a request that
  // would take it past group_bytes_max starts the next one, so a large
  // WRITE leaves alone.
  bool takes(const transfer_op& op) const noexcept;
  // Adds the request of `op`, the newest exchange in flight.
  void add(transfer_op& op);
  // Sends the requests added; the lane goes on when they are out.
  void send();
  // The exchanges in flight were cut (the lane settled a broken
  // connection): their requests are no longer leaving.
  void cut() noexcept;
  // The io threads are joined (lane::release_work): a write still
  // outstanding will never complete, and nothing is leaving any more.
  void release() noexcept {
    state_ = state::idle;
    leaving_ = 0;
  }

  // Bytes of an op's request on the wire: its header, and a WRITE's body.
  static std::size_t request_bytes(const transfer_op& op) noexcept;

 private:
  void write(std::size_t sent);
  void on_written(const std::error_code& ec, std::size_t sent, std::size_t m);
  void requests_left(std::size_t sent);
  bool requests_out(std::size_t sent);

  // A gather write takes no more requests once it holds this many bytes.
  static constexpr std::size_t group_bytes_max = 256u << 10;

  lane& lane_;
  state state_ = state::idle;
  std::size_t leaving_ = 0;
  // The gather write: its buffers, what is left of them, its bytes, and
  // the bytes of its requests that are out.
  std::array<asio::const_buffer, 64> gather_{};
  std::size_t buffers_ = 0;
  std::span<asio::const_buffer> gather_rest_;
  std::size_t group_bytes_ = 0;
  std::size_t group_out_ = 0;
};

}  // namespace faultlane::detail
