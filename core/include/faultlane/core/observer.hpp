// transport_observer: the seam the harness's checkers are built on.
//
// The core reports what it does to an optional observer. With none set (the
// default) each report is one predictable branch. Callbacks run on io
// threads and on submitting threads, concurrently: an observer must be
// thread-safe and must not block or call back into the transport.
// docs/architecture.md lists every event.
#pragma once

#include <cstdint>
#include <string>

#include "faultlane/core/endpoint.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane {

struct task_event {
  std::uint64_t task_id = 0;  // unique per transport
  wire::opcode op = wire::opcode::read;
  std::uint64_t segment = 0;
  std::uint64_t registration_id = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t length = 0;
};

struct slice_event {
  std::uint64_t task_id = 0;
  std::uint64_t request_id = 0;  // the frame's request id
  std::uint64_t segment = 0;
  std::size_t lane = 0;
  std::size_t rail = 0;
  std::uint64_t offset = 0;  // within the task
  std::uint64_t length = 0;
};

struct lane_event {
  std::uint64_t segment = 0;
  std::size_t lane = 0;
  std::size_t rail = 0;
  std::uint64_t epoch = 0;
  endpoint local;   // filled for lane_connected
  endpoint remote;  // filled for lane_connected
};

struct served_event {
  wire::opcode op = wire::opcode::read;
  std::uint64_t request_id = 0;
  std::uint64_t registration_id = 0;
  std::uint64_t remote_offset = 0;
  std::uint64_t length = 0;
  status outcome = status::ok;
};

class transport_observer {
 public:
  virtual ~transport_observer() = default;
  virtual void task_submitted(const task_event&) {}
  virtual void task_finalized(const task_event&, status, std::uint64_t /*bytes*/) {}
  virtual void slice_dispatched(const slice_event&) {}
  virtual void lane_connected(const lane_event&) {}
  virtual void lane_closed(const lane_event&, status /*why*/) {}
  virtual void stale_handler_dropped(const lane_event&) {}
  // Target side: a request was validated and its data moved (outcome ok),
  // or it was rejected (outcome says why).
  virtual void server_executed(const served_event&) {}
  virtual void session_opened(const endpoint& /*local*/, const endpoint& /*remote*/) {}
  virtual void lease_acquired(std::uint64_t /*registration_id*/) {}
  virtual void lease_released(std::uint64_t /*registration_id*/) {}
  virtual void admission_changed(std::uint64_t /*tasks*/, std::uint64_t /*bytes*/) {}
};

}  // namespace faultlane
