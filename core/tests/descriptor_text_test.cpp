// The text form of segment_descriptor: round trips (from a started
// transport, through a file, four rails, extremes), the exact text pinned,
// what else a reader accepts, and one test per rejection rule, each naming
// the line and the field.
#include "faultlane/core/descriptor_text.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "faultlane/testing/transport_fixture.hpp"

namespace faultlane {
namespace {

// The descriptor most rejection tests start from; its text, line by line:
//   1 faultlane_descriptor: 1         9     length: 4096
//   2 incarnation: "0x9c3e..."        10    permission: remote_read
//   3 max_transfer_bytes: 1073741824  11    name: "weights"
//   4 endpoints:                      12  - id: "0x5e1d0c3b2a190002"
//   5   - address: 127.0.0.1          13    length: 65536
//   6     port: 41234                 14    permission: remote_read_write
//   7 registrations:                  15    name: "kv cache"
//   8   - id: "0x5e1d0c3b2a190001"
segment_descriptor base() {
  return {0x9c3e4f10aa5b7d21,
          {{"127.0.0.1", 41234}},
          1u << 30,
          {{0x5e1d0c3b2a190001, 4096, permission::remote_read, "weights"},
           {0x5e1d0c3b2a190002, 65536, permission::remote_read_write, "kv cache"}}};
}

// base()'s text with the first `from` replaced by `to` (which must exist).
std::string edited(std::string_view from, std::string_view to) {
  std::string text = to_text(base());
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Rejected as invalid_argument, placed on `line` at `field` (the message
// "<descriptor>:LINE:COLUMN: FIELD: what"; "(top level)" for the document
// itself, "yaml" for a syntax error, whose place has no key).
void expect_rejected(const std::string& text, std::string_view field, int line) {
  auto r = parse_descriptor(text);
  ASSERT_FALSE(r.ok()) << "accepted:\n" << text;
  EXPECT_EQ(r.code(), status::invalid_argument);
  const auto& place = r.error().place;
  ASSERT_TRUE(place.has_value()) << r.error().message;
  EXPECT_EQ(place->at.file, "<descriptor>");
  EXPECT_EQ(place->at.line, line) << r.error().message << "\nfor:\n" << text;
  const bool keyless = field == "(top level)" || field == "yaml";
  EXPECT_EQ(place->key, keyless ? "" : field) << r.error().message;
  const auto want =
      fmt::format("<descriptor>:{}:{}: {}: {}", line, place->at.column, field, place->what);
  EXPECT_EQ(r.error().message, want) << "for:\n" << text;
}

void expect_round_trip(const segment_descriptor& d) {
  const auto text = to_text(d);
  auto back = parse_descriptor(text);
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  EXPECT_EQ(back.value(), d) << text;
  EXPECT_EQ(to_text(back.value()), text);
}

TEST(descriptor_text, base_parses) {
  auto d = parse_descriptor(to_text(base()));
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(d.value(), base());
}

TEST(descriptor_text, round_trips_a_started_transport_with_awkward_names) {
  auto t = testing::start(testing::loopback_config());
  ASSERT_TRUE(t);
  std::vector<std::byte> a(4096), b(8192), hidden(64);
  const std::string name_a = "weights: \"v1\" #2 'q' - [x] {y} & * ! | > % @ `";
  const std::string name_b =
      "  k\xc3\xa9y \xe2\x88\x91 \xf0\x9f\x98\x80\t\n\r\\ \xe2\x80\xa8 \xef\xbb\xbf ";
  ASSERT_TRUE(t->register_buffer(a.data(), a.size(), permission::remote_read, name_a).ok());
  ASSERT_TRUE(t->register_buffer(b.data(), b.size(), permission::remote_read_write, name_b).ok());
  ASSERT_TRUE(t->register_buffer(hidden.data(), hidden.size(), permission::local_only).ok());
  const auto d = t->descriptor();
  ASSERT_EQ(d.registrations.size(), 2u);  // local_only is never advertised
  expect_round_trip(d);
  std::set<std::string> names;  // advertised in id order, which is random
  for (const auto& r : d.registrations) names.insert(r.name);
  EXPECT_EQ(names, (std::set<std::string>{name_a, name_b}));
  EXPECT_TRUE(t->shutdown().ok());
}

// A name the text form could not carry is refused at registration, so a
// started transport's descriptor always round-trips.
TEST(descriptor_text, register_buffer_refuses_names_the_text_cannot_carry) {
  auto t = testing::start(testing::loopback_config());
  ASSERT_TRUE(t);
  std::vector<std::byte> memory(64);
  for (std::string_view bad : {"\xff", "ok\xc3", "\xed\xa0\x80", "\xef\xbf\xbf"}) {
    auto id =
        t->register_buffer(memory.data(), memory.size(), permission::remote_read, std::string(bad));
    ASSERT_FALSE(id.ok()) << ::testing::PrintToString(bad);
    EXPECT_EQ(id.code(), status::invalid_argument);
    EXPECT_NE(id.error().message.find("name"), std::string::npos) << id.error().message;
  }
  EXPECT_TRUE(t->descriptor().registrations.empty());
  EXPECT_TRUE(t->shutdown().ok());
}

// What docs/descriptors.md shows: the target writes its descriptor to a
// file, the initiator reads it, opens the segment and READs.
TEST(descriptor_text, a_descriptor_file_opens_a_segment_that_reads) {
  auto target = testing::start(testing::loopback_config());
  auto initiator = testing::start(testing::loopback_config());
  ASSERT_TRUE(target && initiator);
  auto memory = testing::pattern(4096, 7);
  auto id = target->register_buffer(memory.data(), memory.size(), permission::remote_read, "blob");
  ASSERT_TRUE(id.ok());
  const std::string path =
      ::testing::TempDir() + std::to_string(::getpid()) + "-faultlane_descriptor_test.yaml";
  std::ofstream(path) << to_text(target->descriptor());

  std::stringstream text;
  text << std::ifstream(path).rdbuf();
  auto d = parse_descriptor(text.str());
  ASSERT_TRUE(d.ok()) << d.error().message;
  auto seg = initiator->open_segment(d.value());
  ASSERT_TRUE(seg.ok()) << seg.error().message;
  std::vector<std::byte> got(4096);
  auto r = testing::run_one(
      *initiator,
      testing::read_req(seg.value(), d.value().registrations[0].id, 0, got.data(), got.size()));
  EXPECT_EQ(r.code, status::ok);
  EXPECT_EQ(got, memory);
  std::remove(path.c_str());
  EXPECT_TRUE(initiator->shutdown().ok());
  EXPECT_TRUE(target->shutdown().ok());
}

TEST(descriptor_text, round_trips_four_rails) {
  auto d = base();
  d.endpoints = {
      {"127.0.0.1", 40001}, {"127.0.0.2", 40001}, {"127.0.0.3", 40001}, {"127.0.0.4", 40001}};
  expect_round_trip(d);
}

TEST(descriptor_text, round_trips_extremes) {
  segment_descriptor d{
      ~0ull, {{"255.255.255.255", 65535}, {"1.0.0.1", 1}}, limits::transfer_bytes_max, {}};
  expect_round_trip(d);  // no registrations
  d.incarnation = 1;
  d.max_transfer_bytes = 1;
  d.registrations = {{~0ull, ~0ull, permission::remote_read_write, ""},
                     {1, 1, permission::remote_read, std::string("nul\0after", 9)},
                     {0x8000000000000000, (1ull << 53) + 1, permission::remote_read, "1234"}};
  expect_round_trip(d);  // 2^53 + 1 is where a double would round
  d.endpoints.resize(limits::rail_count_max, {"10.0.0.1", 7});
  expect_round_trip(d);
}

// The exact text, so the format cannot drift unnoticed. Changing it means a
// new descriptor_text_version.
TEST(descriptor_text, golden_text) {
  segment_descriptor d{0x9c3e4f10aa5b7d21,
                       {{"127.0.0.1", 41234}, {"127.0.0.2", 41235}},
                       1u << 30,
                       {{0x00000000000000ff, 4096, permission::remote_read, "weights: \"v1\" #2"},
                        {0xffffffffffffffff, 1ull << 40, permission::remote_read_write,
                         "caf\xc3\xa9 \xf0\x9f\x98\x80\tx"},
                        {0x1, 1, permission::remote_read, ""}}};
  EXPECT_EQ(to_text(d),
            "faultlane_descriptor: 1\n"
            "incarnation: \"0x9c3e4f10aa5b7d21\"\n"
            "max_transfer_bytes: 1073741824\n"
            "endpoints:\n"
            "  - address: 127.0.0.1\n"
            "    port: 41234\n"
            "  - address: 127.0.0.2\n"
            "    port: 41235\n"
            "registrations:\n"
            "  - id: \"0x00000000000000ff\"\n"
            "    length: 4096\n"
            "    permission: remote_read\n"
            "    name: \"weights: \\\"v1\\\" #2\"\n"
            "  - id: \"0xffffffffffffffff\"\n"
            "    length: 1099511627776\n"
            "    permission: remote_read_write\n"
            "    name: \"caf\\xe9 \\U0001f600\\tx\"\n"
            "  - id: \"0x0000000000000001\"\n"
            "    length: 1\n"
            "    permission: remote_read\n"
            "    name: \"\"\n");
  d.registrations.clear();
  EXPECT_EQ(to_text(d).substr(to_text(d).find("registrations")), "registrations: []\n");
}

// Other spellings of the same values, as a person or another tool may
// write them: comments, any key order after the version, flow style, plain
// or upper-case or short hex, raw UTF-8 and single quotes in names.
TEST(descriptor_text, reads_other_spellings_of_the_same_values) {
  auto d = parse_descriptor(
      "# written by hand\n"
      "faultlane_descriptor: 1\n"
      "registrations: [{name: 'k\xc3\xa9y ''x''', permission: remote_read, length: 8, id: 0xFF}]\n"
      "endpoints: [{port: 9, address: \"10.1.2.3\"}]\n"
      "max_transfer_bytes: 4096\n"
      "incarnation: 0x1\n");
  ASSERT_TRUE(d.ok()) << d.error().message;
  EXPECT_EQ(
      d.value(),
      (segment_descriptor{
          1, {{"10.1.2.3", 9}}, 4096, {{0xff, 8, permission::remote_read, "k\xc3\xa9y 'x'"}}}));
}

TEST(descriptor_text_rejects, missing_version) {
  expect_rejected(edited("faultlane_descriptor: 1\n", ""), "faultlane_descriptor", 1);
  expect_rejected("", "faultlane_descriptor", 1);
  expect_rejected("# only a comment\n", "faultlane_descriptor", 1);
}

TEST(descriptor_text_rejects, unknown_version) {
  expect_rejected(edited("faultlane_descriptor: 1", "faultlane_descriptor: 2"),
                  "faultlane_descriptor", 1);
  expect_rejected(edited("faultlane_descriptor: 1", "faultlane_descriptor: one"),
                  "faultlane_descriptor", 1);
  expect_rejected(edited("faultlane_descriptor: 1", "faultlane_descriptor: \"1\""),
                  "faultlane_descriptor", 1);
  // A later version is refused for its version, not for keys it may add.
  expect_rejected("faultlane_descriptor: 2\nchecksum: 7\n", "faultlane_descriptor", 1);
}

TEST(descriptor_text_rejects, version_not_first) {
  expect_rejected("incarnation: \"0x1\"\nfaultlane_descriptor: 1\n", "faultlane_descriptor", 2);
}

TEST(descriptor_text_rejects, unknown_keys) {
  expect_rejected(edited("max_transfer_bytes", "max_transfer_byte"), "max_transfer_byte", 3);
  expect_rejected(edited("    port: 41234\n", "    port: 41234\n    rail: 0\n"),
                  "endpoints[0].rail", 7);
  expect_rejected(edited("name: \"kv cache\"", "nmae: \"kv cache\""), "registrations[1].nmae", 15);
  expect_rejected(edited("max_transfer_bytes", "\"max transfer\x01\""), "\"max transfer\\x01\"", 3);
}

TEST(descriptor_text_rejects, repeated_keys) {
  expect_rejected(edited("max_transfer_bytes: 1073741824\n",
                         "max_transfer_bytes: 1073741824\nmax_transfer_bytes: 4096\n"),
                  "max_transfer_bytes", 4);
  expect_rejected(edited("length: 4096\n", "length: 4096\n    length: 1\n"),
                  "registrations[0].length", 10);
}

TEST(descriptor_text_rejects, missing_fields) {
  expect_rejected(edited("incarnation: \"0x9c3e4f10aa5b7d21\"\n", ""), "incarnation", 1);
  expect_rejected(edited("max_transfer_bytes: 1073741824\n", ""), "max_transfer_bytes", 1);
  expect_rejected(edited("    port: 41234\n", ""), "endpoints[0].port", 5);
  expect_rejected(edited("    length: 65536\n", ""), "registrations[1].length", 12);
  expect_rejected(edited("    permission: remote_read\n", ""), "registrations[0].permission", 8);
  expect_rejected(edited("    name: \"weights\"\n", ""), "registrations[0].name", 8);
  auto text = to_text(base());
  expect_rejected(text.substr(0, text.find("registrations:")), "registrations", 1);
}

TEST(descriptor_text_rejects, wrong_types) {
  expect_rejected("- 1\n- 2\n", "(top level)", 1);
  expect_rejected(edited("\"0x9c3e4f10aa5b7d21\"", "[1, 2]"), "incarnation", 2);
  expect_rejected(edited("1073741824", "{a: 1}"), "max_transfer_bytes", 3);
  expect_rejected(edited("1073741824", "1.5"), "max_transfer_bytes", 3);
  expect_rejected(edited("41234", "\"41234\""), "endpoints[0].port", 6);
  expect_rejected(edited("41234", "high"), "endpoints[0].port", 6);
  expect_rejected(edited("4096", "0x1000"), "registrations[0].length", 9);
  expect_rejected(edited("4096", "04096"), "registrations[0].length", 9);  // octal in YAML 1.1
  expect_rejected(edited("4096", ""), "registrations[0].length", 9);
  expect_rejected(edited("name: \"weights\"", "name:"), "registrations[0].name", 11);
  expect_rejected(edited("name: \"weights\"", "name: [w]"), "registrations[0].name", 11);
  expect_rejected(edited("\"0x5e1d0c3b2a190001\"", "6781733036345573377"), "registrations[0].id",
                  8);
  expect_rejected(edited("\"0x5e1d0c3b2a190001\"", "\"0x5e1d0c3b2a19000g\""), "registrations[0].id",
                  8);
  expect_rejected(edited("\"0x5e1d0c3b2a190001\"", "\"0x\""), "registrations[0].id", 8);
  auto text = to_text(base());
  expect_rejected(text.substr(0, text.find("endpoints:")) + "endpoints: 127.0.0.1:41234\n" +
                      text.substr(text.find("registrations:")),
                  "endpoints", 4);
  expect_rejected(text.substr(0, text.find("registrations:")) + "registrations:\n", "registrations",
                  7);
  expect_rejected(text.substr(0, text.find("registrations:")) + "registrations:\n  - 7\n",
                  "registrations[0]", 8);
}

TEST(descriptor_text_rejects, negative_numbers) {
  expect_rejected(edited("1073741824", "-1073741824"), "max_transfer_bytes", 3);
  expect_rejected(edited("41234", "-1"), "endpoints[0].port", 6);
  expect_rejected(edited("4096", "-4096"), "registrations[0].length", 9);
  expect_rejected(edited("\"0x5e1d0c3b2a190001\"", "\"-0x1\""), "registrations[0].id", 8);
}

TEST(descriptor_text_rejects, overflow_past_64_bits) {
  expect_rejected(edited("4096", "18446744073709551616"), "registrations[0].length", 9);
  expect_rejected(edited("4096", "99999999999999999999999"), "registrations[0].length", 9);
  expect_rejected(edited("\"0x5e1d0c3b2a190001\"", "\"0x15e1d0c3b2a190001\""),
                  "registrations[0].id", 8);
  expect_rejected(edited("\"0x9c3e4f10aa5b7d21\"", "\"0x00000000000000001\""), "incarnation", 2);
}

// Rule (docs/descriptors.md): a value echoed in a message is quoted and
// shown whole up to 64 bytes; a longer one is cut after its first 64 bytes
// and marked "...".
TEST(descriptor_text_rejects, echoed_values_are_whole_up_to_64_bytes_and_cut_after) {
  for (std::size_t n : {63, 64, 65, 200}) {
    const std::string digits(n, '9');
    auto r = parse_descriptor(edited("4096", digits));
    ASSERT_FALSE(r.ok()) << n;
    const auto shown = n <= 64 ? "\"" + digits + "\" does not fit in 64 bits"
                               : "\"" + digits.substr(0, 64) + "\"... does not fit in 64 bits";
    EXPECT_NE(r.error().message.find(shown), std::string::npos)
        << n << " digits: " << r.error().message;
  }
}

TEST(descriptor_text_rejects, port_out_of_range) {
  expect_rejected(edited("41234", "0"), "endpoints[0].port", 6);
  expect_rejected(edited("41234", "65536"), "endpoints[0].port", 6);
}

TEST(descriptor_text_rejects, address_not_a_specific_numeric_ipv4) {
  for (const char* bad : {"localhost", "1.2.3", "1.2.3.256", "::1", "0.0.0.0", "\"\""}) {
    expect_rejected(edited("127.0.0.1", bad), "endpoints[0].address", 5);
  }
}

TEST(descriptor_text_rejects, zero_incarnation) {
  expect_rejected(edited("0x9c3e4f10aa5b7d21", "0x0000000000000000"), "incarnation", 2);
}

TEST(descriptor_text_rejects, max_transfer_bytes_zero_or_over_the_limit) {
  expect_rejected(edited("1073741824", "0"), "max_transfer_bytes", 3);
  expect_rejected(edited("1073741824", std::to_string(limits::transfer_bytes_max + 1)),
                  "max_transfer_bytes", 3);
}

TEST(descriptor_text_rejects, zero_registration_id) {
  expect_rejected(edited("0x5e1d0c3b2a190002", "0x0"), "registrations[1].id", 12);
}

TEST(descriptor_text_rejects, duplicate_registration_id) {
  auto text = edited("0x5e1d0c3b2a190002", "0x5e1d0c3b2a190001");
  expect_rejected(text, "registrations[1].id", 12);
  EXPECT_NE(parse_descriptor(text).error().message.find("registrations[0]"), std::string::npos);
}

TEST(descriptor_text_rejects, zero_length) {
  expect_rejected(edited("65536", "0"), "registrations[1].length", 13);
}

TEST(descriptor_text_rejects, unknown_permission) {
  expect_rejected(edited("remote_read_write", "write"), "registrations[1].permission", 14);
  expect_rejected(edited("remote_read_write", "Remote_Read"), "registrations[1].permission", 14);
  expect_rejected(edited("remote_read_write", "local_only"), "registrations[1].permission", 14);
}

TEST(descriptor_text_rejects, endpoint_count_outside_one_to_rail_count_max) {
  auto d = base();
  d.endpoints.assign(limits::rail_count_max + 1, {"127.0.0.1", 41234});
  expect_rejected(to_text(d), "endpoints", 4);
  d.endpoints.clear();
  expect_rejected(to_text(d), "endpoints", 4);
}

TEST(descriptor_text_rejects, names_the_text_cannot_carry) {
  for (std::string_view bad :
       {"\xff", "\xc0\xaf", "\xed\xa0\x80", "\xef\xbf\xbe", "\xef\xb7\x90"}) {
    expect_rejected(edited("\"weights\"", "\"w" + std::string(bad) + "\""), "registrations[0].name",
                    11);
  }
  expect_rejected(edited("\"weights\"", "\"\\uFFFF\""), "registrations[0].name", 11);
}

TEST(descriptor_text_rejects, broken_yaml) {
  expect_rejected(edited("endpoints:\n", "endpoints: [\n"), "yaml", 5);
  expect_rejected(edited("\"weights\"", "\"weights"), "yaml", 12);
  expect_rejected(edited("    port: 41234\n", "  port: 41234\n"), "yaml", 6);
  expect_rejected(to_text(base()) + "---\nfaultlane_descriptor: 1\n", "(top level)", 16);
  expect_rejected(std::string(100000, '['), "yaml", 1);  // deep nesting: refused, no crash
  expect_rejected("faultlane_descriptor: 1\nincarnation: a: b\n", "yaml", 2);
}

// yaml-cpp 0.7's LoadAll() allocates without end on a top-level ',' (found
// by descriptor_properties.reading_edited_text_is_total): each is refused
// at its line, at once.
TEST(descriptor_text_rejects, a_comma_outside_a_flow_collection) {
  expect_rejected(",", "yaml", 1);
  expect_rejected(",aultlane_descriptor: 1\n", "yaml", 1);
  expect_rejected("# a comment\n  ,\n", "yaml", 2);
  expect_rejected("\"x\"\n,\n", "yaml", 2);
  expect_rejected("- a\n,\n", "yaml", 2);
  expect_rejected(to_text(base()) + "---\n,\n", "(top level)", 16);  // the "---" line
  auto r = parse_descriptor(",");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unexpected \",\" outside"), std::string::npos)
      << r.error().message;
}

TEST(descriptor_name, valid_registration_name_is_utf8_without_surrogates_or_noncharacters) {
  for (std::string_view ok : {"", "plain", "caf\xc3\xa9", "\xf0\x9f\x98\x80", "\xef\xbf\xbd",
                              "\xf4\x8f\xbf\xbd", "\xee\x80\x80"}) {
    EXPECT_TRUE(valid_registration_name(ok)) << ok;
  }
  for (std::string_view bad : {"\x80", "\xc3", "\xc0\x80", "\xe0\x80\x80", "\xf0\x80\x80\x80",
                               "\xed\xbf\xbf", "\xf4\x90\x80\x80", "\xef\xbf\xbf",
                               "\xf4\x8f\xbf\xbf", "\xef\xb7\xaf", "\xf8\x88\x80\x80\x80"}) {
    EXPECT_FALSE(valid_registration_name(bad)) << ::testing::PrintToString(bad);
  }
}

}  // namespace
}  // namespace faultlane
