// The raw-TCP baseline: the same bytes, block size and connection count as
// the faultlane run, over plain blocking sockets with no framing beyond a
// 24-byte request, no registry and no event loop. Each connection has a
// client thread and a server thread; the client keeps `depth` requests in
// flight (the faultlane run's batch x threads, spread over its lanes).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "faultlane/core/pattern.hpp"

namespace faultlane::bench {
namespace {

using clock_type = std::chrono::steady_clock;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("baseline: ") + what + ": " + std::strerror(errno));
}

// Each call moves at most this much (FAULTLANE_BASELINE_STEP overrides), and
// a receive waits for its whole step (MSG_WAITALL). Of the plain blocking
// loops tried on the 2-core VM (steps 64 KiB..64 MiB, with and without
// MSG_WAITALL) this one was the fastest: the baseline must not be a strawman.
std::size_t step_bytes() {
  static const std::size_t step = [] {
    const char* env = std::getenv("FAULTLANE_BASELINE_STEP");
    const std::size_t chosen = env ? static_cast<std::size_t>(std::strtoull(env, nullptr, 10)) : 0;
    // Unset, 0, not a number or above 64 MiB (-1 reads as 2^64 - 1): the default.
    return chosen > 0 && chosen <= (std::size_t{64} << 20) ? chosen : std::size_t{512} << 10;
  }();
  return step;
}

bool send_all(int fd, const void* p, std::size_t n) {
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t k = ::send(fd, c, std::min(n, step_bytes()), MSG_NOSIGNAL);
    if (k <= 0) return false;
    c += k;
    n -= static_cast<std::size_t>(k);
  }
  return true;
}

// A receive of 1 MiB or more wakes its reader per 256 KiB, not per
// segment (SO_RCVLOWAT), as faultlane's receive watermark does: on a VM,
// where each wake-up is expensive, a baseline without it is a strawman.
constexpr std::size_t bulk_bytes_min = std::size_t{1} << 20;
constexpr int bulk_watermark = 256 << 10;

void set_watermark(int fd, int bytes) {
  ::setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &bytes, sizeof(bytes));
}

// A bulk receive waits for readability (poll honours the watermark) and
// then takes whatever is there without blocking, as faultlane's event loop
// does. A blocking recv would not do: one that copied part of its length
// and waits for the rest is woken only by a full watermark of new bytes,
// which may never come. The watermark never exceeds what is still to come.
// A smaller receive blocks in recv until all of it came, unless `wait` is
// ready: then it too waits in poll and takes what is there, the two calls
// an event loop makes where blocking code makes one.
bool recv_all(raw_wait wait, int fd, void* p, std::size_t n) {
  auto* c = static_cast<char*>(p);
  const bool bulk = n >= bulk_bytes_min;
  int watermark = 1;
  while (n > 0) {
    ssize_t k = 0;
    if (bulk || wait == raw_wait::ready) {
      const int wanted = static_cast<int>(std::min<std::size_t>(n, bulk ? bulk_watermark : 1));
      if (wanted != watermark) set_watermark(fd, watermark = wanted);
      pollfd readable{fd, POLLIN, 0};
      if (::poll(&readable, 1, -1) < 0) {
        if (errno == EINTR) continue;  // poll is never restarted after a signal
        return false;
      }
      k = ::recv(fd, c, std::min(n, step_bytes()), MSG_DONTWAIT);
      if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    } else {
      k = ::recv(fd, c, std::min(n, step_bytes()), MSG_WAITALL);
    }
    if (k <= 0) return false;
    c += k;
    n -= static_cast<std::size_t>(k);
  }
  if (watermark != 1) set_watermark(fd, 1);
  return true;
}

void no_delay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

struct request {
  std::uint64_t is_write;
  std::uint64_t length;
  std::uint64_t slot;  // which of the connection's blocks, as a faultlane request's offset
};

// With --verify the baseline touches every byte as faultlane's run does:
// READs carry a known pattern the client compares, WRITEs another one the
// server compares, answering 1 in the ack for a mismatch.
constexpr std::uint64_t read_seed = 7;
constexpr std::uint64_t write_seed = 11;

block_vector<char> patterned(std::uint64_t bytes, std::uint64_t seed) {
  block_vector<char> out(bytes);
  fill_pattern(reinterpret_cast<std::byte*>(out.data()), out.size(), seed);
  return out;
}

bool has_reads(const options& o) { return o.op != operation::write; }
bool has_writes(const options& o) { return o.op != operation::read; }

// Slot `slot`'s pattern: READ and WRITE slots never share one.
std::uint64_t slot_seed(std::uint64_t base, std::uint64_t slot) { return base << 32 | slot; }

