// world: the seeded driver of a deterministic simulation (DESIGN 3.5).
//
// One thread runs everything. The world holds the virtual clock, the
// contexts (asio::io_contexts: a transport's shards, a relay, a runner)
// and the timed events (timer expiries, network deliveries). One step:
//   - among the contexts with a handler ready, the seed picks one and runs
//     exactly one of its handlers;
//   - when none has a handler ready, virtual time jumps to the earliest
//     timed event, which runs (events due at the same instant run in an
//     order the seed draws);
//   - when there is neither, the world is idle: a wait that is not met by
//     then is a deadlock, reported with the trace, never a hang.
//
// Every step, and every event the network and timers record, is chained
// into a 64-bit digest: one seed gives one run, and two runs of it give
// the same digest (docs/dsim.md, "What the digest covers").
//
// Fibers are the threads of control that wait (a scenario's streams,
// callers and main line, the control plane's workers): each is a context the seed may pick
// like any other, and runs until it waits (wait() from a fiber parks it
// until its condition holds or its deadline passes) or ends. Handlers run
// on the driver's stack only, never on a fiber's.
//
// A world is current on its thread while it exists (clock::now() reads
// it); worlds do not nest.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/unique_function.hpp"

namespace faultlane::dsim {

// Virtual time: nanoseconds since the world began. Steady, and only ever
// moved by the world.
struct clock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<clock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

// One recorded event of a run, for the trace and the digest.
struct trace_event {
  std::uint64_t step = 0;
  std::int64_t time_ns = 0;
  std::string kind;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
};

// A seeded load model (docs/dsim.md, "Load"): what the machine's load does
// to a context, drawn from the world's seed. Every handler a context runs
// costs it CPU time, and now and then a long hiccup (the thread descheduled,
// a page-fault storm, a pause); meanwhile that context runs nothing else,
// while the other contexts, each on a core of its own, go on. Off (all zero)
// by default: a handler then takes no virtual time.
struct load_model {
  // Each handler costs a uniform draw in [0, handler_cost_max].
  clock::duration handler_cost_max{};
  // After a handler, with this probability, a hiccup of a uniform draw in
  // [hiccup_max / 2, hiccup_max] on top.
  double hiccup_probability = 0;
  clock::duration hiccup_max{};
  bool on() const noexcept {
    return handler_cost_max > clock::duration::zero() ||
           (hiccup_probability > 0 && hiccup_max > clock::duration::zero());
  }
};

class world {
 public:
  // trace_max: how many of the latest events the trace keeps (the digest
  // covers them all).
  explicit world(std::uint64_t seed, std::size_t trace_max = 4096);
  world(const world&) = delete;
  world& operator=(const world&) = delete;
  ~world();

  // The world of this thread; asserts that there is one.
  static world& current();
  static bool exists() noexcept;

  std::uint64_t seed() const noexcept { return seed_; }
  clock::time_point now() const noexcept { return now_; }

  // A uniform draw in [lo, hi], from the world's seeded generator.
  std::uint64_t draw(std::uint64_t lo, std::uint64_t hi);
  // True with probability `p`.
  bool chance(double p);

  // The load model for every context from now on.
  void set_load(const load_model& load) {
    FL_ASSERT(load.handler_cost_max >= clock::duration::zero());
    FL_ASSERT(load.hiccup_max >= clock::duration::zero());
    FL_ASSERT(load.hiccup_probability >= 0 && load.hiccup_probability <= 1);
    load_ = load;
  }
  const load_model& load() const noexcept { return load_; }

  // Contexts the world runs. A context is named for the trace; it must be
  // removed before it is destroyed.
  void add_context(asio::io_context& context, std::string name);
  void remove_context(asio::io_context& context);
  // Runs `context`'s ready handlers until none is left, then removes it: what
  // a thread's run() does once everything it served was closed (handlers
  // that hold their owners must run, or the owners never go).
  void drain_and_remove(asio::io_context& context);

  // Runs `fn` on the driver (outside every context) when virtual time
  // reaches `when` (at once, in the next step, if that has passed).
  using event_id = std::uint64_t;
  event_id at(clock::time_point when, unique_function<void()> fn);
  // Drops an event that has not run; false if it ran or was dropped.
  bool cancel(event_id id);

