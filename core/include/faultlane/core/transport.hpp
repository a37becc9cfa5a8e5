// transport: one-sided READ/WRITE between registered buffers of peers.
//
// A transport is both a target (it serves its registered buffers to peers on
// a listener) and an initiator (it moves bytes to and from peers it opened).
//
//   auto t = transport::start(config).value();         // validated config
//   control::serve(*t);                                // its control plane
//   auto id = t->register_buffer(p, n, permission::remote_read_write);
//   auto peer = t->open_segment(other->descriptor());  // reach a peer
//   auto batch = t->submit(requests, on_task_done);    // READs and WRITEs
//   batch->wait(5s);  batch->status(i);                // or poll
//   t->shutdown();                                     // ordered, bounded
//
// Every task ends in exactly one terminal status, published only after every
// I/O callback that could touch its buffers has retired. A WRITE whose ACK
// may have been lost ends `ambiguous_write` and is never replayed.
// docs/architecture.md describes the threads, lanes and shutdown order.
//
// For the user:
// - Registered memory, a task's local buffer (until the task is done) and
//   the observer must outlive the transport: work still queued when it is
//   destroyed settles during its destruction.
// - Callbacks and observer events run on the transport's io threads (and,
//   for work that never ran, on the thread destroying it). They may submit
//   more work; they must not block or call shutdown()/close_segment().
// - Every method is thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/core/config.hpp"
#include "faultlane/core/endpoint.hpp"
#include "faultlane/core/frame.hpp"
#include "faultlane/core/io_pool.hpp"
#include "faultlane/core/registry.hpp"
#include "faultlane/core/stats.hpp"
#include "faultlane/core/status.hpp"
#include "faultlane/core/transport_service.hpp"

namespace faultlane {

struct advertised_registration {
  registration_id id = 0;
  std::uint64_t length = 0;
  permission perm = permission::remote_read;
  std::string name;  // optional, stable across restarts; used to refresh ids
  friend bool operator==(const advertised_registration&, const advertised_registration&) = default;
};

// What an initiator needs to reach a target. descriptor_text.hpp writes it
// as text and reads it back, for exchange between processes.
struct segment_descriptor {
  std::uint64_t incarnation = 0;    // random per transport instance
  std::vector<endpoint> endpoints;  // one per rail, in rail order
  std::uint64_t max_transfer_bytes = 0;
  std::vector<advertised_registration> registrations;
  friend bool operator==(const segment_descriptor&, const segment_descriptor&) = default;
};

// Where a segment's descriptor comes from. open_segment(source) keeps it:
// when the peer answers stale_registration (the buffer was re-registered
// under a new id), the transport fetches the descriptor once, finds the
// registration with the same name, and retries once on the same transport
// (a slice on the same rail). fetch() runs on an io thread: it must answer
// quickly (from memory, or from the control plane's cache).
class descriptor_source {
 public:
  virtual ~descriptor_source() = default;
  virtual result<segment_descriptor> fetch() = 0;
  // The same without blocking the caller: `done` runs once, on any thread.
  // The transport refreshes through this, so a source that goes over the
  // network (rpc_descriptor_source) never holds an io thread. The default
  // calls fetch() at once.
  virtual void fetch_async(unique_function<void(result<segment_descriptor>)> done) {
    done(fetch());
  }
  // The transport that uses it is being destroyed: answer what is pending
  // and stop; no `done` runs after close() returned.
  virtual void close() {}
};

using segment_id = std::uint64_t;

// What a service attached to a transport reads of it (transport::view()).
// It outlives every attached service, which the handlers of a service may
// therefore hold it in; the transport object itself may go first.
class transport_view {
 public:
  // transport::descriptor() and transport::stats().
  virtual segment_descriptor descriptor() const = 0;
  virtual transport_stats stats() const = 0;
  // The settings the transport was started with.
  virtual const transport_config& config() const = 0;
  // The io threads a service's sockets and timers run on.
  virtual io_pool& io() const = 0;
  // False once shutdown() began or the runtime failed.
  virtual bool accepting_work() const = 0;
  // The registrations peers may use, a page at a time: those made after
  // `after` (0: from the first), at most `max` (at most
  // limits::registration_page_max); registry::advertised_page.
  virtual std::vector<advertised_registration> registrations_page(registration_id after,
                                                                  std::size_t max) const = 0;

