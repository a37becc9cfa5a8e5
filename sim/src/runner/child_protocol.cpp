// child_protocol: see child_protocol.hpp.
#include "runner/child_protocol.hpp"

namespace faultlane::sim::child_protocol {

using nlohmann::json;

json to_json(const core_event& e) {
  return json{{"kind", static_cast<int>(e.kind)},
              {"transport", e.transport},
              {"incarnation", e.incarnation},
              {"task", e.task_id},
              {"request", e.request_id},
              {"op", static_cast<int>(e.op)},
              {"segment", e.segment},
              {"registration", e.registration_id},
              {"remote_offset", e.remote_offset},
              {"length", e.length},
              {"offset", e.offset},
              {"lane", e.lane},
              {"rail", e.rail},
              {"epoch", e.epoch},
              {"local", e.local},
              {"remote", e.remote},
              {"outcome", static_cast<int>(e.outcome)},
              {"bytes", e.bytes},
              {"tasks", e.tasks},
              {"admitted_bytes", e.admitted_bytes}};
}

core_event event_from_json(const json& j) {
  core_event e;
  e.kind = static_cast<event_kind>(j.at("kind").get<int>());
  e.transport = j.at("transport").get<std::string>();
  e.incarnation = j.at("incarnation").get<std::uint32_t>();
  e.task_id = j.at("task").get<std::uint64_t>();
  e.request_id = j.at("request").get<std::uint64_t>();
  e.op = static_cast<wire::opcode>(j.at("op").get<int>());
  e.segment = j.at("segment").get<std::uint64_t>();
  e.registration_id = j.at("registration").get<std::uint64_t>();
  e.remote_offset = j.at("remote_offset").get<std::uint64_t>();
  e.length = j.at("length").get<std::uint64_t>();
  e.offset = j.at("offset").get<std::uint64_t>();
  e.lane = j.at("lane").get<std::size_t>();
  e.rail = j.at("rail").get<std::size_t>();
  e.epoch = j.at("epoch").get<std::uint64_t>();
  e.local = j.at("local").get<std::string>();
  e.remote = j.at("remote").get<std::string>();
  e.outcome = static_cast<status>(j.at("outcome").get<int>());
  e.bytes = j.at("bytes").get<std::uint64_t>();
  e.tasks = j.at("tasks").get<std::uint64_t>();
  e.admitted_bytes = j.at("admitted_bytes").get<std::uint64_t>();
  return e;
}

json to_json(const transport_stats& s) {
  json j;
  for (const auto& c : transport_counters) j[std::string(c.name)] = s.*c.field;
  j["tasks_admitted_now"] = s.tasks_admitted_now;
  j["bytes_admitted_now"] = s.bytes_admitted_now;
  j["rejected_busy"] = s.rejected_busy;
  j["leases_live"] = s.leases_live;
  j["runtime_failed"] = s.runtime_failed;
  auto& by_status = j["failures_by_status"] = json::array();
  for (auto n : s.failures_by_status) by_status.push_back(n);
  return j;
}

transport_stats stats_from_json(const json& j) {
  transport_stats s;
  for (const auto& c : transport_counters)
    s.*c.field = j.at(std::string(c.name)).get<std::uint64_t>();
  s.tasks_admitted_now = j.at("tasks_admitted_now").get<std::uint64_t>();
  s.bytes_admitted_now = j.at("bytes_admitted_now").get<std::uint64_t>();
  s.rejected_busy = j.at("rejected_busy").get<std::uint64_t>();
  s.leases_live = j.at("leases_live").get<std::uint64_t>();
  s.runtime_failed = j.at("runtime_failed").get<bool>();
  const auto& by_status = j.at("failures_by_status");
  for (std::size_t i = 0; i < by_status.size() && i < std::size(s.failures_by_status); ++i) {
    s.failures_by_status[i] = by_status[i].get<std::uint64_t>();
  }
  return s;
}

json to_json(const transport_config& c) {
  json j{{"rpc_worker_count", c.rpc_worker_count}, {"rpc_inline", c.rpc_inline}};
  for_each_transport_setting(
      [&](const auto& setting) { j[std::string(setting.name)] = c.*setting.field; });
  return j;
}

transport_config config_from_json(const json& j) {
  transport_config c;
  for_each_transport_setting(
      [&](const auto& setting) { j.at(std::string(setting.name)).get_to(c.*setting.field); });
  j.at("rpc_worker_count").get_to(c.rpc_worker_count);
  j.at("rpc_inline").get_to(c.rpc_inline);
  return c;
}

std::string hex(const std::vector<std::byte>& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (auto b : bytes) {
    auto v = std::to_integer<unsigned>(b);
    out.push_back(digits[v >> 4]);
    out.push_back(digits[v & 15]);
  }
  return out;
}

std::vector<std::byte> unhex(const std::string& text) {
  auto nibble = [](char c) -> unsigned {
    return c <= '9' ? static_cast<unsigned>(c - '0') : static_cast<unsigned>(c - 'a' + 10);
  };
  std::vector<std::byte> out(text.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i) {
    out[i] = static_cast<std::byte>((nibble(text[2 * i]) << 4) | nibble(text[2 * i + 1]));
  }
  return out;
}

}  // namespace faultlane::sim::child_protocol
