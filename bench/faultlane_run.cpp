// The faultlane side of the benchmark: a target and an initiator transport
// in this process on loopback (or an initiator against a target process),
// `threads` submitters each keeping one batch in flight.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <random>
#include <thread>

#include "bench.hpp"
#include "faultlane/core/pattern.hpp"
#include "faultlane/core/transport.hpp"
#include "faultlane/relays/api.hpp"
#include "faultlane/relays/relay.hpp"

namespace faultlane::bench {
namespace {

using clock_type = std::chrono::steady_clock;

transport_config config_for(const options& o, std::size_t lanes) {
  lanes = std::max<std::size_t>(lanes, 1);
  transport_config c;
  c.bind_address = "127.0.0.1";
  c.worker_count = o.workers;
  c.busy_poll_us = o.busy_poll_us;
  if (o.progress_timeout_ms > 0) c.progress_timeout_ms = o.progress_timeout_ms;
  // Rails pair by index on both ends; each rail's lanes bind its address.
  for (std::size_t i = 1; i <= o.rails && o.mode == run_mode::loopback; ++i) {
    c.rail_addresses.push_back("127.0.0." + std::to_string(i));
  }
  if (c.rail_addresses.size() > 1) c.bind_address.clear();  // one listener per rail
  c.connections_per_peer = std::max(lanes, c.rail_addresses.size());
  c.lane_inflight_max = o.lane_inflight;
  c.max_outstanding_tasks = std::max<std::uint64_t>(4096, o.batch * o.threads);
  c.max_outstanding_bytes = std::max<std::uint64_t>(1ull << 32, region_bytes(o));
  c.max_transfer_bytes = std::max<std::uint64_t>(o.block_bytes, 1ull << 20);
  return c;
}

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "faultlane-bench: %s\n", what.c_str());
  std::exit(1);
}

bool is_write(const options& o, std::uint64_t n) {
  return o.op == operation::write || (o.op == operation::mix && n % 2 == 1);
}

struct submitter_state {
  measurement m;
  block_vector<std::byte> local;
  block_vector<std::byte> scratch;
};

// Reads the slots just written back into `scratch` and compares.
std::uint64_t verify_written(transport& t, segment_id seg, registration_id id, const options& o,
                             std::size_t thread, submitter_state& s,
                             const std::vector<bool>& wrote) {
  std::vector<transfer_request> back;
  for (std::size_t k = 0; k < o.batch; ++k) {
    if (!wrote[k]) continue;
    back.push_back({wire::opcode::read, s.scratch.data() + k * o.block_bytes, o.block_bytes, seg,
                    id, slot_offset(o, thread, k)});
  }
  if (back.empty()) return 0;
  auto batch = t.submit(back);
  if (!batch.ok() || !batch.value()->wait(std::chrono::minutes(2))) return back.size();
  std::uint64_t bad = 0;
  for (std::size_t k = 0; k < o.batch; ++k) {
    if (!wrote[k]) continue;
    bad += std::memcmp(s.scratch.data() + k * o.block_bytes, s.local.data() + k * o.block_bytes,
                       o.block_bytes) != 0;
  }
  for (std::size_t i = 0; i < back.size(); ++i) bad += batch.value()->status(i).code != status::ok;
  return bad;
}

