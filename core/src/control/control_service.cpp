// The transport's control plane: its RPC server and the five built-in
// methods (docs/control-plane.md). ping and service_ready run inline on
// the io thread; describe, list_registrations and stats on the worker pool
// (or inline too, with rpc_inline).
#include <fmt/format.h>

#include <locale>
#include <regex>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/rpc_messages.hpp"
#include "transport_impl.hpp"

namespace faultlane {
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

reply list_registrations(transport::impl& t, const call& c) {
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
    auto page = t.rt.buffers.advertised_page(after, limits::registration_page_max);
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

rpc::stat_list stats_of(transport::impl& t) {
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
  for (auto& kv : s.control.flatten()) out.push_back(std::move(kv));
  return out;
}

}  // namespace

std::string transport::impl::control_bind_address() const {
  const auto& c = rt.config;
  if (!c.rpc_bind_address.empty()) return c.rpc_bind_address;
  if (!c.bind_address.empty() && c.bind_address != "0.0.0.0") return c.bind_address;
  if (!c.rail_addresses.empty()) return c.rail_addresses.front();
  return c.advertise_address;
}

result<void> transport::impl::start_control() {
  const auto& c = rt.config;
  if (!c.rpc_enabled) return {};
  warm_narrow_cache();
  rpc::server_options o;
  o.bind_address = control_bind_address();
  o.port = c.rpc_port;
  o.workers = c.rpc_inline              ? 0
              : c.rpc_worker_count == 0 ? c.worker_count
                                        : static_cast<std::size_t>(c.rpc_worker_count);
  o.queue_max = c.rpc_queue_max;
  o.request_bytes_max = limits::rpc_request_bytes_max;
  o.response_bytes_max = limits::rpc_response_bytes_max;
  auto started = rpc::server::start(*rt.pool, o);
  if (!started) return started.error();
  control = std::move(started).value();
  using rpc::placement;
  control->add("ping", placement::inline_on_io, [](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok();
  });
  control->add("service_ready", placement::inline_on_io, [this](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok(rpc::encode_ready(rt.accepting_work()));
  });
  control->add("describe", placement::pooled, [this](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok(rpc::encode_descriptor(describe()));
  });
  control->add("list_registrations", placement::pooled,
               [this](const call& c) { return list_registrations(*this, c); });
  control->add("stats", placement::pooled, [this](const call& c) {
    if (auto empty = rpc::decode_empty(c.body); !empty) return bad_request(empty);
    return reply::ok(rpc::encode_stats(stats_of(*this)));
  });
  return {};
}

}  // namespace faultlane
