// transport: the front of the core. Starts a transport, opens segments,
// registers buffers and reports stats; work goes through submit.cpp, the
// ordered shutdown through shutdown.cpp.
#include <asio/ip/address.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"
#include "transport_impl.hpp"

namespace faultlane {

using namespace std::chrono;

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
  FL_ASSERT(!d.endpoints.empty());  // checked above
  auto id = next_segment++;
  FL_ASSERT(id != 0);  // 0 is never a segment
  groups.emplace(id, std::make_shared<detail::peer_group>(rt, id, d, std::move(source)));
  return id;
}

// --- transport ------------------------------------------------------------------------

transport::transport(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

transport::~transport() {
  if (!impl_) return;
  if (impl_->rt.pool->on_pool_thread()) {
    // Destroyed from a completion callback: this thread cannot wait for its
    // own loop, so another thread shuts down and destroys. The callback
    // returns at once; every task still gets its one terminal status.
    net::thread([i = std::move(impl_)]() mutable {
      // Tests pause here: this object is gone, the services still serve.
      (void)FAULTLANE_FAILPOINT("transport.destroyed_from_callback");
      (void)i->shutdown();
      i.reset();
    }).detach();
    return;
  }
  (void)impl_->shutdown();
  FL_ASSERT(impl_->rt.pool->stopped());  // whatever shutdown returned, its threads are joined
}

result<std::unique_ptr<transport>> transport::start(const transport_config& config) {
  if (auto valid = validate(config); !valid) return valid.error();
  auto pool = io_pool::create(config.worker_count, config.busy_poll_us);
  if (!pool.ok()) return pool.error();
  auto i = std::make_unique<impl>(config);
  i->rt.pool = std::move(pool).value();
  i->srv = std::make_unique<detail::server>(i->rt);
  FL_ASSERT(i->rt.pool->size() == config.worker_count);
  if (auto listening = i->srv->listen(); !listening) {
    i->rt.pool->stop();
    return listening.error();
  }
  // new-ok: the constructor is private to start(), which owns the result at once.
  return std::unique_ptr<transport>(new transport(std::move(i)));
}

segment_descriptor transport::descriptor() const { return impl_->descriptor(); }

segment_descriptor transport::impl::descriptor() const {
  segment_descriptor d;
  FL_ASSERT(rt.incarnation != 0);
  d.incarnation = rt.incarnation;
  d.endpoints = srv->endpoints();
  d.max_transfer_bytes = rt.config.max_transfer_bytes;
  for (auto& r : rt.buffers.advertised()) {
    d.registrations.push_back({r.id, r.length, r.perm, std::move(r.name)});
  }
  return d;
}

result<void> transport::attach(std::unique_ptr<transport_service> service) {
  return impl_->attach(std::move(service));
}

result<void> transport::impl::attach(std::unique_ptr<transport_service> service) {
  if (!service) return error{status::invalid_argument, "attach: no service"};
  std::lock_guard guard(services_mutex);
  if (services_closed) return error{status::shutting_down, "attach: transport is shut down"};
  if (auto name = service->name();
      std::ranges::any_of(services, [&](const auto& s) { return s->name() == name; })) {
    return error{status::invalid_argument,
                 fmt::format("attach: a service named {:?} is attached already", name)};
  }
  services.push_back(std::move(service));
  return {};
}

transport_service* transport::service(std::string_view name) const {
  std::lock_guard guard(impl_->services_mutex);
  for (const auto& s : impl_->services) {
    if (s->name() == name) return s.get();
  }
  return nullptr;
}

const transport_view& transport::view() const { return *impl_; }

std::vector<advertised_registration> transport::impl::registrations_page(registration_id after,
                                                                         std::size_t max) const {
  std::vector<advertised_registration> page;
  for (auto& r : rt.buffers.advertised_page(after, max)) {
    page.push_back({r.id, r.length, r.perm, std::move(r.name)});
  }
  return page;
}

result<registration_id> transport::register_buffer(void* base, std::size_t length, permission perm,
                                                   std::string name) {
  // A name travels in the descriptor's text form, which carries only these.
  if (name.size() > limits::registration_name_bytes_max) {
    return error{status::invalid_argument,
                 fmt::format("register_buffer: name is {} bytes, most {}", name.size(),
                             limits::registration_name_bytes_max)};
  }
  if (!valid_registration_name(name)) {
    return error{status::invalid_argument,
                 "register_buffer: name is not valid UTF-8 text (or holds a surrogate or "
                 "noncharacter)"};
  }
  auto id = impl_->rt.buffers.register_buffer(base, length, perm, std::move(name));
  FL_ASSERT(!id.ok() || id.value() != 0);  // id 0 is never issued
  return id;
}

result<void> transport::unregister_buffer(registration_id id) {
  return impl_->rt.buffers.unregister_buffer(id);
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

result<std::shared_ptr<transfer_batch>> transport::submit(
    std::span<const transfer_request> requests, task_callback on_task_done) {
  return impl_->submit(requests, std::move(on_task_done));
}

transport_stats transport::stats() const { return impl_->stats(); }

transport_stats transport::impl::stats() const {
  const auto& c = rt.stats;
  transport_stats s;
#define FAULTLANE_STATS_LOAD(name, meaning) s.name = c.name.load(std::memory_order_acquire);
  FAULTLANE_TRANSPORT_COUNTERS(FAULTLANE_STATS_LOAD)
#undef FAULTLANE_STATS_LOAD
  auto snap = rt.admission_control.snapshot();
  s.tasks_admitted_now = snap.tasks;
  s.bytes_admitted_now = snap.bytes;
  s.rejected_busy = snap.rejected_busy;
  FL_ASSERT(snap.tasks <= rt.config.max_outstanding_tasks);
  s.leases_live = rt.buffers.active_leases();
  for (int i = 0; i < status_count; ++i) {
    s.failures_by_status[i] = c.failures_by_status[i].load(std::memory_order_acquire);
  }
  s.runtime_failed = rt.failed.load(std::memory_order_acquire);
  return s;
}

result<void> transport::shutdown() { return impl_->shutdown(); }

result<void> transport::close_segment(segment_id segment) { return impl_->close_segment(segment); }

}  // namespace faultlane
