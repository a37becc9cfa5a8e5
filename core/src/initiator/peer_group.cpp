// peer_group: the lanes to one peer incarnation, the per-peer rotation over
// them, the connect gate, and the stale-registration refresh; see
// peer_group.hpp.
#include <asio/bind_allocator.hpp>
#include <asio/post.hpp>

#include <algorithm>

#include "initiator/lane_handoff.hpp"
#include "initiator/peer_group.hpp"

#include "faultlane/base/probe.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::detail {

using namespace std::chrono;

// --- peer_group ------------------------------------------------------------------

peer_group::peer_group(runtime& rt, segment_id id, segment_descriptor descriptor,
                       std::shared_ptr<descriptor_source> source)
    : rt_(rt), id_(id), descriptor_(std::move(descriptor)), source_(std::move(source)) {
  for (const auto& r : descriptor_.registrations) {
    if (!r.name.empty()) names_[r.id] = r.name;
  }
  FL_ASSERT(!descriptor_.endpoints.empty());
  FL_ASSERT(rt_.config.connections_per_peer >= descriptor_.endpoints.size());
  for (std::size_t i = 0; i < rt_.config.connections_per_peer; ++i) {
    lanes_.push_back(std::make_shared<lane>(rt_, *this, i, rt_.pool->next_shard()));
  }
  for (std::size_t r = 0; r < rail_count(); ++r) {
    rail_sequences_.push_back(std::make_unique<std::atomic<std::uint64_t>>(0));
  }
}

// The hop to the lane's shard; enqueue() guards what it runs.
void peer_group::dispatch(runtime& rt, const std::shared_ptr<lane>& l, op_chain ops) {
  FL_ASSERT(!ops.empty() && ops.front().memory);
  if (l->take_from_own_handler(ops)) return;
  post_to_lane(rt, l, std::move(ops));
}

void peer_group::post_to_lane(runtime& rt, const std::shared_ptr<lane>& l, op_chain ops) {
  FL_ASSERT(!ops.empty() && ops.front().memory);
  // The handler's memory comes from the transport's pool too: a hand-off
  // from a thread outside the pool allocates nothing (Asio recycles only
  // on its own threads).
  pooled_allocator<std::byte> memory(ops.front().memory);
  l->hand_off_posted();
  try {
    asio::post(rt.pool->context(l->shard()),
               asio::bind_allocator(std::move(memory), [l, ops = std::move(ops)]() mutable {
                 l->posted_hand_off_arrived();
                 l->enqueue(std::move(ops));
               }));
  } catch (...) {
    l->posted_hand_off_arrived();
    throw;
  }
}

const std::shared_ptr<lane>& peer_group::next_lane() {
  return lanes_[sequence_.fetch_add(1, std::memory_order_relaxed) % lanes_.size()];
}

void peer_group::submit(op_ptr op) {
  FL_ASSERT(op && op->rail == transfer_op::any_rail);  // slices go to a lane of their rail
  dispatch(rt_, next_lane(), std::move(op));
}

// --- lane_handoff -----------------------------------------------------------------

void lane_handoff::add(const std::shared_ptr<lane>& l, op_ptr op) {
  FL_ASSERT(op);
  auto* e = std::find_if(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(used_),
                         [&l](const entry& x) { return x.to->get() == l.get(); });
  if (e == entries_.begin() + static_cast<std::ptrdiff_t>(used_)) {
    if (used_ == lanes_max) flush();
    e = &entries_[used_++];
    e->to = &l;
  }
  e->ops.push_back(std::move(op));
}

void lane_handoff::flush() {
  for (std::size_t i = 0; i < used_; ++i) {
    auto& e = entries_[i];
    FL_ASSERT(e.to != nullptr && !e.ops.empty());
    peer_group::dispatch(rt_, *e.to, std::move(e.ops));
    FL_ASSERT(e.ops.empty());  // moved from
  }
  used_ = 0;
}

// Lane i serves rail i % rails, so rail r's lanes are r, r + rails, ...
std::shared_ptr<lane> peer_group::lane_for_rail(std::size_t rail) {
  FL_ASSERT(rail < rail_count());
  const std::size_t rails = rail_count();
  const std::size_t per_rail = (lanes_.size() - rail + rails - 1) / rails;
  auto turn = rail_sequences_[rail]->fetch_add(1, std::memory_order_relaxed) % per_rail;
  return lanes_[rail + turn * rails];
}

bool peer_group::can_refresh() const {
  std::lock_guard lock(names_mutex_);
  return source_ != nullptr;
}

void peer_group::adopt_source(std::shared_ptr<descriptor_source> source) {
  FL_ASSERT(source);
  std::lock_guard lock(names_mutex_);
  if (!source_) source_ = std::move(source);
}

