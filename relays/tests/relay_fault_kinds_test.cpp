// The declared-once lists hold together: every row of fault_kinds
// (FAULTLANE_RELAY_FAULT_KINDS) is parsed from its name and refuses the keys
// of other kinds, is found by the Toxiproxy API by its own name and by its
// Toxiproxy type, and is described in docs/faults.md and docs/relay-api.md;
// every relay counter (FAULTLANE_RELAY_COUNTERS) is reported, exported at
// /metrics and documented. A row missing from any of them fails here.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "api/proxies.hpp"
#include "api/toxics.hpp"
#include "relay_fixture.hpp"

namespace faultlane::relays::testing {
namespace {

std::string doc(const std::string& name) {
  std::ifstream in(std::string(FAULTLANE_SOURCE_DIR) + "/docs/" + name);
  EXPECT_TRUE(in) << "docs/" << name;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The cells of the table row of `text` whose first cell is `first`; empty
// if there is no such row.
std::vector<std::string> row_cells(const std::string& text, const std::string& first) {
  auto at = text.find("\n| " + first + " |");
  if (at == std::string::npos) return {};
  auto end = text.find('\n', at + 1);
  auto row = text.substr(at + 3, end - at - 3);  // past "\n| "
  std::vector<std::string> cells;
  for (std::size_t from = 0, bar; (bar = row.find(" |", from)) != std::string::npos;) {
    cells.push_back(row.substr(from, bar - from));
    from = bar + 3;  // past " | "
  }
  return cells;
}

// The paragraph of `text` that begins with `start`, or "".
std::string paragraph(const std::string& text, const std::string& start) {
  auto at = text.find(start);
  if (at == std::string::npos) return "";
  return text.substr(at, text.find("\n\n", at) - at);
}

std::string code(std::string_view word) { return "`" + std::string(word) + "`"; }

// Every key some kind takes.
std::vector<std::string_view> value_keys() {
  std::vector<std::string_view> out;
  for (const auto& t : fault_kinds) {
    for (auto key : t.keys) {
      if (!key.empty() && std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
    }
  }
  return out;
}

std::string message(const result<fault_spec>& r) { return r.ok() ? "" : r.error().message; }

TEST(relay_fault_kinds, every_kind_is_parsed_from_its_name_and_takes_only_its_keys) {
  for (const auto& t : fault_kinds) {
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(to_string(t.kind), t.name);
    EXPECT_EQ(find_fault_kind(t.name), t.kind);
    // Kinds that need a value say so; none is unknown.
    auto text = fmt::format("{} dir=down", t.name);
    auto parsed = parse_fault(text);
    EXPECT_EQ(message(parsed).find("unknown fault type"), std::string::npos) << message(parsed);
    if (parsed.ok()) {
      EXPECT_EQ(parsed.value().kind, t.kind);
    }
    auto yaml = parse_fault(YAML::Load(fmt::format("{{type: {}, dir: down}}", t.name)));
    EXPECT_EQ(message(yaml), message(parsed));
    for (auto key : value_keys()) {
      auto with_key = message(parse_fault(fmt::format("{} {}=1", text, key)));
      auto refused = fmt::format("fault: {} does not take {}=", t.name, key);
      EXPECT_EQ(with_key.find(refused) == 0, !t.takes(key)) << key << ": " << with_key;
    }
  }
  EXPECT_FALSE(find_fault_kind("no_such_kind"));
  EXPECT_EQ(message(parse_fault("no_such_kind dir=up")),
            "fault: unknown fault type 'no_such_kind'");
}

TEST(relay_fault_kinds, the_toxiproxy_api_finds_every_kind_by_its_name_and_its_type) {
  auto kind_of = [](std::string_view type) -> std::optional<fault_kind> {
    api::toxic probe{"t", std::string(type), direction::down, 1.0, nlohmann::json::object()};
    auto f = api::to_fault(probe);
    if (!f.ok() && f.error().message == "invalid toxic type") return std::nullopt;
    // A type the API knows may still need attributes; the kind it stands
    // for is named first in its error.
    if (!f.ok()) {
      for (const auto& t : fault_kinds) {
        if (f.error().message.rfind(std::string(t.name) + " ", 0) == 0 ||
            f.error().message.rfind(std::string(type) + " toxic: " + std::string(t.name), 0) == 0)
          return t.kind;
      }
      ADD_FAILURE() << type << ": " << f.error().message;
      return std::nullopt;
    }
    return f.value().kind;
  };
  for (const auto& t : fault_kinds) {
    SCOPED_TRACE(std::string(t.name));
    EXPECT_EQ(kind_of(t.name), t.kind);
    if (!t.toxic.empty()) {
      EXPECT_EQ(kind_of(t.toxic), t.kind);
    }
  }
  EXPECT_FALSE(kind_of("no_such_toxic"));
}

TEST(relay_fault_kinds, the_docs_describe_every_kind_with_its_keys_and_toxiproxy_type) {
  const auto faults = doc("faults.md");
  const auto api = doc("relay-api.md");
  const auto own_types = paragraph(api, "Every other relay fault is a type of its own");
  ASSERT_FALSE(own_types.empty());
  for (const auto& t : fault_kinds) {
    SCOPED_TRACE(std::string(t.name));
    // | fault | keys | effect | counted |
    auto row = row_cells(faults, code(t.name));
    ASSERT_EQ(row.size(), 4u) << "docs/faults.md's fault table has no row for " << t.name;
    for (auto key : t.keys) {
      if (!key.empty()) {
        EXPECT_NE(row[1].find(code(key)), std::string::npos) << key;
      }
    }
    if (!t.toxic.empty()) {
      // | type | attributes | relay fault |
      auto toxic_row = row_cells(api, code(t.toxic));
      ASSERT_EQ(toxic_row.size(), 3u) << "docs/relay-api.md's toxic table has no " << t.toxic;
      EXPECT_EQ(toxic_row[2].rfind("`" + std::string(t.name), 0), 0u) << toxic_row[2];
      for (const auto& a : t.toxic_attributes) {
        if (a.attribute.empty()) continue;
        EXPECT_NE(toxic_row[1].find(code(a.attribute)), std::string::npos) << a.attribute;
      }
    }
    if (t.toxic != t.name) {
      EXPECT_NE(own_types.find(code(t.name)), std::string::npos)
          << "docs/relay-api.md lists " << t.name << " among the types of their own";
    }
  }
}

TEST(relay_fault_kinds, every_relay_counter_is_reported_exported_and_documented) {
  plain_peer peer(plain_peer::mode::echo);
  auto r = relay::start(config_to(peer.where(), {}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto reported = r.value()->counters();
  api::proxy_set set(config_to(peer.where(), {}));
  ASSERT_EQ(set.create({{"name", "p"}, {"upstream", peer.where().str()}}).status, 201);
  const auto metrics = set.metrics();
  const auto faults = doc("faults.md");
  const auto api = doc("relay-api.md");
  for (const auto& c : relay_counters) {
    SCOPED_TRACE(std::string(c.counter));
    EXPECT_TRUE(is_relay_counter(c.counter));
    EXPECT_EQ(reported.count(std::string(c.counter)), 1u);
    EXPECT_NE(metrics.find(fmt::format("# HELP {} {}\n# TYPE {} counter\n{}{{proxy=\"p\"}} 0\n",
                                       c.metric, c.help, c.metric, c.metric)),
              std::string::npos)
        << metrics;
    EXPECT_NE(faults.find("| " + code(c.counter) + " |"), std::string::npos)
        << "docs/faults.md's counter table";
    EXPECT_NE(api.find("| " + code(c.metric) + " | counter |"), std::string::npos)
        << "docs/relay-api.md's metrics table";
  }
  // Nothing else: counters() holds the relay counters and one per fault.
  EXPECT_EQ(reported.size(), relay_counters.size());
}

// A parse error says which key it is about and what is wrong, as data: the
// scenario loader and the Toxiproxy API place and word it from these, never
// from the message text.
TEST(relay_fault_text, an_error_carries_its_key_and_the_complaint_alone) {
  struct bad_case {
    const char* text;
    const char* key;
    const char* what;
  };
  for (const auto& c : {
           bad_case{"latency dir=down ms=fast", "ms",
                    "ms=fast is not a non-negative integer (decimal digits, no sign or leading "
                    "zero)"},
           // One spelling of numbers in every file (docs/faults.md): "010" is 8 to
           // one reader and 10 to another, so it is neither.
           bad_case{"latency dir=down ms=010", "ms",
                    "ms=010 is not a non-negative integer (decimal digits, no sign or leading "
                    "zero)"},
           bad_case{"latency dir=down ms=+5", "ms",
                    "ms=+5 is not a non-negative integer (decimal digits, no sign or leading "
                    "zero)"},
           bad_case{"reset dir=up count=00", "count",
                    "count=00 is not a non-negative integer (decimal digits, no sign or leading "
                    "zero)"},
           bad_case{"reset dir=up after_bytes=99999999999999999999", "after_bytes",
                    "after_bytes=99999999999999999999 is too large"},
           bad_case{"corrupt dir=up field=payload mask=006", "mask",
                    "mask=006 is not a byte with a bit set (0x01 to 0xff, or 1 to 255)"},
           bad_case{"latency dir=down", "ms", "latency needs ms="},
           bad_case{"latency ms=5", "dir", "latency needs dir=up|down"},
           bad_case{"bogus dir=up", "type", "unknown fault type 'bogus'"},
           bad_case{"latency dir=up ms=1 size=3", "size", "latency does not take size="},
           bad_case{"latency dir=up ms=1 jitter_ms=2", "jitter_ms",
                    "latency jitter_ms must not exceed ms"},
           bad_case{"corrupt dir=up field=payload mask=0", "mask",
                    "mask=0 is not a byte with a bit set (0x01 to 0xff, or 1 to 255)"},
           bad_case{"reset dir=up opcode=erase", "opcode",
                    "opcode must be read or write, got erase"},
       }) {
    auto r = parse_fault(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    const auto& place = r.error().place;
    ASSERT_TRUE(place.has_value()) << c.text;
    EXPECT_EQ(place->key, c.key) << c.text;
    EXPECT_EQ(place->what, c.what) << c.text;
    if (place->key != "type") {  // the type is read before the text's keys
      EXPECT_EQ(r.error().message, fmt::format("fault: {} (in \"{}\")", c.what, c.text));
    }
  }
  auto node = YAML::Load("{type: latency, dir: up, ms: [1]}");
  auto r = parse_fault(node);
  ASSERT_FALSE(r.ok());
  ASSERT_TRUE(r.error().place.has_value());
  EXPECT_EQ(r.error().place->key, "ms");
  // A key that is not a plain name is an error, not an exception.
  auto odd = parse_fault(YAML::Load("{type: latency, [x]: 1}"));
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error().place->what, "a key must be a plain name");
  // The fault text stays out of the complaint, in the message only.
  auto loose = parse_fault("latency dir=up ms");
  ASSERT_FALSE(loose.ok());
  EXPECT_EQ(loose.error().place->what, "'ms' is not key=value");
  EXPECT_EQ(loose.error().message, "fault: 'ms' is not key=value (in \"latency dir=up ms\")");
}

// fault_fields is the text form's keys and values: describe()'s text reads
// back to the same fields.
TEST(relay_fault_text, fields_are_the_text_form_and_read_back) {
  for (const char* text :
       {"latency dir=down ms=5 jitter_ms=1 probability=0.5",
        "corrupt dir=up field=payload payload_byte=3 mask=0x06",
        "reset dir=down after_bytes=1000 count=2", "drop_frame dir=down opcode=write frame=2"}) {
    auto f = parse_fault(text);
    ASSERT_TRUE(f.ok()) << text << ": " << f.error().message;
    const auto fields = fault_fields(f.value());
    ASSERT_FALSE(fields.empty());
    EXPECT_EQ(fields.front().first, "dir");
    auto again = parse_fault(describe(f.value()));
    ASSERT_TRUE(again.ok()) << describe(f.value());
    EXPECT_EQ(fault_fields(again.value()), fields) << text;
  }
}

// Every tap record kind (FAULTLANE_TAP_RECORD_KINDS) has its row in
// docs/taps.md's record table under the name the JSONL writes, and the
// table has no row for a kind the tap never writes.
TEST(relay_tap_kinds, every_kind_is_named_once_and_has_its_docs_row) {
  const auto taps = doc("taps.md");
  std::set<std::string> names;
#define FAULTLANE_TAP_KIND(name)                                  \
  names.insert(std::string(record_kind_name(record_kind::name))); \
  EXPECT_EQ(record_kind_name(record_kind::name), #name);          \
  EXPECT_EQ(row_cells(taps, "`" #name "`").size(), 2u) << "docs/taps.md has no row for " #name;
  FAULTLANE_TAP_RECORD_KINDS(FAULTLANE_TAP_KIND)
#undef FAULTLANE_TAP_KIND
  const auto table = paragraph(taps, "| kind | more fields |");
  ASSERT_FALSE(table.empty()) << "docs/taps.md has no record table";
  std::size_t rows = 0;
  for (std::size_t at = 0; (at = table.find("\n| `", at)) != std::string::npos; ++at) {
    const auto end = table.find('`', at + 4);
    const auto name = table.substr(at + 4, end - at - 4);
    EXPECT_EQ(names.count(name), 1u)
        << "docs/taps.md documents a kind the tap never writes: " << name;
    ++rows;
  }
  EXPECT_EQ(rows, names.size());
  tap_record r;
  r.kind = record_kind::connect_failed;
  EXPECT_NE(to_json(r).find(R"({"kind": "connect_failed",)"), std::string::npos) << to_json(r);
}

}  // namespace
}  // namespace faultlane::relays::testing
