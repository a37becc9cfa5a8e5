// The declared-once lists hold together: the counters, the failpoints, the
// planted bugs and the limits are each one list in the sources, and the
// docs' tables and the sources' own uses are checked against it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/limits.hpp"
#include "faultlane/testing/docs_table.hpp"
#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

using namespace testing;
using docs_table::doc_holds;

// The counter table in docs/architecture.md is the declared-once list.
TEST(transport_hardening, docs_counter_table_matches_the_counter_list) {
  std::string expected = "| counter | counts |\n|---|---|\n";
  for (const auto& c : transport_counters) {
    expected += "| `" + std::string(c.name) + "` | " + std::string(c.meaning) + " |\n";
  }
  EXPECT_TRUE(doc_holds("architecture.md", expected));
}

// failpoint::known_names is every failpoint the sources evaluate (the
// core's and the control plane's), no more, and docs/architecture.md's
// failpoint table names each of them.
TEST(transport_hardening, known_failpoints_match_the_sources_and_the_docs) {
  std::set<std::string> in_sources;
  const std::regex call(R"re(FAULTLANE_FAILPOINT(?:_KEY)?\("([a-z_.]+)")re");
  for (const char* tree : {FAULTLANE_SOURCE_DIR "/core/src", FAULTLANE_SOURCE_DIR "/control/src"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(tree)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const auto body = text.str();
      for (std::sregex_iterator it(body.begin(), body.end(), call), end; it != end; ++it) {
        in_sources.insert((*it)[1]);
      }
    }
  }
  std::set<std::string> listed(std::begin(failpoint::known_names),
                               std::end(failpoint::known_names));
  EXPECT_EQ(in_sources, listed);
  for (const auto& name : listed) {
    EXPECT_TRUE(failpoint::is_known(name));
    EXPECT_TRUE(doc_holds("architecture.md", "| `" + name + "` |")) << name;
  }
  EXPECT_FALSE(failpoint::is_known("lane.on_deadlnie"));
}

// The planted bugs are not in the sources (the test above finds no
// `planted.` name there): failpoint::planted_names is one switch per file
// of testing/planted/, each named after its file, and docs/testing.md's
// table of planted bugs names each.
TEST(transport_hardening, planted_names_match_the_planted_files_and_the_docs) {
  std::set<std::string> in_files;
  const std::regex call(R"re(FAULTLANE_FAILPOINT\("(planted\.[a-z_]+)"\))re");
  for (const auto& entry :
       std::filesystem::directory_iterator(FAULTLANE_SOURCE_DIR "/testing/planted")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const auto body = text.str();
    std::set<std::string> here;
    for (std::sregex_iterator it(body.begin(), body.end(), call), end; it != end; ++it) {
      here.insert((*it)[1]);
    }
    EXPECT_EQ(here, std::set<std::string>{"planted." + entry.path().stem().string()})
        << entry.path();
    in_files.insert(here.begin(), here.end());
  }
  std::set<std::string> listed(std::begin(failpoint::planted_names),
                               std::end(failpoint::planted_names));
  EXPECT_EQ(in_files, listed);
  for (const auto& name : listed) {
    EXPECT_TRUE(failpoint::is_known(name));
    EXPECT_TRUE(doc_holds("testing.md", "| `" + name + "` |")) << name;
  }
}

// The test helper checks every counter, zeros included.
TEST(transport_hardening, expect_counters_checks_every_counter) {
  transport_stats s;
  s.timeouts = 2;
  EXPECT_TRUE(counters_equal(s, {{"timeouts", 2}}));
  EXPECT_FALSE(counters_equal(s, {}));  // a non-zero left out
  s.timeouts = 0;
  EXPECT_FALSE(counters_equal(s, {{"timeouts", 2}}));  // an expected value missing
  EXPECT_TRUE(counters_equal(s, {}));
}

// The limits table in docs/configuration.md is the declared-once list in
// limits.hpp, values included.
TEST(transport_hardening, docs_limits_table_matches_limits_hpp) {
  std::string expected = "| limit | value | bounds |\n|---|---:|---|\n";
  for (const auto& l : limits::all) {
    expected += "| `" + std::string(l.name) + "` | " + docs_table::doc_value(l.value) + " | " +
                std::string(l.meaning) + " |\n";
  }
  EXPECT_TRUE(doc_holds("configuration.md", expected));
}

}  // namespace
}  // namespace faultlane
