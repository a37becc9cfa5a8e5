// child_protocol: the lines a child transport process and the runner
// exchange over the child's stdin and stdout, one JSON object per line.
//
// runner -> child: {"cmd": "start"|"register"|"unregister"|"stats"|"dump"|
//                   "shutdown"|"exit", ...arguments}
// child -> runner: {"reply": CMD, "ok": true, ...} or {"reply": CMD,
//                   "ok": false, "code": STATUS, "message": TEXT} for each
//                   command in order, and {"event": {...}} for each observer
//                   event, as it happens.
#pragma once

#include <nlohmann/json.hpp>

#include "faultlane/core/config.hpp"
#include "faultlane/core/stats.hpp"
#include "faultlane/sim/history.hpp"

namespace faultlane::sim::child_protocol {

nlohmann::json to_json(const core_event& e);
core_event event_from_json(const nlohmann::json& j);

nlohmann::json to_json(const transport_stats& s);
transport_stats stats_from_json(const nlohmann::json& j);

// The transport_config fields a scenario may set (addresses excluded).
nlohmann::json to_json(const transport_config& c);
transport_config config_from_json(const nlohmann::json& j);

std::string hex(const std::vector<std::byte>& bytes);
std::vector<std::byte> unhex(const std::string& text);

}  // namespace faultlane::sim::child_protocol
