// Toxiproxy's toxics, as faultlane relay faults.
//
// A toxic is what a Toxiproxy client sends and reads back: a name, a type,
// a stream (upstream: client to server; downstream: server to client), a
// toxicity and its attributes. Toxiproxy's own types map onto relay faults
// with its attribute names and units, as the Toxiproxy columns of
// fault_kinds (faultlane/relays/fault.hpp) say: timeout {timeout} ms is
// blackhole ms, bandwidth {rate} KB/s is bandwidth bytes_per_s, and so on.
// Every fault kind is also a type of its own whose attributes are the
// fault's keys (docs/relay-api.md). The trigger keys (the trigger rows of
// FAULTLANE_RELAY_FAULT_KEYS but probability, which is the toxicity) are
// attributes of any type.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

#include "faultlane/core/status.hpp"
#include "faultlane/relays/fault.hpp"

namespace faultlane::relays::api {

struct toxic {
  std::string name;
  std::string type;
  direction dir = direction::down;
  double toxicity = 1.0;
  nlohmann::json attributes = nlohmann::json::object();
};

// "upstream" / "downstream", as Toxiproxy names the directions.
std::string_view stream_name(direction d);

// The relay fault a toxic stands for, named after it; the error says what
// is wrong with the toxic in the client's terms.
result<fault_spec> to_fault(const toxic& t);
// The fault kind a toxic type names: a Toxiproxy type, or a kind's own name.
std::optional<fault_kind> toxic_kind(std::string_view type);

// The toxic a fault from a configuration file shows as: to_fault gives the
// fault back.
toxic from_fault(const fault_spec& f);

// Attributes a Toxiproxy type always shows (zeros included), added to
// those the client gave.
void fill_default_attributes(toxic& t);

// Whole numbers written as 1e3 or 1000.0 shown as 1000, as a typed client
// (Go's int64) reads them; only after to_fault accepted the toxic.
void normalize_numbers(toxic& t);

nlohmann::json to_json(const toxic& t);

}  // namespace faultlane::relays::api
