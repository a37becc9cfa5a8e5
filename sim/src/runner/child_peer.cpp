// child_peer: a scenario transport in a child process the runner started,
// so a scenario can SIGKILL it and start it again for real.
//
// The child is `PROGRAM child`, spoken to in JSON lines (child_protocol.hpp).
// A reader thread takes every line the child writes: observer events go
// straight into the recorder (their seq is the order the runner received
// them; the child's own order is kept), replies go to the one command
// waiting for them. A child that dies is noticed as end of file: waiting
// commands fail at once instead of timing out.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <system_error>
#include <thread>

#include "faultlane/core/descriptor_text.hpp"
#include "runner/child_protocol.hpp"
#include "runner/peer.hpp"

extern char** environ;

namespace faultlane::sim {
namespace {

using nlohmann::json;
constexpr auto reply_timeout = std::chrono::seconds(60);

class child_peer final : public peer {
 public:
  child_peer(const transport_spec& spec, recorder& rec, std::string program)
      : spec_(spec), recorder_(rec), program_(std::move(program)) {}
  ~child_peer() override {
    try {
      stop();
    } catch (const std::exception&) {
      // The child's reply could not be encoded or parsed: it is reaped anyway.
      if (pid_ > 0) finish(true);
    }
  }

  result<void> start(std::uint32_t index) override {
    if (program_.empty()) {
      return error{
          status::invalid_argument,
          "transport " + spec_.name + " is process: child, but no child program was given"};
    }
    if (pid_ > 0) finish(true);  // a half-started incarnation never lingers
    if (auto r = spawn(); !r) return r;
    auto reply = command({{"cmd", "start"},
                          {"name", spec_.name},
                          {"rails", spec_.rails},
                          {"incarnation", index},
                          {"config", child_protocol::to_json(spec_.config)}});
    if (!reply) return reply.error();
    {
      std::lock_guard lock(mutex_);
      control_ = reply.value().value("control", std::string());
    }
    return take_descriptor(reply.value());
  }

  segment_descriptor descriptor() override {
    std::lock_guard lock(mutex_);
    return descriptor_;
  }

  result<endpoint> control_endpoint() override {
    std::lock_guard lock(mutex_);
    if (control_.empty()) {
      return error{status::invalid_argument,
                   "transport " + spec_.name + " serves no control plane"};
    }
    return parse_endpoint(control_);
  }

  result<registration_id> register_region(const region_spec& region,
                                          std::uint64_t fill_seed) override {
    auto reply = command({{"cmd", "register"},
                          {"region", region.name},
                          {"size", region.size},
                          {"perm", static_cast<int>(region.perm)},
                          {"fill_seed", fill_seed}});
    if (!reply) return reply.error();
    if (auto r = take_descriptor(reply.value()); !r) return r.error();
    return reply.value().at("id").get<registration_id>();
  }

  result<void> unregister_region(const std::string& region, registration_id id) override {
    auto reply = command({{"cmd", "unregister"}, {"region", region}, {"id", id}});
    if (!reply) return reply.error();
    return take_descriptor(reply.value());
  }

  result<transport_stats> stats() override {
    auto reply = command({{"cmd", "stats"}});
    if (!reply) return reply.error();
    return child_protocol::stats_from_json(reply.value().at("stats"));
  }

  result<std::vector<std::byte>> dump(const std::string& region) override {
    auto reply = command({{"cmd", "dump"}, {"region", region}});
    if (!reply) return reply.error();
    return child_protocol::unhex(reply.value().at("hex").get<std::string>());
  }

  result<void> shutdown() override {
    auto reply = command({{"cmd", "shutdown"}});
    if (!reply) return reply.error();
    return {};
  }

  void stop() override {
    if (pid_ <= 0) return;
    (void)command({{"cmd", "exit"}});
    finish(false);
  }

  bool kill() override {
    if (pid_ <= 0) return false;
    finish(true);
    return true;
  }

  bool running() const override { return pid_ > 0; }

