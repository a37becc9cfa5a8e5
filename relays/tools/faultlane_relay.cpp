// faultlane-relay: a fault-injecting TCP relay from the command line, with
// Toxiproxy's HTTP API for changing it while it runs.
//
//   faultlane-relay --listen 127.0.0.1:0 --upstream 127.0.0.1:9000
//     --fault "latency dir=down ms=5 jitter_ms=1" --tap out.jsonl --seed 7
//   faultlane-relay --config relays.yaml [--api 127.0.0.1:8474]
//   faultlane-relay --api 127.0.0.1:8474      (proxies created over HTTP)
//
// Prints each relay's bound address (and the API's), runs until SIGINT or
// SIGTERM, then prints every fault counter; SIGUSR1 prints them and goes
// on, SIGHUP is ignored with a message. SIGPIPE is ignored: a client that
// hangs up early never stops the relay. Bad flags or YAML: one line and
// exit 2.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "faultlane/relays/api.hpp"
#include "faultlane/relays/config.hpp"
#include "faultlane/relays/limits.hpp"
#include "faultlane/relays/relay.hpp"

namespace relays = faultlane::relays;

namespace {

constexpr int exit_bad_input = 2;

struct flags {
  std::string listen = "127.0.0.1:0";
  std::string upstream;
  std::string upstream_source;
  std::vector<std::string> faults;
  std::string protocol = "faultlane";
  std::string tap;
  std::uint64_t seed = 0;
  std::size_t rail = 0;
  std::string name = "relay";
  std::string on_upstream_failure = "reset";
  bool allow_non_loopback = false;
  std::uint32_t busy_poll_us = 0;
  std::string config;
  std::string api;
};

int bad_input(const std::string& what) {
  std::fprintf(stderr, "faultlane-relay: %s\n", what.c_str());
  return exit_bad_input;
}

// A CLI11 check: HOST:PORT as the relays read it.
std::string address_problem(const std::string& text) {
  auto a = relays::parse_relay_address(text);
  return a.ok() ? std::string() : a.error().message;
}

// The relay the flags describe; the problem, if one is wrong.
faultlane::result<relays::relay_config> relay_from(const flags& f) {
  relays::relay_config c;
  c.name = f.name;
  c.listen = relays::parse_relay_address(f.listen).value();  // checked by CLI11
  c.upstream = relays::parse_relay_address(f.upstream).value();
  if (!f.upstream_source.empty()) c.upstream_source = f.upstream_source;
  for (const auto& text : f.faults) {
    auto spec = relays::parse_fault(text);
    if (!spec.ok()) return spec.error();
    c.faults.push_back(spec.value());
  }
  c.proto = f.protocol == "raw" ? relays::protocol::raw : relays::protocol::faultlane;
  c.on_upstream_failure =
      f.on_upstream_failure == "fin" ? relays::close_mode::fin : relays::close_mode::reset;
  c.tap = !f.tap.empty();
  c.tap_path = f.tap;
  c.seed = f.seed;
  c.rail = f.rail;
  c.allow_non_loopback = f.allow_non_loopback;
  c.busy_poll_us = f.busy_poll_us;
  return c;
}

// A CLI11 check for a 64-bit count: digits only and no overflow (CLI11's
// conversion would wrap "-1" and saturate what is too large).
std::string whole_number(const std::string& text) {
  constexpr std::string_view max = "18446744073709551615";
  bool digits = !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
  auto significant =
      std::string_view(text).substr(std::min(text.find_first_not_of('0'), text.size()));
  bool fits =
      significant.size() < max.size() || (significant.size() == max.size() && significant <= max);
  if (digits && fits) return {};
  return fmt::format("'{}' is not a whole number from 0 to {}", text, max);
}

void define(CLI::App& app, flags& f) {
  app.set_version_flag("--version", std::string("faultlane-relay ") + FAULTLANE_VERSION);
  app.add_option("--listen", f.listen, "where to listen (default 127.0.0.1:0)")
      ->check(address_problem);
  app.add_option("--upstream", f.upstream, "where to forward (HOST:PORT)")->check(address_problem);
  app.add_option("--upstream-source", f.upstream_source,
                 "bind the upstream side to ADDR (keeps rails apart)");
  app.add_option("--fault", f.faults, "\"TYPE dir=up|down key=value ...\", repeatable, in order");
  app.add_option("--protocol", f.protocol, "decode faultlane frames, or relay any TCP")
      ->check(CLI::IsMember({"faultlane", "raw"}));
  app.add_option("--tap", f.tap, "record connections, frames and faults as JSONL");
  app.add_option("--seed", f.seed, "drives every probabilistic fault (default 0)")
      ->check(whole_number);  // "-1" would otherwise wrap to 2^64 - 1
  app.add_option("--rail", f.rail, "rail index reported in taps (default 0)")
      ->check(CLI::Range(0, 1023));
  app.add_option("--name", f.name, "relay name in taps and output (default relay)");
  app.add_option("--on-upstream-failure", f.on_upstream_failure,
                 "how a client is closed when the upstream cannot be reached (default reset)")
      ->check(CLI::IsMember({"reset", "fin"}));
  app.add_flag("--allow-non-loopback", f.allow_non_loopback, "permit non-loopback addresses");
  app.add_option("--busy-poll-us", f.busy_poll_us,
                 "after traffic, poll N us before sleeping: less added latency, a busy core "
                 "(default 0)")
      ->check(CLI::Range(std::uint32_t{0}, relays::busy_poll_us_max));
  auto* config = app.add_option("--config", f.config, "relays from a YAML file (docs/faults.md)");
  for (const char* name :
       {"--listen", "--upstream", "--upstream-source", "--fault", "--protocol", "--tap", "--seed",
        "--rail", "--name", "--on-upstream-failure", "--busy-poll-us"}) {
    config->excludes(app.get_option(name));
  }
  app.add_option("--api", f.api,
                 "serve Toxiproxy's HTTP API and /metrics on HOST:PORT (docs/relay-api.md)")
      ->check(address_problem);
  app.footer(
      "Signals: SIGINT/SIGTERM stop and print the counters; SIGUSR1 prints them.\n"
      "Faults and their keys: docs/faults.md. The HTTP API: docs/relay-api.md.");
}

// Waits for signals: SIGUSR1 prints the counters, SIGHUP is ignored with a
// message, SIGINT or SIGTERM stops every relay and prints them.
void serve(const sigset_t& signals, relays::api_server& server) {
  while (true) {
    int received = 0;
    if (sigwait(&signals, &received) != 0) continue;
    if (received == SIGUSR1) {
      std::fputs(server.report().c_str(), stdout);
      std::fflush(stdout);
      continue;
    }
    if (received == SIGHUP) {
      std::fprintf(stderr,
                   "faultlane-relay: SIGHUP ignored (no reload; change it through --api, or "
                   "restart)\n");
      continue;
    }
    break;
  }
  server.stop();
  std::fputs(server.report().c_str(), stdout);
  std::fflush(stdout);
}

int start_all(const flags& f, relays::api_server& server) {
  std::vector<relays::relay_config> configs;
  if (!f.config.empty()) {
    auto loaded = relays::load_relays_file(f.config);
    if (!loaded.ok()) return bad_input(loaded.error().message);
    configs = std::move(loaded).value();
  } else if (!f.upstream.empty()) {
    auto c = relay_from(f);
    if (!c.ok()) return bad_input(c.error().message);
    configs.push_back(c.value());
  }
  for (const auto& rc : configs) {
    auto bound = server.add_relay(rc);
    if (!bound.ok()) {
      std::fprintf(stderr, "faultlane-relay: %s: %s\n", rc.name.c_str(),
                   bound.error().message.c_str());
      return bound.code() == faultlane::status::invalid_argument ? exit_bad_input : 1;
    }
    std::printf("relay %s listening on %s -> %s (%zu fault%s)\n", rc.name.c_str(),
                bound.value().str().c_str(), rc.upstream.str().c_str(), rc.faults.size(),
                rc.faults.size() == 1 ? "" : "s");
    for (const auto& fault : rc.faults) {
      std::printf("  %s: %s\n", fault.name.c_str(), relays::describe(fault).c_str());
    }
  }
  if (auto at = server.endpoint()) std::printf("api listening on http://%s\n", at->str().c_str());
  std::fflush(stdout);
  return 0;
}

int run(int argc, char** argv) {
  CLI::App app{"faultlane-relay: a fault-injecting TCP relay (docs/faults.md)"};
  flags f;
  define(app, f);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ExtrasError&) {
    return bad_input(
        fmt::format("unknown flag or argument: {} (see --help)", fmt::join(app.remaining(), " ")));
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    return bad_input(fmt::format("{} (see --help)", e.what()));
  }
  if (f.config.empty() && f.upstream.empty() && f.api.empty()) {
    return bad_input("--upstream is required (or --config, or --api to create relays over HTTP)");
  }
  relays::api_config ac;
  if (!f.api.empty()) ac.http = relays::parse_relay_address(f.api).value();
  ac.allow_non_loopback = f.allow_non_loopback;
  ac.proxy_defaults.seed = f.seed;
  // Proxies created over HTTP close a client whose upstream is down with a
  // FIN, as Toxiproxy does, unless the flag says otherwise.
  ac.proxy_defaults.on_upstream_failure =
      app.count("--on-upstream-failure") > 0 && f.on_upstream_failure == "reset"
          ? relays::close_mode::reset
          : relays::close_mode::fin;
  ac.proxy_defaults.allow_non_loopback = f.allow_non_loopback;
  ac.proxy_defaults.busy_poll_us = f.busy_poll_us;

  sigset_t signals;
  sigemptyset(&signals);
  for (int s : {SIGINT, SIGTERM, SIGUSR1, SIGHUP}) sigaddset(&signals, s);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  signal(SIGPIPE, SIG_IGN);

  auto server = relays::api_server::start(ac);
  if (!server.ok()) {
    std::fprintf(stderr, "faultlane-relay: %s\n", server.error().message.c_str());
    return server.code() == faultlane::status::invalid_argument ? exit_bad_input : 1;
  }
  if (int status = start_all(f, *server.value()); status != 0) return status;
  serve(signals, *server.value());
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
