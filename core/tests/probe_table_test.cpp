// The code probes (faultlane/base/probe.hpp) are declared once: every row
// has a unique name, a meaning and a library scenario that exists; every
// row sits in the sources, and docs/dsim.md's table is made from the list.
// A probe counts in a build with failpoints and reads 0 in one without.
// (A name the list does not declare fails to compile: the ctests
// probe_undeclared_name_*, core/tests/CMakeLists.txt.)
#include "faultlane/base/probe.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "faultlane/testing/docs_table.hpp"

namespace faultlane::probe_table {

TEST(probe_table, each_row_has_a_unique_name_a_meaning_and_a_library_scenario) {
  std::set<std::string_view> names;
  std::size_t row = 0;
  for (const auto& p : probes::table) {
    EXPECT_TRUE(names.insert(p.name).second) << "twice: " << p.name;
    EXPECT_FALSE(p.meaning.empty()) << p.name;
    const auto file = std::string(FAULTLANE_SOURCE_DIR "/sim/scenarios/") +
                      std::string(p.scenario) + ".yaml";
    EXPECT_TRUE(std::filesystem::is_regular_file(file)) << p.name << ": no " << file;
    ++row;
  }
  EXPECT_EQ(row, probes::count);
  EXPECT_GE(probes::count, 50u);
  // The enum and the table come from one list, in one order.
#define FAULTLANE_CHECK_ROW(id, meaning, scenario) \
  EXPECT_EQ(probes::table[static_cast<std::size_t>(probe_id::id)].name, #id);
  FAULTLANE_PROBES(FAULTLANE_CHECK_ROW)
#undef FAULTLANE_CHECK_ROW
}

// A declared probe that no source marks would be listed as never reached
// for good; core, control, relays and the world each mark some.
TEST(probe_table, every_probe_sits_in_the_sources_of_core_control_relays_or_the_world) {
  std::set<std::string> placed;
  std::set<std::string> trees_with_probes;
  // FAULTLANE_PROBE(name) or FAULTLANE_PROBE_IF(condition, name).
  const std::regex mark(R"re(FAULTLANE_PROBE(?:\(|_IF\([^;]*?,\s*)([a-z_]+)\)\s*;)re");
  for (const char* tree : {"core", "control", "relays", "dsim"}) {
    const auto root = std::string(FAULTLANE_SOURCE_DIR "/") + tree + "/src";
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      const auto body = text.str();
      for (std::sregex_iterator it(body.begin(), body.end(), mark), end; it != end; ++it) {
        placed.insert((*it)[1]);
        trees_with_probes.insert(tree);
      }
    }
  }
  std::set<std::string> declared;
  for (const auto& p : probes::table) declared.emplace(p.name);
  EXPECT_EQ(placed, declared);
  EXPECT_EQ(trees_with_probes, (std::set<std::string>{"control", "core", "dsim", "relays"}));
}

TEST(probe_table, docs_probe_table_matches_the_probe_list) {
  std::string expected = "| probe | meaning | expected in |\n|---|---|---|\n";
#define FAULTLANE_DOC_ROW(name, meaning, scenario) \
  expected += "| `" #name "` | " meaning " | `" #scenario "` |\n";
  FAULTLANE_PROBES(FAULTLANE_DOC_ROW)
#undef FAULTLANE_DOC_ROW
  EXPECT_TRUE(docs_table::doc_holds("dsim.md", expected));
}

TEST(probe_table, a_probe_counts_each_pass_where_failpoints_are_compiled_in) {
  const auto before = probes::snapshot();
  FAULTLANE_PROBE(ambiguous_write);
  FAULTLANE_PROBE(ambiguous_write);
  FAULTLANE_PROBE(world_load_hiccup);
  int evaluated = 0;
  const auto holds = [&](bool answer) {
    ++evaluated;
    return answer;
  };
  FAULTLANE_PROBE_IF(holds(true), slice_cancelled_before_queued);
  FAULTLANE_PROBE_IF(holds(false), siblings_cancelled);
  const auto hits = probes::delta(before, probes::snapshot());
  const auto at = [&](probe_id id) { return hits[static_cast<std::size_t>(id)]; };
#if defined(FAULTLANE_FAILPOINTS_ENABLED)
  EXPECT_TRUE(probes::counted);
  EXPECT_EQ(at(probe_id::ambiguous_write), 2u);
  EXPECT_EQ(at(probe_id::world_load_hiccup), 1u);
  EXPECT_EQ(at(probe_id::slice_cancelled_before_queued), 1u);
  EXPECT_EQ(at(probe_id::siblings_cancelled), 0u);
  EXPECT_EQ(evaluated, 2);
#else
  EXPECT_EQ(evaluated, 0);  // not even the condition runs
  EXPECT_FALSE(probes::counted);
  EXPECT_EQ(at(probe_id::ambiguous_write), 0u);
  EXPECT_EQ(probes::snapshot(), probes::counts{});
#endif
}

}  // namespace faultlane::probe_table
