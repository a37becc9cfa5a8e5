// The YAML form of relays, shared by `faultlane-relay --config` and the
// scenario runner (docs/faults.md):
//
//   seed: 7
//   relays:
//     - name: rail0
//       listen: 127.0.0.1:0
//       upstream: 127.0.0.1:9000
//       upstream_source: 127.0.0.1
//       rail: 0
//       protocol: faultlane        # or raw
//       tap: rail0.jsonl           # optional
//       on_upstream_failure: reset # or fin: how a client is closed when
//                                  # the upstream cannot be reached
//       faults:
//         - {type: latency, dir: down, ms: 5, jitter_ms: 1}
//         - {type: drop_frame, dir: down, opcode: write, count: 1}
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "faultlane/relays/relay.hpp"

namespace faultlane::yaml {
class reader;
}  // namespace faultlane::yaml

namespace YAML {
class Node;
}

namespace faultlane::relays {

// HOST:PORT as the relays take it: parse_endpoint's form, with `localhost`
// read as 127.0.0.1 and an IPv6 host in brackets ([::1]:80) unwrapped (the
// relays then refuse it by name: they relay IPv4).
result<address> parse_relay_address(std::string_view text);

// Relays from YAML text. Errors are the shared reader's
// (faultlane/core/yaml_reader.hpp): "LABEL:LINE:COLUMN: KEY: what" with the
// place as data, KEY a path such as `relays[1].faults[0].ms`.
result<std::vector<relay_config>> parse_relays_yaml(std::string_view text,
                                                    const std::string& label = "<relays>");
// The same from a parsed document read with `rd`.
result<std::vector<relay_config>> parse_relays(const YAML::Node& root, const yaml::reader& rd);
// The same from a file: errors begin "PATH:LINE:COLUMN:".
result<std::vector<relay_config>> load_relays_file(const std::string& path);

}  // namespace faultlane::relays
