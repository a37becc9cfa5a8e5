// The rules of the one YAML reader every faultlane file goes through
// (core/include/faultlane/core/yaml_reader.hpp): the one spelling of a whole
// number, each typed read at both sides of its bounds, and the place an
// error carries.
#include "faultlane/core/yaml_reader.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace faultlane::yaml {
namespace {

const reader rd("<test>");

YAML::Node load(const char* text) { return YAML::Load(text); }

// The complaint of a failed read, or "" when it did not fail.
template <typename R>
std::string complaint(const R& r) {
  if (r.ok()) return "";
  EXPECT_EQ(r.code(), status::invalid_argument);
  EXPECT_TRUE(r.error().place.has_value());
  return r.error().place ? r.error().place->what : "";
}

// Rule: a digit is 0-9 and nothing next to them; at least one is needed.
TEST(yaml_reader, digits_are_zero_to_nine_and_at_least_one) {
  EXPECT_TRUE(is_digits("0"));
  EXPECT_TRUE(is_digits("9"));
  EXPECT_TRUE(is_digits("0123456789"));
  EXPECT_FALSE(is_digits(""));
  EXPECT_FALSE(is_digits("/"));  // '0' - 1
  EXPECT_FALSE(is_digits(":"));  // '9' + 1
  EXPECT_FALSE(is_digits("12a"));
}

// Rule: a whole number is plain decimal, a lone 0 but no other leading zero,
// no sign, and fits in 64 bits.
TEST(yaml_reader, a_whole_number_is_plain_decimal_without_leading_zero_within_64_bits) {
  EXPECT_EQ(parse_decimal("0"), 0u);
  EXPECT_EQ(parse_decimal("10"), 10u);
  EXPECT_EQ(parse_decimal("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  for (const char* bad : {"", "01", "00", "+1", "-1", "0x1", "1 ", "18446744073709551616"}) {
    EXPECT_EQ(parse_decimal(bad), std::nullopt) << bad;
  }
}

// Rule: kind_of names each kind of node; key_path and item_path build the
// dotted path, a key at the top being its own path.
TEST(yaml_reader, kinds_and_paths_are_named_as_messages_print_them) {
  const YAML::Node doc = load("{m: {a: 1}, l: [1], s: x, n: ~}");
  EXPECT_EQ(kind_of(doc["m"]), "a mapping");
  EXPECT_EQ(kind_of(doc["l"]), "a list");
  EXPECT_EQ(kind_of(doc["s"]), "a scalar");
  EXPECT_EQ(kind_of(doc["n"]), "null");
  const YAML::Node& cdoc = doc;
  EXPECT_EQ(kind_of(cdoc["absent"]), "nothing");
  EXPECT_EQ(key_path("", "k"), "k");
  EXPECT_EQ(key_path("a.b", "k"), "a.b.k");
  EXPECT_EQ(item_path("a", 3), "a[3]");
}

// Rule: an error reads "FILE:LINE:COLUMN: KEY: what" with the mark 1-based,
// "(top level)" for an empty path, and carries the same as data.
TEST(yaml_reader, an_error_is_placed_one_based_with_its_key_and_complaint) {
  const YAML::Node doc = load("a: 1\nbb: [x, y]\n");
  const error e = rd.fail(doc["bb"][1], "bb[1]", "bad");
  EXPECT_EQ(e.message, "<test>:2:9: bb[1]: bad");
  ASSERT_TRUE(e.place.has_value());
  EXPECT_EQ(e.place->at, (source_mark{"<test>", 2, 9}));
  EXPECT_EQ(e.place->key, "bb[1]");
  EXPECT_EQ(e.place->what, "bad");
  EXPECT_EQ(rd.fail(doc, "", "bad").message, "<test>:1:1: (top level): bad");
  // A node with no mark (built in code) is placed at the file's start.
  EXPECT_EQ(rd.mark(YAML::Node(5)), (source_mark{"<test>", 1, 1}));
  // key_node: the key itself, or the map when the key is absent.
  EXPECT_EQ(rd.mark(key_node(doc, "bb")), (source_mark{"<test>", 2, 1}));
  EXPECT_EQ(rd.mark(key_node(doc, "zz")), rd.mark(doc));
  const error s = rd.syntax_at(source_mark{"<test>", 4, 2}, "broken");
  EXPECT_EQ(s.message, "<test>:4:2: yaml: broken");
  EXPECT_EQ(s.place->key, "");
}

// Rule: a syntax error from yaml-cpp is placed at its mark, 1-based; one
// without a mark at 1:1.
TEST(yaml_reader, a_syntax_error_is_placed_at_yaml_cpps_mark) {
  try {
    (void)YAML::Load("a: 1\nb: [\n");
    FAIL() << "no syntax error";
  } catch (const YAML::Exception& ex) {
    const error e = rd.syntax_error(ex);
    ASSERT_TRUE(e.place.has_value());
    EXPECT_EQ(e.place->at.line, ex.mark.line + 1);
    EXPECT_EQ(e.place->at.column, ex.mark.column + 1);
    EXPECT_NE(e.message.find(": yaml: "), std::string::npos) << e.message;
  }
  // An error with no mark is placed at the file's start.
  const error e = rd.syntax_error(YAML::Exception(YAML::Mark::null_mark(), "no mark"));
  EXPECT_EQ(e.message, "<test>:1:1: yaml: no mark");
}

// Rule: a mapping's keys are plain names from the known list, each once.
TEST(yaml_reader, a_mapping_holds_known_plain_keys_each_once) {
  const std::vector<std::string_view> known{"a", "b"};
  EXPECT_TRUE(rd.mapping(load("{a: 1, b: 2}"), "m", known).ok());
  EXPECT_TRUE(rd.mapping(load("{}"), "m", known).ok());
  EXPECT_EQ(complaint(rd.mapping(load("[a]"), "m", known)), "expected a mapping, got a list");
  EXPECT_EQ(complaint(rd.mapping(load("{[a]: 1}"), "m", known)), "a key must be a plain name");
  auto unknown = rd.mapping(load("{a: 1, c: 2}"), "m", known);
  ASSERT_EQ(complaint(unknown), "unknown key (known: a, b)");
  EXPECT_EQ(unknown.error().place->key, "m.c");
  auto twice = rd.mapping(load("a: 1\nb: 2\na: 3\n"), "m", known);
  ASSERT_EQ(complaint(twice), "duplicate key");
  EXPECT_EQ(twice.error().place->at.line, 3);
}

// Rule: a sequence holds lo..hi items, both ends included.
TEST(yaml_reader, a_sequence_holds_lo_to_hi_items_both_ends_included) {
  EXPECT_EQ(complaint(rd.sequence(load("[1]"), "s", 2, 3)), "needs 2..3 items, got 1");
  EXPECT_TRUE(rd.sequence(load("[1, 2]"), "s", 2, 3).ok());
  EXPECT_TRUE(rd.sequence(load("[1, 2, 3]"), "s", 2, 3).ok());
  EXPECT_EQ(complaint(rd.sequence(load("[1, 2, 3, 4]"), "s", 2, 3)), "needs 2..3 items, got 4");
  EXPECT_EQ(complaint(rd.sequence(load("{a: 1}"), "s", 0, 3)), "expected a list, got a mapping");
}

// Rule: a required key must be there; its error names the key under the path.
TEST(yaml_reader, a_required_key_must_be_present) {
  const YAML::Node doc = load("{a: 1}");
  auto got = rd.required(doc, "m", "a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->Scalar(), "1");
  auto missing = rd.required(doc, "m", "b");
  ASSERT_EQ(complaint(missing), "required");
  EXPECT_EQ(missing.error().place->key, "m.b");
}

// Rule: text is one scalar; a list, a mapping or a missing value is refused.
TEST(yaml_reader, text_is_one_scalar) {
  const YAML::Node doc = load("{s: hi, l: [1]}");
  const YAML::Node& cdoc = doc;
  EXPECT_EQ(rd.text(doc["s"], "s").value(), "hi");
  EXPECT_EQ(complaint(rd.text(doc["l"], "l")), "expected a string, got a list");
  EXPECT_EQ(complaint(rd.text(cdoc["absent"], "x")), "expected a string, got nothing");
}

// Rule: a name is 1..length_max characters from [a-z0-9_-] (and '.' only
// when dots are allowed), and never "null".
TEST(yaml_reader, a_name_is_one_to_max_characters_from_its_alphabet) {
  auto name = [](const char* yaml, std::size_t max, bool dots = false) {
    return complaint(rd.name(load(yaml), "n", max, dots));
  };
  EXPECT_EQ(name("az09_-", 6), "");
  EXPECT_NE(name("az09_-x", 6), "");  // one past length_max
  EXPECT_NE(name("''", 6), "");       // empty
  EXPECT_EQ(name("a.b", 6, true), "");
  EXPECT_NE(name("a.b", 6), "");
  for (const char* bad : {"A", "'`'", "'{'", "'/'", "':'", "a b", "'null'"}) {
    EXPECT_NE(name(bad, 6, true), "") << bad;
  }
  EXPECT_EQ(name("nul", 6), "");
  EXPECT_EQ(name("nullx", 6), "");
  EXPECT_EQ(name("[a]", 6), "expected a string, got a list");
}

// Rule: an integer is a whole number in [lo, hi]; too many digits is "does
// not fit", a leading zero is not a number at all.
TEST(yaml_reader, an_integer_is_in_lo_to_hi_both_ends_included) {
  auto integer = [](const char* yaml) { return complaint(rd.integer(load(yaml), "i", 3, 7)); };
  EXPECT_EQ(integer("2"), "must be in 3..7, got 2");
  EXPECT_EQ(integer("3"), "");
  EXPECT_EQ(integer("7"), "");
  EXPECT_EQ(integer("8"), "must be in 3..7, got 8");
  EXPECT_EQ(rd.integer(load("5"), "i", 3, 7).value(), 5u);
  EXPECT_EQ(integer("99999999999999999999"), "99999999999999999999 does not fit in 64 bits");
  EXPECT_EQ(integer("099999999999999999999"), "expected an integer, got '099999999999999999999'");
  EXPECT_EQ(integer("05"), "expected an integer, got '05'");
  EXPECT_EQ(integer("five"), "expected an integer, got 'five'");
  EXPECT_EQ(integer("[5]"), "expected an integer, got a list");
}

// Rule: a number is a whole finite decimal text in [lo, hi].
TEST(yaml_reader, a_number_is_finite_and_in_lo_to_hi_both_ends_included) {
  auto number = [](const char* yaml) { return complaint(rd.number(load(yaml), "x", 0.5, 2.5)); };
  EXPECT_EQ(number("0.4"), "must be in 0.5..2.5, got 0.4");
  EXPECT_EQ(number("0.5"), "");
  EXPECT_EQ(number("2.5"), "");
  EXPECT_EQ(number("2.6"), "must be in 0.5..2.5, got 2.6");
  EXPECT_DOUBLE_EQ(rd.number(load("1.25"), "x", 0.5, 2.5).value(), 1.25);
  for (const char* bad : {"1.0x", "''", "inf", "nan", "1e400"}) {
    EXPECT_EQ(complaint(rd.number(load(bad), "x", -1e308, 1e308)).substr(0, 17),
              "expected a number")
        << bad;
  }
  EXPECT_EQ(number("[1]"), "expected a number, got a list");
}

// Rule: a switch is `true` or `false`, nothing else.
TEST(yaml_reader, a_switch_is_true_or_false_only) {
  const auto yes = rd.boolean(load("true"), "b");
  const auto no = rd.boolean(load("false"), "b");
  ASSERT_TRUE(yes.ok() && no.ok());
  EXPECT_TRUE(yes.value());
  EXPECT_FALSE(no.value());
  EXPECT_EQ(complaint(rd.boolean(load("yes"), "b")), "expected true or false, got 'yes'");
  EXPECT_EQ(complaint(rd.boolean(load("True"), "b")), "expected true or false, got 'True'");
  EXPECT_EQ(complaint(rd.boolean(load("[true]"), "b")), "expected true or false, got a list");
}

}  // namespace
}  // namespace faultlane::yaml