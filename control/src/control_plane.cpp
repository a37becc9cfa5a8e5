// The control plane: an rpc::server on the transport's io threads, its five
// built-in methods, and the service that attaches it to the transport; see
// control_plane.hpp.
#include "faultlane/control/control_plane.hpp"

#include <fmt/format.h>

#include <locale>
#include <mutex>
#include <regex>

#include "faultlane/control/rpc_client.hpp"
#include "faultlane/control/rpc_messages.hpp"
#include "faultlane/control/rpc_server.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"

namespace faultlane::control {
namespace {

using rpc::call;
using rpc::reply;
using rpc::rpc_status;

reply bad_request(const result<void>& r) {
  return reply::failure(rpc_status::bad_request, r.error().message);
}

// libstdc++'s ctype<char>::narrow caches each character's answer in the
// facet on first use, unsynchronised (GCC bug 77704): two workers compiling
// their first patterns at once race on that cache (ThreadSanitizer reports
// it under concurrent list_registrations calls). Narrowing every character
// once, before any worker runs, leaves the cache read-only after. It warms
// the facet of the global locale as it is when the control plane starts;
// a program that installs another global locale later is not covered.
void warm_narrow_cache() {
  static const bool warmed = [] {
    const auto& ctype = std::use_facet<std::ctype<char>>(std::locale());
    for (int c = 1; c < 256; ++c) (void)ctype.narrow(static_cast<char>(c), '\0');
    return true;
  }();
  (void)warmed;
}

reply list_registrations(const transport_view& t, const call& c) {
  auto pattern = rpc::decode_pattern(c.body);
  if (!pattern) return reply::failure(rpc_status::bad_request, pattern.error().message);
  std::regex re;
  try {
    // libstdc++'s polynomial (breadth-first) matcher: a pattern like
    // (a*)*b cannot make one name take exponential time, as the default
    // backtracking matcher would; patterns with back-references, which it
    // cannot run, are refused here.
    re = std::regex(pattern.value(), std::regex::ECMAScript | std::regex::optimize |
                                         std::regex_constants::__polynomial);
  } catch (const std::regex_error& e) {
    return reply::failure(rpc_status::bad_request,
                          fmt::format("pattern {:?} is not an ECMAScript regex: {}",
                                      pattern.value().substr(0, 64), e.what()));
  }
  // A page at a time (registry::advertised_page), matched outside the
  // registry's lock: registering never waits on the matching. Unnamed and
  // local_only registrations are not listed, as describe leaves them out.
  std::vector<rpc::named_registration> found;
  registration_id after = 0;
  while (true) {
    auto page = t.registrations_page(after, limits::registration_page_max);
    if (page.empty()) return reply::ok(rpc::encode_registrations(found));
    after = page.back().id;
    // Between pages the registry's lock is free: a register paused against
    // here completes (transport_control_test).
    (void)FAULTLANE_FAILPOINT("control.scan_page");
    if (c.stop_requested()) {
      return reply::failure(rpc_status::cancelled, "the service stopped during the scan");
    }
    for (auto& r : page) {
      if (!r.name.empty() && std::regex_search(r.name, re)) {
        found.push_back({r.id, std::move(r.name)});
      }
    }
  }
}

rpc::stat_list stats_of(const transport_view& t, const rpc::server& server) {
  rpc::stat_list out;
  const auto s = t.stats();
  for (const auto& c : transport_counters) out.emplace_back(std::string(c.name), s.*c.field);
  out.emplace_back("tasks_admitted_now", s.tasks_admitted_now);
  out.emplace_back("bytes_admitted_now", s.bytes_admitted_now);
  out.emplace_back("rejected_busy", s.rejected_busy);
  out.emplace_back("leases_live", s.leases_live);
  for (int i = 0; i < status_count; ++i) {
    out.emplace_back(fmt::format("tasks_ended.{}", to_string(static_cast<status>(i))),
                     s.failures_by_status[i]);
  }
  for (auto& kv : server.metrics().flatten()) out.push_back(std::move(kv));
  return out;
}

// The control plane as a service the transport owns and stops first. It
// is attached before its server starts (serve() below), so a shutdown
// that begins meanwhile either stops the server or keeps it from starting:
// no server outlives the io threads it runs on.
class plane final : public transport_service {
 public:
  static constexpr std::string_view service_name = "control";
  std::string_view name() const noexcept override { return service_name; }

  result<void> start(const transport_view& t, const rpc::server_options& options);
  result<void> stop(net::clock::time_point deadline) override {
    rpc::server* running = nullptr;
    {
      std::lock_guard guard(mutex_);
      stopped_ = true;
      running = server_.get();
    }
    return running != nullptr ? running->stop(deadline) : result<void>{};
  }
  // Null until started; then the same server until the plane goes.
  const rpc::server* server() const {
    std::lock_guard guard(mutex_);
    return server_.get();
  }

