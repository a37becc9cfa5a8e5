// faultlane-bench: measures the transfer core against a raw-TCP baseline in
// the same run and prints both with their ratio (docs/benchmarks.md).
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <thread>

#include "bench.hpp"

namespace faultlane::bench {

summary summarize(measurement& m) {
  summary s;
  if (m.seconds > 0) {
    s.bytes_per_s = static_cast<double>(m.bytes) / m.seconds;
    s.ops_per_s = static_cast<double>(m.ops) / m.seconds;
  }
  if (m.ops > 0 && m.allocations) {
    s.allocations_per_op = static_cast<double>(*m.allocations) / static_cast<double>(m.ops);
  }
  if (m.bytes > 0) s.cpu_s_per_gb = m.cpu_seconds / (static_cast<double>(m.bytes) / 1e9);
  auto& l = m.latency_us;
  if (l.empty()) return s;
  std::sort(l.begin(), l.end());
  double sum = 0;
  for (double v : l) sum += v;
  s.mean_us = sum / static_cast<double>(l.size());
  auto at = [&](double q) {
    auto i = static_cast<std::size_t>(q * static_cast<double>(l.size() - 1));
    return l[i];
  };
  s.p50_us = at(0.50);
  s.p99_us = at(0.99);
  s.p999_us = at(0.999);
  return s;
}

namespace {
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}
}  // namespace

