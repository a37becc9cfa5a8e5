// transport: the front of the core. Validates and admits work, owns the
// target side (server) and the peer groups, and runs the ordered shutdown.
#include "faultlane/core/transport.hpp"

#include <asio/ip/address.hpp>
#include <fmt/format.h>

#include <map>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "client.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/slice_plan.hpp"
#include "runtime.hpp"
#include "server.hpp"

namespace faultlane {

using namespace std::chrono;

// --- transfer_batch ------------------------------------------------------------

transfer_batch::transfer_batch(std::unique_ptr<state> s, std::size_t size)
    : state_(std::move(s)), size_(size) {}

transfer_batch::~transfer_batch() = default;

task_status transfer_batch::status(std::size_t index) const {
  FL_ASSERT(index < size_);
  const auto& t = state_->tasks[index];
  task_status out;
  out.done = t.done.load(std::memory_order_acquire);
  out.code = static_cast<faultlane::status>(t.code.load(std::memory_order_acquire));
  out.transferred_bytes = t.bytes.load(std::memory_order_acquire);
  return out;
}

std::size_t transfer_batch::completed() const {
  return state_->completed.load(std::memory_order_acquire);
}

bool transfer_batch::wait(milliseconds timeout) const {
  // Small batches on a fast path finish within microseconds; a short spin
  // saves the waiter a sleep and a wake-up, which would double a 4 KiB
  // READ's latency. Past it, the waiter blocks.
  constexpr auto spin = microseconds(50);
  for (auto until = steady_clock::now() + std::min<steady_clock::duration>(spin, timeout);
       steady_clock::now() < until;) {
    if (completed() == size_) return true;
    std::this_thread::yield();
  }
  std::unique_lock lock(state_->mutex);
  return state_->all_done.wait_for(lock, timeout, [&] { return completed() == size_; });
}

// --- transport::impl ---------------------------------------------------------------

class transport::impl {
 public:
  explicit impl(const transport_config& config) : rt(config) {}
  // Runs after shutdown() joined the io threads, whatever it returned.
  // Handlers still queued never ran; destroying them settles the work they
  // hold (shutting_down), so it happens while everything they settle into
  // (admission, stats, registry, batches) is still alive: groups and the
  // server let go of their sockets' owners first, then the pool goes, then
  // the rest of the runtime.
  ~impl() {
    FL_ASSERT(rt.pool->stopped());
    groups.clear();
    closed_groups.clear();
    srv.reset();
    rt.pool.reset();
  }

  result<segment_id> open(const segment_descriptor& d,
                          std::shared_ptr<descriptor_source> source = nullptr);
  result<std::shared_ptr<transfer_batch>> submit(std::span<const transfer_request> requests,
                                                 task_callback callback);
  result<void> shutdown();
  void finalize_task(transfer_batch::state& batch, std::size_t index, status code,
                     std::uint64_t bytes);
  result<std::uint64_t> check_batch(std::span<const transfer_request> requests,
                                    std::vector<std::shared_ptr<detail::peer_group>>& targets) const;
  result<void> close_segment(segment_id segment);
  void dispatch(const transfer_request& r, detail::task_state& task,
                const std::shared_ptr<transfer_batch>& batch, detail::peer_group& group);

  detail::runtime rt;
  std::unique_ptr<detail::server> srv;

  mutable std::shared_mutex groups_mutex;
  std::unordered_map<segment_id, std::shared_ptr<detail::peer_group>> groups;
  // Closed segments: their connections are closed and their work settled,
  // but a late handler of one of their lanes may still refer to the group,
  // so the group itself goes with the transport.
  std::vector<std::shared_ptr<detail::peer_group>> closed_groups;
  segment_id next_segment = 1;

  std::mutex names_mutex;
  std::map<registration_id, std::string> names;

