// Checks that a table generated from a declared-once list (counters,
// limits, settings, statuses) stands in a page of docs/ verbatim. The
// including test target defines FAULTLANE_SOURCE_DIR.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace faultlane::docs_table {

// Whether docs/<name> holds `table` verbatim; the failure shows the table.
inline ::testing::AssertionResult doc_holds(const std::string& name, const std::string& table) {
  std::ifstream doc(FAULTLANE_SOURCE_DIR "/docs/" + name);
  if (!doc) return ::testing::AssertionFailure() << "docs/" << name << " not found";
  std::stringstream text;
  text << doc.rdbuf();
  if (text.str().find(table) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "docs/" << name << " must hold exactly this table:\n"
                                       << table;
}

// How docs/configuration.md writes a number: powers of two from 1024 up as
// 2^k (and one below them as 2^k − 1), everything else in decimal.
inline std::string doc_value(std::uint64_t v) {
  if (v >= 1024 && (v & (v - 1)) == 0) return "2^" + std::to_string(std::countr_zero(v));
  if (v >= 1024 && ((v + 1) & v) == 0)
    return "2^" + std::to_string(std::countr_zero(v + 1)) + " − 1";
  return std::to_string(v);
}

}  // namespace faultlane::docs_table
