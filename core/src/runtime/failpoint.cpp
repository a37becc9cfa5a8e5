// The failpoint table; see failpoint.hpp.
//
// One process-wide table under one mutex: failpoints are armed rarely and
// evaluated often, so `armed_count` lets the common case (nothing armed)
// return after one relaxed load, without the lock.
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <thread>

namespace faultlane::failpoint {
namespace {

struct point {
  config cfg;
  std::mt19937_64 rng;
  std::uint64_t fired = 0;
  std::uint64_t evaluated = 0;
  std::size_t paused = 0;
  std::uint64_t resume_generation = 0;
};

struct table {
  std::mutex mutex;
  net::condition_variable changed;
  std::map<std::string, point, std::less<>> points;
  std::atomic<std::size_t> armed_count{0};
};

table& the_table() {
  static table t;
  return t;
}

// Decides under the lock whether this evaluation fires, and counts it.
bool should_fire(point& p) {
  FL_ASSERT(p.fired <= p.evaluated);
  ++p.evaluated;
  if (p.cfg.act == action::off || p.cfg.count == 0) return false;
  if (p.cfg.probability < 1.0) {
    std::uniform_real_distribution<double> draw(0.0, 1.0);
    if (draw(p.rng) >= p.cfg.probability) return false;
  }
  if (p.cfg.count > 0) --p.cfg.count;
  ++p.fired;
  FL_ASSERT(p.fired <= p.evaluated);
  return true;
}

void pause_here(table& t, std::unique_lock<std::mutex>& lock, std::string_view name) {
  FL_ASSERT(lock.owns_lock());
  auto it = t.points.find(name);
  FL_ASSERT(it != t.points.end());  // evaluate_keyed found it under this lock
  std::uint64_t generation = it->second.resume_generation;
  ++it->second.paused;
  t.changed.notify_all();
  t.changed.wait(lock, [&] {
    auto now = t.points.find(name);
    return now == t.points.end() || now->second.resume_generation != generation;
  });
  if (auto now = t.points.find(name); now != t.points.end()) {
    FL_ASSERT(now->second.paused > 0);
    --now->second.paused;
  }
}

}  // namespace

std::string_view to_string(action a) noexcept;

namespace {
// Every action's name parses back to it (checked where names are parsed).
bool parse_action_round_trips() noexcept {
  for (auto a :
       {action::off, action::return_error, action::delay, action::throw_exception, action::pause}) {
    if (to_string(a) == "unknown") return false;
  }
  return true;
}
}  // namespace

bool is_known(std::string_view name) noexcept {
  const auto in = [name](const auto& names) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
  };
  return in(known_names) || in(planted_names);
}

std::string_view to_string(action a) noexcept {
  switch (a) {
    case action::off: return "off";
    case action::return_error: return "return_error";
    case action::delay: return "delay";
    case action::throw_exception: return "throw";
    case action::pause: return "pause";
  }
  return "unknown";
}

std::optional<action> parse_action(std::string_view text) noexcept {
  FL_ASSERT(parse_action_round_trips());
  for (auto a :
       {action::off, action::return_error, action::delay, action::throw_exception, action::pause}) {
    if (text == to_string(a)) return a;
  }
  return std::nullopt;
}

void arm(std::string_view name, const config& cfg) {
  FL_ASSERT(!name.empty());
  FL_ASSERT(cfg.probability >= 0.0 && cfg.probability <= 1.0);
  auto& t = the_table();
  std::lock_guard lock(t.mutex);
  auto [it, inserted] = t.points.try_emplace(std::string(name));
  if (!inserted) ++it->second.resume_generation;  // release anything paused under the old arming
  it->second.cfg = cfg;
  it->second.rng.seed(cfg.seed);
  it->second.fired = 0;
  it->second.evaluated = 0;
  t.armed_count.store(t.points.size(), std::memory_order_relaxed);
  t.changed.notify_all();
  FL_ASSERT(t.armed_count.load(std::memory_order_relaxed) > 0);
}

void disarm(std::string_view name) {
  FL_ASSERT(!name.empty());
  auto& t = the_table();
  std::lock_guard lock(t.mutex);
  if (auto it = t.points.find(name); it != t.points.end()) t.points.erase(it);
  t.armed_count.store(t.points.size(), std::memory_order_relaxed);
  t.changed.notify_all();
}

void disarm_all() {
  auto& t = the_table();
  std::lock_guard lock(t.mutex);
  t.points.clear();
  FL_ASSERT(t.points.empty());
  t.armed_count.store(0, std::memory_order_relaxed);
  t.changed.notify_all();
}

std::uint64_t fired(std::string_view name) {
  auto& t = the_table();
  std::lock_guard lock(t.mutex);
  auto it = t.points.find(name);
  return it == t.points.end() ? 0 : it->second.fired;
}

std::uint64_t evaluated(std::string_view name) {
  auto& t = the_table();
  std::lock_guard lock(t.mutex);
  auto it = t.points.find(name);
  return it == t.points.end() ? 0 : it->second.evaluated;
}

bool wait_paused(std::string_view name, std::size_t threads, std::chrono::milliseconds timeout) {
  FL_ASSERT(threads > 0);
  FL_ASSERT(timeout.count() >= 0);
  auto& t = the_table();
  std::unique_lock lock(t.mutex);
  return t.changed.wait_for(lock, timeout, [&] {
    auto it = t.points.find(name);
    return it != t.points.end() && it->second.paused >= threads;
  });
}

void resume(std::string_view name) {
  FL_ASSERT(!name.empty());
  auto& t = the_table();
  std::lock_guard lock(t.mutex);
  if (auto it = t.points.find(name); it != t.points.end()) ++it->second.resume_generation;
  t.changed.notify_all();
}

namespace {

std::optional<status> evaluate_keyed(std::string_view name, std::optional<std::uint64_t> key) {
  auto& t = the_table();
  if (t.armed_count.load(std::memory_order_relaxed) == 0) return std::nullopt;
  std::unique_lock lock(t.mutex);
  auto it = t.points.find(name);
  if (it == t.points.end()) return std::nullopt;
  if (it->second.cfg.only_key && it->second.cfg.only_key != key) return std::nullopt;
  if (!should_fire(it->second)) return std::nullopt;
  config cfg = it->second.cfg;
  FL_ASSERT(cfg.act != action::off);  // should_fire never fires an off point
  switch (cfg.act) {
    case action::off: return std::nullopt;
    case action::return_error: return cfg.error;
    case action::delay:
      lock.unlock();
      net::sleep_for(std::chrono::milliseconds(cfg.delay_ms));
      return std::nullopt;
    case action::throw_exception: lock.unlock(); throw injected_exception(std::string(name));
    case action::pause: pause_here(t, lock, name); return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<status> evaluate(std::string_view name) { return evaluate_keyed(name, std::nullopt); }

std::optional<status> evaluate(std::string_view name, std::uint64_t key) {
  return evaluate_keyed(name, key);
}

}  // namespace faultlane::failpoint
