// Configs for tests that must cover every row of the settings list
// (FAULTLANE_TRANSPORT_SETTINGS in config.hpp): one where every setting
// differs from its default, and a comparison that names each setting two
// configs disagree on. A row added to the list is covered with no edit here.
#pragma once

#include <gtest/gtest.h>

#include <sstream>

#include "faultlane/core/config.hpp"

namespace faultlane::testing {

// A value of the setting other than its default, inside its bounds: its
// maximum, or its minimum where the default is the maximum.
template <typename T>
constexpr T off_default(const transport_setting<T>& setting) {
  return setting.initial == setting.maximum ? setting.minimum : setting.maximum;
}

// A valid config whose every setting is off its default, and the hand-read
// rpc_worker_count too (the one other field a scenario may set as a number).
inline transport_config every_setting_off_default() {
  transport_config c;
  for_each_transport_setting([&](const auto& setting) { c.*setting.field = off_default(setting); });
  c.rpc_worker_count = 3;
  return c;
}

// `got` holds `want`'s value of every setting, and of rpc_worker_count and
// rpc_inline; the failure names each one that differs.
inline ::testing::AssertionResult same_settings(const transport_config& want,
                                                const transport_config& got) {
  std::ostringstream differ;
  auto compare = [&](std::string_view name, const auto& a, const auto& b) {
    if (a != b) differ << "\n  " << name << ": want " << a << ", got " << b;
  };
  for_each_transport_setting(
      [&](const auto& setting) { compare(setting.name, want.*setting.field, got.*setting.field); });
  compare("rpc_worker_count", want.rpc_worker_count, got.rpc_worker_count);
  compare("rpc_inline", want.rpc_inline, got.rpc_inline);
  if (differ.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "settings differ:" << differ.str();
}

}  // namespace faultlane::testing
