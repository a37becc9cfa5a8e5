// A lane: one TCP connection of the initiator to a peer, owned by one shard
// for its whole life, with its own FIFO of frame exchanges, up to
// lane_inflight_max of them in flight at once (requests leave in order,
// answers come back in order; docs/architecture.md, "Pipelined lanes").
#pragma once

#include <asio/ip/tcp.hpp>

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"
#include "initiator/answer_reader.hpp"
#include "initiator/lane_connector.hpp"
#include "initiator/request_writer.hpp"
#include "initiator/task.hpp"
#include "runtime/deadline.hpp"

namespace faultlane::detail {

class peer_group;

class lane : public std::enable_shared_from_this<lane> {
 public:
  lane(runtime& rt, peer_group& group, std::size_t index, std::size_t shard);

  // All of these run on the lane's shard.
  void enqueue(op_chain ops);
  // Takes `ops` when this thread is running one of this lane's handlers (a
  // completion callback submitting the next operation): they are enqueued
  // as that handler returns, with no event-loop turn in between and no
  // re-entry into the lane mid-handler. False otherwise (and while ops
  // taken so are being enqueued, or a posted hand-off to this lane waits);
  // the caller posts.
  bool take_from_own_handler(op_chain& ops);
  // The posted hand-off's bookkeeping (peer_group::post_to_lane).
  void hand_off_posted() noexcept { posted_pending_.fetch_add(1, std::memory_order_relaxed); }
  void posted_hand_off_arrived() noexcept {
    posted_pending_.fetch_sub(1, std::memory_order_relaxed);
  }
  // Fail queued work with `why` (in-flight work is cut off and ends
  // through its handler), close; no reconnect after.
  void shutdown(status why = status::shutting_down);
  void drop_connection();                    // close as a network blip would; work reconnects
  void probe_finished();                     // the group's connect gate changed
  void cancel_task(const task_state* task);  // a sibling slice failed
  // Not on a shard: only once the io threads are joined (transport
  // destruction). Lets go of every op the lane still holds.
  void release_work() noexcept;

  std::size_t shard() const noexcept { return shard_; }
  std::size_t rail() const noexcept { return rail_; }

 private:
  friend class answer_reader;
  friend class lane_connector;
  friend class request_writer;

  enum class state { disconnected, waiting_for_probe, connecting, idle, busy, closed };
  enum class deadline_kind { connect, progress, idle };

  // Whether the target may have executed a failed WRITE: unknown unless
  // the target answered for it.
  enum class fate { unknown, not_executed };

  // Wraps a socket handler in the runtime's guard; an exception escaping it
  // drops this lane's connection and fails its work (on_handler_exception).
  // The lane stays alive until the handler ran.
  template <typename Fn>
  auto guarded(Fn fn) {
    return [self = shared_from_this(), fn = std::move(fn)](auto&&... args) mutable {
      self->run_handler([&] { fn(std::forward<decltype(args)>(args)...); });
    };
  }
  // Every handler of this lane runs through here: behind the runtime's
  // guard, marked as this lane's on its thread so that work its callbacks
  // hand the lane waits in deferred_ until `fn` returns.
  template <typename Fn>
  void run_handler(Fn&& fn) noexcept {
    lane* const outer = running_here_;
    FL_ASSERT(outer != this);  // a lane's handlers never nest
    running_here_ = this;
    run_guarded(rt_, std::forward<Fn>(fn), [this] { on_handler_exception(); });
    running_here_ = outer;
    if (!deferred_.empty()) take_deferred();
  }
  void take_deferred() noexcept;
  void on_handler_exception() noexcept;
  void arm_start_deadline(net::clock::time_point when);
  void expire_queued_work();
  int check_idle_connection();
  void pump();
  // The connector made the lane connected: it reports it and goes on.
  void on_connected();
  // The lane's connection (lane_connector::epoch).
  std::uint64_t epoch() const noexcept { return connector_.epoch(); }
  // Sends queued requests while the lane has room, and reads the answer of
  // the oldest exchange once its request has left.
  void continue_exchanges();
  void skip_cancelled();
  void send_requests();
  // The newest writer_.leaving() exchanges are the ones whose requests are leaving.
  bool head_request_sent() const { return inflight_.size() > writer_.leaving(); }
  // The oldest exchange got its answer; the connection stays.
  void complete_head(status code, std::uint64_t bytes, fate outcome);
  // The connection can no longer be trusted: it closes, and once no socket
  // operation is pending every exchange in flight ends (the oldest with
  // `head`, the rest with the connection's status).
  void break_connection(status head, fate outcome = fate::unknown);
  void settle_broken();
  void end_exchange(op_ptr op, status code, std::uint64_t bytes, fate outcome);
  void fail_queue(status code);
  void cancel_siblings(const transfer_op& failed);
  void close_socket(status why);
  void on_deadline();
  status io_failure() const;
  lane_event event() const;

  runtime& rt_;
  peer_group& group_;
  const std::size_t index_;
  const std::size_t rail_;
  const std::size_t shard_;
  net::socket socket_;
  deadline deadline_;
  deadline_kind deadline_kind_ = deadline_kind::progress;
  state state_ = state::disconnected;
  // queue_ and inflight_ recycle their blocks here (a std::deque frees a
  // block each time its front moves past one: two allocations per 64 ops).
  std::pmr::unsynchronized_pool_resource deque_blocks_;
  std::pmr::deque<op_ptr> queue_{&deque_blocks_};
  // Ends queued work whose start deadline passed (armed only while such
  // work waits; see transfer_request::start_deadline_ms).
  shard_timer start_timer_;
  net::clock::time_point start_timer_at_{};
  // Exchanges whose request started to leave, oldest first; the newest
  // writer_.leaving() of them are in a gather write and not all out yet.
  std::pmr::deque<op_ptr> inflight_{&deque_blocks_};
  bool timed_out_ = false;
  bool closing_ = false;  // shutdown() ran: no reconnect; ends closed
  // The connection has carried a request (reset at every connect): one
  // that has not is closed rather than kept idle (continue_exchanges).
  bool carried_request_ = false;
  struct breakage {
    status head;
    fate outcome;
  };
  std::optional<breakage> broken_;  // set from break_connection until settle_broken
  std::optional<status> abort_status_;
  // Ops handed over by this lane's own handlers (take_from_own_handler),
  // oldest first; enqueued when the handler returns.
  op_chain deferred_;
  bool taking_deferred_ = false;
  // Hand-offs posted to this lane and not yet enqueued (any thread): while
  // there are any, nothing is taken inline, so work never overtakes work a
  // thread handed this lane before it.
  std::atomic<std::uint32_t> posted_pending_{0};
  // The lane whose handler this thread is running, if any.
  static inline constinit thread_local lane* running_here_ = nullptr;
  // Connects the lane (lane_connector.hpp), sends the requests of the
  // exchanges in flight (request_writer.hpp) and reads their answers
  // (answer_reader.hpp).
  lane_connector connector_{*this};
  request_writer writer_{*this};
  answer_reader reader_{*this};
};

}  // namespace faultlane::detail