double run_phases(const options& o, window& w, std::size_t drivers, measurement& m) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  const auto warmup = std::chrono::duration<double>(o.warmup_s);
  const auto warmup_max = std::chrono::duration<double>(warmup_wait_max_s);
  std::this_thread::sleep_for(warmup);
  while (w.warm_.load(std::memory_order_relaxed) < drivers) {
    if (clock::now() - started >= warmup_max) {
      ++m.cold_rounds;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const auto begin = clock::now();
  const auto cpu_begin = cpu_seconds();
  const auto allocations_begin = allocations();
  w.phase_.store(1);
  std::this_thread::sleep_for(std::chrono::duration<double>(o.duration_s));
  w.phase_.store(2);
  const auto allocations_end = allocations();
  if (m.allocations && allocations_begin && allocations_end) {
    *m.allocations += *allocations_end - *allocations_begin;
  } else {
    m.allocations.reset();
  }
  m.cpu_seconds += cpu_seconds() - cpu_begin;
  return std::chrono::duration<double>(clock::now() - begin).count();
}

void merge(measurement& into, measurement m) {
  into.seconds += m.seconds;
  into.bytes += m.bytes;
  into.ops += m.ops;
  into.failures += m.failures;
  for (const auto& [name, n] : m.failures_by_status) into.failures_by_status[name] += n;
  into.mismatches += m.mismatches;
  if (into.allocations && m.allocations) *into.allocations += *m.allocations;
  else into.allocations.reset();
  into.cpu_seconds += m.cpu_seconds;
  into.cold_rounds += m.cold_rounds;
  into.latency_us.insert(into.latency_us.end(), m.latency_us.begin(), m.latency_us.end());
}

namespace {

std::string rate(double bytes_per_s) {
  if (bytes_per_s >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_s / 1e9);
  return fmt::format("{:.1f} MB/s", bytes_per_s / 1e6);
}

// 512 KiB, 64 MiB: whole binary units where they fit.
std::string size_text(std::uint64_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return fmt::format("{} KiB", bytes >> 10);
  return fmt::format("{} B", bytes);
}

void print_row(const char* name, const summary& s) {
  std::printf("  %-10s %12s %12.0f %10.1f %10.1f %10.1f %10.1f\n", name,
              rate(s.bytes_per_s).c_str(), s.ops_per_s, s.mean_us, s.p50_us, s.p99_us, s.p999_us);
}

std::string per_op(const std::optional<double>& v) {
  return v ? fmt::format("{:.3f}", *v) : std::string("not counted");
}

std::string json_side(const summary& s) {
  return fmt::format(
      R"({{"bytes_per_s": {:.0f}, "ops_per_s": {:.1f}, )"
      R"("latency_us": {{"mean": {:.2f}, "p50": {:.2f}, "p99": {:.2f}, "p999": {:.2f}}}, )"
      R"("allocations_per_op": {}, "cpu_s_per_gb": {:.4f}}})",
      s.bytes_per_s, s.ops_per_s, s.mean_us, s.p50_us, s.p99_us, s.p999_us,
      s.allocations_per_op ? fmt::format("{:.4f}", *s.allocations_per_op) : std::string("null"),
      s.cpu_s_per_gb);
}

// "timeout 3, connection_failed 1", and the same as a JSON object.
std::string failure_text(const measurement& m) {
  std::vector<std::string> parts;
  for (const auto& [name, n] : m.failures_by_status) parts.push_back(fmt::format("{} {}", name, n));
  return fmt::format("{}", fmt::join(parts, ", "));
}
std::string failure_json(const measurement& m) {
  std::vector<std::string> parts;
  for (const auto& [name, n] : m.failures_by_status) {
    parts.push_back(fmt::format(R"("{}": {})", name, n));
  }
  return fmt::format("{{{}}}", fmt::join(parts, ", "));
}

}  // namespace

namespace {

// Says on stderr why a round of the faultlane side measured nothing, so a
// run whose figures are empty or thin explains itself.
void explain_round(const options& round, std::size_t i, const measurement& fl) {
  if (fl.cold_rounds > 0) {
    std::fprintf(stderr,
                 "faultlane-bench: round %zu/%zu: no operation completed in %.0f s of warm-up; "
                 "measured anyway\n",
                 i + 1, round.rounds, warmup_wait_max_s);
  }
  if (fl.ops == 0 && fl.failures == 0) {
    std::fprintf(stderr,
                 "faultlane-bench: round %zu/%zu: no operation completed in its %.2f s window "
                 "(%s in flight per thread): raise --duration or lower --batch\n",
                 i + 1, round.rounds, fl.seconds,
                 size_text(round.batch * round.block_bytes).c_str());
  }
}

}  // namespace

// Interleaved rounds: a shared machine drifts (frequency, neighbours), so
// each side gets alternating slices of the run instead of one long block.
// A run that has taken progress_after_s says how far it got on stderr after
// each round, so it never sits silent.
outcome measure(const options& o) {
  constexpr double progress_after_s = 10;
  const auto started = std::chrono::steady_clock::now();
  outcome r;
  r.baseline = !o.skip_baseline && o.mode == run_mode::loopback;
  r.with_stream = r.baseline && !o.via_relay && o.block_bytes >= stream_block_bytes_min;
  options round = o;
  round.duration_s = o.duration_s / static_cast<double>(o.rounds);
  // With --via-relay the reference is faultlane itself, direct.
  options direct = round;
  direct.via_relay = false;
  for (std::size_t i = 0; i < o.rounds; ++i) {
    auto fl = run_faultlane(round);
    explain_round(o, i, fl);
    if (r.baseline) {
      auto raw = o.via_relay ? run_faultlane(direct) : run_baseline(round);
      const auto fs = summarize(fl), bs = summarize(raw);
      // A round where either side completed nothing has no ratio.
      if (fl.ops > 0 && raw.ops > 0) {
        r.round_throughput_ratio.push_back(fs.bytes_per_s / bs.bytes_per_s);
        r.round_latency_ratio.push_back(fs.mean_us / bs.mean_us);
      }
      merge(r.raw, std::move(raw));
    }
    merge(r.fl, std::move(fl));
    if (r.with_stream) {
      merge(r.stream, run_stream(round, stream_buffers::step));
      merge(r.block_stream, run_stream(round, stream_buffers::block));
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (elapsed >= progress_after_s) {
      std::fprintf(stderr,
                   "faultlane-bench: round %zu/%zu after %.0f s: %llu ops, %llu failed so far\n",
                   i + 1, o.rounds, elapsed, static_cast<unsigned long long>(r.fl.ops),
                   static_cast<unsigned long long>(r.fl.failures));
    }
  }
  r.fs = summarize(r.fl);
  r.bs = summarize(r.raw);
  r.ss = summarize(r.stream);
  r.bss = summarize(r.block_stream);
  return r;
}

namespace {

// "median 0.953, 0.901 to 0.982": the rounds' spread.
std::string spread_text(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const double median = v.size() % 2 == 1 ? v[v.size() / 2]
                                          : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return fmt::format("median {:.3f}, {:.3f} to {:.3f}", median, v.front(), v.back());
}

void print(const options& o, const outcome& r) {
  std::printf("  %-10s %12s %12s %10s %10s %10s %10s\n", "", "throughput", "ops/s", "mean us",
              "p50 us", "p99 us", "p999 us");
  const char* subject = o.via_relay ? "via relay" : "faultlane";
  const char* reference = o.via_relay ? "direct" : baseline_name(o);
  print_row(subject, r.fs);
  if (r.baseline) {
    print_row(reference, r.bs);
    std::printf("  ratio      throughput %.3f x %s, mean latency %.3f x %s\n",
                r.fs.bytes_per_s / std::max(r.bs.bytes_per_s, 1e-9), reference,
                r.fs.mean_us / std::max(r.bs.mean_us, 1e-9), reference);
    if (r.round_throughput_ratio.size() > 1) {
      std::printf("  rounds     %zu: throughput ratio %s; mean latency ratio %s\n",
                  r.round_throughput_ratio.size(), spread_text(r.round_throughput_ratio).c_str(),
                  spread_text(r.round_latency_ratio).c_str());
    }
    if (r.with_stream) {
      std::printf("  tcp stream %12s  (one way, nothing to wait for, from and into %s buffers)\n",
                  rate(r.ss.bytes_per_s).c_str(),
                  size_text(stream_footprint(o, stream_buffers::step)).c_str());
      std::printf("  ratio      throughput %.3f x tcp stream (%s: %.3f x)\n",
                  r.fs.bytes_per_s / std::max(r.ss.bytes_per_s, 1e-9), reference,
                  r.bs.bytes_per_s / std::max(r.ss.bytes_per_s, 1e-9));
      std::printf(
          "  block strm %12s  (the same through %s buffers: the memory a transfer touches)\n",
          rate(r.bss.bytes_per_s).c_str(),
          size_text(stream_footprint(o, stream_buffers::block)).c_str());
      std::printf("  ratio      throughput %.3f x block stream (%s: %.3f x)\n",
                  r.fs.bytes_per_s / std::max(r.bss.bytes_per_s, 1e-9), reference,
                  r.bs.bytes_per_s / std::max(r.bss.bytes_per_s, 1e-9));
    }
    if (o.via_relay) {
      std::printf("  added      p50 %+.1f us, p99 %+.1f us by the relay\n",
                  r.fs.p50_us - r.bs.p50_us, r.fs.p99_us - r.bs.p99_us);
    }
  }
  std::printf("  cost       %s: %s allocations/op, %.2f CPU s/GB", subject,
              per_op(r.fs.allocations_per_op).c_str(), r.fs.cpu_s_per_gb);
  if (r.baseline) {
    std::printf("; %s: %s allocations/op, %.2f CPU s/GB", reference,
                per_op(r.bs.allocations_per_op).c_str(), r.bs.cpu_s_per_gb);
  }
  std::printf("\n");
  std::printf("  ops %llu, failed %llu", static_cast<unsigned long long>(r.fl.ops),
              static_cast<unsigned long long>(r.fl.failures));
  if (r.fl.failures > 0) std::printf(" (%s)", failure_text(r.fl).c_str());
  if (o.verify) {
    std::printf(", mismatches %llu", static_cast<unsigned long long>(r.fl.mismatches));
    if (r.baseline) {
      std::printf(" (baseline, verified too: %llu)",
                  static_cast<unsigned long long>(r.raw.mismatches));
    }
  }
  std::printf("\n");
}

}  // namespace

std::string json_record(const options& o, const outcome& r) {
  auto ratio = [&](double a, double b) {
    return r.baseline && b > 0 ? fmt::format("{:.4f}", a / b) : std::string("null");
  };
  return fmt::format(
      R"({{"config": {{"op": "{}", "block_size": {}, "batch": {}, "threads": {}, )"
      R"("workers": {}, "lanes": {}, "lane_inflight": {}, "rails": {}, "duration_s": {}, )"
      R"("rounds": {}, )"
      R"("verify": {}, "via_relay": {}, "busy_poll_us": {}, "relay_busy_poll_us": {}, )"
      R"("raw_wait": "{}"}}, )"
      R"("faultlane": {}, "baseline": {}, )"
      R"("ratio_bytes_per_s": {}, "ratio_mean_latency": {}, "ratio_p99_latency": {}, )"
      R"("ratio_ops_per_s": {}, "ratio_cpu_s_per_gb": {}, "stream_bytes_per_s": {}, )"
      R"("ratio_stream_bytes_per_s": {}, "block_stream_bytes_per_s": {}, )"
      R"("ratio_block_stream_bytes_per_s": {}, "round_ratios_bytes_per_s": [{:.4f}], )"
      R"("round_ratios_mean_latency": [{:.4f}], "ops": {}, )"
      R"("failures": {}, "failures_by_status": {}, "mismatches": {}, "baseline_mismatches": {}}})",
      to_string(o.op), o.block_bytes, o.batch, o.threads, o.workers, o.lanes, o.lane_inflight,
      o.rails, o.duration_s, o.rounds, o.verify ? "true" : "false", o.via_relay ? "true" : "false",
      o.busy_poll_us, o.relay_busy_poll_us, to_string(o.baseline_wait), json_side(r.fs),
      r.baseline ? json_side(r.bs) : "null", ratio(r.fs.bytes_per_s, r.bs.bytes_per_s),
      ratio(r.fs.mean_us, r.bs.mean_us), ratio(r.fs.p99_us, r.bs.p99_us),
      ratio(r.fs.ops_per_s, r.bs.ops_per_s), ratio(r.fs.cpu_s_per_gb, r.bs.cpu_s_per_gb),
      r.with_stream ? fmt::format("{:.0f}", r.ss.bytes_per_s) : std::string("null"),
      r.with_stream ? fmt::format("{:.4f}", r.fs.bytes_per_s / std::max(r.ss.bytes_per_s, 1e-9))
                    : std::string("null"),
      r.with_stream ? fmt::format("{:.0f}", r.bss.bytes_per_s) : std::string("null"),
      r.with_stream ? fmt::format("{:.4f}", r.fs.bytes_per_s / std::max(r.bss.bytes_per_s, 1e-9))
                    : std::string("null"),
      fmt::join(r.round_throughput_ratio, ", "), fmt::join(r.round_latency_ratio, ", "),
      r.fl.ops, r.fl.failures, failure_json(r.fl), r.fl.mismatches,
      r.baseline && o.verify ? std::to_string(r.raw.mismatches) : std::string("null"));
}

namespace {

bool write_json(const options& o, const outcome& r) {
  std::ofstream out(o.json_path);
  out << json_record(o, r) << "\n";
  if (!out) std::fprintf(stderr, "faultlane-bench: cannot write %s\n", o.json_path.c_str());
  return static_cast<bool>(out);
}

}  // namespace
}  // namespace faultlane::bench

int main(int argc, char** argv) {
  using namespace faultlane::bench;
  signal(SIGPIPE, SIG_IGN);  // a peer or relay that hangs up is an error, not an exit
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a line at a time, piped or not
  auto parsed = parse_options(argc, argv);
  if (!parsed) return 2;
  const options& o = *parsed;
  if (o.mode == run_mode::target) return run_target(o);
  if (o.rpc) return run_rpc_points(o);
  if (o.rpc_keys > 0) return run_rpc_saturate(o);
  if (o.sweep) return run_sweep(o);

  std::printf("faultlane-bench: %s%s\n", describe(o).c_str(), o.verify ? " verify" : "");
  auto r = measure(o);
  print(o, r);
  if (!o.json_path.empty() && !write_json(o, r)) return 1;
  if (r.fl.ops == 0) {
    std::fprintf(stderr,
                 "faultlane-bench: measured 0 operations (%llu failed): nothing to report\n",
                 static_cast<unsigned long long>(r.fl.failures));
    return 1;
  }
  bool clean = r.fl.failures == 0 && r.fl.mismatches == 0 && r.raw.mismatches == 0;
  return clean ? 0 : 1;
}