// `slots` blocks, or none when the run's op never uses them; with --verify
// and a `seed`, slot i holds the pattern slot_seed(*seed, i), so a block
// served from or landed in the wrong slot shows.
block_vector<char> slot_blocks(const options& o, std::size_t slots, bool used,
                               std::optional<std::uint64_t> seed = std::nullopt) {
  if (!used) return {};
  block_vector<char> out(slots * o.block_bytes, 'b');
  for (std::size_t i = 0; o.verify && seed && i < slots; ++i) {
    fill_pattern(reinterpret_cast<std::byte*>(out.data() + i * o.block_bytes), o.block_bytes,
                 slot_seed(*seed, i));
  }
  return out;
}

// One connection's blocks, at both ends, built before any thread starts
// (so none is touched for the first time while the clock runs).
struct connection_memory {
  connection_memory(const options& o, std::size_t slots)
      : slots(slots),
        served(slot_blocks(o, slots, has_reads(o), read_seed)),
        landed(slot_blocks(o, slots, has_writes(o))),
        sent(slot_blocks(o, slots, has_writes(o), write_seed)),
        received(slot_blocks(o, slots, has_reads(o))) {
    scratch_server.reserve(o.verify ? o.block_bytes : 0);
    scratch_client.reserve(o.verify ? o.block_bytes : 0);
  }
  std::size_t slots;
  block_vector<char> served, landed;  // the server's: READ sources, WRITE destinations
  block_vector<char> sent, received;  // the client's: WRITE sources, READ destinations
  block_vector<char> scratch_server, scratch_client;  // expected patterns, with --verify
};

// Whether `n` bytes at `got` are the start of slot `slot`'s pattern.
bool holds_pattern(const char* got, std::uint64_t n, std::uint64_t seed,
                   block_vector<char>& scratch) {
  scratch.resize(n);
  fill_pattern(reinterpret_cast<std::byte*>(scratch.data()), n, seed);
  return std::memcmp(got, scratch.data(), n) == 0;
}

// Serves one connection from `slots` blocks of its own (READs) and into
// as many (WRITEs): a faultlane target serves each request slot from its
// own place in the registered region, so the baseline touches as much
// memory as it does, not one block the caches keep.
void serve(int fd, const options& o, connection_memory& memory) {
  const std::uint64_t block = o.block_bytes;
  request r{};
  while (recv_all(o.baseline_wait, fd, &r, sizeof(r))) {
    if (r.slot >= memory.slots || r.length > block ||
        (r.is_write != 0 ? memory.landed : memory.served).empty()) {
      std::fprintf(stderr, "baseline: a request for slot %llu of %zu, %llu bytes: closing\n",
                   static_cast<unsigned long long>(r.slot), memory.slots,
                   static_cast<unsigned long long>(r.length));
      break;
    }
    if (r.is_write != 0) {
      char* into = memory.landed.data() + r.slot * block;
      if (!recv_all(o.baseline_wait, fd, into, r.length)) break;
      const bool wrong = o.verify && !holds_pattern(into, r.length, slot_seed(write_seed, r.slot),
                                                    memory.scratch_server);
      std::uint64_t ack = wrong ? 1 : 0;
      if (!send_all(fd, &ack, sizeof(ack))) break;
    } else if (!send_all(fd, memory.served.data() + r.slot * block, r.length)) {
      break;
    }
  }
  ::close(fd);
}

// With several rails, faultlane splits one large READ over one connection
// per rail. The fair plain-TCP counterpart stripes each READ the same way:
// every connection moves its contiguous part at the same time, and the op
// ends when the last part lands.
bool striped(const options& o) {
  return o.op == operation::read && o.rails > 1 && o.block_bytes / o.rails >= (1u << 20);
}

