// Status codes and result<T>: how every failure that comes from outside the
// process (a peer, a socket, a file, a flag) travels through faultlane.
//
// A status says what kind of failure happened and decides what the caller may
// do next (retry `busy`, refresh on `stale_registration`, never replay an
// `ambiguous_write`). A result<T> carries either a value or an error with the
// status and a human-readable message naming the problem.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "faultlane/base/assert.hpp"

namespace faultlane {

// Whether a status list's codes run 0, 1, 2, ... in its order, so that a
// decoder accepting 0..max accepts exactly the listed statuses (the wire's
// and the control plane's status tables assert it).
template <typename T, std::size_t N>
constexpr bool codes_run_from_zero(const T (&codes)[N]) {
  for (std::size_t i = 0; i < N; ++i) {
    if (codes[i] != i) return false;
  }
  return true;
}

// Every status, once, in the enum's order: X(name, severity, meaning). The
// list generates the enum, status_count, to_string() and severity(), and
// docs/architecture.md's status table (a test holds the page to it).
// Severity orders "settle with the most severe": a root cause outranks the
// cancellations it caused, and an ambiguous WRITE outranks everything a
// retry policy could act on.
#define FAULTLANE_STATUSES(X)                                                          \
  X(ok, 0, "done")                                                                     \
  X(cancelled, 1, "a sibling slice failed, or the caller gave up")                     \
  X(busy, 2, "over an admission or queue bound; retry later")                          \
  X(timeout, 3, "a connect or progress deadline passed")                               \
  X(connection_failed, 3, "could not connect, or the peer closed or reset")            \
  X(stale_registration, 4, "the registration id is unknown to the target")             \
  X(range_rejected, 5, "offset and length fall outside the registered range")          \
  X(permission_denied, 5, "the registration does not allow this access")               \
  X(protocol_error, 6, "a malformed or unexpected frame")                              \
  X(invalid_argument, 6, "a bad configuration value or call argument")                 \
  X(sequence_exhausted, 6, "no registration ids left in this incarnation")             \
  X(shutting_down, 7, "the transport or registry is closing")                          \
  X(runtime_failed, 8, "an exception escaped a handler; no new work is taken")         \
  X(admission_underflow, 9, "more was released than reserved; admission fails closed") \
  X(ambiguous_write, 10, "a WRITE may have executed; it is never replayed")            \
  X(internal_error, 11, "a failure inside faultlane itself")

#define FAULTLANE_STATUS_ENUM(name, severity, meaning) name,
enum class status : std::uint16_t { FAULTLANE_STATUSES(FAULTLANE_STATUS_ENUM) };
#undef FAULTLANE_STATUS_ENUM

// The list expands to `0 +1 +1 ...`: parentheses around `+1` would not parse.
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define FAULTLANE_STATUS_ONE(name, severity, meaning) +1
inline constexpr int status_count = 0 FAULTLANE_STATUSES(FAULTLANE_STATUS_ONE);
#undef FAULTLANE_STATUS_ONE

std::string_view to_string(status code) noexcept;

// The status's severity in FAULTLANE_STATUSES.
int severity(status code) noexcept;

// The more severe of two statuses (the first on a tie).
inline status most_severe(status a, status b) noexcept { return severity(b) > severity(a) ? b : a; }

// Where a value came from, for messages: 1-based line and column; `file` is
// a path, or a label in angle brackets for text that came from no file
// ("<config>").
struct source_mark {
  std::string file;
  int line = 0;
  int column = 0;
  friend bool operator==(const source_mark&, const source_mark&) = default;
};

// Where bad input was and what is wrong with it, as data, so that a module
// reporting another's error never reads its message text.
struct input_place {
  source_mark at;    // line 0: not known (a check of a value, not of a file)
  std::string key;   // the dotted path of the value ("links[2].faults[0].ms"); empty: the top
  std::string what;  // the complaint alone, without place or key
  friend bool operator==(const input_place&, const input_place&) = default;
};

struct error {
  status code = status::internal_error;
  std::string message;               // the whole line a user sees
  std::optional<input_place> place;  // set when the error is about input
};

template <typename T>
class [[nodiscard]] result {
 public:
  result(T value) : state_(std::in_place_index<0>, std::move(value)) {}
  result(faultlane::error e) : state_(std::in_place_index<1>, std::move(e)) {
    FL_ASSERT(std::get<1>(state_).code != status::ok);
  }

  bool ok() const noexcept { return state_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }

  T& value() & {
    FL_ASSERT(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    FL_ASSERT(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    FL_ASSERT(ok());
    return std::get<0>(std::move(state_));
  }
  T* operator->() { return &value(); }
  T& operator*() & { return value(); }

  const faultlane::error& error() const& {
    FL_ASSERT(!ok());
    return std::get<1>(state_);
  }
  status code() const noexcept {
    const auto* e = std::get_if<1>(&state_);  // never throws, unlike std::get
    return e == nullptr ? status::ok : e->code;
  }

 private:
  std::variant<T, faultlane::error> state_;
};

template <>
class [[nodiscard]] result<void> {
 public:
  result() = default;
  result(faultlane::error e) : error_(std::move(e)) { FL_ASSERT(error_.code != status::ok); }

  bool ok() const noexcept { return error_.code == status::ok; }
  explicit operator bool() const noexcept { return ok(); }
  const faultlane::error& error() const& {
    FL_ASSERT(!ok());
    return error_;
  }
  status code() const noexcept { return error_.code; }

 private:
  faultlane::error error_{status::ok, {}};
};

}  // namespace faultlane
