// One relayed connection: the accepted client socket, the upstream socket,
// and a pipe per direction. Everything here runs on the relay's io thread.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/steady_timer.hpp>

#include <deque>
#include <memory>
#include <optional>
#include <vector>

#include "relay_internal.hpp"

namespace faultlane::relays::detail {

class connection;

// One direction: reads from `src`, runs the bytes through this direction's
// faults, writes to `dst`.
class pipe {
 public:
  pipe(connection& owner, direction dir, asio::ip::tcp::socket& src, asio::ip::tcp::socket& dst);
  ~pipe();
  void start();
  void recheck();  // the fault chain changed
  void cancel() { timer_.cancel(); }  // the connection is closing
  bool finished() const noexcept { return finished_; }

 private:
  struct fault_state {
    fault_ptr fault;
    bool applies = false;   // direction, connection, rail and probability matched
    bool done = false;      // a one-shot fault already fired here
    bool counted = false;   // a per-connection fault was counted here
    bool holds_slot = false;
  };
  struct out_item {
    enum class kind : std::uint8_t { data, fin, reset, close };
    kind what = kind::data;
    clock_type::time_point not_before{};
    std::vector<std::byte> bytes;
  };

  void read_next();
  void on_read(const std::error_code& ec, std::size_t n);
  bool can_splice();
  void splice_step();
  void refresh_faults();
  bool needs_slow_path() const;
  void process(std::byte* data, std::size_t n);
  void handle_piece(piece& p);
  void apply_frame_faults(piece& p);
  std::optional<std::uint64_t> position_of(const fault_state& s, const piece& p) const;
  void forward(const std::byte* data, std::size_t n);
  void fire_positional(fault_state& s, const piece& p, std::uint64_t at);
  void push(out_item item);
  void pump_out();
  void on_source_closed();
  bool try_fire(fault_state& s, std::uint64_t frame);
  void count_once(fault_state& s, const piece* p);
  tap_record base_record() const;

  connection& owner_;
  relay_state& state_;
  const direction dir_;
  asio::ip::tcp::socket& src_;
  asio::ip::tcp::socket& dst_;
  asio::steady_timer timer_;
  std::vector<std::byte> buffer_;
  std::optional<frame_stream> decoder_;
  std::vector<fault_state> faults_;
  std::uint64_t generation_ = 0;
  std::uint64_t received_ = 0;  // source stream offset
  std::deque<out_item> out_;
  std::size_t out_bytes_ = 0;
  bool writing_ = false;
  bool reading_ = false;
  bool read_paused_ = false;
  bool stalled_ = false;
  bool swallowing_ = false;  // blackhole or after half_close
  bool closed_src_ = false;
  bool finished_ = false;
  clock_type::time_point bandwidth_free_{};
  std::mt19937_64 jitter_;
  std::vector<std::byte> held_back_;  // bytes behind a stall
  int splice_pipe_[2] = {-1, -1};     // zero-copy pass-through (Linux splice)
  std::size_t in_splice_pipe_ = 0;
  // corrupt field=payload faults that fired on the frame whose payload is
  // passing: which byte of that payload, and the bits to flip.
  struct payload_flip {
    std::uint64_t byte = 0;
    std::byte mask{};
  };
  struct payload_flips {
    std::uint64_t frame = 0;
    std::vector<payload_flip> flips;
  };
  std::optional<payload_flips> payload_flips_;
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(std::shared_ptr<relay_state> state, asio::ip::tcp::socket client, std::uint64_t index);
  ~connection();
  void start();
  void recheck();
  // RST both ways (reset fault, or a peer's reset), or FIN-close both.
  void abort(bool with_reset);
  void pipe_finished();

  relay_state& state() noexcept { return *state_; }
  std::uint64_t index() const noexcept { return index_; }
  bool decoding() const noexcept { return decode_; }
  pairing& pairs() noexcept { return pairs_; }
  std::shared_ptr<connection> self() { return shared_from_this(); }

 private:
  void on_upstream_connected(const std::error_code& ec);
  void record(record_kind kind);  // open/close, to the tap

  std::shared_ptr<relay_state> state_;
  asio::ip::tcp::socket client_;
  asio::ip::tcp::socket upstream_;
  const std::uint64_t index_;
  bool decode_ = false;
  bool closed_ = false;
  pairing pairs_;
  std::unique_ptr<pipe> up_;
  std::unique_ptr<pipe> down_;
  std::string client_address_;
  std::string upstream_local_;
  std::string upstream_remote_;
};

}  // namespace faultlane::relays::detail
