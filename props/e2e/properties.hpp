// The four end-to-end properties, as the tests, the planted tests and the
// soak all run them: what each draws and how many cases it runs by default.
#pragma once

#include "e2e_check.hpp"

namespace faultlane::props {

// 1. Every task ends exactly once, with a status its faults allow, and
// every ok READ and the final regions hold the data the model predicts.
inline property_spec exactly_once_property() {
  property_spec p{.name = "exactly_once"};
  p.gen.perturb = true;
  return p;
}

// 2. A shutdown at a drawn op, with work queued, in flight, stalled or half
// a header sent, returns within its bound and drains every callback first.
inline property_spec drained_shutdown_property() {
  property_spec p{.name = "drained_shutdown"};
  p.gen.shutdown_always = true;
  p.gen.events = {event_draw_kind::drop_connections, event_draw_kind::restart};
  p.gen.events_max = 1;
  p.gen.perturb = true;
  return p;
}

// 3. Across unregister, register and restart, no stale id touches memory.
inline property_spec stale_rejection_property() {
  property_spec p{.name = "stale_rejection"};
  p.gen.events = {event_draw_kind::unregister, event_draw_kind::restart};
  p.gen.events_max = 3;
  p.gen.faults_max = 2;
  return p;
}

// 4. An ambiguous WRITE is never sent again and ran at most once.
inline property_spec no_replay_property() {
  property_spec p{.name = "no_replay"};
  p.gen.write_percent_min = 60;
  p.gen.events = {event_draw_kind::drop_connections, event_draw_kind::restart};
  p.gen.perturb = true;
  return p;
}

}  // namespace faultlane::props
