// transport_service: something that serves beside a transport, on its io
// threads, and stops first in its shutdown.
//
// The core knows no service by name: the control plane
// (faultlane/control/control_plane.hpp, docs/control-plane.md) is one, built
// over the transport's public API and attached with transport::attach().
// The transport owns what is attached. Its shutdown stops every service, in
// the order they were attached, after admission closed and before the data
// plane drains, all of them within half of what is left of
// shutdown_timeout_ms, so a service that stalls cannot eat the drain; the
// first failed stop is what shutdown() reports when nothing worse happened.
// Services are destroyed before anything else of the transport, its view
// (transport_view) included, so their handlers may hold that view.
#pragma once

#include <string_view>

#include "faultlane/core/net.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane {

class transport_service {
 public:
  virtual ~transport_service() = default;
  // A short name that transport::service() finds it by ("control").
  virtual std::string_view name() const noexcept = 0;
  // Stops serving; no handler of the service runs after it returned, or
  // after `deadline` if it reports a timeout. Called once, by shutdown().
  virtual result<void> stop(net::clock::time_point deadline) = 0;
};

}  // namespace faultlane
