// The control plane's response statuses are one list
// (FAULTLANE_RPC_STATUSES): docs/protocol.md's table is made from it here and
// must stand in the page verbatim, and a caller reads each status as its
// row says.
#include <gtest/gtest.h>

#include <string>

#include "faultlane/control/rpc_frame.hpp"
#include "faultlane/control/rpc_server.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/testing/docs_table.hpp"

namespace faultlane::rpc::status_table {

TEST(rpc_status_table, docs_status_table_matches_the_status_list) {
  std::string expected =
      "| value | name | meaning | `faultlane::status` at the client |\n|---:|---|---|---|\n";
#define FAULTLANE_DOC_ROW(name, code, caller, meaning) \
  expected += "| " #code " | `" #name "` | " meaning " | `" #caller "` |\n";
  FAULTLANE_RPC_STATUSES(FAULTLANE_DOC_ROW)
#undef FAULTLANE_DOC_ROW
  EXPECT_TRUE(docs_table::doc_holds("protocol.md", expected));
}

TEST(rpc_status_table, a_caller_reads_each_status_as_its_row_says) {
  int row = 0;
#define FAULTLANE_CHECK_ROW(name, code, caller, meaning)           \
  EXPECT_EQ(static_cast<int>(rpc_status::name), row++) << #name;   \
  EXPECT_EQ(to_string(rpc_status::name), std::string_view(#name)); \
  EXPECT_EQ(status_for(rpc_status::name), faultlane::status::caller) << #name;
  FAULTLANE_RPC_STATUSES(FAULTLANE_CHECK_ROW)
#undef FAULTLANE_CHECK_ROW
  EXPECT_EQ(row, rpc_status_max + 1);
}

// The rules a caller's retry policy stands on (docs/control-plane.md): busy
// stays busy (retry_busy sends it again), a call the stopping service
// dropped is cancelled, and a call that cannot succeed is a bad argument.
TEST(rpc_status_table, only_busy_reads_as_busy_and_refusals_read_as_bad_arguments) {
  EXPECT_EQ(status_for(rpc_status::busy), faultlane::status::busy);
  EXPECT_EQ(status_for(rpc_status::cancelled), faultlane::status::cancelled);
  EXPECT_EQ(status_for(rpc_status::shutting_down), faultlane::status::shutting_down);
  for (auto s : {rpc_status::unknown_method, rpc_status::bad_request, rpc_status::too_large}) {
    EXPECT_EQ(status_for(s), faultlane::status::invalid_argument) << to_string(s);
  }
  // The table's "64 MiB" is the answer size a server (by default) and a
  // client take, most.
  EXPECT_EQ(server_options{}.response_bytes_max, 64u << 20);
  EXPECT_EQ(limits::rpc_response_bytes_max, 64u << 20);
}

}  // namespace faultlane::rpc::status_table
