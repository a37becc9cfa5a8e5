// Failpoints: named places in the core where tests and scenarios inject
// failures (docs/architecture.md lists them).
//
//   if (auto injected = FAULTLANE_FAILPOINT("server.before_write_ack")) {
//     return reject(*injected);
//   }
//
// With the CMake option FAULTLANE_FAILPOINTS off (the release preset) the
// macro is a constant empty optional and costs nothing. With it on, an
// unarmed failpoint costs one relaxed atomic load. An armed one performs its
// action: return an error status, delay, throw, or pause until resumed —
// limited by a count and a probability drawn from its own seeded generator,
// so one seed gives one schedule.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "faultlane/core/status.hpp"

namespace faultlane::failpoint {

enum class action : std::uint8_t { off, return_error, delay, throw_exception, pause };

// Every failpoint the core evaluates, as docs/architecture.md lists them
// (a test holds the sources, this list and the docs to each other). The
// scenario loader accepts only these names, so a misspelled one is an
// error rather than a failpoint that silently never fires.
inline constexpr std::string_view known_names[] = {
    "accept_loop.before_accept",
    "admission.release_extra",
    "client.after_request_sent",
    "client.on_response",
    "control.scan_page",
    "lane.cancel_task",
    "lane.enqueue",
    "lane.on_deadline",
    "lane.probe_finished",
    "lane.set_non_blocking",
    "registry.after_publish",
    "rpc.session_read_done",
    "server.before_read_payload",
    "server.before_write_ack",
    "server.on_accept",
    "server.on_header",
    "session.on_deadline",
    "submit.before_slice",
    "transport.destroyed_from_callback",
};
// The switches of the planted bugs (testing/planted/, docs/testing.md):
// defects the harness's own tests turn on to show a checker catches them.
// They are not in the sources; a build with failpoints compiles them in
// from those files (a test holds this list to them).
inline constexpr std::string_view planted_names[] = {
    "planted.accept_stale_id",
    "planted.finalize_twice",
    "planted.replay_ambiguous_write",
    "planted.shutdown_skip_drain",
};
// A name of either list.
bool is_known(std::string_view name) noexcept;

std::string_view to_string(action a) noexcept;
std::optional<action> parse_action(std::string_view text) noexcept;

struct config {
  action act = action::off;
  status error = status::internal_error;  // for return_error
  std::uint32_t delay_ms = 0;             // for delay
  std::int64_t count = -1;                // fire at most this many times; -1 = unlimited
  double probability = 1.0;               // chance of firing at each evaluation
  std::uint64_t seed = 0;                 // drives `probability`
  // Fire only where the call site's key (a registration or request id)
  // equals this; evaluations with another key pass untouched and uncounted.
  std::optional<std::uint64_t> only_key;
};

// What a throw_exception failpoint throws.
struct injected_exception : std::runtime_error {
  explicit injected_exception(const std::string& name)
      : std::runtime_error("failpoint " + name + " threw") {}
};

void arm(std::string_view name, const config& cfg);
void disarm(std::string_view name);  // also releases threads it paused
void disarm_all();

// Times the failpoint fired (its action ran) since it was last armed.
std::uint64_t fired(std::string_view name);
// Times execution passed the failpoint, fired or not, since it was armed.
std::uint64_t evaluated(std::string_view name);

// Pause control: wait until `threads` threads are paused at `name`, and let
// them go. Both return false on timeout.
bool wait_paused(std::string_view name, std::size_t threads, std::chrono::milliseconds timeout);
void resume(std::string_view name);

// Schedule perturbation (docs/properties.md): named points at decisions
// that race another thread. While it is on, each pass through a point draws,
// from (seed, point, how often that point was passed), whether to yield or
// to sleep a few microseconds, so a property explores interleavings a plain
// run never reaches and one seed perturbs the same way again.
inline constexpr std::string_view perturbation_points[] = {
    "admission.release", "lane.cancel_task", "lane.close",      "lane.connected", "lane.retire",
    "lease.release",     "settle.finalize",  "settle.merge",    "shutdown.drain", "shutdown.lanes",
    "shutdown.stop",     "siblings.cancel",  "unregister.hide", "rpc.queued",     "rpc.respond",
};

struct perturbation {
  std::uint64_t seed = 0;
  double probability = 0.05;  // of perturbing one pass, 0..1
  std::uint32_t max_us = 50;  // a sleep lasts 1..max_us; 0 only yields
};
void perturb_on(const perturbation& p);
void perturb_off();
bool perturbing() noexcept;
// Passes that yielded or slept since perturb_on.
std::uint64_t perturbed() noexcept;
// Called through FAULTLANE_PERTURB, which tests perturb_active first so an
// unperturbed pass is one relaxed load with no call: the window a point
// sits in stays as narrow as the code without it.
void perturb(std::string_view point) noexcept;
inline std::atomic<bool> perturb_active{false};

// Called through FAULTLANE_FAILPOINT; returns the status to inject, if any.
std::optional<status> evaluate(std::string_view name);
std::optional<status> evaluate(std::string_view name, std::uint64_t key);

// RAII arming for tests: disarms on scope exit.
class scoped {
 public:
  scoped(std::string name, const config& cfg) : name_(std::move(name)) { arm(name_, cfg); }
  scoped(const scoped&) = delete;
  scoped& operator=(const scoped&) = delete;
  ~scoped() { disarm(name_); }

 private:
  std::string name_;
};

}  // namespace faultlane::failpoint

#if defined(FAULTLANE_FAILPOINTS_ENABLED)
#define FAULTLANE_FAILPOINT(name) ::faultlane::failpoint::evaluate(name)
#define FAULTLANE_FAILPOINT_KEY(name, key) ::faultlane::failpoint::evaluate(name, key)
#define FAULTLANE_PERTURB(point)                                            \
  (::faultlane::failpoint::perturb_active.load(::std::memory_order_relaxed) \
       ? ::faultlane::failpoint::perturb(point)                             \
       : (void)0)
#else
#define FAULTLANE_FAILPOINT(name) (::std::optional<::faultlane::status>{})
#define FAULTLANE_FAILPOINT_KEY(name, key) ((void)(key), ::std::optional<::faultlane::status>{})
#define FAULTLANE_PERTURB(point) ((void)0)
#endif