void submit_loop(transport& t, segment_id seg, registration_id id, const options& o,
                 std::size_t thread, window& w, submitter_state& s) {
  std::vector<clock_type::time_point> done_at(o.batch);
  std::vector<char> in_window(o.batch);  // not vector<bool>: io threads set neighbours
  std::vector<transfer_request> requests(o.batch);
  std::vector<bool> wrote(o.batch);
  std::atomic<bool> seen_first{false};
  std::uint64_t n = 0;
  while (!w.stopping()) {
    for (std::size_t k = 0; k < o.batch; ++k) {
      wrote[k] = is_write(o, n + k);
      auto* local = s.local.data() + k * o.block_bytes;
      if (o.verify && wrote[k]) fill_pattern(local, o.block_bytes, (n + k) * 1315423911u + thread);
      requests[k] = {wrote[k] ? wire::opcode::write : wire::opcode::read,
                     local,
                     o.block_bytes,
                     seg,
                     id,
                     slot_offset(o, thread, k)};
    }
    auto start = clock_type::now();
    auto batch = t.submit(requests, [&](std::size_t i, status, std::uint64_t) {
      done_at[i] = clock_type::now();
      in_window[i] = w.measuring();
      // As it completes (failed or not), not after the batch and its
      // verification: the window may start while the rest of the batch runs.
      w.completed(seen_first);
    });
    if (!batch.ok()) die(fmt::format("submit: {}", batch.error().message));
    if (!batch.value()->wait(std::chrono::minutes(2))) die("a batch did not complete in 2 minutes");
    for (std::size_t k = 0; k < o.batch; ++k) {
      auto st = batch.value()->status(k);
      if (st.code != status::ok) {
        s.m.failed(st.code);
        continue;
      }
      if (o.verify && !wrote[k]) {
        fill_pattern(s.scratch.data(), o.block_bytes, slot_offset(o, thread, k) / o.block_bytes);
        s.m.mismatches +=
            std::memcmp(s.scratch.data(), s.local.data() + k * o.block_bytes, o.block_bytes) != 0;
      }
      if (in_window[k] != 0) {
        s.m.latency_us.push_back(
            std::chrono::duration<double, std::micro>(done_at[k] - start).count());
        s.m.bytes += o.block_bytes;
        ++s.m.ops;
      }
    }
    if (o.verify) {
      s.m.mismatches += verify_written(t, seg, id, o, thread, s, wrote);
      // Restore the read pattern in slots that were written.
      for (std::size_t k = 0; k < o.batch; ++k) {
        if (!wrote[k]) continue;
        fill_pattern(s.local.data() + k * o.block_bytes, o.block_bytes,
                     slot_offset(o, thread, k) / o.block_bytes);
        requests[k] = {
            wire::opcode::write,      s.local.data() + k * o.block_bytes, o.block_bytes, seg, id,
            slot_offset(o, thread, k)};
      }
      std::vector<transfer_request> restore;
      for (std::size_t k = 0; k < o.batch; ++k)
        if (wrote[k]) restore.push_back(requests[k]);
      if (!restore.empty()) {
        auto r = t.submit(restore);
        if (!r.ok() || !r.value()->wait(std::chrono::minutes(2)))
          die("restoring the pattern failed");
      }
    }
    n += o.batch;
  }
}

// The measuring loop: each submitter keeps one batch in flight, and the
// callback of a batch's last task submits the next batch from the io
// thread, as an event-driven application would. No thread wake-up sits on
// the critical path that the raw-TCP baseline does not also pay.
class closed_loop {
 public:
  closed_loop(transport& t, segment_id seg, registration_id id, const options& o,
              std::size_t thread, window& w, submitter_state& s)
      : t_(t), o_(o), w_(w), s_(s) {
    for (std::size_t k = 0; k < o.batch; ++k) {
      bool write = is_write(o, k);
      requests_.push_back({write ? wire::opcode::write : wire::opcode::read,
                           s.local.data() + k * o.block_bytes, o.block_bytes, seg, id,
                           slot_offset(o, thread, k)});
    }
  }

  void launch() {
    remaining_.store(o_.batch, std::memory_order_relaxed);
    start_ = clock_type::now();
    auto batch =
        t_.submit(requests_, [this](std::size_t, status code, std::uint64_t) { on_done(code); });
    if (!batch.ok()) {
      std::lock_guard lock(mutex_);
      s_.m.failed(batch.error().code);
      finished_.set_value();
    }
  }

  void wait() { finished_.get_future().wait(); }

 private:
  void on_done(status code) {
    auto now = clock_type::now();
    const bool in_window = w_.measuring();
    {
      std::lock_guard lock(mutex_);
      w_.completed(seen_first_);  // a failed op has completed too
      if (code != status::ok) {
        s_.m.failed(code);
      } else {
        if (in_window) {
          s_.m.latency_us.push_back(
              std::chrono::duration<double, std::micro>(now - start_).count());
          s_.m.bytes += o_.block_bytes;
          ++s_.m.ops;
        }
      }
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    if (!w_.stopping() && s_.m.failures == 0) return launch();
    finished_.set_value();
  }

  transport& t_;
  const options& o_;
  window& w_;
  submitter_state& s_;
  std::vector<transfer_request> requests_;
  std::atomic<std::size_t> remaining_{0};
  clock_type::time_point start_;
  std::mutex mutex_;
  bool seen_first_ = false;  // under mutex_
  std::promise<void> finished_;
};

// Fills every slot of the target region with its own pattern.
void fill_region(std::byte* region, const options& o) {
  for (std::uint64_t slot = 0; slot < region_bytes(o) / o.block_bytes; ++slot) {
    fill_pattern(region + slot * o.block_bytes, o.block_bytes, slot);
  }
}

measurement drive(transport& initiator, segment_id seg, registration_id id, const options& o) {
  window w;
  std::vector<submitter_state> states(o.threads);
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<closed_loop>> loops;
  for (std::size_t i = 0; i < o.threads; ++i) {
    states[i].local.resize(o.batch * o.block_bytes);
    // Room for the window's latencies up front, so the counted allocations
    // are the core's, not this log growing (at most 4 Mi entries, 32 MiB).
    states[i].m.latency_us.reserve(latency_log_entries(o, o.threads));
    if (o.verify) {
      // Verification checks every byte between batches: a thread per
      // submitter, so its numbers include that work.
      states[i].scratch.resize(o.batch * o.block_bytes);
      threads.emplace_back(submit_loop, std::ref(initiator), seg, id, std::cref(o), i,
                           std::ref(w), std::ref(states[i]));
    } else {
      loops.push_back(std::make_unique<closed_loop>(initiator, seg, id, o, i, w, states[i]));
      loops.back()->launch();
    }
  }
  measurement total;
  const double seconds = run_phases(o, w, o.threads, total);
  for (auto& t : threads) t.join();
  for (auto& l : loops) l->wait();
  for (auto& s : states) merge(total, std::move(s.m));
  total.seconds = seconds;
  return total;
}

}  // namespace

