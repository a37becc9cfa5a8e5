// The scenario event actions are one list (FAULTLANE_EVENT_ACTIONS in
// scenario.hpp): the loader reads exactly its spellings and each action's
// keys from it, docs/scenarios.md's action table has a row for each action
// and no other, and the valid file that uses every action keeps doing so.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loader_support.hpp"

namespace faultlane::sim::event_actions {

// An action's keys as docs/scenarios.md writes them: "`link`, `fault`".
std::string doc_keys(std::string_view keys) {
  std::string out;
  for (std::string_view rest = keys; !rest.empty();) {
    const auto space = rest.find(' ');
    out += (out.empty() ? "`" : ", `") + std::string(rest.substr(0, space)) + "`";
    rest = space == std::string_view::npos ? std::string_view{} : rest.substr(space + 1);
  }
  return out;
}

std::vector<std::string> words(std::string_view keys) {
  std::vector<std::string> out;
  std::istringstream in{std::string(keys)};
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The rows of the table under "| `do:` | keys | does | checked |".
std::vector<std::string> doc_rows() {
  std::ifstream doc(test_dir / ".." / ".." / "docs" / "scenarios.md");
  std::vector<std::string> rows;
  bool in_table = false;
  for (std::string line; std::getline(doc, line);) {
    if (line.rfind("| `do:` | keys | does | checked |", 0) == 0) {
      in_table = true;
    } else if (in_table && line.rfind("| `", 0) == 0) {
      rows.push_back(line);
    } else if (in_table && !line.empty() && line.rfind("|---", 0) != 0) {
      break;
    } else if (in_table && line.empty()) {
      break;
    }
  }
  return rows;
}

TEST(event_actions, the_docs_table_has_a_row_for_each_action_in_order_and_no_other) {
  const auto rows = doc_rows();
  ASSERT_EQ(rows.size(), std::size(event_action_rows));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = event_action_rows[i];
    const std::string head =
        "| `" + std::string(row.spelling) + "` | " + doc_keys(row.keys) + " | ";
    EXPECT_EQ(rows[i].rfind(head, 0), 0u) << "row " << i << " should start " << head << "\n"
                                          << rows[i];
  }
}

TEST(event_actions, each_spelling_reads_as_its_action_and_an_unknown_one_lists_them_all) {
  std::set<std::string_view> spellings;
  for (const auto& row : event_action_rows) {
    EXPECT_EQ(to_string(row.action), row.spelling);
    EXPECT_TRUE(spellings.insert(row.spelling).second) << row.spelling;
  }
  auto bad = parse_scenario(
      with("", "1", "size: 1, count: 1") + "events: [{at: {stream: s, ops: 1}, do: jump}]\n",
      "actions.yaml");
  ASSERT_FALSE(bad.ok());
  ASSERT_TRUE(bad.error().place.has_value());
  EXPECT_EQ(bad.error().place->key, "events[0].do");
  for (auto s : spellings) {
    EXPECT_NE(bad.error().message.find(std::string(s)), std::string::npos) << s;
  }
}

// An action takes its own keys and no key only another action takes.
TEST(event_actions, each_action_refuses_a_key_only_another_action_takes) {
  std::set<std::string> all;
  for (const auto& row : event_action_rows) {
    for (const auto& k : words(row.keys)) all.insert(k);
  }
  for (const auto& row : event_action_rows) {
    const auto own = words(row.keys);
    for (const auto& key : all) {
      if (std::find(own.begin(), own.end(), key) != own.end()) continue;
      const std::string text =
          with("", "1", "size: 1, count: 1") +
          "events: [{at: {stream: s, ops: 1}, do: " + std::string(row.spelling) + ", " + key +
          ": x}]\n";
      SCOPED_TRACE(text);
      auto s = parse_scenario(text, "actions.yaml");
      ASSERT_FALSE(s.ok());
      ASSERT_TRUE(s.error().place.has_value()) << s.error().message;
      EXPECT_EQ(s.error().place->key, "events[0]." + key) << s.error().message;
      std::string known = "(known: at, do";
      for (const auto& k : own) known += ", " + k;
      EXPECT_NE(s.error().message.find(known + ")"), std::string::npos) << s.error().message;
    }
  }
}

// lost_write_ack.yaml is the valid file every action's reading runs
// through: a new action is added to it.
TEST(event_actions, the_valid_file_uses_every_action) {
  const auto s = load_ok("lost_write_ack.yaml");
  std::set<event_action> used;
  for (const auto& e : s.events) used.insert(e.action);
  for (const auto& row : event_action_rows) {
    EXPECT_EQ(used.count(row.action), 1u) << row.spelling;
  }
}

}  // namespace faultlane::sim::event_actions