 protected:
  ~transport_view() = default;
};

struct transfer_request {
  wire::opcode op = wire::opcode::read;
  // READ: destination; WRITE: source. After a READ that failed, its
  // contents are unspecified (a refused READ's buffer may hold bytes of the
  // answers behind it on the lane).
  void* local = nullptr;
  std::uint64_t length = 0;
  segment_id segment = 0;
  registration_id remote_registration = 0;
  std::uint64_t remote_offset = 0;
  // Ends the task with `timeout` if its request has not started to leave
  // within this long of submit() (waiting for admission to a lane, for a
  // connect, or behind other work on its lane); 0 means no such deadline.
  // Once a request started, progress_timeout_ms governs it: a WRITE is
  // never abandoned half sent. At most limits::timeout_ms_max.
  std::uint32_t start_deadline_ms = 0;
};

struct task_status {
  status code = status::ok;
  std::uint64_t transferred_bytes = 0;
  bool done = false;
};

// Called once per task, after the task settled: on an io thread, or on the
// thread that destroys the transport for work that never ran. Must be
// thread-safe (tasks of one batch finish on different threads) and must not
// block. It may call submit() (a tested promise); it must not call
// shutdown() (it returns invalid_argument there) and may destroy the
// transport (the destruction then finishes on another thread). An exception
// it throws marks the runtime failed (docs/architecture.md).
using task_callback = std::function<void(std::size_t index, status, std::uint64_t bytes)>;

class transfer_batch;

class transport {
 public:
  static result<std::unique_ptr<transport>> start(const transport_config& config);
  // Shuts down if the owner did not. Safe after any shutdown() result and
  // from a completion callback (the rest then finishes on another thread).
  ~transport();
  transport(const transport&) = delete;
  transport& operator=(const transport&) = delete;

  // This transport as a target: incarnation, bound endpoint(s), limits and
  // the registrations peers may use.
  segment_descriptor descriptor() const;

  // The range [base, base + length) is served to peers under the returned
  // id until unregistered; it must stay valid that long (and at least
  // until the transport is destroyed). `name` (optional) lets initiators
  // refresh a stale id through a descriptor source; it must be text the
  // descriptor's text form carries (valid_registration_name in
  // descriptor_text.hpp), or the call fails with invalid_argument.
  result<registration_id> register_buffer(void* base, std::size_t length, permission perm,
                                          std::string name = {});
  // Hides the id from new requests, then waits for requests in flight on it.
  result<void> unregister_buffer(registration_id id);

  // Reaches a peer. Opening the same incarnation again returns the same
  // segment; a restarted peer (new incarnation) gets a new one. The
  // descriptor's rail count must equal this transport's.
  result<segment_id> open_segment(const segment_descriptor& descriptor);
  // The same, from a source that is asked again on a stale registration.
  result<segment_id> open_segment(std::shared_ptr<descriptor_source> source);
  // (By a peer's control endpoint: control::open_segment, which fetches
  // the descriptor with `describe` through an rpc_descriptor_source.)

  // Validates every request, reserves admission for the whole batch (busy
  // if it does not fit) and starts all of them. Fails as a whole, before
  // anything starts, on any invalid request.
  result<std::shared_ptr<transfer_batch>> submit(std::span<const transfer_request> requests,
                                                 task_callback on_task_done = {});

  transport_stats stats() const;

  // For services that run beside the transport (transport_service.hpp),
  // the control plane among them:
  // - attach() hands one over: the transport stops it first in shutdown()
  //   and destroys it before its io threads' contexts. shutting_down once
  //   shutdown() began; invalid_argument for a name already attached.
  //   Never waits for a shutdown.
  result<void> attach(std::unique_ptr<transport_service> service);
  // - the one attached under `name`, or null; it lives as long as the
  //   transport.
  transport_service* service(std::string_view name) const;
  // - what a service reads of the transport (transport_view): valid until
  //   the transport's attached services are destroyed, even when the
  //   transport object itself goes first (destroyed from a callback).
  const transport_view& view() const;

  // Ordered shutdown (docs/architecture.md): bounded by
  // shutdown_timeout_ms; reports runtime failure, a drain timeout or an
  // accounting failure. Idempotent.
  result<void> shutdown();

  // Test and operations hook: closes every lane to `segment` on its owner
  // shard, as a network blip would; queued work reconnects. From a
  // completion callback it posts the work and returns at once.
  void drop_connections(segment_id segment);

  // Closes a segment: new submits naming it fail with invalid_argument,
  // its queued work ends `cancelled`, an exchange in flight is cut off
  // (a READ ends `cancelled`, a WRITE whose bytes left `ambiguous_write`),
  // and its connections close. Waits at most shutdown_timeout_ms for its
  // lanes; not from a completion callback (invalid_argument). Reopening the
  // same incarnation afterwards makes a new segment.
  result<void> close_segment(segment_id segment);

  class impl;

 private:
  explicit transport(std::unique_ptr<impl> impl);
  std::unique_ptr<impl> impl_;
};

// The tasks of one submit(). Shared between the caller and the transport;
// safe to poll from any thread.
class transfer_batch {
 public:
  std::size_t size() const noexcept { return size_; }
  task_status status(std::size_t index) const;
  std::size_t completed() const;
  // Waits until every task is done; false on timeout.
  bool wait(std::chrono::milliseconds timeout) const;

  // Built by transport::submit; the state is private to the core (it lives
  // in the transport's pool of recycled blocks).
  struct state;
  struct state_delete {
    void operator()(state* s) const noexcept;
  };
  using state_ptr = std::unique_ptr<state, state_delete>;
  explicit transfer_batch(state_ptr s, std::size_t size);
  ~transfer_batch();

 private:
  state_ptr state_;
  std::size_t size_;
};

}  // namespace faultlane
