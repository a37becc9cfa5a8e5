// The control plane of a transport (docs/control-plane.md): an rpc::server
// on the transport's io threads with the five built-in methods. ping and
// service_ready run inline on the io thread; describe, list_registrations
// and stats on the worker pool (or inline too, with rpc_inline).
//
// It is built over the transport's public API and attached to the
// transport (transport::attach), which stops it first in its shutdown:
//
//   auto t = control::start_transport(config);  // transport + control plane
//   auto at = control::endpoint_of(*t.value());  // where peers call it
//   auto seg = control::open_segment(*other, at->str());  // a peer opens it
//
// The transport_config's rpc_* settings are read here; transport::start
// alone serves no control plane.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "faultlane/control/rpc_metrics.hpp"
#include "faultlane/core/config.hpp"
#include "faultlane/core/endpoint.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane::control {

// transport::start(config), then serve(): the transport with its control
// plane as `config` says. Fails as a whole: a control plane that cannot
// listen leaves no transport running.
result<std::unique_ptr<transport>> start_transport(const transport_config& config);

// Serves `t`'s control plane as its config's rpc_* settings say (nothing
// when rpc_enabled is false) and attaches it to `t`. invalid_argument if
// `t` serves one already; shutting_down once `t`'s shutdown began. From any
// thread, an io thread included; it never waits for a shutdown.
result<void> serve(transport& t);

// Where `t`'s control plane listens, when it serves or served one: kept
// after the shutdown, when a call to it is normally refused at connect.
// From any thread.
std::optional<endpoint> endpoint_of(const transport& t);
// Its calls by method and status, busy rejections, queue depth, queue wait
// and handler time: what the `stats` method sends after the transport's
// counters. Empty when `t` serves none.
rpc::metrics_snapshot metrics_of(const transport& t);

// Opens the peer whose control plane listens at `control_endpoint`
// ("127.0.0.1:PORT"): the descriptor is fetched with `describe`, and
// fetched again on a stale registration (an rpc_descriptor_source with
// `t`'s connect_timeout_ms, 2 s per call, 5 s in all, busy retried).
result<segment_id> open_segment(transport& t, std::string_view control_endpoint);

}  // namespace faultlane::control
