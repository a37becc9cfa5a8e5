// The bounds of a registration name (registration_name.cpp,
// docs/descriptors.md): at most registration_name_bytes_max bytes of UTF-8,
// no overlong form, no surrogate, no noncharacter. Each range is checked at
// its first and last code point and one past either end.
#include <gtest/gtest.h>

#include <string>

#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/core/limits.hpp"

namespace faultlane {
namespace {

// Rule: a name holds at most registration_name_bytes_max bytes.
TEST(registration_name, holds_at_most_its_byte_bound) {
  EXPECT_TRUE(valid_registration_name(std::string(limits::registration_name_bytes_max, 'a')));
  EXPECT_FALSE(valid_registration_name(std::string(limits::registration_name_bytes_max + 1, 'a')));
  // The bound is in bytes, not characters: 2048 two-byte characters fit.
  std::string two_byte;
  for (std::size_t i = 0; i < limits::registration_name_bytes_max / 2; ++i) two_byte += "\xc3\xa9";
  EXPECT_TRUE(valid_registration_name(two_byte));
  EXPECT_FALSE(valid_registration_name(two_byte + "a"));
}

// Rule: each sequence length holds the code points from its smallest on;
// the same code point in more bytes (overlong) is refused.
TEST(registration_name, each_utf8_length_starts_at_its_smallest_code_point) {
  for (std::string_view ok : {
           "\x7f",              // U+007F, the last of one byte
           "\xc2\x80",          // U+0080, the first of two
           "\xdf\xbf",          // U+07FF, the last of two
           "\xe0\xa0\x80",      // U+0800, the first of three
           "\xf0\x90\x80\x80",  // U+10000, the first of four
       }) {
    EXPECT_TRUE(valid_registration_name(ok)) << ::testing::PrintToString(ok);
  }
  for (std::string_view bad : {
           "\xc1\xbf",          // U+007F in two bytes
           "\xe0\x9f\xbf",      // U+07FF in three
           "\xf0\x8f\xbf\xbf",  // U+FFFF in four
           "\xc3\x28",          // a lead byte, then no continuation
           "\xe2\x82",          // a sequence cut short at the end
       }) {
    EXPECT_FALSE(valid_registration_name(bad)) << ::testing::PrintToString(bad);
  }
}

// Rule: surrogates U+D800..U+DFFF are refused, their neighbours are not.
TEST(registration_name, surrogates_are_refused_at_both_ends_and_no_further) {
  EXPECT_TRUE(valid_registration_name("\xed\x9f\xbf"));   // U+D7FF
  EXPECT_FALSE(valid_registration_name("\xed\xa0\x80"));  // U+D800
  EXPECT_FALSE(valid_registration_name("\xed\xbf\xbf"));  // U+DFFF
  EXPECT_TRUE(valid_registration_name("\xee\x80\x80"));   // U+E000
}

// Rule: noncharacters (U+FDD0..U+FDEF and every U+xxFFFE/U+xxFFFF) are
// refused, their neighbours are not.
TEST(registration_name, noncharacters_are_refused_at_both_ends_and_no_further) {
  EXPECT_TRUE(valid_registration_name("\xef\xb7\x8f"));       // U+FDCF
  EXPECT_FALSE(valid_registration_name("\xef\xb7\x90"));      // U+FDD0
  EXPECT_FALSE(valid_registration_name("\xef\xb7\xaf"));      // U+FDEF
  EXPECT_TRUE(valid_registration_name("\xef\xb7\xb0"));       // U+FDF0
  EXPECT_TRUE(valid_registration_name("\xef\xbf\xbd"));       // U+FFFD
  EXPECT_FALSE(valid_registration_name("\xef\xbf\xbe"));      // U+FFFE
  EXPECT_FALSE(valid_registration_name("\xf0\x9f\xbf\xbe"));  // U+1FFFE
  EXPECT_FALSE(valid_registration_name("\xf0\x9f\xbf\xbf"));  // U+1FFFF
  EXPECT_TRUE(valid_registration_name("\xf0\x9f\xbf\xbd"));   // U+1FFFD
  // A noncharacter anywhere in the name, not only first.
  EXPECT_FALSE(valid_registration_name("ok\xef\xb7\x90"));
}

}  // namespace
}  // namespace faultlane
