// The relays' address rule: numeric IPv4, and loopback unless allowed.
#pragma once

#include <string>

#include "faultlane/core/status.hpp"

namespace faultlane::relays::detail {

// `what` names the address in the error ("listen", "upstream"...).
result<void> check_loopback(const std::string& what, const std::string& host, bool allowed);

}  // namespace faultlane::relays::detail
