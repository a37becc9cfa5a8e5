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
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
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

}  // namespace faultlane_mutation

#define FAULTLANE_MUTANT(id) (::faultlane_mutation::on(id))
