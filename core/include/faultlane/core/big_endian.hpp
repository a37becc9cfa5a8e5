// Big-endian integers at a byte pointer, the one way both wire formats
// (frame.cpp, rpc_frame.cpp) write and read their fields.
//
// On a little-endian host a field of 2, 4 or 8 bytes is one load or store
// and one byte swap; byte by byte it took a shift and an or per byte, and
// the frame headers of a 4 KiB exchange are decoded and encoded four times
// (docs/benchmarks.md, "The hot path in numbers").
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace faultlane::detail {

template <std::size_t Size>
constexpr bool swapped_whole = std::endian::native == std::endian::little &&
                               (Size == 2 || Size == 4 || Size == 8);

template <std::size_t Size>
auto swap_bytes(auto value) noexcept {
  if constexpr (Size == 2) return __builtin_bswap16(static_cast<std::uint16_t>(value));
  if constexpr (Size == 4) return __builtin_bswap32(static_cast<std::uint32_t>(value));
  if constexpr (Size == 8) return __builtin_bswap64(static_cast<std::uint64_t>(value));
}

template <std::size_t Size>
void put(std::byte* out, std::uint64_t value) noexcept {
  if constexpr (swapped_whole<Size>) {
    const auto swapped = swap_bytes<Size>(value);
    static_assert(sizeof swapped == Size);
    std::memcpy(out, &swapped, Size);
  } else {
    for (std::size_t i = 0; i < Size; ++i) {
      out[i] = static_cast<std::byte>(value >> (8 * (Size - 1 - i)));
    }
  }
}

template <std::size_t Size>
std::uint64_t get(const std::byte* in) noexcept {
  if constexpr (swapped_whole<Size>) {
    std::conditional_t<Size == 2, std::uint16_t,
                       std::conditional_t<Size == 4, std::uint32_t, std::uint64_t>>
        raw;
    std::memcpy(&raw, in, Size);
    return swap_bytes<Size>(raw);
  } else {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < Size; ++i) {
      value = (value << 8) | std::to_integer<std::uint64_t>(in[i]);
    }
    return value;
  }
}

}  // namespace faultlane::detail
