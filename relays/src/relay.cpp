// relay: configuration, the listener, faults and counters; see relay.hpp.
#include "faultlane/relays/relay.hpp"

#include <asio/connect.hpp>
#include <asio/post.hpp>
#include <fmt/format.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <future>

#include "connection.hpp"
#include "faultlane/base/assert.hpp"
#include "faultlane/base/hash.hpp"
#include "faultlane/core/accept_loop.hpp"
#include "faultlane/core/net.hpp"
#include "faultlane/relays/limits.hpp"
#include "loopback.hpp"

namespace faultlane::relays {

using asio::ip::tcp;

namespace detail {

double draw(std::uint64_t seed, std::size_t fault_order, std::uint64_t connection,
            std::uint64_t frame) {
  auto h =
      stable_hash(seed ^ stable_hash(fault_order ^ stable_hash(connection ^ stable_hash(frame))));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

void relay_state::fired(installed_fault& f, const tap_record& where) {
  f.fired.fetch_add(1, std::memory_order_relaxed);
  if (!taps_on()) return;
  auto r = where;
  r.kind = record_kind::fault;
  r.fault = f.spec.name;
  recorder.record(std::move(r));
}

void relay_state::note_connect_failure(const std::string& target, const std::error_code& ec) {
  connect_failures.fetch_add(1, std::memory_order_relaxed);
  if (!config.log_connect_failures) return;
  auto now = clock_type::now();
  if (connect_failure_logged &&
      now - *connect_failure_logged < std::chrono::milliseconds(connect_failure_log_gap_ms)) {
    ++connect_failures_unlogged;
    return;
  }
  std::string more;
  if (connect_failures_unlogged > 0) {
    more = fmt::format(" ({} more since the last message)", connect_failures_unlogged);
  }
  fmt::print(stderr, "relay {}: cannot connect to upstream {}: {}{}; the client is {}\n",
             config.name, target, ec.message(), more,
             config.on_upstream_failure == close_mode::reset ? "reset" : "closed");
  std::fflush(stderr);
  connect_failure_logged = now;
  connect_failures_unlogged = 0;
}

namespace {
sigset_t sigpipe_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  return set;
}
}  // namespace

void block_sigpipe() {
  auto set = sigpipe_set();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void consume_sigpipe() {
  auto set = sigpipe_set();
  timespec now{0, 0};
  while (sigtimedwait(&set, nullptr, &now) == SIGPIPE) {
  }
}

}  // namespace detail

// --- relay ------------------------------------------------------------------------------

class relay::impl {
 public:
  explicit impl(relay_config c)
      : state(std::make_shared<detail::relay_state>(std::move(c))),
        listener(state->context, listener_hooks()) {
    state->upstream = state->config.upstream;
  }

  accept_hooks listener_hooks();
  void on_accept(net::socket socket);
  bool refused(net::socket& socket, std::uint64_t index);
  void broadcast_recheck();
  // The fault with this id in the chain, or its end (faults_mutex held).
  std::vector<detail::fault_ptr>::iterator find_fault(fault_id id) {
    return std::find_if(state->faults.begin(), state->faults.end(),
                        [&](const auto& f) { return f->id == id; });
  }

