// The run-time switch of ci/mutation's schemata (ci/mutation_tool/schema.py
// puts it in front of every mutated file of its shadow tree; no source of the
// project includes it).
//
// FAULTLANE_MUTANT(id) is true in a process whose FAULTLANE_MUTANT names that
// id, and false everywhere else. With FAULTLANE_MUTANT_TRACE naming a folder,
// each switch a process reaches is written there once, as a line of its own
// in a file named by the process id: the coverage map of the tests. The line
// is written when the switch is first reached (not at exit), so a process
// that ends by _exit, a signal or a sanitizer report still leaves its lines.
// FAULTLANE_WATCH adds the infections (below).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>

namespace faultlane_mutation {

inline constexpr int sites_max = 1 << 16;

inline long active() {
  static const long id = [] {
    const char* s = std::getenv("FAULTLANE_MUTANT");
    return s && *s ? std::strtol(s, nullptr, 10) : -1L;
  }();
  return id;
}

inline int trace_fd() {
  static const int fd = [] {
    const char* dir = std::getenv("FAULTLANE_MUTANT_TRACE");
    if (!dir || !*dir) return -1;
    const std::string path = std::string(dir) + "/" + std::to_string(::getpid()) + ".sites";
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  }();
  return fd;
}

inline std::atomic<unsigned char> reached[sites_max];

inline bool on(long id) {
  if (trace_fd() >= 0 && id >= 0 && id < sites_max &&
      reached[id].exchange(1, std::memory_order_relaxed) == 0) {
    char line[24];
    const int n = std::snprintf(line, sizeof line, "%ld\n", id);
    [[maybe_unused]] const auto written = ::write(trace_fd(), line, static_cast<size_t>(n));
  }
  return active() == id;
}

inline bool tracing() { return trace_fd() >= 0; }

// Infection: in a trace run, a mutant whose mutated value differs from the
// original's where its switch is reached, written once as `i<id>`. A test
// that reaches a mutant's switch but never infects it runs exactly as the
// unmutated one up to the end, so it need not run for that mutant.
inline std::atomic<unsigned char> infected[sites_max];

struct alternative {
  long id;
  bool value;
};

inline bool watch(bool original, std::initializer_list<alternative> alternatives) {
  for (const auto& a : alternatives) {
    if (a.value != original && a.id >= 0 && a.id < sites_max &&
        infected[a.id].exchange(1, std::memory_order_relaxed) == 0) {
      char line[24];
      const int n = std::snprintf(line, sizeof line, "i%ld\n", a.id);
      [[maybe_unused]] const auto written = ::write(trace_fd(), line, static_cast<size_t>(n));
    }
  }
  return original;
}

}  // namespace faultlane_mutation

#define FAULTLANE_MUTANT(id) (::faultlane_mutation::on(id))
// The original condition, and in a trace run which mutants' values differ
// from it: FAULTLANE_WATCH((original), ::faultlane_mutation::alternative{id,
// static_cast<bool>((mutated))}, ...). Only mutants whose mutated value is
// free of side effects are watched (a forced condition, a comparison of
// plain operands): their alternatives are evaluated in the trace run only.
#define FAULTLANE_WATCH(original, ...)                                                        \
  (::faultlane_mutation::tracing()                                                            \
       ? ::faultlane_mutation::watch(static_cast<bool>(original), {__VA_ARGS__})              \
       : static_cast<bool>(original))
