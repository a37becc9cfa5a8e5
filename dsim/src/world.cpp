// world: see world.hpp.
#include "faultlane/dsim/world.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "faultlane/base/assert.hpp"
#include "faultlane/base/hash.hpp"
#include "faultlane/base/probe.hpp"
#include "fiber_state.hpp"

namespace faultlane::dsim {

namespace {

thread_local world* current_world = nullptr;

// Sets a flag for a scope, and clears it on the way out, a throwing
// handler included.
struct flag_scope {
  explicit flag_scope(bool& f) : flag(f) { flag = true; }
  flag_scope(const flag_scope&) = delete;
  flag_scope& operator=(const flag_scope&) = delete;
  ~flag_scope() { flag = false; }
  bool& flag;
};

}  // namespace

clock::time_point clock::now() noexcept {
  return current_world != nullptr ? current_world->now() : time_point{};
}

world::world(std::uint64_t seed, std::size_t trace_max)
    : seed_(seed),
      trace_max_(std::max<std::size_t>(trace_max, 1)),
      rng_(stable_hash(seed)),
      digest_(stable_hash(seed ^ 0x6473696d)) {
  FL_ASSERT(current_world == nullptr);  // worlds do not nest
  current_world = this;
}

world::~world() {
  FL_ASSERT(current_world == this);
  // A fiber still parked would leave its stack's objects undestroyed.
  FL_ASSERT(fibers_.empty());
  current_world = nullptr;
}

world& world::current() {
  FL_ASSERT(current_world != nullptr);
  return *current_world;
}

bool world::exists() noexcept { return current_world != nullptr; }

std::uint64_t world::draw(std::uint64_t lo, std::uint64_t hi) {
  FL_ASSERT(lo <= hi);
  return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng_);
}

bool world::chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

void world::add_context(asio::io_context& context, std::string name) {
  for (const auto& c : contexts_) FL_ASSERT(c.context != &context);
  contexts_.push_back({&context, std::move(name),
                       std::make_unique<asio::executor_work_guard<asio::io_context::executor_type>>(
                           context.get_executor())});
  record("context", contexts_.size() - 1);
}

void world::remove_context(asio::io_context& context) {
  auto it = std::find_if(contexts_.begin(), contexts_.end(),
                         [&](const context_slot& c) { return c.context == &context; });
  FL_ASSERT(it != contexts_.end());
  record("context_gone", static_cast<std::uint64_t>(it - contexts_.begin()));
  contexts_.erase(it);
}

void world::drain_and_remove(asio::io_context& context) {
  FL_ASSERT(!in_step_);
  {
    flag_scope in_step(in_step_);
    while (!context.stopped() && context.poll_one() > 0) {
      record("drain");
      ++steps_;
    }
  }
  remove_context(context);
}

world::event_id world::at(clock::time_point when, unique_function<void()> fn) {
  FL_ASSERT(fn);
  const event_id id = next_event_++;
  const timed_key key{std::max(when, now_), rng_(), id};
  events_.emplace(key, timed{std::move(fn)});
  event_keys_.emplace(id, key);
  return id;
}

void world::advance(clock::duration d) {
  if (d <= clock::duration::zero()) return;
  now_ += d;
  record("advance", static_cast<std::uint64_t>(d.count()));
}

bool world::cancel(event_id id) {
  auto it = event_keys_.find(id);
  if (it == event_keys_.end()) return false;
  events_.erase(it->second);
  event_keys_.erase(it);
  return true;
}

bool world::step() {
  if (run_one_handler() || run_next_event()) {
    ++steps_;
    return true;
  }
  return false;
}

// Contexts and fibers are shuffled together, and the first that can run
// does: a ready handler, or a fiber whose wait is over.
bool world::run_one_handler() {
  fiber_order_.clear();
  for (auto& [id, f] : fibers_) fiber_order_.push_back(f.get());
  const std::size_t n = contexts_.size() + fiber_order_.size();
  order_.resize(n);
  for (std::size_t i = 0; i < n; ++i) order_[i] = i;
  // Fisher-Yates with the world's generator: every order is possible.
  for (std::size_t i = n; i > 1; --i) std::swap(order_[i - 1], order_[draw(0, i - 1)]);
  const std::size_t contexts = contexts_.size();
  for (auto i : order_) {
    if (i >= contexts) {
      auto& f = *fiber_order_[i - contexts];
      if (!runnable(f)) continue;
      resume(f);
      return true;
    }
    // poll_one may add or remove contexts: the slot is read before it.
    auto* context = contexts_[i].context;
    if (context->stopped() || contexts_[i].busy_until > now_) continue;
    std::size_t ran = 0;
    {
      flag_scope in_step(in_step_);
      ran = context->poll_one();
    }
    if (ran > 0) {
      record("step", i);
      // The handler may have added or removed contexts: find its slot again.
      for (std::size_t k = 0; load_.on() && k < contexts_.size(); ++k) {
        if (contexts_[k].context == context) charge(contexts_[k], k);
      }
      return true;
    }
  }
  return false;
}