  std::shared_ptr<detail::relay_state> state;
  accept_loop listener;  // io thread only, once the thread runs
  address bound;
  net::thread thread;
  std::vector<std::weak_ptr<detail::connection>> connections;  // io thread only
  std::map<std::string, std::uint64_t> retired_counts;         // removed faults
  std::mutex stop_mutex;
  bool stopped = false;
};

namespace detail {

result<void> check_loopback(const std::string& what, const std::string& host, bool allowed) {
  std::error_code ec;
  auto ip = asio::ip::make_address(host, ec);
  if (ec || !ip.is_v4()) {
    return error{status::invalid_argument,
                 fmt::format("{} '{}' is not a numeric IPv4 address", what, host)};
  }
  if (!allowed && !ip.is_loopback()) {
    return error{status::invalid_argument,
                 fmt::format("{} {} is not a loopback address (pass --allow-non-loopback to "
                             "relay elsewhere)",
                             what, host)};
  }
  return {};
}

}  // namespace detail

using detail::check_loopback;

result<void> relay::check(const relay_config& config) {
  if (auto r = check_loopback("listen", config.listen.address, config.allow_non_loopback); !r)
    return r.error();
  if (auto r = check_loopback("upstream", config.upstream.address, config.allow_non_loopback); !r)
    return r.error();
  if (config.upstream.port == 0) return error{status::invalid_argument, "upstream needs a port"};
  if (config.upstream_source) {
    if (auto r =
            check_loopback("upstream_source", *config.upstream_source, config.allow_non_loopback);
        !r) {
      return r.error();
    }
  }
  if (config.buffer_bytes < buffer_bytes_min) {
    return error{status::invalid_argument, fmt::format("buffer_bytes below {}", buffer_bytes_min)};
  }
  if (config.busy_poll_us > busy_poll_us_max) {
    return error{status::invalid_argument, fmt::format("busy_poll_us above {}", busy_poll_us_max)};
  }
  for (const auto& f : config.faults) {
    if (auto r = validate(f); !r.ok()) return r.error();
  }
  return {};
}

result<std::unique_ptr<relay>> relay::start(relay_config config) {
  if (auto r = check(config); !r.ok()) return r.error();
  auto i = std::make_unique<impl>(config);
  auto& s = *i->state;
  for (auto& f : s.config.faults) {
    auto installed = std::make_shared<detail::installed_fault>();
    installed->id = s.next_fault_id++;
    installed->order = s.next_order++;
    installed->spec = f;
    if (f.when.count) installed->remaining = *f.when.count;
    s.faults.push_back(installed);
  }
  if (!s.config.tap_path.empty() && !s.recorder.open_file(s.config.tap_path, s.config.tap_append)) {
    return error{status::invalid_argument,
                 fmt::format("cannot write tap file {}", s.config.tap_path)};
  }
  tcp::endpoint ep(asio::ip::make_address(s.config.listen.address), s.config.listen.port);
  if (auto ec = i->listener.listen(ep)) {
    return error{status::connection_failed,
                 fmt::format("listen on {}: {}", s.config.listen.str(), ec.message())};
  }
  i->bound = {s.config.listen.address, i->listener.port()};
  i->listener.start();
  auto* raw = i.get();
  if constexpr (net::simulated) {
    net::world_runs(raw->state->context, "relay:" + s.config.name);
  } else {
    i->thread = net::thread([raw] {
      detail::block_sigpipe();
      raw->state->context.run();
    });
  }
  // new-ok: the constructor is private, out of make_unique's reach
  return std::unique_ptr<relay>(new relay(std::move(i)));
}

relay::relay(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

relay::~relay() { stop(); }

// An accept that failed (EMFILE, ENFILE, ENOBUFS, ENOMEM, or anything
// else) is counted; the loop waits in the backlog's stead, so a shortage
// of descriptors costs a few wake-ups, not a spinning io thread.
accept_hooks relay::impl::listener_hooks() {
  return {
      .place = [this] { return accept_destination{state->context}; },
      .failed =
          [this](const std::error_code&) {
            state->accept_errors.fetch_add(1, std::memory_order_relaxed);
          },
      .accepted = [this](net::socket socket, std::size_t) { on_accept(std::move(socket)); },
  };
}

// A refuse fault that applies to this connection resets it at once.
bool relay::impl::refused(net::socket& socket, std::uint64_t index) {
  for (const auto& f : state->snapshot()) {
    const auto& spec = f->spec;
    const auto& w = spec.when;
    if (spec.kind != fault_kind::refuse) continue;
    if ((w.connection && *w.connection != index) || (w.rail && *w.rail != state->config.rail))
      continue;
    if (detail::draw(state->config.seed, f->order, index, 0) >= w.probability) continue;
    auto left = f->remaining.load();
    if (left == 0) continue;
    if (left != UINT64_MAX) f->remaining.fetch_sub(1);
    tap_record where;
    where.time_us = state->now_us();
    where.relay = state->config.name;
    where.rail = state->config.rail;
    where.connection = index;
    state->fired(*f, where);
    state->refused.fetch_add(1, std::memory_order_relaxed);
    std::error_code ignored;
    socket.set_option(asio::socket_base::linger(true, 0), ignored);
    socket.close(ignored);
    return true;
  }
  return false;
}

void relay::impl::on_accept(net::socket socket) {
  auto index = state->accepted.fetch_add(1, std::memory_order_relaxed);
  if (!refused(socket, index)) {
    auto c = std::make_shared<detail::connection>(state, std::move(socket), index);
    connections.push_back(c);
    c->start();
  }
  std::erase_if(connections, [](const auto& w) { return w.expired(); });
}

void relay::impl::broadcast_recheck() {
  asio::post(state->context, [this] {
    for (auto& weak : connections) {
      if (auto c = weak.lock()) c->recheck();
    }
  });
}

address relay::listen_endpoint() const { return impl_->bound; }
const relay_config& relay::config() const { return impl_->state->config; }
address relay::upstream() const { return impl_->state->current_upstream(); }

result<void> relay::set_upstream(address upstream) {
  if (auto r =
          check_loopback("upstream", upstream.address, impl_->state->config.allow_non_loopback);
      !r) {
    return r;
  }
  if (upstream.port == 0) return error{status::invalid_argument, "upstream needs a port"};
  std::lock_guard lock(impl_->state->upstream_mutex);
  impl_->state->upstream = std::move(upstream);
  return {};
}
tap& relay::taps() { return impl_->state->recorder; }
std::size_t relay::live_connections() const { return impl_->state->live.load(); }
std::size_t relay::active_faults_peak() const { return impl_->state->active_peak.load(); }

fault_id relay::add_fault(fault_spec spec) {
  FL_ASSERT(validate(spec).ok());  // the caller parsed or validated it
  auto& s = *impl_->state;
  fault_id id;
  {
    std::lock_guard lock(s.faults_mutex);
    auto installed = std::make_shared<detail::installed_fault>();
    installed->id = id = s.next_fault_id++;
    installed->order = s.next_order++;
    if (spec.when.count) installed->remaining = *spec.when.count;
    installed->spec = std::move(spec);
    s.faults.push_back(installed);
    s.faults_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  impl_->broadcast_recheck();
  return id;
}

bool relay::remove_fault(fault_id id) {
  auto& s = *impl_->state;
  {
    std::lock_guard lock(s.faults_mutex);
    auto it = impl_->find_fault(id);
    if (it == s.faults.end()) return false;
    impl_->retired_counts[(*it)->spec.name] += (*it)->fired.load();
    s.faults.erase(it);
    s.faults_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  impl_->broadcast_recheck();
  return true;
}

bool relay::replace_fault(fault_id id, fault_spec spec) {
  FL_ASSERT(validate(spec).ok());  // the caller parsed or validated it
  auto& s = *impl_->state;
  {
    std::lock_guard lock(s.faults_mutex);
    auto it = impl_->find_fault(id);
    if (it == s.faults.end()) return false;
    impl_->retired_counts[(*it)->spec.name] += (*it)->fired.load();
    auto installed = std::make_shared<detail::installed_fault>();
    installed->id = id;
    installed->order = (*it)->order;
    // The firings left carry over unless the count itself changed.
    if (spec.when.count == (*it)->spec.when.count) {
      installed->remaining = (*it)->remaining.load();
    } else if (spec.when.count) {
      installed->remaining = *spec.when.count;
    }
    installed->spec = std::move(spec);
    *it = std::move(installed);
    s.faults_generation.fetch_add(1, std::memory_order_acq_rel);
  }
  impl_->broadcast_recheck();
  return true;
}

std::vector<std::pair<fault_id, fault_spec>> relay::faults() const {
  auto& s = *impl_->state;
  std::lock_guard lock(s.faults_mutex);
  std::vector<std::pair<fault_id, fault_spec>> out;
  out.reserve(s.faults.size());
  for (const auto& f : s.faults) out.emplace_back(f->id, f->spec);
  return out;
}

std::uint64_t relay::bytes_received(direction d) const {
  return impl_->state->received[static_cast<std::size_t>(d)].load(std::memory_order_relaxed);
}

std::size_t relay::active_faults() const {
  return impl_->state->active_effects.load(std::memory_order_relaxed);
}

std::map<std::string, std::uint64_t> relay::counters() const {
  auto& s = *impl_->state;
  std::map<std::string, std::uint64_t> out;
  {
    std::lock_guard lock(s.faults_mutex);
    out = impl_->retired_counts;
    for (const auto& f : s.faults) out[f->spec.name] += f->fired.load(std::memory_order_relaxed);
  }
#define FAULTLANE_RELAY_COUNTER_LOAD(field, name, ...) out[name] = s.field.load();
  FAULTLANE_RELAY_COUNTERS(FAULTLANE_RELAY_COUNTER_LOAD)
#undef FAULTLANE_RELAY_COUNTER_LOAD
  return out;
}

bool is_relay_counter(std::string_view name) noexcept {
  return std::any_of(relay_counters.begin(), relay_counters.end(),
                     [&](const relay_counter& c) { return c.counter == name; });
}

std::uint64_t relay::counter(const std::string& name) const {
  auto all = counters();
  auto it = all.find(name);
  return it == all.end() ? 0 : it->second;
}

bool relay::reset_connections(std::chrono::milliseconds timeout) {
  auto done = std::make_shared<std::promise<void>>();
  auto finished = done->get_future();
  asio::post(impl_->state->context, [i = impl_.get(), done] {
    for (auto& weak : i->connections) {
      if (auto c = weak.lock()) c->abort(true, "reset by the relay (reset_connections)");
    }
    done->set_value();
  });
  return net::wait_ready(finished, net::clock::now() + timeout);
}

void relay::stop() {
  std::lock_guard guard(impl_->stop_mutex);
  if (impl_->stopped) return;
  impl_->stopped = true;
  auto closed = std::make_shared<std::promise<void>>();
  auto all_closed = closed->get_future();
  asio::post(impl_->state->context, [i = impl_.get(), closed] {
    i->listener.close();
    for (auto& weak : i->connections) {
      if (auto c = weak.lock()) c->abort(false, "the relay stopped");
    }
    i->connections.clear();
    closed->set_value();
  });
  if constexpr (net::simulated) {
    // The world runs the context: once everything is closed, the handlers
    // the aborts left run (each drops its hold on its connection), as the
    // thread's run() would before returning.
    (void)net::wait_ready(all_closed, net::clock::time_point::max());
    net::world_drains(impl_->state->context);
    return;
  }
  // Closing everything ends every handler chain; run() then returns.
  impl_->thread.join();
}

}  // namespace faultlane::relays
