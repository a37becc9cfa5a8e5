// faultlane-bench --rpc: the control plane's cost and its point.
//
// Point RPCs: a pooled method's latency and calls/s against the same
// method run inline, and against the inline `ping`, in interleaved rounds
// of one run: the pool's price is the hop to a worker and back.
//
// --rpc-saturate N: a transport with N registrations; 4 clients scan them
// with list_registrations (a pattern that matches nothing), 2 call
// describe, and 1 pings every 20 ms on a connection that shares an io
// thread with scanners. Ping p50/p99/max, pooled and then inline.
#include <fmt/format.h>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "faultlane/control/control_plane.hpp"
#include "faultlane/control/rpc_client.hpp"
#include "faultlane/control/rpc_server.hpp"
#include "faultlane/core/transport.hpp"

namespace faultlane::bench {
namespace {

using clock_type = std::chrono::steady_clock;

double micros(clock_type::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// `threads` clients call `method` back to back for the window.
measurement call_loop(const endpoint& at, const options& o, const char* method) {
  std::vector<std::unique_ptr<rpc::client>> clients;
  for (std::size_t t = 0; t < o.threads; ++t) {
    rpc::client_options co;
    co.server = at;
    clients.push_back(rpc::client::create(co).value());
    (void)clients.back()->call(method, {});  // connected before the clock starts
  }
  window w;
  std::vector<measurement> per(o.threads);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      bool seen_first = false;
      while (!w.stopping()) {
        const auto start = clock_type::now();
        auto r = clients[t]->call(method, {});
        w.completed(seen_first);
        if (!w.measuring()) continue;
        per[t].latency_us.push_back(micros(clock_type::now() - start));
        ++per[t].ops;
        if (!r) ++per[t].failures;
      }
    });
  }
  measurement all;
  const double seconds = run_phases(o, w, o.threads, all);
  for (auto& th : threads) th.join();
  for (auto& m : per) merge(all, std::move(m));
  all.seconds = seconds;
  return all;
}

struct point_server {
  std::unique_ptr<io_pool> pool;
  std::unique_ptr<rpc::server> srv;
};

point_server serve_points(const options& o, bool pooled) {
  point_server s;
  s.pool = io_pool::create(o.workers).value();
  rpc::server_options so;
  so.workers = pooled ? o.workers : 0;
  s.srv = rpc::server::start(*s.pool, so).value();
  s.srv->add("ping", rpc::placement::inline_on_io,
             [](const rpc::call&) { return rpc::reply::ok(); });
  s.srv->add("point", rpc::placement::pooled, [](const rpc::call&) {
    return rpc::reply::ok(rpc::rpc_body_writer().u64(42).take());
  });
  return s;
}

void print(const char* name, measurement& m) {
  auto s = summarize(m);
  std::printf("  %-16s %12.0f %10.1f %10.1f %10.1f %8llu\n", name, s.ops_per_s, s.mean_us, s.p50_us,
              s.p99_us, static_cast<unsigned long long>(m.failures));
}

}  // namespace

int run_rpc_points(const options& o) {
  std::printf("faultlane-bench --rpc: %zu client thread(s), %zu io thread(s), %zu worker(s)\n",
              o.threads, o.workers, o.workers);
  options round = o;
  round.duration_s = o.duration_s / static_cast<double>(o.rounds);
  measurement pooled, inlined, ping;
  for (std::size_t r = 0; r < o.rounds; ++r) {
    {
      auto s = serve_points(o, true);
      merge(pooled, call_loop(s.srv->local_endpoint(), round, "point"));
      merge(ping, call_loop(s.srv->local_endpoint(), round, "ping"));
    }
    auto s = serve_points(o, false);
    merge(inlined, call_loop(s.srv->local_endpoint(), round, "point"));
  }
  std::printf("  %-16s %12s %10s %10s %10s %8s\n", "", "calls/s", "mean us", "p50 us", "p99 us",
              "failed");
  print("point, pooled", pooled);
  print("point, inline", inlined);
  print("ping (inline)", ping);
  const auto p = summarize(pooled);
  const auto i = summarize(inlined);
  std::printf("  hop            p50 %+.1f us, p99 %+.1f us; calls/s %.2f x inline\n",
              p.p50_us - i.p50_us, p.p99_us - i.p99_us,
              i.ops_per_s > 0 ? p.ops_per_s / i.ops_per_s : 0);
  return pooled.failures + inlined.failures + ping.failures == 0 ? 0 : 1;
}

