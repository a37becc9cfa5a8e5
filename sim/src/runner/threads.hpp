// threads: the runner's threads, locks, waits and clock, in one place.
//
// The runner runs real-time on OS threads in the normal build. In the dsim
// build (docs/dsim.md) the same code runs on the world: each thread is a
// fiber, a wait parks it (virtual time moves on while it waits), and a lock
// that a fiber holds across a wait is the world's mutex, so another fiber
// that wants it waits instead of hanging the one OS thread. The recorder's
// clock is net::clock: virtual time in dsim, so a history's times replay.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <thread>

#include "faultlane/core/net.hpp"

namespace faultlane::sim::threads {

using clock = net::clock;
using net::sleep_for;

#if defined(FAULTLANE_DSIM)
inline constexpr bool simulated = true;
using thread = dsim::fiber_thread;
using mutex = dsim::mutex;
using shared_mutex = dsim::shared_mutex;
using condition_variable = dsim::condition_variable;
#else
inline constexpr bool simulated = false;
using thread = std::thread;
using mutex = std::mutex;
using shared_mutex = std::shared_mutex;
using condition_variable = std::condition_variable;
#endif

}  // namespace faultlane::sim::threads
