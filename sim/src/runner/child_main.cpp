// The child side of a `process: child` transport (`faultlane-sim child`):
// one transport incarnation per process, driven by JSON lines on stdin
// (child_protocol.hpp). Observer events are written as they happen, so
// what the child reported before a SIGKILL has already reached the runner.
#include <csignal>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>

#include "faultlane/core/descriptor_text.hpp"
#include "faultlane/sim/runner.hpp"
#include "runner/child_protocol.hpp"
#include "runner/peer.hpp"

namespace faultlane::sim {
namespace {

using nlohmann::json;

class child_session {
 public:
  child_session() : recorder_(true) {}

  // One command; false after `exit`.
  bool handle(const json& cmd) {
    const auto name = cmd.at("cmd").get<std::string>();
    json reply{{"reply", name}, {"ok", true}};
    if (name == "exit") {
      if (peer_) peer_->stop();
      send(reply);
      return false;
    }
    auto failed = run(name, cmd, reply);
    if (failed) {
      reply["ok"] = false;
      reply["code"] = static_cast<int>(failed->code);
      reply["message"] = failed->message;
    }
    send(reply);
    return true;
  }

  void send(const json& line) {
    std::lock_guard lock(out_mutex_);
    std::cout << line.dump() << '\n' << std::flush;
  }

 private:
  std::optional<error> run(const std::string& name, const json& cmd, json& reply) {
    if (name == "start") return start(cmd, reply);
    if (!peer_) return error{status::invalid_argument, "child: not started"};
    if (name == "register") {
      region_spec r;
      r.name = cmd.at("region").get<std::string>();
      r.size = cmd.at("size").get<std::uint64_t>();
      r.perm = static_cast<permission>(cmd.at("perm").get<int>());
      auto id = peer_->register_region(r, cmd.at("fill_seed").get<std::uint64_t>());
      if (!id) return id.error();
      reply["id"] = id.value();
      reply["descriptor"] = to_text(peer_->descriptor());
    } else if (name == "unregister") {
      auto r = peer_->unregister_region(cmd.at("region").get<std::string>(),
                                        cmd.at("id").get<std::uint64_t>());
      if (!r) return r.error();
      reply["descriptor"] = to_text(peer_->descriptor());
    } else if (name == "stats") {
      auto s = peer_->stats();
      if (!s) return s.error();
      reply["stats"] = child_protocol::to_json(s.value());
    } else if (name == "dump") {
      auto bytes = peer_->dump(cmd.at("region").get<std::string>());
      if (!bytes) return bytes.error();
      reply["hex"] = child_protocol::hex(bytes.value());
    } else if (name == "shutdown") {
      auto r = peer_->shutdown();
      if (!r) return r.error();
    } else {
      return error{status::invalid_argument, "child: unknown command " + name};
    }
    return std::nullopt;
  }

  std::optional<error> start(const json& cmd, json& reply) {
    spec_.name = cmd.at("name").get<std::string>();
    spec_.rails = cmd.at("rails").get<std::size_t>();
    spec_.config = child_protocol::config_from_json(cmd.at("config"));
    peer_ = make_local_peer(spec_, recorder_, [this](core_event&& e) {
      send(json{{"event", child_protocol::to_json(e)}});
    });
    auto r = peer_->start(cmd.at("incarnation").get<std::uint32_t>());
    if (!r) return r.error();
    reply["descriptor"] = to_text(peer_->descriptor());
    if (auto at = peer_->control_endpoint()) reply["control"] = at.value().str();
    return std::nullopt;
  }

  recorder recorder_;
  transport_spec spec_;
  std::unique_ptr<peer> peer_;
  std::mutex out_mutex_;
};

}  // namespace

int run_child_process() {
  std::signal(SIGPIPE, SIG_IGN);  // a runner that went away must not kill us mid-write
  child_session session;
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      if (!session.handle(json::parse(line))) return 0;
    } catch (const std::exception& e) {
      session.send(json{{"reply", "?"},
                        {"ok", false},
                        {"code", static_cast<int>(status::invalid_argument)},
                        {"message", std::string("child: bad command: ") + e.what()}});
    }
  }
  return 0;  // stdin closed: the runner is gone or done
}

}  // namespace faultlane::sim
