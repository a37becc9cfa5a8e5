// Names and severities of status codes.
#include "faultlane/core/status.hpp"

#include <array>

namespace faultlane {
namespace {

struct status_info {
  std::string_view name;
  int severity;
};

constexpr std::array<status_info, status_count> status_table{{
    {"ok", 0},
    {"cancelled", 1},
    {"busy", 2},
    {"timeout", 3},
    {"connection_failed", 3},
    {"stale_registration", 4},
    {"range_rejected", 5},
    {"permission_denied", 5},
    {"protocol_error", 6},
    {"invalid_argument", 6},
    {"sequence_exhausted", 6},
    {"shutting_down", 7},
    {"runtime_failed", 8},
    {"admission_underflow", 9},
    {"ambiguous_write", 10},
    {"internal_error", 11},
}};

const status_info& info(status code) noexcept {
  auto index = static_cast<std::size_t>(code);
  FL_ASSERT(index < status_table.size());
  return status_table[index];
}

}  // namespace

std::string_view to_string(status code) noexcept { return info(code).name; }

int severity(status code) noexcept { return info(code).severity; }

}  // namespace faultlane
