// parse_endpoint; see endpoint.hpp.
#include "faultlane/core/endpoint.hpp"

#include <fmt/format.h>

namespace faultlane {

result<endpoint> parse_endpoint(std::string_view text) {
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return error{status::invalid_argument, fmt::format("'{}' is not HOST:PORT", text)};
  }
  auto digits = text.substr(colon + 1);
  if (digits.empty() || digits.size() > 5) {
    return error{status::invalid_argument, fmt::format("'{}': bad port", text)};
  }
  std::uint32_t port = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') {
      return error{status::invalid_argument, fmt::format("'{}': bad port", text)};
    }
    port = port * 10 + static_cast<std::uint32_t>(c - '0');
  }
  if (port > 65535) return error{status::invalid_argument, fmt::format("'{}': bad port", text)};
  endpoint e{std::string(text.substr(0, colon)), static_cast<std::uint16_t>(port)};
  FL_ASSERT(!e.address.empty());
  return e;
}

}  // namespace faultlane
