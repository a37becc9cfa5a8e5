// frame_stream's header decoding; see frame_stream.hpp.
#include "frame_stream.hpp"

#include <fmt/format.h>

#include "faultlane/core/limits.hpp"

namespace faultlane::relays::detail {

bool frame_stream::held_can_begin_header() {
  const std::uint32_t magic = dir_ == direction::up ? wire::request_magic : wire::response_magic;
  // The preamble as it goes on the wire: magic, then version, big-endian.
  const std::array<std::uint8_t, 6> preamble{static_cast<std::uint8_t>(magic >> 24),
                                             static_cast<std::uint8_t>(magic >> 16),
                                             static_cast<std::uint8_t>(magic >> 8),
                                             static_cast<std::uint8_t>(magic),
                                             static_cast<std::uint8_t>(wire::protocol_version >> 8),
                                             static_cast<std::uint8_t>(wire::protocol_version)};
  const std::size_t n = std::min(held_size_, preamble.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (static_cast<std::uint8_t>(held_[i]) == preamble[i]) continue;
    failed_ = true;
    failure_ = fmt::format("{} {} at byte {}: {} (byte {} of the header)",
                           dir_ == direction::up ? "request" : "response", next_index_, offset_,
                           i < 4 ? "bad_magic" : "bad_version", i);
    return false;
  }
  return true;
}

std::shared_ptr<frame_info> frame_stream::decode_header() {
  auto frame = std::make_shared<frame_info>();
  frame->dir = dir_;
  frame->index = next_index_;
  frame->stream_offset = offset_;
  std::span<const std::byte> bytes(held_.data(), header_size());
  if (dir_ == direction::up) {
    // The relay does not know the target's transfer limit; any length the
    // codec accepts is followed, so payloads are skipped exactly.
    auto decoded = wire::decode_request(bytes, limits::transfer_bytes_max);
    if (!decoded.ok()) {
      failed_ = true;
      failure_ = fmt::format("request {} at byte {}: {}", next_index_, offset_,
                             wire::to_string(decoded.error()));
      return nullptr;
    }
    frame->request = decoded.value();
    frame->op = frame->request.op;
    frame->payload_bytes = frame->op == wire::opcode::write ? frame->request.length : 0;
    pairs_.waiting.push_back(frame);
  } else {
    auto decoded = wire::decode_response(bytes);
    if (!decoded.ok()) {
      failed_ = true;
      failure_ = fmt::format("response {} at byte {}: {}", next_index_, offset_,
                             wire::to_string(decoded.error()));
      return nullptr;
    }
    frame->response = decoded.value();
    while (!pairs_.waiting.empty() && pairs_.waiting.front()->dropped) pairs_.waiting.pop_front();
    if (!pairs_.waiting.empty()) {
      frame->op = pairs_.waiting.front()->op;
      pairs_.waiting.pop_front();
    }
    bool payload =
        frame->op == wire::opcode::read && frame->response.status == wire::wire_status::ok;
    frame->payload_bytes = payload ? frame->response.committed_bytes : 0;
  }
  ++next_index_;
  return frame;
}

}  // namespace faultlane::relays::detail