 private:
  result<void> spawn() {
    int to_child[2];
    int from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
      return error{status::internal_error, "pipe2: " + std::generic_category().message(errno)};
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], 0);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], 1);
    // Nothing else crosses: a child holding a copy of one of the runner's
    // sockets would keep a connection the runner closed open.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    std::string arg0 = program_;
    std::string arg1 = "child";
    char* argv[] = {arg0.data(), arg1.data(), nullptr};
    pid_t pid = 0;
    int rc = posix_spawn(&pid, program_.c_str(), &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(to_child[0]);
    ::close(from_child[1]);
    if (rc != 0) {
      ::close(to_child[1]);
      ::close(from_child[0]);
      return error{status::invalid_argument,
                   "cannot start " + program_ + ": " + std::generic_category().message(rc)};
    }
    pid_ = pid;
    to_child_ = to_child[1];
    {
      std::lock_guard lock(mutex_);
      eof_ = false;
      replies_.clear();
    }
    reader_ = std::thread([this, fd = from_child[0]] { read_lines(fd); });
    return {};
  }

  void read_lines(int fd) {
    std::string buffer;
    char chunk[65536];
    for (;;) {
      auto n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      buffer.append(chunk, static_cast<std::size_t>(n));
      std::size_t start = 0;
      for (auto nl = buffer.find('\n'); nl != std::string::npos; nl = buffer.find('\n', start)) {
        take_line(std::string_view(buffer).substr(start, nl - start));
        start = nl + 1;
      }
      buffer.erase(0, start);
    }
    ::close(fd);
    std::lock_guard lock(mutex_);
    eof_ = true;
    cv_.notify_all();
  }

  void take_line(std::string_view line) {
    auto j = json::parse(line, nullptr, false);
    if (j.is_discarded()) return;
    if (j.contains("event")) {
      recorder_.add_event(child_protocol::event_from_json(j["event"]));
      return;
    }
    std::lock_guard lock(mutex_);
    replies_.push_back(std::move(j));
    cv_.notify_all();
  }

  result<json> command(const json& cmd) {
    std::lock_guard one_at_a_time(command_mutex_);
    if (to_child_ < 0)
      return error{status::connection_failed, "child " + spec_.name + " is not running"};
    auto line = cmd.dump() + "\n";
    for (std::size_t off = 0; off < line.size();) {
      auto n = ::write(to_child_, line.data() + off, line.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return error{status::connection_failed, "child " + spec_.name + " went away"};
      off += static_cast<std::size_t>(n);
    }
    std::unique_lock lock(mutex_);
    if (!cv_.wait_for(lock, reply_timeout, [&] { return !replies_.empty() || eof_; })) {
      // A late reply would answer the next command: a child that does not
      // answer in time is killed (finish() reaps it).
      ::kill(pid_, SIGKILL);
      return error{status::timeout, "child " + spec_.name + " did not answer " + cmd.dump()};
    }
    if (replies_.empty())
      return error{status::connection_failed, "child " + spec_.name + " exited"};
    auto reply = std::move(replies_.front());
    replies_.pop_front();
    if (!reply.value("ok", false)) {
      return error{
          static_cast<status>(reply.value("code", static_cast<int>(status::internal_error))),
          reply.value("message", std::string("child failed"))};
    }
    return reply;
  }

  result<void> take_descriptor(const json& reply) {
    auto d = parse_descriptor(reply.at("descriptor").get<std::string>());
    if (!d) return d.error();
    std::lock_guard lock(mutex_);
    descriptor_ = std::move(d.value());
    return {};
  }

  // Closes the child's stdin (it exits on end of file), or SIGKILLs it,
  // then reaps it and joins the reader.
  void finish(bool sigkill) {
    if (sigkill) ::kill(pid_, SIGKILL);
    {
      std::lock_guard one_at_a_time(command_mutex_);
      ::close(to_child_);
      to_child_ = -1;
    }
    {
      // A child exits at the end of its stdin; one that hangs is killed.
      std::unique_lock lock(mutex_);
      if (!cv_.wait_for(lock, reply_timeout, [&] { return eof_; })) ::kill(pid_, SIGKILL);
    }
    int wstatus = 0;
    while (::waitpid(pid_, &wstatus, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    if (reader_.joinable()) reader_.join();
  }

  const transport_spec spec_;
  recorder& recorder_;
  const std::string program_;
  pid_t pid_ = -1;
  int to_child_ = -1;
  std::thread reader_;
  std::mutex command_mutex_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<json> replies_;
  bool eof_ = false;
  segment_descriptor descriptor_;
  std::string control_;  // "HOST:PORT" of the incarnation's control plane, or empty
};

}  // namespace

std::unique_ptr<peer> make_child_peer(const transport_spec& spec, recorder& rec,
                                      std::string program) {
  return std::make_unique<child_peer>(spec, rec, std::move(program));
}

}  // namespace faultlane::sim
