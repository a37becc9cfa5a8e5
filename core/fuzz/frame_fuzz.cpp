// libFuzzer target: the frame decoder is total and canonical.
//
// For any input, decode_request and decode_response either return a typed
// error or a frame; a decoded frame re-encodes to exactly the bytes it came
// from (so no field is ignored or silently normalised), and decoding is
// independent of bytes past the frame.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/frame.hpp"

namespace wire = faultlane::wire;

namespace {

// The decoder under test. The planted build (frame_fuzz_planted, only for
// the test that proves this target can fail) swaps in a decoder that
// ignores the reserved field (and so must recompute the checksum).
wire::decoded<wire::request_frame> decode_request(std::span<const std::byte> in,
                                                  std::uint64_t limit) {
#if defined(FAULTLANE_FUZZ_PLANTED)
  if (in.size() >= wire::request_frame_bytes) {
    wire::request_bytes copy;
    std::memcpy(copy.data(), in.data(), copy.size());
    std::memset(copy.data() + 44, 0, 4);
    wire::seal(copy);
    return wire::decode_request(copy, limit);
  }
#endif
  return wire::decode_request(in, limit);
}

}  // namespace

void check(const std::uint8_t* data, std::size_t size);

// A fuzzer cannot forge a CRC32C, so each input is tried as it is (which
// reaches the checksum rule) and resealed as a request and as a response
// (which reaches every rule behind it).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  check(data, size);
  if (size >= wire::request_frame_bytes) {
    std::vector<std::uint8_t> sealed(data, data + size);
    auto* raw = reinterpret_cast<std::byte*>(sealed.data());
    wire::seal(std::span<std::byte, wire::request_frame_bytes>(raw, wire::request_frame_bytes));
    check(sealed.data(), sealed.size());
  }
  if (size >= wire::response_frame_bytes) {
    std::vector<std::uint8_t> sealed(data, data + size);
    auto* raw = reinterpret_cast<std::byte*>(sealed.data());
    wire::seal(std::span<std::byte, wire::response_frame_bytes>(raw, wire::response_frame_bytes));
    check(sealed.data(), sealed.size());
  }
  return 0;
}

void check(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  // The first byte picks the receiver's transfer limit so both sides of the
  // length check are explored.
  std::uint64_t limit = size > 0 ? (1ull << (data[0] % 40)) : 1;

  auto request = decode_request(in, limit);
  if (request.ok()) {
    FL_ASSERT(size >= wire::request_frame_bytes);
    auto again = wire::encode(request.value());
    FL_ASSERT(std::memcmp(again.data(), data, wire::request_frame_bytes) == 0);
    FL_ASSERT(request.value().length > 0 && request.value().length <= limit);
  } else {
    FL_ASSERT(!wire::to_string(request.error()).empty());
  }

  auto response = wire::decode_response(in);
  if (response.ok()) {
    FL_ASSERT(size >= wire::response_frame_bytes);
    auto again = wire::encode(response.value());
    FL_ASSERT(std::memcmp(again.data(), data, wire::response_frame_bytes) == 0);
  }
  // A frame and its error never depend on trailing bytes.
  if (size > wire::request_frame_bytes) {
    auto prefix = decode_request(in.first(wire::request_frame_bytes), limit);
    FL_ASSERT(prefix.ok() == request.ok());
  }
}
