// descriptor_text: a segment_descriptor as a small, versioned YAML document,
// so two processes can exchange it (a target writes it to a file, an
// initiator reads it and opens the segment) without copying ports and ids by
// hand. docs/descriptors.md defines the format key by key.
//
//   faultlane_descriptor: 1
//   incarnation: "0x9c3e4f10aa5b7d21"
//   max_transfer_bytes: 1073741824
//   endpoints:
//     - address: 127.0.0.1
//       port: 41234
//   registrations:
//     - id: "0x5e1d0c3b2a190001"
//       length: 4096
//       permission: remote_read
//       name: "weights: \"v1\""
//
// to_text() writes any descriptor, always the same text for the same value.
// parse_descriptor() is total and strict: it accepts exactly the documents a
// transport could have written, and names the field and line of anything
// else in an invalid_argument error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "faultlane/core/status.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane {

// The value of the `faultlane_descriptor` key this build writes and reads.
inline constexpr std::uint64_t descriptor_text_version = 1;

// The document, ending in a newline. The text is ASCII: non-ASCII
// characters of names are written as YAML escapes.
std::string to_text(const segment_descriptor& descriptor);

result<segment_descriptor> parse_descriptor(std::string_view text);

// A registration name the text form carries exactly: at most
// limits::registration_name_bytes_max bytes of valid UTF-8 without
// surrogates or Unicode noncharacters (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF).
// transport::register_buffer refuses other names; were one written anyway,
// to_text would put U+FFFD in place of what it cannot represent.
bool valid_registration_name(std::string_view name) noexcept;

}  // namespace faultlane
