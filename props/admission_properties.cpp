// Stateful property of admission: random interleavings of batch reserves,
// splits and releases agree with a counting model, never exceed the bounds,
// and always drain to zero.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>
#include <rapidcheck/state.h>

#include <vector>

#include "faultlane/core/admission.hpp"
#include "planted.hpp"

namespace faultlane::props {
namespace {

constexpr admission_limits bounds{.tasks_max = 8, .bytes_max = 1000};

struct held_share {
  std::uint64_t tasks = 0;
  std::uint64_t bytes = 0;
};

struct admission_model {
  std::vector<held_share> held;
  std::uint64_t tasks() const {
    std::uint64_t t = 0;
    for (auto& h : held) t += h.tasks;
    return t;
  }
  std::uint64_t bytes() const {
    std::uint64_t b = 0;
    for (auto& h : held) b += h.bytes;
    return b;
  }
};

struct admission_sut {
  explicit admission_sut(bool leak_on_release) : leak_on_release(leak_on_release) {}
  ~admission_sut() {
    held.clear();
    leaked.clear();
  }

  // Gives a reservation back, or (the planted bug) loses it: the
  // reservation is parked instead of destroyed, so its share never returns.
  void give_back(std::size_t index) {
    auto it = held.begin() + static_cast<long>(index);
    if (leak_on_release) leaked.push_back(std::move(*it));
    held.erase(it);
  }

  void check_against(const admission_model& m) const {
    auto snap = control.snapshot();
    RC_ASSERT(snap.tasks == m.tasks());
    RC_ASSERT(snap.bytes == m.bytes());
    RC_ASSERT(snap.tasks <= bounds.tasks_max);
    RC_ASSERT(snap.bytes <= bounds.bytes_max);
    RC_ASSERT(!snap.failed);
  }

  bool leak_on_release;
  admission control{bounds};
  std::vector<admission_reservation> held;
  std::vector<admission_reservation> leaked;
};

using command = rc::state::Command<admission_model, admission_sut>;

struct reserve : command {
  std::uint64_t tasks = *rc::gen::inRange<std::uint64_t>(1, 5);
  std::uint64_t bytes = *rc::gen::inRange<std::uint64_t>(0, 600);

  bool fits(const admission_model& m) const {
    return m.tasks() + tasks <= bounds.tasks_max && m.bytes() + bytes <= bounds.bytes_max;
  }
  void apply(admission_model& m) const override {
    if (fits(m)) m.held.push_back({tasks, bytes});
  }
  void run(const admission_model& m, admission_sut& s) const override {
    auto r = s.control.try_reserve(tasks, bytes);
    RC_ASSERT(r.ok() == fits(m));
    if (r.ok()) {
      s.held.push_back(std::move(r).value());
    } else {
      RC_ASSERT(r.code() == status::busy);
    }
    admission_model after = m;
    apply(after);
    s.check_against(after);
  }
  void show(std::ostream& os) const override { os << "reserve(" << tasks << ", " << bytes << ")"; }
};

struct split : command {
  std::size_t index;
  explicit split(const admission_model& m)
      : index(m.held.empty() ? 0 : *rc::gen::inRange<std::size_t>(0, m.held.size())) {}
  void checkPreconditions(const admission_model& m) const override {
    RC_PRE(index < m.held.size());
    RC_PRE(m.held[index].tasks >= 2);
  }
  void apply(admission_model& m) const override {
    auto bytes = m.held[index].bytes / 2;
    m.held[index].tasks -= 1;
    m.held[index].bytes -= bytes;
    m.held.push_back({1, bytes});
  }
  void run(const admission_model& m, admission_sut& s) const override {
    auto part = s.held[index].split(1, m.held[index].bytes / 2);
    s.held.push_back(std::move(part));
    admission_model after = m;
    apply(after);
    s.check_against(after);
  }
  void show(std::ostream& os) const override { os << "split(#" << index << ")"; }
};

struct release : command {
  std::size_t index;
  explicit release(const admission_model& m)
      : index(m.held.empty() ? 0 : *rc::gen::inRange<std::size_t>(0, m.held.size())) {}
  void checkPreconditions(const admission_model& m) const override {
    RC_PRE(index < m.held.size());
  }
  void apply(admission_model& m) const override {
    m.held.erase(m.held.begin() + static_cast<long>(index));
  }
  void run(const admission_model& m, admission_sut& s) const override {
    s.give_back(index);
    admission_model after = m;
    apply(after);
    s.check_against(after);
  }
  void show(std::ostream& os) const override { os << "release(#" << index << ")"; }
};

void run_admission_property(bool leak_on_release) {
  admission_model model;
  admission_sut sut(leak_on_release);
  rc::state::check(model, sut,
                   rc::state::gen::execOneOfWithArgs<reserve, reserve, split, release>());
  // Whatever happened, giving everything back drains to zero.
  while (!sut.held.empty()) sut.give_back(0);
  auto drained = sut.control.wait_drained(std::chrono::milliseconds(0));
  RC_ASSERT(drained.ok());
  RC_ASSERT(sut.control.snapshot().tasks == 0u);
}

RC_GTEST_PROP(admission_properties, agrees_with_the_model_and_drains_to_zero, ()) {
  run_admission_property(false);
}

TEST(admission_properties_planted, a_lost_release_is_caught) {
  EXPECT_TRUE(
      finds_counterexample("reservation lost on release", [] { run_admission_property(true); }));
}

}  // namespace
}  // namespace faultlane::props
