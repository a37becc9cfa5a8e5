// transport::impl: the state behind a transport, shared by its parts:
// transport.cpp (the front: start, segments, registrations, stats),
// submit.cpp (admission and dispatch of work, task completion) and
// shutdown.cpp (the ordered shutdown, closing segments, dropping
// connections, and destruction).
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include "faultlane/core/transport.hpp"
#include "initiator/lane_handoff.hpp"
#include "initiator/peer_group.hpp"
#include "initiator/task.hpp"
#include "target/server.hpp"

namespace faultlane {

class transport::impl final : public transport_view {
 public:
  explicit impl(const transport_config& config) : rt(config) {}
  // Runs after shutdown() joined the io threads, whatever it returned.
  // Work a drain that gave up left behind settles here, while everything it
  // settles into (admission, stats, registry, batches) is still alive: the
  // lanes let go of the ops they hold, groups and the server let go of their
  // sockets' owners, then the pool goes, destroying handlers that never ran
  // (their ops settle shutting_down), then the rest of the runtime.
  ~impl() {
    // Before anything a service's handlers read (this view among it).
    FL_ASSERT(rt.pool->stopped());
    services.clear();
    for (auto& [id, g] : groups) g->release_work();
    for (auto& g : closed_groups) g->release_work();
    for (auto& [id, g] : groups) g->close_source();
    for (auto& g : closed_groups) g->close_source();
    groups.clear();
    closed_groups.clear();
    srv.reset();
    rt.pool.reset();
  }

  // transport_view
  segment_descriptor descriptor() const override;
  transport_stats stats() const override;
  const transport_config& config() const override { return rt.config; }
  io_pool& io() const override { return *rt.pool; }
  bool accepting_work() const override { return rt.accepting_work(); }
  std::vector<advertised_registration> registrations_page(registration_id after,
                                                          std::size_t max) const override;

  result<void> attach(std::unique_ptr<transport_service> service);

  result<segment_id> open(const segment_descriptor& d,
                          std::shared_ptr<descriptor_source> source = nullptr);
  result<std::shared_ptr<transfer_batch>> submit(std::span<const transfer_request> requests,
                                                 task_callback callback);
  result<void> shutdown();
  result<void> outcome_of_shutdown(bool rounds_done, const result<void>& drained,
                                   const result<void>& leases,
                                   const result<void>& services_stopped) const;
  void finalize_task(transfer_batch::state& batch, std::size_t index, status code,
                     std::uint64_t bytes);
  result<std::uint64_t> check_batch(std::span<const transfer_request> requests,
                                    std::span<detail::peer_group*> targets) const;
  result<void> close_segment(segment_id segment);
  void dispatch(const transfer_request& r, detail::task_state& task,
                const std::shared_ptr<transfer_batch>& batch, detail::peer_group& group,
                detail::lane_handoff& handoff);

  // Batches, ops and lane hand-offs (batch_memory.hpp); declared first, so
  // it is the last member to go (each block also holds it).
  std::shared_ptr<detail::batch_memory> memory = detail::batch_memory::create();
  detail::runtime rt;
  std::unique_ptr<detail::server> srv;

  mutable std::shared_mutex groups_mutex;
  std::unordered_map<segment_id, std::shared_ptr<detail::peer_group>> groups;
  // Closed segments: their connections are closed and their work settled,
  // but a late handler of one of their lanes may still refer to the group,
  // so the group itself goes with the transport.
  std::vector<std::shared_ptr<detail::peer_group>> closed_groups;
  segment_id next_segment = 1;

  // Attached services (transport_service.hpp), under services_mutex, which
  // no one holds while waiting: attach() and a lookup never wait for a
  // shutdown. shutdown() closes the list (services_closed) before it stops
  // them; after that the list no longer changes until it is destroyed.
  mutable std::mutex services_mutex;
  bool services_closed = false;
  std::vector<std::unique_ptr<transport_service>> services;

  std::mutex shutdown_mutex;
  bool shut_down = false;
  result<void> shutdown_result;
};

}  // namespace faultlane
