// Names and severities of status codes.
#include "faultlane/core/status.hpp"

#include <iterator>

namespace faultlane {
namespace {

struct status_info {
  status code;
  std::string_view name;
  int severity;
};

// One row per status, in the enum's order (row i is status i).
constexpr status_info status_table[] = {
    {status::ok, "ok", 0},
    {status::cancelled, "cancelled", 1},
    {status::busy, "busy", 2},
    {status::timeout, "timeout", 3},
    {status::connection_failed, "connection_failed", 3},
    {status::stale_registration, "stale_registration", 4},
    {status::range_rejected, "range_rejected", 5},
    {status::permission_denied, "permission_denied", 5},
    {status::protocol_error, "protocol_error", 6},
    {status::invalid_argument, "invalid_argument", 6},
    {status::sequence_exhausted, "sequence_exhausted", 6},
    {status::shutting_down, "shutting_down", 7},
    {status::runtime_failed, "runtime_failed", 8},
    {status::admission_underflow, "admission_underflow", 9},
    {status::ambiguous_write, "ambiguous_write", 10},
    {status::internal_error, "internal_error", 11},
};
static_assert(std::size(status_table) == static_cast<std::size_t>(status_count),
              "one row per status");
static_assert(
    [] {
      for (std::size_t i = 0; i < std::size(status_table); ++i) {
        if (status_table[i].code != static_cast<status>(i) || status_table[i].name.empty())
          return false;
      }
      return true;
    }(),
    "row i names status i: to_string() indexes the table by the enum's value");

const status_info& info(status code) noexcept {
  auto index = static_cast<std::size_t>(code);
  FL_ASSERT(index < std::size(status_table));
  return status_table[index];
}

}  // namespace

std::string_view to_string(status code) noexcept { return info(code).name; }

int severity(status code) noexcept { return info(code).severity; }

}  // namespace faultlane
