// The one list of fault keys (FAULTLANE_RELAY_FAULT_KEYS) holds together:
// every row reads the same from the text form, a YAML mapping and a
// Toxiproxy toxic, and writes back through fault_fields() to the same
// fault; a value key is refused by every kind that does not take it, in
// every form; and docs/faults.md documents exactly the rows there are.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "api/toxics.hpp"
#include "faultlane/relays/fault.hpp"

namespace faultlane::relays {
namespace {

using nlohmann::json;

// One fault per key: a kind that takes it, the keys that kind needs, and
// the key's value as fault_fields() writes it back.
struct key_case {
  std::string_view key;
  std::string_view kind;
  std::vector<fault_pair> needs;
  std::string value;
};

std::vector<key_case> key_cases() {
  return {
      {"dir", "stall", {}, "down"},
      {"name", "stall", {}, "hold"},
      {"ms", "latency", {}, "5"},
      {"jitter_ms", "latency", {{"ms", "5"}}, "2"},
      {"bytes_per_s", "bandwidth", {}, "2000"},
      {"size", "slicer", {}, "10"},
      {"variation", "slicer", {{"size", "10"}}, "2"},
      {"delay_us", "slicer", {{"size", "10"}}, "5"},
      {"bytes", "truncate", {}, "9"},
      {"field", "corrupt", {}, "length"},
      {"payload_byte", "corrupt", {{"field", "payload"}}, "3"},
      {"mask", "corrupt", {{"field", "length"}}, "0x06"},
      {"after_bytes", "stall", {}, "4"},
      {"frame", "stall", {}, "2"},
      {"header_byte", "stall", {{"frame", "2"}}, "3"},
      {"opcode", "drop_frame", {}, "write"},
      {"status", "drop_frame", {}, "2"},
      {"request_id", "drop_frame", {}, "7"},
      {"connection", "stall", {}, "1"},
      {"rail", "stall", {}, "1"},
      {"count", "drop_frame", {}, "3"},
      {"probability", "stall", {}, "0.5"},
  };
}

std::string text_of(std::string_view kind, const std::vector<fault_pair>& pairs) {
  std::string out(kind);
  for (const auto& [key, value] : pairs) out += fmt::format(" {}={}", key, value);
  return out;
}

YAML::Node yaml_of(std::string_view kind, const std::vector<fault_pair>& pairs) {
  YAML::Node node(YAML::NodeType::Map);
  node["type"] = std::string(kind);
  for (const auto& [key, value] : pairs) node[key] = value;
  return node;
}

// The toxic of its own type: dir is its stream, name its name,
// probability its toxicity; numbers are JSON numbers, the rest strings.
api::toxic toxic_of(std::string_view kind, const std::vector<fault_pair>& pairs) {
  api::toxic t{"", std::string(kind), direction::up, 1.0, json::object()};
  for (const auto& [key, value] : pairs) {
    const auto* row = find_fault_key(key);
    if (key == "dir") {
      t.dir = value == "down" ? direction::down : direction::up;
    } else if (key == "name") {
      t.name = value;
    } else if (key == "probability") {
      t.toxicity = std::stod(value);
    } else if (row && (row->value == key_value::number || row->value == key_value::status)) {
      t.attributes[key] = std::stoull(value);
    } else {
      t.attributes[key] = value;
    }
  }
  if (t.name.empty()) t.name = fmt::format("{}.{}", kind, to_string(t.dir));
  return t;
}

std::string shown(const result<fault_spec>& f) {
  if (!f.ok()) return "error: " + f.error().message;
  return describe(f.value()) + " name=" + f.value().name;
}

// Rule: each key reads the same from every form, lands where fault_fields()
// finds it, and what fault_fields() writes reads back to the same fault.
TEST(relay_fault_keys, every_key_round_trips_through_text_yaml_and_json) {
  std::set<std::string_view> covered;
  for (const auto& c : key_cases()) {
    SCOPED_TRACE(std::string(c.key));
    covered.insert(c.key);
    auto kind = find_fault_kind(c.kind);
    ASSERT_TRUE(kind);
    auto pairs = c.needs;
    if (c.key != "dir") pairs.insert(pairs.begin(), {"dir", "up"});
    pairs.emplace_back(std::string(c.key), c.value);
    const auto from_text = parse_fault(text_of(c.kind, pairs));
    ASSERT_TRUE(from_text.ok()) << shown(from_text);
    const auto& f = from_text.value();
    EXPECT_EQ(shown(parse_fault(yaml_of(c.kind, pairs))), shown(from_text));
    EXPECT_EQ(shown(api::to_fault(toxic_of(c.kind, pairs))), shown(from_text));
    EXPECT_EQ(shown(build_fault(*kind, pairs)), shown(from_text));
    // The key landed: fault_fields() writes it with its value (name is the
    // spec's own, never a field).
    const auto fields = fault_fields(f);
    if (c.key == "name") {
      EXPECT_EQ(f.name, c.value);
    } else {
      EXPECT_NE(std::find(fields.begin(), fields.end(), fault_pair{c.key, c.value}), fields.end())
          << describe(f);
    }
    // ...and back: fault_fields() to the hub, describe() to the text form.
    auto back = build_fault(f.kind, fields);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(fault_fields(back.value()), fields);
    EXPECT_EQ(describe(parse_fault(describe(f)).value()), describe(f));
  }
  for (const auto& k : fault_keys) {
    EXPECT_EQ(covered.count(k.key), 1u) << "no round-trip case for the key " << k.key;
  }
}

// The keys a kind needs to be a valid fault, so a refusal is the only error.
std::vector<fault_pair> needs_of(const fault_kind_traits& t) {
  static const std::map<std::string_view, std::vector<fault_pair>> needs{
      {"latency", {{"ms", "5"}}},
      {"bandwidth", {{"bytes_per_s", "1000"}}},
      {"slicer", {{"size", "10"}}},
      {"slow_close", {{"ms", "5"}}},
      {"corrupt", {{"field", "length"}}}};
  auto it = needs.find(t.name);
  std::vector<fault_pair> out{{"dir", "up"}};
  if (it != needs.end()) out.insert(out.end(), it->second.begin(), it->second.end());
  return out;
}

// Rule: a value key is refused by every kind that does not take it, by
// name, in the text form, a YAML mapping and a toxic of the kind's own type.
TEST(relay_fault_keys, a_key_of_one_kind_is_refused_by_another_in_every_form) {
  std::size_t refusals = 0;
  for (const auto& t : fault_kinds) {
    const auto base = needs_of(t);
    ASSERT_TRUE(build_fault(t.kind, base).ok())
        << t.name << ": " << shown(build_fault(t.kind, base));
    for (const auto& k : fault_keys) {
      if (k.owner != key_owner::spec || k.key == "dir" || k.key == "name" || t.takes(k.key)) {
        continue;
      }
      SCOPED_TRACE(fmt::format("{} {}=", t.name, k.key));
      auto pairs = base;
      pairs.emplace_back(std::string(k.key), "1");
      const auto what = fmt::format("{} does not take {}=", t.name, k.key);
      const auto text = text_of(t.name, pairs);
      EXPECT_EQ(shown(parse_fault(text)), fmt::format("error: fault: {} (in \"{}\")", what, text));
      EXPECT_EQ(shown(parse_fault(yaml_of(t.name, pairs))),
                fmt::format("error: fault: {} (in \"{}\")", what, text));
      EXPECT_EQ(shown(api::to_fault(toxic_of(t.name, pairs))),
                fmt::format("error: {} toxic: {}", t.name, what));
      auto hub = build_fault(t.kind, pairs);
      ASSERT_FALSE(hub.ok());
      EXPECT_EQ(hub.error().place->key, k.key);
      EXPECT_EQ(hub.error().place->what, what);
      ++refusals;
    }
  }
  EXPECT_GT(refusals, 0u);
}

std::string faults_doc() {
  std::ifstream in(std::string(FAULTLANE_SOURCE_DIR) + "/docs/faults.md");
  EXPECT_TRUE(in) << "docs/faults.md";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The lines of the table whose header line is `header`, without it and its rule.
std::vector<std::string> table_rows(const std::string& doc, const std::string& header) {
  std::vector<std::string> rows;
  auto at = doc.find("\n" + header + "\n");
  if (at == std::string::npos) return rows;
  std::istringstream lines(doc.substr(at + header.size() + 2));
  std::string line;
  std::getline(lines, line);  // |---|---|
  while (std::getline(lines, line) && line.rfind("| ", 0) == 0) rows.push_back(line);
  return rows;
}

// The `words` in backquotes of `text`.
std::vector<std::string> quoted_words(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t at = 0; (at = text.find('`', at)) != std::string::npos;) {
    auto end = text.find('`', at + 1);
    if (end == std::string::npos) break;
    out.push_back(text.substr(at + 1, end - at - 1));
    at = end + 1;
  }
  return out;
}

// Rule: docs/faults.md documents every key of the table, and no other: the
// value keys in its fault table's keys column, the trigger keys in its
// trigger table, dir in the form's line and name in the line after the table.
TEST(relay_fault_keys, the_table_has_the_keys_docs_faults_md_documents) {
  const auto doc = faults_doc();
  std::map<std::string, key_owner> documented;
  const auto fault_rows = table_rows(doc, "| fault | keys | effect | counted |");
  ASSERT_EQ(fault_rows.size(), fault_kinds.size()) << "docs/faults.md's fault table";
  for (const auto& row : fault_rows) {
    const auto keys_from = row.find(" | ") + 3;
    const auto keys = row.substr(keys_from, row.find(" | ", keys_from) - keys_from);
    for (const auto& key : quoted_words(keys)) documented.emplace(key, key_owner::spec);
  }
  const auto trigger_rows = table_rows(doc, "| key | meaning |");
  ASSERT_FALSE(trigger_rows.empty()) << "docs/faults.md's trigger table";
  for (const auto& row : trigger_rows) {
    const auto first = quoted_words(row).front();
    documented.emplace(first.substr(0, first.find('=')), key_owner::trigger);
  }
  if (doc.find("is `TYPE dir=up|down key=value ...`") != std::string::npos) {
    documented.emplace("dir", key_owner::spec);
  }
  if (doc.find("Every fault also takes `name=`") != std::string::npos) {
    documented.emplace("name", key_owner::spec);
  }
  std::map<std::string, key_owner> listed;
  for (const auto& k : fault_keys) listed.emplace(std::string(k.key), k.owner);
  EXPECT_EQ(documented, listed);
}

// Rule: docs/relay-api.md names every trigger key as an attribute of any
// type, except probability, which is the toxic's toxicity.
TEST(relay_fault_keys, the_api_docs_name_every_trigger_key) {
  std::ifstream in(std::string(FAULTLANE_SOURCE_DIR) + "/docs/relay-api.md");
  ASSERT_TRUE(in);
  std::stringstream text;
  text << in.rdbuf();
  const auto doc = text.str();
  const auto at = doc.find("The trigger keys (");
  ASSERT_NE(at, std::string::npos);
  const auto list = doc.substr(at, doc.find(')', at) - at);
  std::vector<std::string> triggers;
  for (const auto& k : fault_keys) {
    if (k.owner == key_owner::trigger && k.key != "probability") triggers.emplace_back(k.key);
  }
  EXPECT_EQ(quoted_words(list), triggers) << list;
}

}  // namespace
}  // namespace faultlane::relays
