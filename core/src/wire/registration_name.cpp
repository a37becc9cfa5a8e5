// Registration names: UTF-8 text the descriptor's text form can carry
// (descriptor_text.hpp).
#include <array>
#include <optional>
#include <string_view>

#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/core/limits.hpp"

namespace faultlane {
namespace {

// The code point of the UTF-8 sequence at `at`, advancing past it; nullopt
// for a malformed, overlong or surrogate sequence.
std::optional<char32_t> next_code_point(std::string_view text, std::size_t& at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t size = lead < 0x80           ? 1
                           : (lead >> 5) == 0x6  ? 2
                           : (lead >> 4) == 0xe  ? 3
                           : (lead >> 3) == 0x1e ? 4
                                                 : 0;
  if (size == 0 || text.size() - at < size) return std::nullopt;
  char32_t cp = size == 1 ? lead : lead & (0x7f >> size);
  for (std::size_t i = 1; i < size; ++i) {
    const auto next = static_cast<unsigned char>(text[at + i]);
    if ((next & 0xc0) != 0x80) return std::nullopt;
    cp = (cp << 6) | (next & 0x3f);
  }
  constexpr std::array<char32_t, 5> smallest{0, 0, 0x80, 0x800, 0x10000};
  if (cp < smallest[size] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return std::nullopt;
  at += size;
  return cp;
}

}  // namespace

bool valid_registration_name(std::string_view name) noexcept {
  if (name.size() > limits::registration_name_bytes_max) return false;
  for (std::size_t at = 0; at < name.size();) {
    const auto cp = next_code_point(name, at);
    if (!cp) return false;
    const bool noncharacter = (*cp >= 0xfdd0 && *cp <= 0xfdef) || (*cp & 0xfffe) == 0xfffe;
    if (noncharacter) return false;
  }
  return true;
}

}  // namespace faultlane