 private:
  mutable std::mutex mutex_;
  bool stopped_ = false;
  std::unique_ptr<rpc::server> server_;
};

plane* plane_of(const transport& t) { return dynamic_cast<plane*>(t.service(plane::service_name)); }

// Where the listener binds: rpc_bind_address, else the data plane's own
// address (bind_address unless it is the wildcard, else the first rail),
// else the advertised address.
std::string bind_address_of(const transport_config& c) {
  if (!c.rpc_bind_address.empty()) return c.rpc_bind_address;
  if (!c.bind_address.empty() && c.bind_address != "0.0.0.0") return c.bind_address;
  if (!c.rail_addresses.empty()) return c.rail_addresses.front();
  return c.advertise_address;
}

rpc::server_options options_of(const transport_config& c) {
  rpc::server_options o;
  o.bind_address = bind_address_of(c);
  o.port = c.rpc_port;
  o.workers = c.rpc_inline              ? 0
              : c.rpc_worker_count == 0 ? c.worker_count
                                        : static_cast<std::size_t>(c.rpc_worker_count);
  o.queue_max = c.rpc_queue_max;
  o.request_bytes_max = limits::rpc_request_bytes_max;
  o.response_bytes_max = limits::rpc_response_bytes_max;
  return o;
}

// The handlers hold the view and the server: the transport destroys its
// services, the server with its waits for handlers, before the view goes.
void add_methods(rpc::server& server, const transport_view& t) {
  using rpc::placement;
  server.add("ping", placement::inline_on_io, [](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok();
  });
  server.add("service_ready", placement::inline_on_io, [&t](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok(rpc::encode_ready(t.accepting_work()));
  });
  server.add("describe", placement::pooled, [&t](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok(rpc::encode_descriptor(t.descriptor()));
  });
  server.add("list_registrations", placement::pooled,
             [&t](const call& c) { return list_registrations(t, c); });
  server.add("stats", placement::pooled, [&t, &server](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok(rpc::encode_stats(stats_of(t, server)));
  });
}

result<void> plane::start(const transport_view& t, const rpc::server_options& options) {
  std::lock_guard guard(mutex_);
  if (stopped_) {
    return error{status::shutting_down, "control::serve: the transport is shutting down"};
  }
  if (server_) {
    return error{status::invalid_argument, "control::serve: the transport serves one already"};
  }
  warm_narrow_cache();
  auto started = rpc::server::start(t.io(), options);
  if (!started) return started.error();
  server_ = std::move(started).value();
  add_methods(*server_, t);
  return {};
}

}  // namespace

result<void> serve(transport& t) {
  const auto& c = t.view().config();
  if (!c.rpc_enabled) return {};
  auto* p = plane_of(t);
  if (p == nullptr) {
    auto fresh = std::make_unique<plane>();
    auto* mine = fresh.get();
    auto attached = t.attach(std::move(fresh));
    // Refused as a name taken: another serve() attached one meanwhile.
    p = attached ? mine : plane_of(t);
    if (p == nullptr) return attached.error();
  }
  return p->start(t.view(), options_of(c));
}

result<std::unique_ptr<transport>> start_transport(const transport_config& config) {
  auto t = transport::start(config);
  if (!t) return t;
  if (auto served = serve(*t.value()); !served) return served.error();
  return t;
}

std::optional<endpoint> endpoint_of(const transport& t) {
  const auto* p = plane_of(t);
  const auto* server = p != nullptr ? p->server() : nullptr;
  if (server == nullptr) return std::nullopt;
  return server->local_endpoint();
}

rpc::metrics_snapshot metrics_of(const transport& t) {
  const auto* p = plane_of(t);
  const auto* server = p != nullptr ? p->server() : nullptr;
  return server != nullptr ? server->metrics() : rpc::metrics_snapshot{};
}

result<segment_id> open_segment(transport& t, std::string_view control_endpoint) {
  auto at = parse_endpoint(control_endpoint);
  if (!at) return at.error();
  rpc::client_options o;
  o.server = at.value();
  o.connect_timeout_ms = t.view().config().connect_timeout_ms;
  // describe answers at once: a stall shows within 2 s, and a refresh
  // ends within 5 s, inside the default shutdown bound.
  o.call_timeout_ms = 2000;
  o.overall_timeout_ms = 5000;
  o.retry_busy = true;
  auto source = rpc::rpc_descriptor_source::create(o);
  if (!source) return source.error();
  return t.open_segment(std::shared_ptr<descriptor_source>(std::move(source).value()));
}

}  // namespace faultlane::control