  std::mutex shutdown_mutex;
  bool shut_down = false;
  result<void> shutdown_result;
};

namespace {

result<void> check_descriptor(const segment_descriptor& d, const transport_config& local) {
  if (d.incarnation == 0) return error{status::invalid_argument, "descriptor: incarnation is 0"};
  if (d.endpoints.empty()) return error{status::invalid_argument, "descriptor: no endpoints"};
  for (const auto& e : d.endpoints) {
    std::error_code ec;
    auto address = asio::ip::make_address(e.address, ec);
    if (ec || !address.is_v4() || address.is_unspecified() || e.port == 0) {
      return error{status::invalid_argument,
                   fmt::format("descriptor: endpoint {}:{} is not a numeric IPv4 address and port",
                               e.address, e.port)};
    }
  }
  std::size_t local_rails = std::max<std::size_t>(1, local.rail_addresses.size());
  if (d.endpoints.size() != local_rails) {
    return error{status::invalid_argument,
                 fmt::format("rail count mismatch: this transport has {} rail(s), the peer {}",
                             local_rails, d.endpoints.size())};
  }
  if (d.max_transfer_bytes == 0) {
    return error{status::invalid_argument, "descriptor: max_transfer_bytes is 0"};
  }
  return {};
}

}  // namespace

result<segment_id> transport::impl::open(const segment_descriptor& d,
                                         std::shared_ptr<descriptor_source> source) {
  if (!rt.accepting_work()) {
    return error{rt.failed ? status::runtime_failed : status::shutting_down,
                 "transport is not accepting work"};
  }
  if (auto valid = check_descriptor(d, rt.config); !valid) return valid.error();
  std::unique_lock lock(groups_mutex);
  // One group per remote incarnation: opening it again returns the same.
  for (const auto& [id, group] : groups) {
    if (group->descriptor().incarnation != d.incarnation) continue;
    // Opened before from a plain descriptor: the source turns refresh on.
    if (source) group->adopt_source(std::move(source));
    return id;
  }
  auto id = next_segment++;
  groups.emplace(id, std::make_shared<detail::peer_group>(rt, id, d, std::move(source)));
  return id;
}

// Checks every request against its segment; the caller holds groups_mutex.
result<std::uint64_t> transport::impl::check_batch(
    std::span<const transfer_request> requests,
    std::vector<std::shared_ptr<detail::peer_group>>& targets) const {
  std::uint64_t total_bytes = 0;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    auto it = groups.find(r.segment);
    if (it == groups.end()) {
      return error{status::invalid_argument,
                   fmt::format("request {}: unknown or closed segment {}", i, r.segment)};
    }
    auto limit = std::min(rt.config.max_transfer_bytes, it->second->descriptor().max_transfer_bytes);
    if (r.local == nullptr || r.length == 0 || r.length > limit) {
      return error{status::invalid_argument,
                   fmt::format("request {}: needs a local buffer and 1 <= length <= {} (got {})",
                               i, limit, r.length)};
    }
    if (r.op != wire::opcode::read && r.op != wire::opcode::write) {
      return error{status::invalid_argument, fmt::format("request {}: unknown opcode", i)};
    }
    if (r.remote_offset > UINT64_MAX - r.length) {
      return error{status::invalid_argument, fmt::format("request {}: offset overflows", i)};
    }
    if (r.start_deadline_ms > limits::timeout_ms_max) {
      return error{status::invalid_argument,
                   fmt::format("request {}: start_deadline_ms must be at most {}, got {}", i,
                               limits::timeout_ms_max, r.start_deadline_ms)};
    }
    total_bytes += r.length;
    targets.push_back(it->second);
  }
  return total_bytes;
}

result<std::shared_ptr<transfer_batch>> transport::impl::submit(
    std::span<const transfer_request> requests, task_callback callback) {
  if (rt.failed.load(std::memory_order_acquire)) {
    return error{status::runtime_failed, "transport runtime failed; new work is rejected"};
  }
  if (rt.closing.load(std::memory_order_acquire)) {
    return error{status::shutting_down, "transport is shutting down"};
  }
  if (requests.empty()) return error{status::invalid_argument, "submit: empty batch"};

  // Held until every op is dispatched, so close_segment() never misses one.
  std::shared_lock lock(groups_mutex);
  std::vector<std::shared_ptr<detail::peer_group>> targets;
  targets.reserve(requests.size());
  auto checked = check_batch(requests, targets);
  if (!checked.ok()) return checked.error();
  const std::uint64_t total_bytes = checked.value();

  auto reserved = rt.admission_control.try_reserve(requests.size(), total_bytes);
  if (!reserved.ok()) return reserved.error();

  auto state = std::make_unique<transfer_batch::state>();
  state->rt = &rt;
  state->size = requests.size();
  state->callback = std::move(callback);
  state->tasks = std::make_unique<detail::task_state[]>(requests.size());
  auto* raw_state = state.get();
  auto batch = std::make_shared<transfer_batch>(std::move(state), requests.size());

  for (std::size_t i = 0; i < requests.size(); ++i) {
    const auto& r = requests[i];
    auto& task = raw_state->tasks[i];
    task.index = i;
    task.reservation = reserved->split(1, r.length);
    task.info = {rt.next_task_id.fetch_add(1, std::memory_order_relaxed), r.op, r.segment,
                 r.remote_registration, r.remote_offset, r.length};
    const bool sliced = r.op == wire::opcode::read && read_is_sliced(r.length, targets[i]->rail_count());
    const std::uint32_t references = sliced ? static_cast<std::uint32_t>(targets[i]->rail_count()) : 1;
    task.settle.emplace(terminal_action([this, raw_state, i](status code, std::uint64_t bytes) {
                          finalize_task(*raw_state, i, code, bytes);
                        }),
                        references);
    detail::bump(rt.stats.tasks_submitted);
    if (rt.observer) rt.observer->task_submitted(task.info);
  }
  if (rt.observer) {
    auto snap = rt.admission_control.snapshot();
    rt.observer->admission_changed(snap.tasks, snap.bytes);
  }
  for (std::size_t i = 0; i < requests.size(); ++i) dispatch(requests[i], raw_state->tasks[i], batch, *targets[i]);
  return batch;
}

