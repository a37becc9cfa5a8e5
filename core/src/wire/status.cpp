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

// FAULTLANE_STATUSES, one row per status in the enum's order (row i is
// status i).
#define FAULTLANE_STATUS_ROW(name, severity, meaning) {status::name, #name, (severity)},
constexpr status_info status_table[] = {FAULTLANE_STATUSES(FAULTLANE_STATUS_ROW)};
#undef FAULTLANE_STATUS_ROW
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
