// CRC32C: the SSE4.2 crc32 instruction where the processor has it (about
// 20 ns a header), else a table a byte at a time (about 100 ns): either
// way a small fraction of a round trip (docs/benchmarks.md).
#include "faultlane/core/crc32c.hpp"

#include "faultlane/base/assert.hpp"

#include <array>
#include <cstring>

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

std::uint32_t crc32c_table(std::span<const std::byte> data, std::uint32_t crc) noexcept {
  crc = ~crc;
  for (std::byte b : data) {
    crc = table[(crc ^ std::to_integer<std::uint32_t>(b)) & 0xFFu] ^ (crc >> 8);
  }
  return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) std::uint32_t crc32c_sse42(std::span<const std::byte> data,
                                                             std::uint32_t crc) noexcept {
  std::uint64_t c = ~crc;
  const std::byte* p = data.data();
  std::size_t n = data.size();
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t word;
    std::memcpy(&word, p, 8);  // little-endian, as the reflected CRC wants
    c = __builtin_ia32_crc32di(c, word);
  }
  FL_ASSERT(n < 8);
  auto c32 = static_cast<std::uint32_t>(c);
  for (; n > 0; --n, ++p) c32 = __builtin_ia32_crc32qi(c32, std::to_integer<unsigned char>(*p));
  return ~c32;
}

const bool has_sse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc) noexcept {
#if defined(__x86_64__)
  if (has_sse42) return crc32c_sse42(data, crc);
#endif
  return crc32c_table(data, crc);
}

}  // namespace faultlane