// One frame exchange per task, or for a sliced READ one per rail: each
// slice goes to the next lane of its rail, and all complete as one task.
void transport::impl::dispatch(const transfer_request& r, detail::task_state& task,
                               const std::shared_ptr<transfer_batch>& batch,
                               detail::peer_group& group) {
  const auto start_by = steady_clock::now() + milliseconds(r.start_deadline_ms);
  auto make_op = [&](std::uint64_t offset, std::uint64_t length) {
    auto op = std::make_unique<detail::transfer_op>();
    op->task = &task;
    op->batch = batch;
    op->op = r.op;
    op->local = static_cast<std::byte*>(r.local) + offset;
    op->length = length;
    op->remote_registration = r.remote_registration;
    op->remote_offset = r.remote_offset + offset;
    op->slice_offset = offset;
    if (r.start_deadline_ms > 0) op->start_by = start_by;
    op->request_id = rt.next_request_id.fetch_add(1, std::memory_order_relaxed);
    return op;
  };
  if (r.op != wire::opcode::read || !read_is_sliced(r.length, group.rail_count())) {
    return group.submit(make_op(0, r.length));
  }
  auto plan = plan_read_slices(r.length, group.rail_count());
  // All lanes are chosen before any slice starts, so a failing slice always
  // finds the full list of siblings to cancel.
  for (const auto& s : plan) task.slice_lanes.push_back(group.lane_for_rail(s.rail));
  for (std::size_t k = 0; k < plan.size(); ++k) {
    auto op = make_op(plan[k].offset, plan[k].length);
    op->rail = plan[k].rail;
    detail::peer_group::dispatch(rt, task.slice_lanes[k], std::move(op));
  }
}

void transport::impl::finalize_task(transfer_batch::state& batch, std::size_t index, status code,
                                    std::uint64_t bytes) {
  auto& task = batch.tasks[index];
  // Every slice retired: drop the lane references, so a batch the caller
  // keeps never keeps lanes (and their sockets) alive.
  task.slice_lanes.clear();
  task.reservation.release();
  task.code.store(static_cast<std::uint16_t>(code), std::memory_order_release);
  task.bytes.store(bytes, std::memory_order_release);
  detail::bump(rt.stats.tasks_completed);
  if (code == status::ok) detail::bump(rt.stats.bytes_completed, bytes);
  detail::bump(rt.stats.failures_by_status[static_cast<int>(code)]);
  if (rt.observer) {
    rt.observer->task_finalized(task.info, code, bytes);
    auto snap = rt.admission_control.snapshot();
    rt.observer->admission_changed(snap.tasks, snap.bytes);
  }
  // A throwing callback marks the runtime failed; the task is still done.
  if (batch.callback) detail::run_guarded(rt, [&] { batch.callback(index, code, bytes); });
  task.done.store(true, std::memory_order_release);
  if (batch.completed.fetch_add(1, std::memory_order_acq_rel) + 1 != batch.size) return;
  std::lock_guard lock(batch.mutex);
  batch.all_done.notify_all();
}