void run_striped(const options& o, const std::vector<int>& clients, window& w, measurement& m,
                 std::vector<std::thread>& drivers) {
  const std::size_t parts = std::min(o.rails, clients.size());
  auto sync = std::make_shared<std::barrier<>>(static_cast<std::ptrdiff_t>(parts));
  auto stop = std::make_shared<std::atomic<bool>>(false);
  auto mismatches = std::make_shared<std::atomic<std::uint64_t>>(0);
  for (std::size_t c = 0; c < parts; ++c) {
    drivers.emplace_back([&o, &clients, &w, &m, sync, stop, mismatches, c, parts] {
      std::uint64_t part = o.block_bytes / parts + (c < o.block_bytes % parts ? 1 : 0);
      block_vector<char> buffer(part, 'c');
      auto expected =
          o.verify ? patterned(o.block_bytes, slot_seed(read_seed, 0)) : block_vector<char>();
      bool seen_first = false;
      warm_on_exit gone(w, seen_first);
      while (true) {
        // Part 0 decides for everyone whether another op runs.
        if (c == 0) stop->store(w.stopping());
        sync->arrive_and_wait();
        if (stop->load()) return;
        auto start = clock_type::now();
        request r{0, part, 0};
        bool ok = send_all(clients[c], &r, sizeof(r)) &&
                  recv_all(o.baseline_wait, clients[c], buffer.data(), part);
        bool wrong = ok && o.verify && std::memcmp(buffer.data(), expected.data(), part) != 0;
        sync->arrive_and_wait();  // the op ends when every part landed
        if (!ok) stop->store(true);
        if (wrong) mismatches->fetch_add(1);
        if (c == 0) m.mismatches = mismatches->load();
        if (ok) w.completed(seen_first);
        if (c == 0 && ok && w.measuring()) {
          m.latency_us.push_back(
              std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
          m.bytes += o.block_bytes;
          ++m.ops;
        }
      }
    });
  }
}

// One pipelining driver: `depth` requests out, then their answers, over and
// over, timing each answer from the start of its round. Requests take the
// connection's `slots` blocks in turn, each with a buffer of its own here
// and at the server, as a faultlane batch's requests each have theirs.
void drive_connection(const options& o, int fd, std::size_t depth, connection_memory& memory,
                      window& w, measurement& m) {
  const std::size_t slots = memory.slots;
  std::uint64_t ack = 0;
  std::uint64_t n = 0;
  std::vector<bool> writes(depth);
  bool seen_first = false;
  warm_on_exit gone(w, seen_first);
  while (!w.stopping()) {
    auto start = clock_type::now();
    for (std::size_t k = 0; k < depth; ++k) {
      bool is_write = o.op == operation::write || (o.op == operation::mix && (n + k) % 2 == 1);
      writes[k] = is_write;
      const std::uint64_t slot = (n + k) % slots;
      request r{is_write ? 1u : 0u, o.block_bytes, slot};
      if (!send_all(fd, &r, sizeof(r))) return;
      if (is_write && !send_all(fd, memory.sent.data() + slot * o.block_bytes, o.block_bytes)) {
        return;
      }
    }
    for (std::size_t k = 0; k < depth; ++k) {
      char* into = writes[k] ? nullptr : memory.received.data() + ((n + k) % slots) * o.block_bytes;
      bool ok = writes[k] ? recv_all(o.baseline_wait, fd, &ack, sizeof(ack))
                          : recv_all(o.baseline_wait, fd, into, o.block_bytes);
      if (!ok) return;
      if (o.verify) {
        m.mismatches +=
            writes[k] ? ack != 0
                      : !holds_pattern(into, o.block_bytes, slot_seed(read_seed, (n + k) % slots),
                                       memory.scratch_client);
      }
      w.completed(seen_first);
      if (w.measuring()) {
        m.latency_us.push_back(
            std::chrono::duration<double, std::micro>(clock_type::now() - start).count());
        m.bytes += o.block_bytes;
        ++m.ops;
      }
    }
    n += depth;
  }
}

// `n` connected loopback pairs: (accepted, connecting) descriptors.
std::vector<std::pair<int, int>> connected_pairs(std::size_t n) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  check(listener >= 0, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  check(::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0, "bind");
  check(::listen(listener, 64) == 0, "listen");
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < n; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    check(fd >= 0, "socket");
    check(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0, "connect");
    int accepted = ::accept(listener, nullptr, nullptr);
    check(accepted >= 0, "accept");
    pairs.emplace_back(accepted, fd);
  }
  ::close(listener);
  return pairs;
}

// `connections` loopback connections, each with a serving thread.
void connect_pairs(const options& o, std::vector<connection_memory>& memory,
                   std::vector<int>& clients, std::vector<std::thread>& servers) {
  std::size_t c = 0;
  for (auto [accepted, fd] : connected_pairs(memory.size())) {
    no_delay(fd);
    no_delay(accepted);
    clients.push_back(fd);
    servers.emplace_back(serve, accepted, std::cref(o), std::ref(memory[c++]));
  }
}

