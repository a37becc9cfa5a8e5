// faultlane-relay: a fault-injecting TCP relay from the command line.
//
//   faultlane-relay --listen 127.0.0.1:0 --upstream 127.0.0.1:9000
//     --fault "latency dir=down ms=5 jitter_ms=1" --tap out.jsonl --seed 7
//   faultlane-relay --config relays.yaml
//
// Prints each relay's bound address, runs until SIGINT or SIGTERM, then
// prints every fault counter; SIGUSR1 prints them and goes on, SIGHUP is
// ignored with a message. SIGPIPE is ignored: a client that hangs up early
// never stops the relay. Bad flags or YAML: a message and exit 2.
#include <fmt/format.h>
#include <signal.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/relays/config.hpp"
#include "faultlane/relays/relay.hpp"

namespace relays = faultlane::relays;

namespace {

const char* usage = R"(usage: faultlane-relay --upstream HOST:PORT [options]
       faultlane-relay --config relays.yaml
  --listen HOST:PORT       where to listen (default 127.0.0.1:0)
  --upstream HOST:PORT     where to forward
  --upstream-source ADDR   bind the upstream side to ADDR (keeps rails apart)
  --fault "TYPE dir=up|down key=value ..."   repeatable, applied in order
  --protocol faultlane|raw decode faultlane frames (default) or relay any TCP
  --tap PATH               record connections, frames and faults as JSONL
  --seed N                 drives every probabilistic fault (default 0)
  --rail N                 rail index reported in taps (default 0)
  --name NAME              relay name in taps and output
  --on-upstream-failure reset|fin
                           how a client is closed when the upstream cannot
                           be reached (default reset)
  --allow-non-loopback     permit non-loopback addresses
Signals: SIGINT/SIGTERM stop and print the counters; SIGUSR1 prints them.
Faults and their keys: docs/faults.md.
)";

int usage_error(const std::string& what) {
  std::fprintf(stderr, "faultlane-relay: %s\n%s", what.c_str(), usage);
  return 2;
}

struct options {
  relays::relay_config single;  // the relay the flags describe
  std::string config_path;
  bool have_upstream = false;
};

// Applies one `--flag value`: the problem, or an empty string.
std::string apply_flag(options& o, std::string_view flag, const std::string& value) {
  auto& c = o.single;
  if (flag == "--listen" || flag == "--upstream") {
    auto a = faultlane::parse_endpoint(value);
    if (!a.ok()) return fmt::format("{}: {}", flag, a.error().message);
    (flag == "--listen" ? c.listen : c.upstream) = a.value();
    o.have_upstream |= flag == "--upstream";
  } else if (flag == "--upstream-source") {
    c.upstream_source = value;
  } else if (flag == "--fault") {
    auto f = relays::parse_fault(value);
    if (!f.ok()) return f.error().message;
    c.faults.push_back(f.value());
  } else if (flag == "--protocol") {
    if (value == "faultlane") c.proto = relays::protocol::faultlane;
    else if (value == "raw") c.proto = relays::protocol::raw;
    else return "--protocol must be faultlane or raw";
  } else if (flag == "--on-upstream-failure") {
    if (value == "reset") c.on_upstream_failure = relays::close_mode::reset;
    else if (value == "fin") c.on_upstream_failure = relays::close_mode::fin;
    else return "--on-upstream-failure must be reset or fin";
  } else if (flag == "--tap") {
    c.tap = true;
    c.tap_path = value;
  } else if (flag == "--seed" || flag == "--rail") {
    char* end = nullptr;
    auto n = std::strtoull(value.c_str(), &end, 10);
    if (end == value.c_str() || *end != '\0') return fmt::format("bad {} {}", flag, value);
    if (flag == "--seed") c.seed = n;
    else c.rail = n;
  } else if (flag == "--name") {
    c.name = value;
  } else if (flag == "--config") {
    o.config_path = value;
  } else {
    return fmt::format("unknown flag {}", flag);
  }
  return {};
}

// Starts each relay and prints where it listens and its faults; an exit
// status if one would not start.
int start_all(const std::vector<relays::relay_config>& configs,
              std::vector<std::unique_ptr<relays::relay>>& running) {
  for (const auto& rc : configs) {
    auto r = relays::relay::start(rc);
    if (!r.ok()) {
      std::fprintf(stderr, "faultlane-relay: %s: %s\n", rc.name.c_str(), r.error().message.c_str());
      return r.code() == faultlane::status::invalid_argument ? 2 : 1;
    }
    std::printf("relay %s listening on %s -> %s (%zu fault%s)\n", rc.name.c_str(),
                r.value()->listen_endpoint().str().c_str(), rc.upstream.str().c_str(),
                rc.faults.size(), rc.faults.size() == 1 ? "" : "s");
    for (const auto& f : rc.faults) {
      std::printf("  %s: %s\n", f.name.c_str(), relays::describe(f).c_str());
    }
    running.push_back(std::move(r).value());
  }
  std::fflush(stdout);
  return 0;
}

void report(const relays::relay& r) {
  std::printf("relay %s counters:\n", r.config().name.c_str());
  for (const auto& [name, count] : r.counters()) {
    std::printf("  %-28s %llu\n", name.c_str(), static_cast<unsigned long long>(count));
  }
  std::fflush(stdout);
}

// Waits for signals: SIGUSR1 prints the counters, SIGHUP is ignored with a
// message, SIGINT or SIGTERM stops every relay and prints them.
void serve(const sigset_t& signals, std::vector<std::unique_ptr<relays::relay>>& running) {
  while (true) {
    int received = 0;
    if (sigwait(&signals, &received) != 0) continue;
    if (received == SIGUSR1) {
      for (const auto& r : running) report(*r);
      continue;
    }
    if (received == SIGHUP) {
      std::fprintf(stderr,
                   "faultlane-relay: SIGHUP ignored (no reload; restart to change the "
                   "configuration)\n");
      continue;
    }
    break;
  }
  for (auto& r : running) {
    r->stop();
    report(*r);
  }
}

int run(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    if (flag == "--allow-non-loopback") {
      o.single.allow_non_loopback = true;
      continue;
    }
    if (i + 1 >= argc) return usage_error(fmt::format("{} needs a value", flag));
    if (auto problem = apply_flag(o, flag, argv[++i]); !problem.empty()) {
      return usage_error(problem);
    }
  }
  std::vector<relays::relay_config> configs;
  if (!o.config_path.empty()) {
    auto loaded = relays::load_relays_file(o.config_path);
    if (!loaded.ok()) return usage_error(loaded.error().message);
    configs = std::move(loaded).value();
  } else {
    if (!o.have_upstream) return usage_error("--upstream is required (or --config)");
    configs.push_back(o.single);
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGUSR1);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  signal(SIGPIPE, SIG_IGN);

  std::vector<std::unique_ptr<relays::relay>> running;
  if (int status = start_all(configs, running); status != 0) return status;
  serve(signals, running);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a YAML or formatting failure we did not foresee
    std::fprintf(stderr, "faultlane-relay: %s\n", e.what());
    return 1;
  }
}