void peer_group::refresh_and_retry(op_ptr op, const std::shared_ptr<lane>& from) {
  FL_ASSERT(!op->refreshed);
  op->refreshed = true;
  bump(rt_.stats.stale_refresh_attempts);
  std::shared_ptr<descriptor_source> source;
  {
    std::lock_guard lock(names_mutex_);
    source = source_;
  }
  FL_ASSERT(source);
  source->fetch_async([self = shared_from_this(), op = std::move(op),
                       from](result<segment_descriptor> fresh) mutable {
    const auto shard = from->shard();
    auto& rt = self->rt_;  // before `self` moves into the handler
    post_guarded(rt, shard,
                 [self = std::move(self), op = std::move(op), from = std::move(from),
                  fresh = std::move(fresh)]() mutable {
                   self->retry_after_refresh(std::move(op), from, fresh);
                 });
  });
}

void peer_group::retry_after_refresh(op_ptr op, const std::shared_ptr<lane>& from,
                                     const result<segment_descriptor>& fresh) {
  // Only a refresh that names the same buffer at the same endpoints can be
  // retried here; anything else stays stale_registration.
  if (!fresh.ok() || fresh.value().endpoints != descriptor_.endpoints) {
    return retire(std::move(op), status::stale_registration, 0);
  }
  std::optional<registration_id> renamed;
  {
    std::lock_guard lock(names_mutex_);
    auto name = names_.find(op->remote_registration);
    for (const auto& r : fresh.value().registrations) {
      if (!r.name.empty()) names_[r.id] = r.name;
      if (name != names_.end() && r.name == name->second && r.id != op->remote_registration) {
        renamed = r.id;
      }
    }
  }
  if (!renamed) {
    FAULTLANE_PROBE(refresh_found_no_new_id);
    return retire(std::move(op), status::stale_registration, 0);
  }
  FAULTLANE_PROBE(stale_id_refreshed_by_name);
  bump(rt_.stats.stale_refreshes);
  op->remote_registration = *renamed;
  op->request_id = rt_.next_request_id.fetch_add(1, std::memory_order_relaxed);
  if (op->rail == transfer_op::any_rail) return submit(std::move(op));
  // A slice retries on its own lane: same rail, and still where a failing
  // sibling will look for it to cancel it.
  dispatch(rt_, from, std::move(op));
}

void peer_group::shutdown_on(std::size_t shard, status why) {
  FL_ASSERT(why != status::ok);
  FL_ASSERT(shard < rt_.pool->size());
  for (auto& l : lanes_) {
    if (l->shard() == shard) l->shutdown(why);
  }
}

void peer_group::release_work() noexcept {
  for (auto& l : lanes_) l->release_work();
}

void peer_group::close_source() noexcept {
  std::shared_ptr<descriptor_source> source;
  {
    std::lock_guard lock(names_mutex_);
    source = source_;
  }
  if (source) source->close();
}

void peer_group::drop_connections_on(std::size_t shard) {
  FL_ASSERT(shard < rt_.pool->size());
  for (auto& l : lanes_) {
    if (l->shard() == shard) l->drop_connection();
  }
}

peer_group::connect_decision peer_group::request_connect(const std::shared_ptr<lane>& l) {
  FL_ASSERT(l != nullptr);
  std::lock_guard lock(gate_mutex_);
  if (failure_streak_ == 0) return connect_decision::go;  // healthy: lanes connect in parallel
  auto cooldown = milliseconds(rt_.config.reconnect_cooldown_ms);
  if (net::clock::now() < last_failure_ + cooldown) {
    FAULTLANE_PROBE(connect_refused_in_cooldown);
    return connect_decision::refuse;
  }
  if (probe_in_flight_) {
    FAULTLANE_PROBE(connect_waits_for_probe);
    waiting_.push_back(l);
    return connect_decision::wait;
  }
  probe_in_flight_ = true;
  FAULTLANE_PROBE(connect_probes_failed_peer);
  return connect_decision::go;
}

void peer_group::connect_finished(connect_outcome outcome) {
  std::vector<std::weak_ptr<lane>> wake;
  {
    std::lock_guard lock(gate_mutex_);
    if (outcome == connect_outcome::connected) {
      failure_streak_ = 0;
    } else if (outcome == connect_outcome::failed) {
      ++failure_streak_;
      last_failure_ = net::clock::now();
    }
    probe_in_flight_ = false;
    wake.swap(waiting_);
    FL_ASSERT(waiting_.empty());
    FL_ASSERT(outcome != connect_outcome::connected || failure_streak_ == 0);
  }
  for (auto& weak : wake) {
    if (auto l = weak.lock()) {
      post_guarded(rt_, l->shard(), [l] { l->probe_finished(); });
    }
  }
}

}  // namespace faultlane::detail
