// Toxiproxy's toxics, as faultlane relay faults.
//
// A toxic is what a Toxiproxy client sends and reads back: a name, a type,
// a stream (upstream: client to server; downstream: server to client), a
// toxicity and its attributes. Toxiproxy's own types map onto relay faults
// with its attribute names and units; every other faultlane fault is a type
// of its own whose attributes are the fault's keys (docs/relay-api.md):
//
//   latency    {latency, jitter} ms        -> latency ms, jitter_ms
//   bandwidth  {rate} KB/s (1000 bytes)    -> bandwidth bytes_per_s
//   slicer     {average_size, size_variation, delay (us)} -> slicer
//   slow_close {delay} ms                  -> slow_close ms
//   timeout    {timeout} ms                -> blackhole ms (0: never close)
//   reset_peer {timeout} ms                -> reset ms
//   limit_data {bytes}                     -> truncate bytes
//   drop_frame, corrupt, stall, half_close, truncate, refuse, blackhole,
//   reset      {the fault's keys}          -> that fault
//
// The trigger keys (after_bytes, frame, header_byte, opcode, status,
// request_id, connection, rail, count) are attributes of any type.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

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
