// faultlane-relay from the command line, as a user runs it: against a plain
// TCP peer, with a fault, stopped by SIGINT, and with bad input.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "faultlane/relays/config.hpp"
#include "faultlane/testing/read_within.hpp"
#include "relay_fixture.hpp"

extern char** environ;

namespace faultlane::relays {
namespace {

using namespace testing;

// The program under test, its stdout and stderr on one pipe. Every wait on
// it is bounded: a line within `line_timeout`, an exit within
// `exit_timeout` (past that it is killed and the test fails).
struct running_program {
  static constexpr auto line_timeout = 10s;
  static constexpr auto exit_timeout = 20s;
  pid_t pid = -1;
  int out = -1;
  std::string pending;  // read from the pipe, not yet returned as lines
  bool ended = false;

  explicit running_program(std::vector<std::string> args) {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
    std::vector<char*> argv;
    args.insert(args.begin(), FAULTLANE_RELAY_PROGRAM);
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    out = fds[0];
  }
  ~running_program() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);  // killed: returns at once
    }
    if (out >= 0) ::close(out);
  }
  // The next line with its newline; at end of output what is left (empty
  // when nothing is); empty, with a test failure, after line_timeout.
  std::string line() {
    while (true) {
      if (auto nl = pending.find('\n'); nl != std::string::npos) {
        std::string l = pending.substr(0, nl + 1);
        pending.erase(0, nl + 1);
        return l;
      }
      if (ended) return std::exchange(pending, {});
      const int ready = faultlane::testing::poll_within(out, POLLIN, line_timeout);
      if (ready == 0) {
        ADD_FAILURE() << "no line from the program within " << line_timeout.count() << " s";
        return {};
      }
      if (ready < 0) {
        ADD_FAILURE() << "poll on the program's output: " << std::strerror(errno);
        return {};
      }
      char buf[1024];
      const auto n = ::read(out, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) ended = true;
      if (n > 0) pending.append(buf, static_cast<std::size_t>(n));
    }
  }
  std::string rest() {
    std::string all;
    for (std::string l = line(); !l.empty(); l = line()) all += l;
    return all;
  }
  // The exit status (128 + the signal for a killed program).
  int wait() {
    if (!exits_within(exit_timeout)) ::kill(pid, SIGKILL);  // so waitpid returns
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Whether the program exited within `bound` (it is then a zombie for
  // waitpid to collect); a test failure otherwise. A pidfd is readable
  // once its process exited (Linux 5.3).
  bool exits_within(std::chrono::seconds bound) const {
    const int handle = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (handle < 0) {
      ADD_FAILURE() << "pidfd_open: " << std::strerror(errno);
      return false;
    }
    const int ready = faultlane::testing::poll_within(handle, POLLIN, bound);
    ::close(handle);
    if (ready <= 0) ADD_FAILURE() << "the program did not exit within " << bound.count() << " s";
    return ready > 0;
  }
};

TEST(relay_cli, relays_a_plain_tcp_peer_with_a_fault_and_reports_counters) {
  plain_peer source(plain_peer::mode::source, 5000);
  running_program p({"--upstream", source.where().str(), "--fault", "truncate dir=down bytes=1200",
                     "--protocol", "raw"});
  auto banner = p.line();
  auto at = banner.find("listening on 127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << banner;
  auto port = static_cast<std::uint16_t>(std::stoi(banner.substr(at + 23)));
  EXPECT_NE(p.line().find("truncate.down: truncate dir=down bytes=1200"), std::string::npos);
  {
    client c({"127.0.0.1", port});
    auto got = c.read(5000, 10s);
    EXPECT_EQ(got.data.size(), 1200u);
    EXPECT_EQ(got.end, asio::error::eof);
  }
  ::kill(p.pid, SIGINT);
  auto report = p.rest();
  EXPECT_EQ(p.wait(), 0);
  EXPECT_NE(report.find("truncate.down"), std::string::npos) << report;
  EXPECT_NE(report.find("connections.accepted"), std::string::npos) << report;
}

std::uint16_t port_of(const std::string& banner) {
  auto at = banner.find("listening on 127.0.0.1:");
  EXPECT_NE(at, std::string::npos) << banner;
  return at == std::string::npos ? 0
                                 : static_cast<std::uint16_t>(std::stoi(banner.substr(at + 23)));
}

// Reads lines until one holds `what`; the lines read. Ends at EOF too (the
// program died), which the caller's check then reports.
std::string lines_until(running_program& p, const std::string& what) {
  std::string seen;
  for (std::string l = p.line(); !l.empty(); l = p.line()) {
    seen += l;
    if (l.find(what) != std::string::npos) break;
  }
  return seen;
}

// Clients that read 1 KB of a large answer and hang up: on the splice path
// that raised SIGPIPE, which killed the program (exit 141) after a few.
TEST(relay_cli, early_closes_never_kill_it_usr1_prints_counters_and_hup_is_ignored) {
  plain_peer source(plain_peer::mode::source, 8u << 20);
  running_program p({"--upstream", source.where().str(), "--protocol", "raw"});
  auto port = port_of(p.line());
  constexpr int clients = 20;
  for (int i = 0; i < clients; ++i) {
    client c({"127.0.0.1", port});
    EXPECT_EQ(c.read(1024, 10s).data.size(), 1024u);
    c.send_fin();  // then closed with most of the answer unread
  }
  ::kill(p.pid, SIGUSR1);
  auto counters = lines_until(p, "connections.accepted");
  EXPECT_NE(counters.find(fmt::format("connections.accepted         {}", clients)),
            std::string::npos)
      << counters;
  ::kill(p.pid, SIGHUP);
  EXPECT_NE(lines_until(p, "SIGHUP").find("SIGHUP ignored"), std::string::npos);
  {
    client c({"127.0.0.1", port});  // still accepting
    EXPECT_EQ(c.read(1024, 10s).data.size(), 1024u);
  }
  ::kill(p.pid, SIGTERM);
  auto report = p.rest();
  EXPECT_EQ(p.wait(), 0) << report;
  EXPECT_NE(report.find(fmt::format("connections.accepted         {}", clients + 1)),
            std::string::npos)
      << report;
}

// One HTTP/1.1 exchange on a fresh connection; the whole answer.
std::string http_exchange(std::uint16_t port, const std::string& request) {
  client c({"127.0.0.1", port});
  c.send(std::vector<char>(request.begin(), request.end()));
  auto got = c.read(1 << 20, 10s);  // until the server closes (Connection: close)
  return {got.data.begin(), got.data.end()};
}

// The relay the flags describe is a proxy of the API, its fault a toxic,
// and a toxic added over HTTP acts on it; `localhost` reads as 127.0.0.1.
TEST(relay_cli, api_lists_the_command_line_relay_and_changes_it) {
  plain_peer source(plain_peer::mode::source, 100);
  running_program p({"--upstream", fmt::format("localhost:{}", source.where().port), "--name",
                     "web", "--protocol", "raw", "--fault", "latency dir=down ms=1", "--api",
                     "127.0.0.1:0"});
  auto seen = lines_until(p, "api listening on http://127.0.0.1:");
  auto relay_port = port_of(seen);
  auto at = seen.find("api listening on http://127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << seen;
  auto api_port = static_cast<std::uint16_t>(std::stoi(seen.substr(at + 34)));
  auto listed =
      http_exchange(api_port, "GET /proxies HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(listed.find("HTTP/1.1 200"), std::string::npos) << listed;
  EXPECT_NE(listed.find(fmt::format(R"("listen":"127.0.0.1:{}")", relay_port)), std::string::npos)
      << listed;
  EXPECT_NE(listed.find(R"("name":"latency.down")"), std::string::npos) << listed;
  std::string body = R"({"type": "limit_data", "attributes": {"bytes": 30}})";
  auto added = http_exchange(
      api_port, fmt::format("POST /proxies/web/toxics HTTP/1.1\r\nHost: x\r\nConnection: "
                            "close\r\nContent-Length: {}\r\n\r\n{}",
                            body.size(), body));
  EXPECT_NE(added.find("HTTP/1.1 200"), std::string::npos) << added;
  {
    client c({"127.0.0.1", relay_port});
    EXPECT_EQ(c.read(100, 10s).data.size(), 30u);  // limit_data cut the 100-byte answer
  }
  ::kill(p.pid, SIGTERM);
  auto report = p.rest();
  EXPECT_EQ(p.wait(), 0) << report;
  EXPECT_NE(report.find("limit_data_downstream        1"), std::string::npos) << report;
}

TEST(relay_cli, bad_input_names_the_problem_and_exits_2) {
  struct bad_case {
    std::vector<std::string> args;
    const char* names;
  };
  auto yaml = ::testing::TempDir() + std::to_string(::getpid()) + "-faultlane_relay_bad.yaml";
  {
    std::ofstream f(yaml);
    f << "relays:\n  - upstream: 127.0.0.1:9\n    faults:\n      - {type: stall, dir: sideways}\n";
  }
  auto poll_yaml =
      ::testing::TempDir() + std::to_string(::getpid()) + "-faultlane_relay_bad_poll.yaml";
  {
    std::ofstream f(poll_yaml);
    f << "relays:\n  - upstream: 127.0.0.1:9\n    busy_poll_us: 10001\n";
  }
  for (const auto& b :
       {bad_case{{"--upstream", "127.0.0.1"}, "HOST:PORT"},
        bad_case{{"--listen", "127.0.0.1:0"}, "--upstream is required"},
        bad_case{{"--upstream", "127.0.0.1:9", "--fault", "latency dir=up"}, "needs ms"},
        bad_case{{"--upstream", "127.0.0.1:9", "--bogus", "1"}, "unknown flag"},
        bad_case{{"--upstream", "192.0.2.1:9"}, "not a loopback"},
        bad_case{{"--config", yaml},
                 "faultlane_relay_bad.yaml:4:23: relays[0].faults[0].dir: dir must be up or down"},
        bad_case{{"--config", "/nonexistent.yaml"}, "cannot open"},
        bad_case{{"--upstream", "127.0.0.1:99999"}, "bad port"},
        bad_case{{"--upstream", "127.0.0.1:abc"}, "bad port"},
        bad_case{{"--upstream", "127.0.0.1:9", "--seed", "-1"}, "not a whole number"},
        bad_case{{"--upstream", "127.0.0.1:9", "--seed", "18446744073709551616"},
                 "not a whole number"},
        bad_case{{"--upstream", "127.0.0.1:9", "--seed", "nan"}, "not a whole number"},
        bad_case{{"--upstream", "127.0.0.1:9", "--rail", "5000"}, "not in range 0 to 1023"},
        bad_case{{"--upstream", "127.0.0.1:9", "--protocol", "http"}, "faultlane,raw"},
        bad_case{{"--upstream", "127.0.0.1:9", "--busy-poll-us", "10001"},
                 "not in range 0 to 10000"},
        bad_case{
            {"--config", poll_yaml},
            "faultlane_relay_bad_poll.yaml:3:19: relays[0].busy_poll_us: must be at most 10000"},
        bad_case{{"--config", yaml, "--busy-poll-us", "5"}, "excludes"},
        bad_case{{"--config", yaml, "--upstream", "127.0.0.1:9"}, "excludes"},
        bad_case{{"--upstream", "127.0.0.1:9", "--api", "192.0.2.1:8474"}, "not a loopback"},
        bad_case{{"--upstream", "127.0.0.1:9", "extra"}, "unknown flag or argument: extra"},
        bad_case{{"--upstream"}, "--upstream"}}) {
    running_program p(b.args);
    auto output = p.rest();
    EXPECT_EQ(p.wait(), 2) << output;
    EXPECT_NE(output.find(b.names), std::string::npos) << output;
    EXPECT_EQ(std::count(output.begin(), output.end(), '\n'), 1) << "one line: " << output;
  }
  std::remove(yaml.c_str());
  std::remove(poll_yaml.c_str());
}

// The text between each `open` and the next `close` after it.
std::vector<std::string> between(const std::string& text, const std::string& open,
                                 const std::string& close) {
  std::vector<std::string> out;
  for (auto at = text.find(open); at != std::string::npos; at = text.find(open, at)) {
    at += open.size();
    auto end = text.find(close, at);
    if (end == std::string::npos) break;
    out.push_back(text.substr(at, end - at));
    at = end + close.size();
  }
  return out;
}

TEST(relay_cli, the_examples_in_docs_faults_md_parse) {
  std::ifstream in(std::string(FAULTLANE_SOURCE_DIR) + "/docs/faults.md");
  ASSERT_TRUE(in) << "docs/faults.md";
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto yamls = between(doc, "```yaml\n", "```");
  ASSERT_EQ(yamls.size(), 1u);
  for (const auto& y : yamls) {
    auto parsed = parse_relays_yaml(y);
    EXPECT_TRUE(parsed.ok()) << y << "\n" << (parsed.ok() ? "" : parsed.error().message);
  }
  std::size_t faults = 0;
  for (const auto& block : between(doc, "```sh\n", "```")) {
    for (const auto& text : between(block, "--fault \"", "\"")) {
      auto f = parse_fault(text);
      EXPECT_TRUE(f.ok()) << text << ": " << (f.ok() ? "" : f.error().message);
      ++faults;
    }
  }
  EXPECT_EQ(faults, 3u);  // every --fault in a command there
}

}  // namespace
}  // namespace faultlane::relays