  // Moves virtual time forward by `d` at once, inside a step or between
  // steps: a handler that sleeps (a failpoint's delay) holds the world's
  // one thread for that long, and what came due meanwhile runs after it.
  void advance(clock::duration d);

  // Starts a fiber; it first runs when the seed picks it.
  using fiber_id = std::uint64_t;
  fiber_id spawn(std::string name, unique_function<void()> fn);
  // True once the fiber has returned. A fiber's exception ends the run: it
  // is rethrown from the step that resumed it.
  bool finished(fiber_id id) const noexcept;
  bool in_fiber() const noexcept { return current_fiber_ != nullptr; }
  // The fiber running now (0: none, the driver's stack).
  fiber_id current_fiber() const noexcept;
  std::size_t fibers() const noexcept { return fibers_.size(); }

  // A blocking wait, wherever it is made: from a fiber it parks the fiber
  // until `done()` holds or `deadline` passes (the world runs others
  // meanwhile); from the driver's stack it steps the world (run_until). A
  // wait from inside a handler is an assertion failure, and so is a wait
  // with no deadline that the world can no longer meet (a deadlock,
  // reported with the trace).
  bool wait(const std::function<bool()>& done,
            clock::time_point deadline = clock::time_point::max());

  // One step (see the top of the file); false when the world is idle.
  bool step();
  enum class wait_result { met, timed_out, idle };
  // Steps until `done()` holds (checked before each step), virtual time
  // passes `deadline`, or the world is idle. Not from a fiber (see wait).
  wait_result run_until(const std::function<bool()>& done,
                        clock::time_point deadline = clock::time_point::max());
  std::uint64_t steps() const noexcept { return steps_; }
  // True while a handler or a timed event runs (a blocking wait there
  // would wait on itself).
  bool in_step() const noexcept { return in_step_; }

  // Chains an event into the digest and the trace.
  void record(std::string_view kind, std::uint64_t a = 0, std::uint64_t b = 0);
  std::uint64_t digest() const noexcept { return digest_; }
  // The latest events kept, oldest first, one per line.
  std::string trace_text(std::size_t last = 64) const;
  const std::vector<trace_event>& trace() const noexcept { return trace_; }

 private:
  struct context_slot {
    asio::io_context* context;
    std::string name;
    // An io_context with no work left stops itself when polled; held work
    // keeps it open to what is posted later.
    std::unique_ptr<asio::executor_work_guard<asio::io_context::executor_type>> work;
    // Under a load model: the context runs nothing before this.
    clock::time_point busy_until{};
  };
  struct timed {
    unique_function<void()> fn;
  };
  // (when, a seeded tie-break, the order of insertion)
  using timed_key = std::tuple<clock::time_point, std::uint64_t, event_id>;

  struct fiber;
  struct fiber_host;

  bool run_one_handler();
  void charge(context_slot& slot, std::size_t index);
  bool run_next_event();
  bool runnable(const fiber& f) const;
  void resume(fiber& f);
  void park(const std::function<bool()>& ready, clock::time_point deadline);
  static void fiber_main();

  const std::uint64_t seed_;
  const std::size_t trace_max_;
  std::mt19937_64 rng_;
  clock::time_point now_{};
  load_model load_;
  std::vector<context_slot> contexts_;
  std::map<timed_key, timed> events_;
  std::map<event_id, timed_key> event_keys_;
  event_id next_event_ = 1;
  std::uint64_t steps_ = 0;
  bool in_step_ = false;
  std::uint64_t digest_;
  std::vector<trace_event> trace_;  // a ring once full
  std::size_t trace_next_ = 0;
  std::vector<std::size_t> order_;  // scratch: the contexts in this step's order
  std::map<fiber_id, std::unique_ptr<fiber>> fibers_;
  std::vector<fiber*> fiber_order_;  // scratch: the fibers in this step's order
  fiber* current_fiber_ = nullptr;
  fiber_id next_fiber_ = 1;
  std::unique_ptr<fiber_host> host_;  // the driver's side of a switch
};

}  // namespace faultlane::dsim