// Shutdown order: close admission and listeners -> drain queued dispatches
// -> cancel every lane and session on its owner shard -> wait for
// operations and leases -> stop and join the io threads. Every wait is
// bounded by one deadline; whatever did not drain by then is settled as
// shutting_down when the transport is destroyed.
result<void> transport::impl::shutdown() {
  if (rt.pool->on_pool_thread()) {
    // Waiting here would wait on this very thread's loop.
    return error{status::invalid_argument,
                 "shutdown() called on an io thread (from a completion callback or observer); "
                 "call it from another thread, or destroy the transport there"};
  }
  std::lock_guard guard(shutdown_mutex);
  if (shut_down) return shutdown_result;
  shut_down = true;
  const auto deadline = steady_clock::now() + milliseconds(rt.config.shutdown_timeout_ms);
  auto left = [&] {
    return std::max(milliseconds(0), duration_cast<milliseconds>(deadline - steady_clock::now()));
  };
  auto on_every_shard = [&](std::function<void(std::size_t)> fn) {
    return detail::run_on_every_shard(rt, std::move(fn), deadline);
  };

  rt.closing.store(true, std::memory_order_release);
  rt.admission_control.close();
  bool rounds_done = on_every_shard([this](std::size_t shard) { srv->stop_accepting(shard); });
  rounds_done = rounds_done && on_every_shard([](std::size_t) {});  // queued dispatches run first

  std::vector<std::shared_ptr<detail::peer_group>> all;
  {
    std::shared_lock lock(groups_mutex);
    for (auto& [id, g] : groups) all.push_back(g);
  }
  rounds_done = rounds_done && on_every_shard([all](std::size_t shard) {
                  for (const auto& g : all) g->shutdown_on(shard);
                });
  rounds_done = rounds_done && on_every_shard([this](std::size_t shard) {
                  srv->close_sessions(shard);
                });

  auto drained = rt.admission_control.wait_drained(left());
  // Sessions end in their own handlers once their sockets are closed; each
  // round on every shard lets those handlers run.
  while (rounds_done && rt.stats.sessions_live.load(std::memory_order_acquire) > 0 &&
         left().count() > 0) {
    rounds_done = on_every_shard([](std::size_t) {});
  }
  auto leases = rt.buffers.close(left());
  if (rounds_done) on_every_shard([](std::size_t) {});  // cancelled timers retire
  rt.pool->stop();

  if (rt.failed.load(std::memory_order_acquire)) {
    shutdown_result = error{status::runtime_failed,
                            "an exception escaped an io handler; the runtime was marked failed"};
  } else if (!rounds_done) {
    shutdown_result = error{status::timeout, "an io thread did not answer within shutdown_timeout_ms"};
  } else if (!drained.ok()) {
    shutdown_result = drained;
  } else if (auto live = rt.stats.sessions_live.load(); live > 0) {
    shutdown_result = error{status::timeout, fmt::format("{} session(s) still open", live)};
  } else if (!leases.ok()) {
    shutdown_result = leases;
  }
  return shutdown_result;
}

// --- transport ------------------------------------------------------------------------

