// The status lists are declared once each (FAULTLANE_STATUSES,
// FAULTLANE_WIRE_STATUSES): the docs' tables are made from them here and
// must stand in the pages verbatim, and what the core derives from the wire
// list (the initiator's reading, the target's answer, header rejections)
// holds row by row.
#include <gtest/gtest.h>

#include <string>

#include "faultlane/core/frame.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/testing/docs_table.hpp"

namespace faultlane::status_tables {

TEST(status_tables, docs_status_table_matches_the_status_list) {
  std::string expected = "| status | severity | meaning |\n|---|---:|---|\n";
#define FAULTLANE_DOC_ROW(name, severity, meaning) \
  expected += "| `" #name "` | " #severity " | " meaning " |\n";
  FAULTLANE_STATUSES(FAULTLANE_DOC_ROW)
#undef FAULTLANE_DOC_ROW
  EXPECT_TRUE(docs_table::doc_holds("architecture.md", expected));
}

TEST(status_tables, each_status_has_its_rows_name_and_severity) {
  int row = 0;
#define FAULTLANE_CHECK_ROW(name, sev, meaning)                \
  EXPECT_EQ(static_cast<int>(status::name), row++) << #name;   \
  EXPECT_EQ(to_string(status::name), std::string_view(#name)); \
  EXPECT_EQ(severity(status::name), (sev)) << #name;
  FAULTLANE_STATUSES(FAULTLANE_CHECK_ROW)
#undef FAULTLANE_CHECK_ROW
  EXPECT_EQ(row, status_count);
}

TEST(status_tables, docs_wire_status_table_matches_the_wire_list) {
  std::string expected = "| value | name | meaning | initiator's status |\n|---:|---|---|---|\n";
#define FAULTLANE_DOC_ROW(name, code, initiator, meaning) \
  expected += "| " #code " | `" #name "` | " meaning " | `" #initiator "` |\n";
  FAULTLANE_WIRE_STATUSES(FAULTLANE_DOC_ROW)
#undef FAULTLANE_DOC_ROW
  EXPECT_TRUE(docs_table::doc_holds("protocol.md", expected));
}

// docs/protocol.md: the initiator reads each response status as its row
// says, and a header rejection is exactly a status it reads as a protocol
// error.
TEST(status_tables, the_initiator_reads_each_wire_status_as_its_row_says) {
#define FAULTLANE_CHECK_ROW(name, code, initiator, meaning)                         \
  EXPECT_EQ(wire::status_for(wire::wire_status::name), status::initiator) << #name; \
  EXPECT_EQ(wire::is_header_rejection(wire::wire_status::name),                     \
            status::initiator == status::protocol_error)                            \
      << #name;
  FAULTLANE_WIRE_STATUSES(FAULTLANE_CHECK_ROW)
#undef FAULTLANE_CHECK_ROW
}

// A target answers a status the initiator can read back with the row that
// reads back as it; anything else (no row, or only a header rejection's)
// as internal_error.
TEST(status_tables, a_target_answers_each_status_with_the_row_that_reads_back_as_it) {
  for (int i = 0; i < status_count; ++i) {
    const auto s = static_cast<status>(i);
    const auto answer = wire::wire_status_for(s);
    bool has_row = false;
#define FAULTLANE_HAS_ROW(name, code, initiator, meaning) \
  has_row = has_row || (status::initiator == s && s != status::protocol_error);
    FAULTLANE_WIRE_STATUSES(FAULTLANE_HAS_ROW)
#undef FAULTLANE_HAS_ROW
    if (has_row) {
      EXPECT_EQ(wire::status_for(answer), s) << to_string(s);
    } else {
      EXPECT_EQ(answer, wire::wire_status::internal_error) << to_string(s);
    }
  }
  EXPECT_EQ(wire::wire_status_for(status::protocol_error), wire::wire_status::internal_error);
  EXPECT_EQ(wire::wire_status_for(status::timeout), wire::wire_status::internal_error);
  EXPECT_EQ(wire::wire_status_for(status::ok), wire::wire_status::ok);
}

}  // namespace faultlane::status_tables
