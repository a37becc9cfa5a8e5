// transport_config: everything a transport is started with, declared once.
//
// FAULTLANE_TRANSPORT_SETTINGS is the one list of the numbers and switches:
// each row generates its member and default below, validate()'s bound check,
// the YAML reader (config.cpp), the scenario writer and the child process's
// JSON (sim/), equality, and a row of the table in docs/configuration.md (a
// test checks the two agree). FAULTLANE_TRANSPORT_FIELDS_BY_HAND lists the
// other fields: addresses, ports, a list and rpc_worker_count's `inline`,
// whose checks and readers are written by hand. The struct has no field
// outside the two lists (a static_assert counts them), so none is forgotten.
// docs/configuration.md, "Adding a setting", says what to edit.
//
// The rpc_* settings belong to the control plane (faultlane_control,
// control::start_transport and control::serve read them); they live here
// so that one file configures one process. transport::start checks them
// and otherwise ignores them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane::yaml {
class reader;
}  // namespace faultlane::yaml

namespace YAML {
class Node;
}

namespace faultlane {

class transport_observer;

// X(type, name, initial, minimum, maximum, meaning). `initial` is the
// default; a value outside [minimum, maximum] is a configuration error.
#define FAULTLANE_TRANSPORT_SETTINGS(X)                                                          \
  X(std::size_t, worker_count, 1, limits::worker_count_min, limits::worker_count_max,            \
    "io threads (shards)")                                                                       \
  X(std::uint32_t, busy_poll_us, 0, 0, limits::busy_poll_us_max,                                 \
    "io threads poll this long after their last event before blocking, trading CPU for "         \
    "latency; 0 blocks at once")                                                                 \
  X(std::size_t, connections_per_peer, 4, 1, limits::lane_count_max,                             \
    "lanes per peer (total, across rails)")                                                      \
  X(std::size_t, lane_inflight_max, limits::lane_inflight_default, 1, limits::lane_inflight_max, \
    "exchanges one lane keeps in flight: requests leave back to back and answers come back "     \
    "in order (docs/architecture.md, \"Pipelined lanes\"); 1 = one exchange at a time")          \
  X(std::uint64_t, max_outstanding_tasks, limits::outstanding_tasks_default, 1,                  \
    limits::outstanding_tasks_max,                                                               \
    "admission bound on tasks: over it `submit` fails `busy` at once")                           \
  X(std::uint64_t, max_outstanding_bytes, limits::outstanding_bytes_default, 1,                  \
    limits::outstanding_bytes_max,                                                               \
    "admission bound on bytes: over it `submit` fails `busy` at once")                           \
  X(std::uint64_t, max_transfer_bytes, limits::transfer_bytes_default, 1,                        \
    limits::transfer_bytes_max,                                                                  \
    "largest request this transport serves, and sends: `submit` takes at most the smaller "      \
    "of this and the peer's published value")                                                    \
  X(std::size_t, max_connections, 1024, 1, limits::connections_max,                              \
    "live target sessions; one past it is closed at accept. Each holds a 12 KiB read-ahead "     \
    "(`request_read_ahead_bytes`), so 1024 sessions hold 12 MiB, 65536 hold 768 MiB")            \
  X(std::uint32_t, connect_timeout_ms, limits::connect_timeout_ms_default, 1,                    \
    limits::timeout_ms_max, "a lane's connect")                                                  \
  X(std::uint32_t, progress_timeout_ms, limits::progress_timeout_ms_default, 1,                  \
    limits::timeout_ms_max,                                                                      \
    "every partial header/payload, both sides; a new connection's first byte. Progress is "      \
    "bytes arriving or leaving: bytes waiting in the socket below the receive watermark "        \
    "count too. Once the kernel took a whole WRITE request, the initiator sees no progress "     \
    "until the ACK, so this also bounds the time the link needs to carry the body on to the "    \
    "target")                                                                                    \
  X(std::uint32_t, idle_connection_timeout_ms, limits::idle_connection_timeout_ms_default, 1,    \
    limits::timeout_ms_max, "a lane with no work closes its socket")                             \
  X(std::uint32_t, reconnect_cooldown_ms, limits::reconnect_cooldown_ms_default, 1,              \
    limits::timeout_ms_max, "after a failed connect, no new connect before this")                \
  X(std::uint32_t, shutdown_timeout_ms, limits::shutdown_timeout_ms_default, 1,                  \
    limits::timeout_ms_max, "bound on `shutdown()`")                                             \
  X(bool, rpc_enabled, true, false, true,                                                        \
    "serve the control plane when started by control::start_transport or control::serve "        \
    "(docs/control-plane.md: ping, service_ready, describe, list_registrations, stats)")         \
  X(std::size_t, rpc_queue_max, limits::rpc_queue_max_default, 1, limits::rpc_queue_max_max,     \
    "pooled calls waiting for a worker; one past it is answered `busy` at once")

// X(type, name, initial, yaml, bound, meaning): fields with hand-written
// checks (config.cpp) and readers. `yaml`: read from a file under its name.
// A scenario (sim/) sets the addresses and ports itself; its writer and the
// child's JSON carry rpc_worker_count and rpc_inline by hand.
// rpc_worker_count is signed so that a negative value from a flag or a file
// is an error, not 2^64 - 1.
#define FAULTLANE_TRANSPORT_FIELDS_BY_HAND(X)                                                      \
  X(std::string, bind_address, "127.0.0.1", true, "a wildcard needs `advertise_address` or rails", \
    "listener address, numeric IPv4; empty or `0.0.0.0` = wildcard")                               \
  X(std::string, advertise_address, {}, true, "specific numeric IPv4",                             \
    "the published endpoint; empty means `bind_address` (which must then not be a wildcard)")      \
  X(std::uint16_t, port, 0, true, "0..65535",                                                      \
    "listener port; 0 picks a free port, which `transport::descriptor()` reports")                 \
  X(std::vector<std::string>, rail_addresses, {}, true,                                            \
    "each a specific numeric IPv4 address (not `0.0.0.0`), unique, ≤ 16, ≤ "                   \
    "`connections_per_peer`; a specific `bind_address` must equal the sole rail, so several "      \
    "rails need a wildcard `bind_address`",                                                        \
    "ordered numeric IPv4 source addresses, one per rail")                                         \
  X(std::string, rpc_bind_address, {}, true, "numeric IPv4",                                       \
    "the control plane's listener; empty: `bind_address`, or with rails the first rail's "         \
    "address, or else `advertise_address`")                                                        \
  X(std::uint16_t, rpc_port, 0, true, "0..65535",                                                  \
    "the control plane's port; 0 picks a free port, which `control::endpoint_of()` reports")       \
  X(std::int64_t, rpc_worker_count, 0, true, "0..256, or `inline`; a negative value is an error",  \
    "threads running the pooled handlers (all but ping and service_ready); 0 = "                   \
    "`worker_count`; `inline` runs every handler on the io threads")                               \
  X(bool, rpc_inline, false, false, "set in code, or in a file as `rpc_worker_count: inline`",     \
    "every handler inline on the io threads, no pool; a slow handler then stalls its io "          \
    "thread")                                                                                      \
  X(transport_observer*, observer, nullptr, false, "set in code only",                             \
    "a `transport_observer` for the transport's events: not owned, must outlive the "              \
    "transport; null costs nothing")

struct transport_config {
#define FAULTLANE_SETTING_MEMBER(type, name, initial, minimum, maximum, meaning) \
  type name = initial;
  FAULTLANE_TRANSPORT_SETTINGS(FAULTLANE_SETTING_MEMBER)
#undef FAULTLANE_SETTING_MEMBER
#define FAULTLANE_FIELD_MEMBER(type, name, initial, yaml, bound, meaning) type name = initial;
  FAULTLANE_TRANSPORT_FIELDS_BY_HAND(FAULTLANE_FIELD_MEMBER)
#undef FAULTLANE_FIELD_MEMBER

