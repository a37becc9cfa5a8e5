// libFuzzer target: the control plane's decoders are total and canonical.
//
// For any input, the header decoder returns a typed error or a header that
// re-encodes to exactly the bytes it came from; each built-in method's body
// decoder, given the bytes after the header, returns an error or a value
// that re-encodes to exactly that body. None of them may crash, assert or
// allocate what the input cannot back (ASan's allocation limit would trip).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "faultlane/base/assert.hpp"
#include "faultlane/control/rpc_frame.hpp"
#include "faultlane/control/rpc_messages.hpp"

namespace rpc = faultlane::rpc;

namespace {

// The header decoder under test. The planted build (rpc_fuzz_planted, for
// the test that proves this target can fail) ignores a request's status
// byte: it accepts headers the real one refuses, and they do not re-encode.
rpc::decoded_header decode(std::span<const std::byte> in, std::uint32_t limit) {
#if defined(FAULTLANE_FUZZ_PLANTED)
  if (in.size() >= rpc::header_bytes && in[5] == std::byte{1}) {
    rpc::header_bytes_array copy;
    std::memcpy(copy.data(), in.data(), copy.size());
    copy[7] = std::byte{0};
    rpc::seal(copy);
    return rpc::decode(copy, limit);
  }
#endif
  return rpc::decode(in, limit);
}

template <typename Decode, typename Encode>
void canonical(std::span<const std::byte> body, Decode decode_body, Encode encode_body) {
  auto value = decode_body(body);
  if (!value.ok()) {
    FL_ASSERT(!value.error().message.empty());
    return;
  }
  auto again = encode_body(value.value());
  FL_ASSERT(again.size() == body.size());
  FL_ASSERT(body.empty() || std::memcmp(again.data(), body.data(), body.size()) == 0);
}

void check(std::span<const std::byte> in) {
  // The first byte picks the receiver's payload bound, so both sides of the
  // length check are explored.
  const std::uint32_t limit = in.empty() ? 1 : (1u << (std::to_integer<unsigned>(in[0]) % 32));
  auto h = decode(in, limit);
  if (h.ok()) {
    FL_ASSERT(in.size() >= rpc::header_bytes);
    auto again = rpc::encode(h.value());
    FL_ASSERT(std::memcmp(again.data(), in.data(), rpc::header_bytes) == 0);
    FL_ASSERT(h.value().payload_length <= limit);
  } else {
    FL_ASSERT(!rpc::to_string(h.error()).empty());
  }
  if (in.size() > rpc::header_bytes) {
    FL_ASSERT(decode(in.first(rpc::header_bytes), limit).ok() == h.ok());  // trailing bytes
  }
  const auto body = in.size() > rpc::header_bytes ? in.subspan(rpc::header_bytes) : in;
  canonical(body, rpc::decode_descriptor, rpc::encode_descriptor);
  canonical(body, rpc::decode_registrations, rpc::encode_registrations);
  canonical(body, rpc::decode_stats, rpc::encode_stats);
  canonical(body, rpc::decode_pattern, [](const std::string& p) { return rpc::encode_pattern(p); });
  canonical(body, rpc::decode_ready, rpc::encode_ready);
}

}  // namespace

// A fuzzer cannot forge a CRC32C, so each input is tried as it is and
// resealed (which reaches every rule behind the checksum).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  check(in);
  if (size >= rpc::header_bytes) {
    std::vector<std::byte> sealed(in.begin(), in.end());
    rpc::seal(std::span<std::byte, rpc::header_bytes>(sealed.data(), rpc::header_bytes));
    check(sealed);
  }
  return 0;
}