namespace {

struct saturation {
  std::vector<double> ping_us;
  // A register_buffer and its unregister_buffer, right after each ping:
  // what the scans hold registration up by (a page's copying, at most).
  std::vector<double> register_us;
  std::uint64_t scans = 0;
  std::uint64_t describes = 0;
  std::uint64_t failures = 0;
};

// A register_buffer and its unregister_buffer, in microseconds; false in
// `ok` if either failed.
double time_register(transport& t, std::vector<std::byte>& spare, bool& ok) {
  const auto start = clock_type::now();
  auto added = t.register_buffer(spare.data(), spare.size(), permission::remote_read, "spare");
  ok = added.ok() && t.unregister_buffer(added.value()).ok();
  return micros(clock_type::now() - start);
}

// `keys` 64-byte registrations named key/00000000 on.
void register_keys(transport& t, std::vector<std::byte>& memory, std::uint64_t keys) {
  for (std::uint64_t k = 0; k < keys; ++k) {
    (void)t
        .register_buffer(memory.data() + k * 64, 64, permission::remote_read,
                         fmt::format("key/{:08}", k))
        .value();
  }
}

// One run against a transport with `keys` registrations.
saturation saturate(const options& o, std::uint64_t keys, bool pooled) {
  transport_config c;
  c.worker_count = 2;
  c.rpc_worker_count = o.rpc_workers;
  c.rpc_inline = !pooled;
  auto t = control::start_transport(c).value();
  std::vector<std::byte> memory(keys * 64);
  register_keys(*t, memory, keys);
  const auto at = control::endpoint_of(*t).value();
  rpc::client_options co;
  co.server = at;
  co.call_timeout_ms = 60'000;
  co.overall_timeout_ms = 120'000;
  // Connections in order: with 2 io threads they alternate, so the
  // pinger's (the 7th) shares its io thread with the 1st, 3rd and 5th: the
  // three of the four scanners. The 4th and 6th describe.
  std::vector<std::unique_ptr<rpc::client>> slow;
  for (int i = 0; i < 6; ++i) {
    slow.push_back(rpc::client::create(co).value());
    (void)slow.back()->ping();
  }
  auto pinger = rpc::client::create(co).value();
  (void)pinger->ping();
  std::vector<std::byte> spare(64);
  std::atomic<bool> stop{false};
  saturation out;
  std::atomic<std::uint64_t> scans{0}, describes{0}, failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      // The load runs in this process, on the same cores as the service it
      // loads: below the pinger, so the ping measures the service and not
      // the competition of the load's own threads (clients elsewhere, as in
      // a deployment, take none of these cores).
      (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
      const auto pattern = rpc::encode_pattern("^no such key$");
      while (!stop.load()) {
        // Answers are checked for status, not decoded: a 27 MB descriptor
        // decoded a few times a second would be load on the client side.
        const bool describer = i == 3 || i == 5;
        auto ok = describer ? slow[i]->call("describe", {}).ok()
                            : slow[i]->call("list_registrations", pattern).ok();
        (describer ? describes : scans) += 1;
        if (!ok) ++failures;
      }
    });
  }
  const auto until = clock_type::now() + std::chrono::duration<double>(o.duration_s);
  auto next = clock_type::now();
  while (clock_type::now() < until) {
    next += std::chrono::milliseconds(20);
    std::this_thread::sleep_until(next);  // sleep-ok: the pinger's 20 ms period
    const auto start = clock_type::now();
    if (!pinger->ping()) ++failures;
    out.ping_us.push_back(micros(clock_type::now() - start));
    bool registered = false;
    out.register_us.push_back(time_register(*t, spare, registered));
    if (!registered) ++failures;
  }
  stop = true;
  for (auto& th : threads) th.join();
  out.scans = scans;
  out.describes = describes;
  out.failures = failures;
  (void)t->shutdown();
  return out;
}

}  // namespace

int run_rpc_saturate(const options& o) {
  std::printf(
      "faultlane-bench --rpc-saturate %llu: 2 io threads; 4 scanning, 2 describing, 1 "
      "pinging every 20 ms; %.0f s each\n",
      static_cast<unsigned long long>(o.rpc_keys), o.duration_s);
  std::printf("  %-22s %10s %10s %10s %8s %10s %8s %12s\n", "", "ping p50", "p99 ms", "max ms",
              "pings", "scans", "failed", "register max");
  std::uint64_t failures = 0;
  double pool_p99_ms = 0, pool_max_ms = 0, inline_max_ms = 0, register_max_ms = 0;
  for (bool pooled : {true, false}) {
    auto s = saturate(o, o.rpc_keys, pooled);
    measurement m;
    m.latency_us = s.ping_us;
    double max_us = 0;
    for (double v : s.ping_us) max_us = std::max(max_us, v);
    auto sum = summarize(m);
    double register_ms = 0;
    for (double v : s.register_us) register_ms = std::max(register_ms, v / 1000);
    register_max_ms = std::max(register_max_ms, register_ms);
    std::printf("  %-22s %8.3fms %10.3f %10.3f %8zu %10llu %8llu %10.3fms\n",
                pooled ? fmt::format("pool ({} workers)", o.rpc_workers ? o.rpc_workers : 2).c_str()
                       : "inline (no pool)",
                sum.p50_us / 1000, sum.p99_us / 1000, max_us / 1000, s.ping_us.size(),
                static_cast<unsigned long long>(s.scans),
                static_cast<unsigned long long>(s.failures), register_ms);
    failures += s.failures;
    (pooled ? pool_max_ms : inline_max_ms) = max_us / 1000;
    if (pooled) pool_p99_ms = sum.p99_us / 1000;
  }
  std::printf(
      "  summary    ping with the pool: p99 %.2f ms, max %.2f ms; inline: max %.0f ms; "
      "register + unregister during scans: max %.2f ms\n",
      pool_p99_ms, pool_max_ms, inline_max_ms, register_max_ms);
  return failures == 0 ? 0 : 1;
}

}  // namespace faultlane::bench
