// Big-endian integers at a byte pointer, the one way both wire formats
// (frame.cpp, rpc_frame.cpp) write and read their fields.
#pragma once

#include <cstddef>
#include <cstdint>

namespace faultlane::detail {

template <std::size_t Size>
void put(std::byte* out, std::uint64_t value) noexcept {
  for (std::size_t i = 0; i < Size; ++i) {
    out[i] = static_cast<std::byte>(value >> (8 * (Size - 1 - i)));
  }
}

template <std::size_t Size>
std::uint64_t get(const std::byte* in) noexcept {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < Size; ++i) {
    value = (value << 8) | std::to_integer<std::uint64_t>(in[i]);
  }
  return value;
}

}  // namespace faultlane::detail
