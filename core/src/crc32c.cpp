// CRC32C, table-driven a byte at a time: frame headers are 32 and 48 bytes,
// where a wider method saves nothing measurable (docs/benchmarks.md).
#include "faultlane/core/crc32c.hpp"

#include <array>

namespace faultlane {
namespace {

constexpr std::uint32_t polynomial = 0x82F63B78u;  // 0x1EDC6F41 reflected

constexpr std::array<std::uint32_t, 256> make_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t i = 0; i < 256; ++i) {
    std::uint32_t c = i;
    for (int bit = 0; bit < 8; ++bit) c = (c & 1u) ? (c >> 1) ^ polynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr auto table = make_table();
static_assert(table[1] == polynomial >> 7 || table[128] == polynomial,
              "the table is built from the reflected polynomial");

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) noexcept {
  crc = ~crc;
  for (std::byte b : data) {
    crc = table[(crc ^ std::to_integer<std::uint32_t>(b)) & 0xFFu] ^ (crc >> 8);
  }
  return ~crc;
}

}  // namespace faultlane
