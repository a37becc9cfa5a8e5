// endpoint: the one address type in faultlane, a host and a port. Segment
// descriptors, observer events, relays and tools all use it, and read it
// from text with parse_endpoint ("HOST:PORT").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "faultlane/core/status.hpp"

namespace faultlane {

struct endpoint {
  std::string address;
  std::uint16_t port = 0;

  std::string str() const { return address + ":" + std::to_string(port); }
  friend bool operator==(const endpoint&, const endpoint&) = default;
};

// "HOST:PORT" (the last colon splits them; PORT is 0..65535 in decimal).
// The host is not resolved or checked here: whoever binds or connects does.
result<endpoint> parse_endpoint(std::string_view text);

}  // namespace faultlane