  friend bool operator==(const transport_config&, const transport_config&) = default;
};

// A row of FAULTLANE_TRANSPORT_SETTINGS as data, its member included.
template <typename T>
struct transport_setting {
  std::string_view name;
  T transport_config::*field;
  T initial;
  T minimum;
  T maximum;
  std::string_view meaning;
};

#define FAULTLANE_SETTING_ROW(type, name, initial, minimum, maximum, meaning) \
  transport_setting<type>{#name, &transport_config::name, initial, minimum, maximum, meaning},
inline constexpr std::tuple transport_settings{FAULTLANE_TRANSPORT_SETTINGS(FAULTLANE_SETTING_ROW)};
#undef FAULTLANE_SETTING_ROW

// Calls f(row) for every row of FAULTLANE_TRANSPORT_SETTINGS, in order.
template <typename F>
constexpr void for_each_transport_setting(F&& f) {
  std::apply([&](const auto&... row) { (f(row), ...); }, transport_settings);
}

// A row of FAULTLANE_TRANSPORT_FIELDS_BY_HAND as data.
struct transport_field {
  std::string_view name;
  bool yaml;
  std::string_view bound;
  std::string_view meaning;
};

#define FAULTLANE_FIELD_ROW(type, name, initial, yaml, bound, meaning) \
  transport_field{#name, yaml, bound, meaning},
inline constexpr std::array transport_fields_by_hand{
    FAULTLANE_TRANSPORT_FIELDS_BY_HAND(FAULTLANE_FIELD_ROW)};
#undef FAULTLANE_FIELD_ROW

namespace detail {

// Converts to any field's type, and is only named in a requires-expression:
// T{field_value{}...} compiles for as many values as T has fields and no
// more (T an aggregate whose fields are not aggregates themselves).
struct field_value {
  template <typename T>
  operator T() const noexcept;
};

template <typename T, typename... Values>
consteval std::size_t field_count() {
  if constexpr (requires { T{Values{}..., field_value{}}; }) {
    return field_count<T, Values..., field_value>();
  } else {
    return sizeof...(Values);
  }
}

// Each default is inside its bounds, and each setting has another value.
consteval bool settings_are_bounded() {
  bool ok = true;
  for_each_transport_setting([&](const auto& row) {
    const bool inside = row.minimum <= row.initial && row.initial <= row.maximum;
    ok = ok && inside && row.minimum < row.maximum;
  });
  return ok;
}

}  // namespace detail

static_assert(detail::field_count<transport_config>() ==
                  std::tuple_size_v<decltype(transport_settings)> + transport_fields_by_hand.size(),
              "every field of transport_config is a row of one of the two lists");
static_assert(detail::settings_are_bounded(),
              "a default outside its bounds, or a setting with one possible value");

result<void> validate(const transport_config& config);

// Reads a config from YAML text. Errors are the shared reader's
// (faultlane/core/yaml_reader.hpp): "LABEL:LINE:COLUMN: FIELD: what", with
// the place as data; LABEL names where the text came from.
result<transport_config> parse_config_yaml(std::string_view yaml_text,
                                           const std::string& label = "<config>");
// The same from a parsed mapping read with `rd`, the fields under `path`
// (the scenario loader's `config:` blocks).
result<transport_config> parse_config(const YAML::Node& root, const yaml::reader& rd,
                                      std::string_view path);
// The same from a file: errors begin "PATH:LINE:COLUMN:".
result<transport_config> load_config_file(const std::string& path);

}  // namespace faultlane
