// tap: records, JSONL and queries; see tap.hpp and docs/taps.md.
#include "faultlane/relays/tap.hpp"

#include <utility>

#include <fmt/format.h>

namespace faultlane::relays {
namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string_view record_kind_name(record_kind k) noexcept {
  switch (k) {
#define FAULTLANE_TAP_KIND(name) \
  case record_kind::name: return #name;
    FAULTLANE_TAP_RECORD_KINDS(FAULTLANE_TAP_KIND)
#undef FAULTLANE_TAP_KIND
  }
  return "?";
}

std::string to_json(const tap_record& r) {
  std::string out =
      fmt::format(R"({{"kind": "{}", "t_us": {}, "relay": {}, "rail": {}, "conn": {})",
                  record_kind_name(r.kind), r.time_us, quoted(r.relay), r.rail, r.connection);
  switch (r.kind) {
    case record_kind::open:
    case record_kind::close:
      out += fmt::format(R"(, "client": {}, "upstream_local": {}, "upstream_remote": {})",
                         quoted(r.client_address), quoted(r.upstream_local),
                         quoted(r.upstream_remote));
      if (r.kind == record_kind::close) {
        out += fmt::format(R"(, "bytes_up": {}, "bytes_down": {}, "duration_us": {}, "reason": {})",
                           r.bytes_up, r.bytes_down, r.duration_us, quoted(r.reason));
      }
      break;
    case record_kind::connect_failed:
      out += fmt::format(R"(, "client": {}, "upstream_remote": {}, "error": {})",
                         quoted(r.client_address), quoted(r.upstream_remote), quoted(r.reason));
      break;
    case record_kind::frame:
      out += fmt::format(R"(, "dir": "{}", "frame": {}, "stream_offset": {}, )"
                         R"("type": "{}", "op": "{}", "request_id": {})",
                         to_string(r.dir), r.frame_index, r.stream_offset,
                         r.request ? "request" : "response", wire::to_string(r.op), r.request_id);
      if (r.request) {
        out += fmt::format(R"(, "registration": {}, "offset": {}, "length": {})", r.registration_id,
                           r.remote_offset, r.length);
      } else {
        out += fmt::format(R"(, "status": "{}", "committed": {})",
                           wire::to_string(static_cast<wire::wire_status>(r.status)), r.length);
      }
      break;
    case record_kind::fault:
      out += fmt::format(R"(, "dir": "{}", "fault": {}, "frame": {}, "stream_offset": {})",
                         to_string(r.dir), quoted(r.fault), r.frame_index, r.stream_offset);
      break;
    case record_kind::decode_error:
      out += fmt::format(R"(, "dir": "{}", "error": {})", to_string(r.dir), quoted(r.fault));
      break;
    case record_kind::write:
      out += fmt::format(R"(, "dir": "{}", "stream_offset": {}, "bytes": {}, "due_us": {})",
                         to_string(r.dir), r.stream_offset, r.length, r.due_us);
      break;
  }
  return out + "}";
}

bool tap::open_file(const std::string& jsonl_path, bool append) {
  std::lock_guard lock(mutex_);
  file_.open(jsonl_path, std::ios::out | (append ? std::ios::app : std::ios::trunc));
  return static_cast<bool>(file_);
}

void tap::record(tap_record r) {
  std::lock_guard lock(mutex_);
  if (file_.is_open()) {
    file_ << to_json(r) << '\n';
    file_.flush();
  }
  records_.push_back(std::move(r));
}

std::vector<tap_record> tap::records() const {
  std::lock_guard lock(mutex_);
  return records_;
}

std::vector<tap_record> tap::take_records() {
  std::lock_guard lock(mutex_);
  return std::exchange(records_, {});
}

std::vector<tap_record> tap::frames(const std::function<bool(const tap_record&)>& keep) const {
  std::lock_guard lock(mutex_);
  std::vector<tap_record> out;
  for (const auto& r : records_) {
    if (r.kind == record_kind::frame && (!keep || keep(r))) out.push_back(r);
  }
  return out;
}

std::map<std::size_t, std::vector<tap_record>> tap::read_requests_by_rail() const {
  std::map<std::size_t, std::vector<tap_record>> out;
  for (auto& r :
       frames([](const tap_record& f) { return f.request && f.op == wire::opcode::read; })) {
    out[r.rail].push_back(r);
  }
  return out;
}

std::size_t tap::count(record_kind kind) const {
  std::lock_guard lock(mutex_);
  std::size_t n = 0;
  for (const auto& r : records_) n += r.kind == kind;
  return n;
}

void tap::clear() {
  std::lock_guard lock(mutex_);
  records_.clear();
}

}  // namespace faultlane::relays
