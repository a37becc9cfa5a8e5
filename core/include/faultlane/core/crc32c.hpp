// CRC32C (Castagnoli, reflected polynomial 0x82F63B78): the integrity check
// every frame header carries (docs/protocol.md), so a header damaged on the
// way is a decode error, never a different valid frame.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace faultlane {

// CRC32C of `data`, continuing from `crc` (the result of an earlier call,
// or 0 to start).
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

}  // namespace faultlane