transport::transport(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

transport::~transport() {
  if (!impl_) return;
  if (impl_->rt.pool->on_pool_thread()) {
    // Destroyed from a completion callback: this thread cannot wait for its
    // own loop, so another thread shuts down and destroys. The callback
    // returns at once; every task still gets its one terminal status.
    std::thread([i = std::move(impl_)]() mutable {
      (void)i->shutdown();
      i.reset();
    }).detach();
    return;
  }
  (void)impl_->shutdown();
}

result<std::unique_ptr<transport>> transport::start(const transport_config& config) {
  if (auto valid = validate(config); !valid) return valid.error();
  auto pool = io_pool::create(config.worker_count, config.busy_poll_us);
  if (!pool.ok()) return pool.error();
  auto i = std::make_unique<impl>(config);
  i->rt.pool = std::move(pool).value();
  i->srv = std::make_unique<detail::server>(i->rt);
  if (auto listening = i->srv->listen(); !listening) {
    i->rt.pool->stop();
    return listening.error();
  }
  return std::unique_ptr<transport>(new transport(std::move(i)));
}

segment_descriptor transport::descriptor() const {
  segment_descriptor d;
  d.incarnation = impl_->rt.incarnation;
  d.endpoints = impl_->srv->endpoints();
  d.max_transfer_bytes = impl_->rt.config.max_transfer_bytes;
  std::lock_guard lock(impl_->names_mutex);
  for (const auto& r : impl_->rt.buffers.advertised()) {
    auto name = impl_->names.find(r.id);
    d.registrations.push_back(
        {r.id, r.length, r.perm, name == impl_->names.end() ? std::string() : name->second});
  }
  return d;
}

result<registration_id> transport::register_buffer(void* base, std::size_t length,
                                                   permission perm, std::string name) {
  auto id = impl_->rt.buffers.register_buffer(base, length, perm);
  if (id.ok() && !name.empty()) {
    std::lock_guard lock(impl_->names_mutex);
    impl_->names[id.value()] = std::move(name);
  }
  return id;
}

result<void> transport::unregister_buffer(registration_id id) {
  auto done = impl_->rt.buffers.unregister_buffer(id);
  std::lock_guard lock(impl_->names_mutex);
  impl_->names.erase(id);
  return done;
}

result<segment_id> transport::open_segment(const segment_descriptor& descriptor) {
  return impl_->open(descriptor);
}

result<segment_id> transport::open_segment(std::shared_ptr<descriptor_source> source) {
  if (!source) return error{status::invalid_argument, "open_segment: no descriptor source"};
  auto d = source->fetch();
  if (!d.ok()) return d.error();
  return impl_->open(d.value(), std::move(source));
}

result<std::shared_ptr<transfer_batch>> transport::submit(std::span<const transfer_request> requests,
                                                          task_callback on_task_done) {
  return impl_->submit(requests, std::move(on_task_done));
}

transport_stats transport::stats() const {
  const auto& c = impl_->rt.stats;
  transport_stats s;
#define FAULTLANE_STATS_LOAD(name, meaning) s.name = c.name.load(std::memory_order_acquire);
  FAULTLANE_TRANSPORT_COUNTERS(FAULTLANE_STATS_LOAD)
#undef FAULTLANE_STATS_LOAD
  auto snap = impl_->rt.admission_control.snapshot();
  s.tasks_admitted_now = snap.tasks;
  s.bytes_admitted_now = snap.bytes;
  s.rejected_busy = snap.rejected_busy;
  s.leases_live = impl_->rt.buffers.active_leases();
  for (int i = 0; i < status_count; ++i) {
    s.failures_by_status[i] = c.failures_by_status[i].load(std::memory_order_acquire);
  }
  s.runtime_failed = impl_->rt.failed.load(std::memory_order_acquire);
  return s;
}

result<void> transport::shutdown() { return impl_->shutdown(); }

result<void> transport::close_segment(segment_id segment) { return impl_->close_segment(segment); }

result<void> transport::impl::close_segment(segment_id segment) {
  if (rt.pool->on_pool_thread()) {
    return error{status::invalid_argument, "close_segment() called on an io thread"};
  }
  std::lock_guard guard(shutdown_mutex);  // never races the pool's stop
  if (shut_down) return error{status::shutting_down, "transport is shut down"};
  std::shared_ptr<detail::peer_group> group;
  {
    std::unique_lock lock(groups_mutex);  // waits for submits still dispatching
    auto it = groups.find(segment);
    if (it == groups.end()) {
      return error{status::invalid_argument, fmt::format("close_segment: unknown segment {}", segment)};
    }
    group = it->second;
    groups.erase(it);
    closed_groups.push_back(group);
  }
  const auto deadline = steady_clock::now() + milliseconds(rt.config.shutdown_timeout_ms);
  if (!detail::run_on_every_shard(
          rt, [group](std::size_t shard) { group->shutdown_on(shard, status::cancelled); },
          deadline)) {
    return error{status::timeout, "close_segment: an io thread did not answer in time"};
  }
  return {};
}

void transport::drop_connections(segment_id segment) {
  std::shared_ptr<detail::peer_group> group;
  {
    std::shared_lock lock(impl_->groups_mutex);
    auto it = impl_->groups.find(segment);
    if (it == impl_->groups.end()) return;
    group = it->second;
  }
  if (impl_->rt.pool->on_pool_thread()) {
    // From a callback: hop to every shard without waiting on this one.
    for (std::size_t shard = 0; shard < impl_->rt.pool->size(); ++shard) {
      detail::post_guarded(impl_->rt, shard, [group, shard] { group->drop_connections_on(shard); });
    }
    return;
  }
  std::lock_guard guard(impl_->shutdown_mutex);  // never races the pool's stop
  if (impl_->shut_down) return;
  const auto deadline = steady_clock::now() + milliseconds(impl_->rt.config.shutdown_timeout_ms);
  (void)detail::run_on_every_shard(
      impl_->rt, [group](std::size_t shard) { group->drop_connections_on(shard); }, deadline);
}

}  // namespace faultlane
