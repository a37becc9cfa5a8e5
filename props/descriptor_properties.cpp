// Properties of the descriptor text form: any valid descriptor round-trips
// through to_text and parse_descriptor, and reading edited text is total:
// every rejection names a line, and anything accepted is valid and
// canonical.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/core/limits.hpp"
#include "planted.hpp"

namespace faultlane {

// rapidcheck shows a counterexample descriptor as its text.
inline void showValue(const segment_descriptor& d, std::ostream& os) { os << to_text(d); }

}  // namespace faultlane

namespace faultlane::props {
namespace {

std::string utf8(char32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
  return out;
}

// Written out here rather than taken from valid_registration_name, so the
// generator does not inherit a mistake of the code under test.
bool is_name_code_point(char32_t cp) {
  const bool surrogate = cp >= 0xd800 && cp <= 0xdfff;
  const bool noncharacter = (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) == 0xfffe;
  return !surrogate && !noncharacter;
}

// Characters that stress a YAML writer: indicators, quotes, escapes,
// whitespace and line breaks (YAML 1.1 counts NEL, LS and PS), controls,
// NUL, the BOM; and any code point up to the astral planes.
rc::Gen<char32_t> awkward_code_point() {
  const std::vector<char32_t> special{
      U':',  U'#',  U'\'', U'"', U'-', U'?', U'{',   U'}',   U'[',   U']',   U',',
      U'&',  U'*',  U'!',  U'|', U'>', U'%', U'@',   U'`',   U'\\',  U' ',   U'\t',
      U'\n', U'\r', U'\0', 0x7f, 0x85, 0xa0, 0x2028, 0x2029, 0xfeff, 0xfffd, 0x10fffd};
  return rc::gen::weightedOneOf<char32_t>(
      {{4, uniform_in_range<char32_t>(0x20, 0x7f)},
       {3, rc::gen::elementOf(special)},
       {1, uniform_in_range<char32_t>(0, 0x20)},
       {2, rc::gen::suchThat(uniform_in_range<char32_t>(0x80, 0x110000), is_name_code_point)}});
}

rc::Gen<std::string> awkward_name() {
  return rc::gen::map(rc::gen::container<std::vector<char32_t>>(awkward_code_point()),
                      [](const std::vector<char32_t>& cps) {
                        std::string name;
                        for (auto cp : cps) name += utf8(cp);
                        return name;
                      });
}

// Small values, any value, and the largest, with the same odds at any size.
rc::Gen<std::uint64_t> u64_from(std::uint64_t low, std::uint64_t high) {
  return rc::gen::oneOf(rc::gen::inRange<std::uint64_t>(low, std::min(high, low + 4096)),
                        uniform_in_range<std::uint64_t>(low, high), rc::gen::just(high));
}

endpoint any_endpoint() {
  std::string address;
  for (int i = 0; i < 4; ++i) {
    address += (i ? "." : "") + std::to_string(*uniform_in_range(0, 256));
  }
  if (address == "0.0.0.0") address = "0.0.0.1";  // the one unspecified address
  return {address, static_cast<std::uint16_t>(*uniform_in_range<std::uint32_t>(1, 65536))};
}

rc::Gen<segment_descriptor> any_descriptor() {
  return rc::gen::exec([] {
    constexpr auto u64_max = std::numeric_limits<std::uint64_t>::max();
    segment_descriptor d;
    d.incarnation = *u64_from(1, u64_max);
    const auto rails = *uniform_in_range<std::size_t>(1, limits::rail_count_max + 1);
    for (std::size_t i = 0; i < rails; ++i) d.endpoints.push_back(any_endpoint());
    d.max_transfer_bytes = *u64_from(1, limits::transfer_bytes_max);
    const auto count = *rc::gen::inRange<std::size_t>(0, 8);
    std::set<registration_id> ids;
    for (std::size_t i = 0; i < count; ++i) {
      advertised_registration r;
      r.id = *u64_from(1, u64_max);
      if (!ids.insert(r.id).second) continue;
      r.length = *u64_from(1, u64_max);
      r.perm = *rc::gen::element(permission::remote_read, permission::remote_read_write);
      r.name = *rc::gen::weightedOneOf<std::string>(
          {{1, rc::gen::just(std::string())}, {4, awkward_name()}});
      d.registrations.push_back(std::move(r));
    }
    return d;
  });
}

// The writer and reader under test, as values so planted variants can
// stand in.
using writer = std::string (*)(const segment_descriptor&);
using reader = result<segment_descriptor> (*)(std::string_view);

std::string real_writer(const segment_descriptor& d) { return to_text(d); }
result<segment_descriptor> real_reader(std::string_view text) { return parse_descriptor(text); }

// Also: the text is printable ASCII in lines, whatever the names hold, so
// no reader's encoding or idea of a line break can change it.
void round_trips(writer write, const segment_descriptor& d) {
  const auto text = write(d);
  RC_ASSERT(std::all_of(text.begin(), text.end(),
                        [](char c) { return c == '\n' || (c >= 0x20 && c < 0x7f); }));
  auto back = parse_descriptor(text);
  if (!back.ok()) RC_FAIL(back.error().message + "\n" + text);
  RC_ASSERT(back.value() == d);
}

// Text of a valid descriptor with a few edits: bytes replaced by ones that
// often keep the text valid (digits, hex letters) or by YAML-significant
// ones, lines dropped or repeated, a cut. About a tenth stays valid.
rc::Gen<std::string> edited_text() {
  enum class edit { keep_like, significant, drop_line, repeat_line, cut };
  return rc::gen::exec([] {
    auto text = to_text(*any_descriptor());
    const auto edits = *uniform_in_range(1, 4);
    for (int i = 0; i < edits && !text.empty(); ++i) {
      const auto at = *uniform_in_range<std::size_t>(0, text.size());
      const auto newline_before = text.rfind('\n', at);
      const auto line_start = newline_before == std::string::npos ? 0 : newline_before + 1;
      const auto line_end = std::min(text.find('\n', at), text.size() - 1) + 1;
      const auto line = text.substr(line_start, line_end - line_start);
      switch (*rc::gen::weightedElement<edit>({{6, edit::keep_like},
                                               {3, edit::significant},
                                               {1, edit::drop_line},
                                               {1, edit::repeat_line},
                                               {1, edit::cut}})) {
        case edit::keep_like: {  // in a value, past the key, where it may well stay valid
          const auto colon = line.find(": ");
          const auto from = colon == std::string::npos ? 0 : colon + 2;
          if (from + 1 >= line.size()) break;
          const auto in_value = line_start + *uniform_in_range(from, line.size() - 1);
          text[in_value] = *rc::gen::elementOf(std::string("0123456789abcdefx"));
          break;
        }
        case edit::significant:
          text[at] = *rc::gen::elementOf(std::string(":-[]{}\"'#\\ \n\t,&*!|>~%@`"));
          break;
        case edit::drop_line: text.erase(line_start, line.size()); break;
        case edit::repeat_line: text.insert(line_start, line); break;
        case edit::cut: text.resize(at); break;
      }
    }
    return text;
  });
}

const std::regex rejection_form{"^<descriptor>:[0-9]+:[0-9]+: .+: .+", std::regex::extended};

void reading_is_total(reader read, const std::string& text) {
  auto parsed = read(text);
  RC_TAG(parsed.ok() ? "accepted" : "rejected");
  if (!parsed.ok()) {
    RC_ASSERT(parsed.code() == status::invalid_argument);
    if (!std::regex_search(parsed.error().message, rejection_form)) {
      RC_FAIL("a rejection without a line and a field: " + parsed.error().message);
    }
    return;
  }
  // Accepted: valid, so it is written and read back unchanged.
  round_trips(&real_writer, parsed.value());
}

RC_GTEST_PROP(descriptor_properties, any_descriptor_round_trips, ()) {
  round_trips(&real_writer, *any_descriptor());
}

RC_GTEST_PROP(descriptor_properties, reading_edited_text_is_total, ()) {
  reading_is_total(&real_reader, *edited_text());
}

// Planted: a writer that drops the name of the first named registration.
std::string nameless_writer(const segment_descriptor& d) {
  auto copy = d;
  for (auto& r : copy.registrations) {
    if (!r.name.empty()) {
      r.name.clear();
      break;
    }
  }
  return to_text(copy);
}

// Planted: a reader whose rejections say what but not where.
result<segment_descriptor> lineless_reader(std::string_view text) {
  auto parsed = parse_descriptor(text);
  if (parsed.ok()) return parsed;
  return error{parsed.code(), std::regex_replace(parsed.error().message,
                                                 std::regex("^<descriptor>:[0-9:]+ "), "")};
}

TEST(descriptor_properties_planted, round_trip_catches_a_dropped_name) {
  EXPECT_TRUE(finds_counterexample("writer drops a registration name",
                                   [] { round_trips(&nameless_writer, *any_descriptor()); }));
}

TEST(descriptor_properties_planted, totality_catches_a_rejection_without_a_line) {
  EXPECT_TRUE(finds_counterexample("reader leaves the line out",
                                   [] { reading_is_total(&lineless_reader, *edited_text()); }));
}

}  // namespace
}  // namespace faultlane::props
