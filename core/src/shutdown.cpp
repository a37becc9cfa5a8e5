// The ordered shutdown, closing one segment, dropping connections, and
// destroying a transport from any thread after any shutdown result
// (docs/architecture.md, "Failure and shutdown").
#include <fmt/format.h>

#include <thread>

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"
#include "transport_impl.hpp"

namespace faultlane {

using namespace std::chrono;

// Shutdown order: close admission -> stop the attached services, the
// control plane among them (half the bound) -> close listeners -> drain
// queued dispatches -> cancel every lane and session on its owner shard -> wait for
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
  const auto deadline = net::clock::now() + milliseconds(rt.config.shutdown_timeout_ms);
  auto left = [&] {
    return std::max(milliseconds(0), duration_cast<milliseconds>(deadline - net::clock::now()));
  };
  auto on_every_shard = [&](std::function<void(std::size_t)> fn) {
    return detail::run_on_every_shard(rt, std::move(fn), deadline);
  };

  FL_ASSERT(!rt.pool->stopped());  // only shutdown stops the pool, and only once
  rt.closing.store(true, std::memory_order_release);
  rt.admission_control.close();
  // The services next (the control plane): their handlers read what the
  // rest tears down, and none may run once shutdown returns. They get half
  // the bound, so a control client that does not read cannot eat the data
  // plane's drain.
  const auto services_deadline = net::clock::now() + (deadline - net::clock::now()) / 2;
  {
    std::lock_guard closing(services_mutex);
    services_closed = true;  // the list no longer changes
  }
  result<void> services_stopped;
  for (auto& s : services) {
    if (auto stopped = s->stop(services_deadline); !stopped && services_stopped) {
      services_stopped = stopped;
    }
  }
  bool rounds_done = on_every_shard([this](std::size_t shard) { srv->stop_accepting(shard); });
  rounds_done = rounds_done && on_every_shard([](std::size_t) {});  // queued dispatches run first

  std::vector<std::shared_ptr<detail::peer_group>> all;
  {
    std::shared_lock lock(groups_mutex);
    for (auto& [id, g] : groups) all.push_back(g);
  }
  FAULTLANE_PERTURB("shutdown.lanes");
  rounds_done = rounds_done && on_every_shard([all](std::size_t shard) {
                  for (const auto& g : all) g->shutdown_on(shard);
                });
  rounds_done =
      rounds_done && on_every_shard([this](std::size_t shard) { srv->close_sessions(shard); });

  FAULTLANE_PERTURB("shutdown.drain");
  auto drained = rt.admission_control.wait_drained(left());
  FAULTLANE_PROBE_IF(drained.code() == status::timeout, shutdown_drain_timed_out);
  // Sessions end in their own handlers once their sockets are closed; each
  // round on every shard lets those handlers run.
  while (rounds_done && rt.stats.sessions_live.load(std::memory_order_acquire) > 0 &&
         left().count() > 0) {
    FAULTLANE_PROBE(shutdown_waits_for_sessions);
    rounds_done = on_every_shard([](std::size_t) {});
  }
  auto leases = rt.buffers.close(left());
  if (rounds_done) on_every_shard([](std::size_t) {});  // cancelled timers retire
  FAULTLANE_PERTURB("shutdown.stop");
  rt.pool->stop();
  FL_ASSERT(rt.pool->stopped());
  FL_ASSERT(!rt.accepting_work());

  shutdown_result = outcome_of_shutdown(rounds_done, drained, leases, services_stopped);
  return shutdown_result;
}

// What shutdown() reports, the most telling failure first.
result<void> transport::impl::outcome_of_shutdown(bool rounds_done, const result<void>& drained,
                                                  const result<void>& leases,
                                                  const result<void>& services_stopped) const {
  if (rt.failed.load(std::memory_order_acquire)) {
    return error{status::runtime_failed,
                 "an exception escaped an io handler; the runtime was marked failed"};
  }
  if (!rounds_done) {
    return error{status::timeout, "an io thread did not answer within shutdown_timeout_ms"};
  }
  if (!drained.ok()) return drained;
  if (auto live = rt.stats.sessions_live.load(); live > 0) {
    return error{status::timeout, fmt::format("{} session(s) still open", live)};
  }
  if (!leases.ok()) return leases;
  return services_stopped;
}

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
      return error{status::invalid_argument,
                   fmt::format("close_segment: unknown segment {}", segment)};
    }
    group = it->second;
    FL_ASSERT(group != nullptr && group->id() == segment);
    groups.erase(it);
    closed_groups.push_back(group);
  }
  const auto deadline = net::clock::now() + milliseconds(rt.config.shutdown_timeout_ms);
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
  FL_ASSERT(group != nullptr && group->id() == segment);
  if (impl_->rt.pool->on_pool_thread()) {
    // From a callback: hop to every shard without waiting on this one.
    for (std::size_t shard = 0; shard < impl_->rt.pool->size(); ++shard) {
      detail::post_guarded(impl_->rt, shard, [group, shard] { group->drop_connections_on(shard); });
    }
    return;
  }
  std::lock_guard guard(impl_->shutdown_mutex);  // never races the pool's stop
  if (impl_->shut_down) return;
  const auto deadline = net::clock::now() + milliseconds(impl_->rt.config.shutdown_timeout_ms);
  (void)detail::run_on_every_shard(
      impl_->rt, [group](std::size_t shard) { group->drop_connections_on(shard); }, deadline);
}

}  // namespace faultlane