measurement run_faultlane(const options& o) {
  std::unique_ptr<transport> target;
  block_vector<std::byte> region;
  segment_descriptor descriptor;
  registration_id id = o.peer_registration;
  if (o.mode == run_mode::loopback) {
    auto started = transport::start(config_for(o, 1));
    if (!started.ok()) die(started.error().message);
    target = std::move(started).value();
    region.resize(region_bytes(o));
    fill_region(region.data(), o);
    auto reg = target->register_buffer(region.data(), region.size(), permission::remote_read_write);
    if (!reg.ok()) die(reg.error().message);
    id = reg.value();
    descriptor = target->descriptor();
  } else {
    auto colon = o.peer.rfind(':');
    if (colon == std::string::npos) die("--peer must be HOST:PORT");
    descriptor.incarnation = o.peer_incarnation;
    descriptor.endpoints.push_back(
        {o.peer.substr(0, colon), static_cast<std::uint16_t>(std::stoi(o.peer.substr(colon + 1)))});
    descriptor.max_transfer_bytes = std::max<std::uint64_t>(o.block_bytes, 1ull << 20);
  }
  // --via-relay: one pass-through relay per rail, each listening on and
  // leaving from its rail's address, with no fault and no tap, and the
  // relays' HTTP API serving as it does in `faultlane-relay --api`.
  std::unique_ptr<relays::api_server> in_between;
  if (o.via_relay) {
    relays::api_config ac;
    ac.http = relays::address{"127.0.0.1", 0};
    auto api = relays::api_server::start(ac);
    if (!api.ok()) die("relay api: " + api.error().message);
    in_between = std::move(api).value();
    for (auto& e : descriptor.endpoints) {
      relays::relay_config rc;
      rc.name = fmt::format("rail{}", &e - descriptor.endpoints.data());
      rc.listen = {e.address, 0};
      rc.upstream = {e.address, e.port};
      rc.upstream_source = e.address;
      rc.busy_poll_us = o.relay_busy_poll_us;
      auto bound = in_between->add_relay(rc);
      if (!bound.ok()) die("relay: " + bound.error().message);
      e.port = bound.value().port;
    }
  }
  auto started = transport::start(config_for(o, o.lanes));
  if (!started.ok()) die(started.error().message);
  auto initiator = std::move(started).value();
  auto seg = initiator->open_segment(descriptor);
  if (!seg.ok()) die(seg.error().message);
  auto m = drive(*initiator, seg.value(), id, o);
  auto down = initiator->shutdown();
  if (!down.ok()) die("initiator shutdown: " + down.error().message);
  if (target) {
    auto target_down = target->shutdown();
    if (!target_down.ok()) die("target shutdown: " + target_down.error().message);
  }
  return m;
}

int run_target(const options& o) {
  auto c = config_for(o, 1);
  auto colon = o.listen.rfind(':');
  if (colon == std::string::npos) die("--listen must be HOST:PORT");
  c.bind_address = o.listen.substr(0, colon);
  c.port = static_cast<std::uint16_t>(std::stoi(o.listen.substr(colon + 1)));
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // before any thread starts
  auto started = transport::start(c);
  if (!started.ok()) die(started.error().message);
  auto target = std::move(started).value();
  block_vector<std::byte> region(region_bytes(o));
  fill_region(region.data(), o);
  auto id = target->register_buffer(region.data(), region.size(), permission::remote_read_write);
  if (!id.ok()) die(id.error().message);
  auto d = target->descriptor();
  std::printf(
      "faultlane-bench target ready; run the initiator with the same --block-size, --batch "
      "and --threads and:\n  --mode initiator --peer %s:%u --registration %llu "
      "--incarnation %llu\n",
      d.endpoints[0].address.c_str(), d.endpoints[0].port,
      static_cast<unsigned long long>(id.value()), static_cast<unsigned long long>(d.incarnation));
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  auto down = target->shutdown();
  std::printf("target stopped (%s)\n", down.ok() ? "clean" : down.error().message.c_str());
  return down.ok() ? 0 : 1;
}

}  // namespace faultlane::bench
