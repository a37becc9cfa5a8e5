// Exactly-once completion.
//
// terminal_action is the one thing that may publish a task's outcome. It is
// move-only and is consumed by finalize(), so "completed twice" cannot be
// written without moving it twice, which the type forbids.
//
// settlement decides *when* to finalize: it counts the I/O references that
// may still touch the task's buffers (one per socket operation, timer or
// slice in flight). Each reference retires once, with its status; the one
// that retires last runs the terminal action with the most severe status
// seen. A timeout therefore never publishes while a cancelled read could
// still write into the caller's buffer: it retires its own reference, and
// the cancelled operation's callback retires the last one.
#pragma once

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane {

class terminal_action {
 public:
  using callback = unique_function<void(status, std::uint64_t transferred_bytes)>;

  terminal_action() = default;
  explicit terminal_action(callback on_terminal) : on_terminal_(std::move(on_terminal)) {
    FL_ASSERT(static_cast<bool>(on_terminal_));
  }
  terminal_action(terminal_action&&) noexcept = default;
  terminal_action& operator=(terminal_action&& other) noexcept {
    FL_ASSERT(!armed());  // overwriting an armed action would lose a completion
    on_terminal_ = std::move(other.on_terminal_);
    return *this;
  }
  terminal_action(const terminal_action&) = delete;
  terminal_action& operator=(const terminal_action&) = delete;
  ~terminal_action() {
    FL_ASSERT(!armed());  // every armed action must be finalized
  }

  bool armed() const noexcept { return static_cast<bool>(on_terminal_); }

  // Runs the callback once; the action is empty afterwards.
  void finalize(status code, std::uint64_t transferred_bytes) && {
    FL_ASSERT(armed());
    callback run = std::move(on_terminal_);
    on_terminal_.reset();
    run(code, transferred_bytes);
  }

 private:
  callback on_terminal_;
};

static_assert(!std::is_copy_constructible_v<terminal_action>);
static_assert(!std::is_copy_assignable_v<terminal_action>);
static_assert(std::is_nothrow_move_constructible_v<terminal_action>);

class settlement {
 public:
  settlement(terminal_action action, std::uint32_t references)
      : action_(std::move(action)), references_(references) {
    FL_ASSERT(action_.armed());
    FL_ASSERT(references > 0);
  }
  settlement(const settlement&) = delete;
  settlement& operator=(const settlement&) = delete;

  // Retires one reference with its outcome. Returns true for the call that
  // retired the last reference and therefore ran the terminal action.
  bool retire(status code, std::uint64_t transferred_bytes = 0) noexcept;

  // Readable from any thread while the task runs.
  status current_status() const noexcept {
    return static_cast<status>(status_.load(std::memory_order_acquire));
  }
  std::uint64_t transferred_bytes() const noexcept {
    return transferred_.load(std::memory_order_acquire);
  }
  bool settled() const noexcept { return references_.load(std::memory_order_acquire) == 0; }

 private:
  void merge(status code) noexcept;

  terminal_action action_;
  std::atomic<std::uint32_t> references_;
  std::atomic<std::uint16_t> status_{static_cast<std::uint16_t>(status::ok)};
  std::atomic<std::uint64_t> transferred_{0};
};

}  // namespace faultlane
