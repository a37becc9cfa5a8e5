// program_run: runs the faultlane-sim program as a user would, for the
// tests of its command line, and the temporary files those tests write.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace faultlane::sim::test {

// Runs the program with a deadline; stdout and stderr together.
struct program_output {
  int code = -1;
  std::string text;
};

inline program_output run_program(std::vector<std::string> args,
                                  std::chrono::seconds timeout = std::chrono::seconds{300}) {
  args.insert(args.begin(), FAULTLANE_SIM_PROGRAM);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  program_output result;
  if (rc != 0) {
    close(out[0]);
    return result;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      kill(pid, SIGKILL);
      result.text += "\n[timed out]";
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    auto n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    result.text.append(buf, static_cast<std::size_t>(n));
  }
  close(out[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  result.code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
  return result;
}

inline std::string write_temp(const std::string& name, const std::string& text) {
  auto dir =
      std::filesystem::temp_directory_path() / ("faultlane-sim-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace faultlane::sim::test