// What the handler just run cost its context under the load model. The
// context is busy until then; an empty event there moves virtual time on
// when nothing else is ready.
void world::charge(context_slot& slot, std::size_t index) {
  auto cost = clock::duration(draw(0, static_cast<std::uint64_t>(load_.handler_cost_max.count())));
  if (load_.hiccup_probability > 0 && chance(load_.hiccup_probability)) {
    const auto most = static_cast<std::uint64_t>(load_.hiccup_max.count());
    const auto hiccup = clock::duration(draw(most / 2, most));
    FAULTLANE_PROBE(world_load_hiccup);
    record("hiccup", index, static_cast<std::uint64_t>(hiccup.count()));
    cost += hiccup;
  }
  if (cost <= clock::duration::zero()) return;
  slot.busy_until = now_ + cost;
  at(slot.busy_until, [] {});
}

bool world::run_next_event() {
  if (events_.empty()) return false;
  auto node = events_.extract(events_.begin());
  const auto& [when, tie, id] = node.key();
  event_keys_.erase(id);
  if (when > now_) {
    now_ = when;
    record("time", static_cast<std::uint64_t>(now_.time_since_epoch().count()));
  }
  flag_scope in_step(in_step_);
  node.mapped().fn();
  return true;
}

world::wait_result world::run_until(const std::function<bool()>& done, clock::time_point deadline) {
  FL_ASSERT(!in_step_);                  // a blocking wait inside a handler
  FL_ASSERT(current_fiber_ == nullptr);  // a fiber parks instead (wait)
  for (;;) {
    if (done()) return wait_result::met;
    if (now_ >= deadline) return wait_result::timed_out;
    // A timed event past the deadline ends the wait at the deadline.
    if (!run_one_handler()) {
      if (events_.empty()) {
        // Nothing can happen any more: a finite wait's deadline is what
        // comes next, and virtual time goes there.
        if (deadline != clock::time_point::max() && deadline > now_) {
          now_ = deadline;
          record("time", static_cast<std::uint64_t>(now_.time_since_epoch().count()));
          return done() ? wait_result::met : wait_result::timed_out;
        }
        return wait_result::idle;
      }
      if (std::get<0>(events_.begin()->first) > deadline) {
        now_ = deadline;
        record("time", static_cast<std::uint64_t>(now_.time_since_epoch().count()));
        return done() ? wait_result::met : wait_result::timed_out;
      }
      run_next_event();
    }
    ++steps_;
  }
}

void world::record(std::string_view kind, std::uint64_t a, std::uint64_t b) {
  const auto t = now_.time_since_epoch().count();
  digest_ = stable_hash(digest_ ^ stable_hash(kind));
  digest_ = stable_hash(digest_ ^ static_cast<std::uint64_t>(t));
  digest_ = stable_hash(digest_ ^ a);
  digest_ = stable_hash(digest_ ^ stable_hash(b ^ steps_));
  trace_event e{steps_, t, std::string(kind), a, b};
  if (trace_.size() < trace_max_) {
    trace_.push_back(std::move(e));
  } else {
    trace_[trace_next_] = std::move(e);
    trace_next_ = (trace_next_ + 1) % trace_max_;
  }
}

std::string world::trace_text(std::size_t last) const {
  std::string out;
  const std::size_t n = std::min(last, trace_.size());
  for (std::size_t k = trace_.size() - n; k < trace_.size(); ++k) {
    const auto& e = trace_[(trace_next_ + k) % trace_.size()];
    out += fmt::format("step {} t={}us {} {} {}\n", e.step, e.time_ns / 1000, e.kind, e.a, e.b);
  }
  return out;
}

}  // namespace faultlane::dsim
