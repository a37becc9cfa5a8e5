// control_callers: the `control:` callers of a scenario. Each client of a
// caller is one rpc::client (its own connection) driven by one thread of
// the phase: it calls the method `count` times or for `duration_ms`, every
// `interval_ms` or back to back, and records each call's outcome and
// latency on the run's clock for the expectations checker.
#include <fmt/format.h>

#include "faultlane/control/rpc_client.hpp"
#include "faultlane/control/rpc_frame.hpp"
#include "runner/run_state.hpp"

namespace faultlane::sim {
namespace {

// Answers above this are checked for their incarnation only: a describe of
// a million registrations is tens of MB, and decoding it on every call
// would load the runner's cores, which the service under test shares.
constexpr std::size_t describe_decode_bytes_max = 1 << 20;
// Calls recorded in one run, over every caller: a bound on the history's
// memory, as recorder::events_max is for core events.
constexpr std::size_t calls_max = 2'000'000;

struct outcome {
  status code = status::ok;
  std::uint64_t incarnation = 0;
  std::uint64_t listed = 0;
  std::string message;
};

// A large answer: its incarnation and registration count, read in the
// order docs/protocol.md gives the describe body.
outcome describe_head(std::span<const std::byte> body) {
  rpc::rpc_body_reader in(body);
  outcome out;
  out.incarnation = in.u64("incarnation");
  (void)in.u64("max_transfer_bytes");
  const auto endpoints = in.u8("endpoint_count");
  for (std::uint8_t k = 0; k < endpoints && in.ok(); ++k) {
    (void)in.text("address");
    (void)in.u16("port");
  }
  out.listed = in.u32("registration_count");
  if (!in.ok() || out.incarnation == 0) {
    return {status::invalid_argument, 0, 0, "describe: a malformed answer"};
  }
  return out;
}

outcome describe_once(rpc::client& c) {
  auto body = c.call("describe", {});
  if (!body) return {body.code(), 0, 0, body.error().message};
  if (body.value().size() > describe_decode_bytes_max) return describe_head(body.value());
  auto d = rpc::decode_descriptor(body.value());
  if (!d) return {d.code(), 0, 0, d.error().message};
  return {status::ok, d.value().incarnation, d.value().registrations.size(), {}};
}

outcome call_once(rpc::client& c, const caller_spec& spec) {
  auto code_of = [](const auto& r) -> outcome {
    if (r.ok()) return {};
    return {r.code(), 0, 0, r.error().message};
  };
  switch (spec.method) {
    case control_method::ping: return code_of(c.ping());
    case control_method::service_ready: return code_of(c.service_ready());
    case control_method::describe: return describe_once(c);
    case control_method::list_registrations: {
      auto found = c.list_registrations(spec.pattern);
      if (!found) return code_of(found);
      return {status::ok, 0, found.value().size(), {}};
    }
    case control_method::stats: return code_of(c.stats());
  }
  return {status::internal_error, 0, 0, "unknown method"};
}

}  // namespace

// Where a caller connects: its control link's relay, or the target's own
// control endpoint as the phase begins (a restart moves that; a link
// follows it).
void scenario_run::run_caller(const caller_spec& spec, std::size_t client) {
  rpc::client_options o;
  result<endpoint> at = error{status::invalid_argument, "no control link " + spec.link};
  if (spec.link.empty()) {
    auto& t = topology_.transport(spec.target);
    std::shared_lock lock(t.lock);
    if (t.up) at = t.p->control_endpoint();
    else at = error{status::shutting_down, spec.target + " was shut down before the phase"};
  }
  if (const auto* slot = topology_.control_relay(spec.link)) at = slot->r->listen_endpoint();
  auto fail_all = [&](const error& e) {
    error_.set(fmt::format("caller {}: {}", spec.name, e.message));
  };
  if (!at) return fail_all(at.error());
  o.server = at.value();
  o.call_timeout_ms = spec.call_timeout_ms;
  // Sent again on a new connection after a lost one, within about twice
  // the call's bound.
  o.overall_timeout_ms = spec.call_timeout_ms * 2 + o.reconnect_cooldown_ms;
  auto c = rpc::client::create(o);
  if (!c) return fail_all(c.error());
  using clock = threads::clock;
  const auto started = clock::now();
  const auto until = started + std::chrono::milliseconds(spec.duration_ms);
  auto next = started;
  auto more = [&](std::uint64_t k) {
    return spec.count != 0 ? k < spec.count : clock::now() < until;
  };
  for (std::uint64_t k = 0; more(k); ++k) {
    if (spec.interval_ms != 0) {
      // The caller's period: a wait by design, as a heartbeat's is. A call
      // that overran it is followed at once, not by a burst of catch-up.
      const auto wake =
          spec.count != 0 ? std::min(next, deadline_) : std::min({next, until, deadline_});
      threads::sleep_for(wake - clock::now());  // sleep-ok: the caller's interval_ms
      if (!more(k)) break;
      next = std::max(next + std::chrono::milliseconds(spec.interval_ms), clock::now());
    }
    if (clock::now() >= deadline_) {
      timed_out_ = true;
      return;
    }
    call_record r;
    r.caller = spec.name;
    r.client = client;
    r.start_us = rec_.now_us();
    auto got = call_once(*c.value(), spec);
    r.end_us = rec_.now_us();
    r.outcome = got.code;
    r.incarnation = got.incarnation;
    r.listed = got.listed;
    r.message = std::move(got.message);
    bool full = false;
    rec_.edit([&](history& h) {
      full = h.calls.size() >= calls_max;
      if (!full) h.calls.push_back(std::move(r));
    });
    events_.caller_call_ended(spec);
    if (full) {
      return fail_all(error{status::invalid_argument,
                            fmt::format("more than {} calls in the run: the history stopped "
                                        "recording them (shorten duration_ms or add interval_ms)",
                                        calls_max)});
    }
  }
}

}  // namespace faultlane::sim
