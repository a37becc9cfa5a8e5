// The initiator's side of one opened segment: its persistent lanes. The
// group spreads work over its lanes with a per-peer sequence, so traffic to
// other peers never pins this peer to one lane. Because each lane queues its
// own work, the group shares only a small mutex-guarded connect gate: after
// a failed connect, reconnects are probed by one lane at a time, never
// before the cooldown.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "initiator/lane.hpp"

#include "faultlane/core/net.hpp"

namespace faultlane::detail {

class peer_group : public std::enable_shared_from_this<peer_group> {
 public:
  peer_group(runtime& rt, segment_id id, segment_descriptor descriptor,
             std::shared_ptr<descriptor_source> source = nullptr);

  // Any thread: picks a lane by the per-peer sequence and hands it the op.
  void submit(op_ptr op);
  // Any thread: the lane the per-peer sequence picks next. It stays as
  // long as the group does.
  const std::shared_ptr<lane>& next_lane();
  // Any thread: the next lane of `rail` (per-rail rotation).
  std::shared_ptr<lane> lane_for_rail(std::size_t rail);
  // The hop to the lane's shard, one post for the whole chain; none when
  // the lane's own handler hands it work (lane::take_from_own_handler).
  static void dispatch(runtime& rt, const std::shared_ptr<lane>& l, op_chain ops);
  static void dispatch(runtime& rt, const std::shared_ptr<lane>& l, op_ptr op) {
    dispatch(rt, l, op_chain(std::move(op)));
  }
  // Always the post, even from the lane's own handler.
  static void post_to_lane(runtime& rt, const std::shared_ptr<lane>& l, op_chain ops);
  // On `shard`, for the lanes it owns (the transport runs these on every
  // shard). Shutdown: fail queued work and close, no reconnect after.
  void shutdown_on(std::size_t shard, status why = status::shutting_down);
  void drop_connections_on(std::size_t shard);
  // Once the io threads are joined: every lane lets go of its work.
  void release_work() noexcept;

  segment_id id() const noexcept { return id_; }
  const segment_descriptor& descriptor() const noexcept { return descriptor_; }
  std::size_t rail_count() const noexcept { return descriptor_.endpoints.size(); }

  // Stale registration: one refresh of the descriptor, then one retry of
  // the op under the registration's new id, on a lane of the same rail.
  bool can_refresh() const;
  // A segment opened from a plain descriptor gains a source when it is
  // opened again from one (open_segment(source)); a source, once set, stays.
  void adopt_source(std::shared_ptr<descriptor_source> source);
  // The fetch goes through the source's fetch_async, so a source that asks
  // over the network never holds an io thread; the retry runs on `from`'s
  // shard once the answer is in.
  void refresh_and_retry(op_ptr op, const std::shared_ptr<lane>& from);
  void retry_after_refresh(op_ptr op, const std::shared_ptr<lane>& from,
                           const result<segment_descriptor>& fresh);
  // Once the io threads are joined: the source answers what it still holds
  // (each op then settles on the stopped pool's queue) and stops.
  void close_source() noexcept;

  // The connect gate (any shard).
  enum class connect_decision { go, wait, refuse };
  connect_decision request_connect(const std::shared_ptr<lane>& l);
  // A cancelled connect (drop_connections, shutdown) says nothing about the
  // peer: it neither starts nor ends a failure streak.
  enum class connect_outcome { connected, failed, cancelled };
  void connect_finished(connect_outcome outcome);

 private:
  runtime& rt_;
  const segment_id id_;
  const segment_descriptor descriptor_;
  std::vector<std::shared_ptr<lane>> lanes_;
  std::atomic<std::uint64_t> sequence_{0};
  std::vector<std::unique_ptr<std::atomic<std::uint64_t>>> rail_sequences_;
  mutable std::mutex names_mutex_;  // guards source_ and names_
  std::shared_ptr<descriptor_source> source_;
  std::unordered_map<registration_id, std::string> names_;  // every id ever seen

  std::mutex gate_mutex_;
  std::uint32_t failure_streak_ = 0;
  net::clock::time_point last_failure_{};
  bool probe_in_flight_ = false;
  std::vector<std::weak_ptr<lane>> waiting_;
};

}  // namespace faultlane::detail