// The stream reference: what plain TCP moves one way with nothing to wait
// for (as iperf3 does): one sender per connection writing `step` bytes at
// a time, one receiver reading as fast as they come. Both walk through
// buffers of `footprint` bytes: a step's worth stays in the caches, as
// iperf3's 128 KiB buffer does; a block's worth touches the memory a
// transfer of that block touches.
void stream_one(int from, int to, block_vector<char>& source, block_vector<char>& sink,
                window& w, measurement& m) {
  std::thread sender([from, &source, &w] {
    std::size_t at = 0;
    while (!w.stopping()) {
      const std::size_t n = std::min(step_bytes(), source.size() - at);
      if (!send_all(from, source.data() + at, n)) return;
      at = (at + n) % source.size();
    }
    ::shutdown(from, SHUT_WR);
  });
  std::size_t at = 0;
  set_watermark(to, bulk_watermark);
  bool seen_first = false;
  warm_on_exit gone(w, seen_first);
  while (true) {
    ssize_t k = ::recv(to, sink.data() + at, std::min(step_bytes(), sink.size() - at), 0);
    if (k <= 0) break;
    at = (at + static_cast<std::size_t>(k)) % sink.size();
    w.completed(seen_first);
    if (w.measuring()) m.bytes += static_cast<std::uint64_t>(k);
  }
  sender.join();
}

}  // namespace

std::size_t stream_footprint(const options& o, stream_buffers buffers) {
  return buffers == stream_buffers::step ? step_bytes()
                                         : std::max<std::size_t>(o.block_bytes, step_bytes());
}

measurement run_stream(const options& o, stream_buffers buffers) {
  const std::size_t footprint = stream_footprint(o, buffers);
  auto pairs = connected_pairs(o.lanes);
  window w;
  std::vector<measurement> per(pairs.size());
  // Touched before the clock starts, even with no warm-up.
  std::vector<block_vector<char>> sources(pairs.size(), block_vector<char>(footprint, 's'));
  std::vector<block_vector<char>> sinks(pairs.size(), block_vector<char>(footprint, 0));
  std::vector<std::thread> receivers;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    receivers.emplace_back([&, i] {
      stream_one(pairs[i].first, pairs[i].second, sources[i], sinks[i], w, per[i]);
    });
  }
  measurement total;
  total.seconds = run_phases(o, w, pairs.size(), total);
  for (auto& r : receivers) r.join();
  for (auto [a, b] : pairs) ::close(a), ::close(b);
  for (auto& m : per) total.bytes += m.bytes;
  total.ops = total.bytes / o.block_bytes;
  return total;
}

measurement run_baseline(const options& o) {
  const std::size_t connections = o.lanes;
  const std::size_t in_flight = o.batch * o.threads;
  // Spread the faultlane run's in-flight count over the connections, no
  // more on one than a faultlane lane may carry.
  auto depth_of = [&](std::size_t c) {
    return std::min(in_flight / connections + (c < in_flight % connections ? 1 : 0),
                    o.lane_inflight);
  };
  // The faultlane run gives each of its in_flight requests a block of its
  // own at both ends; so does the baseline, spread over its connections.
  // (A READ striped over the connections is one op: one slot each.)
  const std::size_t slots =
      striped(o) ? 1 : std::max<std::size_t>(1, (in_flight + connections - 1) / connections);
  std::vector<connection_memory> memory;
  memory.reserve(connections);
  for (std::size_t c = 0; c < connections; ++c) {
    memory.emplace_back(o, striped(o) || depth_of(c) > 0 ? slots : 0);
  }
  std::vector<int> clients;
  std::vector<std::thread> servers;
  connect_pairs(o, memory, clients, servers);

  window w;
  std::vector<measurement> per(connections);
  // As on the faultlane side: the latency log does not grow in the window.
  for (auto& m : per) m.latency_us.reserve(latency_log_entries(o, connections));
  std::vector<std::thread> drivers;
  if (striped(o)) {
    run_striped(o, clients, w, per[0], drivers);
  } else {
    for (std::size_t c = 0; c < connections; ++c) {
      const std::size_t depth = depth_of(c);
      if (depth == 0) continue;
      drivers.emplace_back(
          [&, c, depth] { drive_connection(o, clients[c], depth, memory[c], w, per[c]); });
    }
  }
  measurement total;
  const double seconds = run_phases(o, w, drivers.size(), total);
  for (auto& d : drivers) d.join();
  for (int fd : clients) ::shutdown(fd, SHUT_RDWR), ::close(fd);
  for (auto& s : servers) s.join();

  total.seconds = seconds;
  for (auto& m : per) {
    total.bytes += m.bytes;
    total.ops += m.ops;
    total.mismatches += m.mismatches;
    total.latency_us.insert(total.latency_us.end(), m.latency_us.begin(), m.latency_us.end());
  }
  return total;
}

}  // namespace faultlane::bench
