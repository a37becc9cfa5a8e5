// The control plane's client side; see rpc_client.hpp.
//
// One io thread owns the connection and every pending call; the public
// methods post to it. A call is pending from call_async until its callback
// ran, and at any moment is in one place: waiting to be sent (`unsent_`),
// or sent on the current connection (`sent_`).
#include "faultlane/control/rpc_client.hpp"
#include "faultlane/core/net.hpp"

#include <fmt/format.h>
#include <pthread.h>

#include <asio/connect.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/steady_timer.hpp>
#include <asio/write.hpp>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "faultlane/base/probe.hpp"
#include "faultlane/control/rpc_frame.hpp"

namespace faultlane::rpc {

using asio::ip::tcp;
using clock_type = net::clock;
using std::chrono::milliseconds;

namespace {

struct pending_call {
  std::string method;
  std::vector<std::byte> frame;  // header and payload, as sent
  client::callback done;
  clock_type::time_point overall_deadline;
  clock_type::time_point attempt_deadline{};  // while sent
};

}  // namespace

class client::impl : public std::enable_shared_from_this<client::impl> {
 public:
  explicit impl(const client_options& o)
      : options(o), socket(io), connect_timer(io), attempt_timer(io), retry_timer(io) {}

  void start() {
    if constexpr (net::simulated) {
      net::world_runs(io, "rpc-client");  // the world runs it, as a shard's
    } else {
      thread = net::thread([this] {
        pthread_setname_np(pthread_self(), "fl-rpc-client");
        io.run();
      });
    }
  }
  void stop();

  void submit(std::string method, std::vector<std::byte> body, callback done);
  void pump();
  void connect();
  void on_connected(const std::error_code& ec, std::uint64_t generation);
  void write_next();
  void read_header();
  void on_header(const std::error_code& ec);
  void on_payload(const std::error_code& ec);
  void reset(status why, const std::string& what);
  void arm_attempt_timer();
  void on_attempt_timer();
  void complete(std::uint64_t id, result<std::vector<std::byte>> r);
  void expire_unsent();

  const client_options options;
  asio::io_context io{1};
  asio::executor_work_guard<asio::io_context::executor_type> guard{io.get_executor()};
  net::thread thread;

  // The io thread only.
  net::socket socket;
  net::timer connect_timer;
  net::timer attempt_timer;
  net::timer retry_timer;
  enum class state { disconnected, connecting, connected } conn = state::disconnected;
  std::uint64_t generation = 0;  // bumps on every connect and reset
  // None until a connect fails or the server is busy. Not the clock's
  // epoch: on the simulated clock the epoch is the start of the run, and
  // every call in the first cooldown waited it out for no failure.
  std::optional<clock_type::time_point> last_failure;
  std::uint64_t next_id = 1;
  std::map<std::uint64_t, pending_call> calls;
  std::deque<std::uint64_t> unsent;
  std::deque<std::uint64_t> writing;  // sent or being sent on this connection, in order
  bool write_busy = false;
  header_bytes_array header_in{};
  header current{};
  std::vector<std::byte> payload;
  bool stopped = false;

  mutable std::mutex counters_mutex;
  client_counters counters;
};

void client::impl::submit(std::string method, std::vector<std::byte> body, callback done) {
  if (stopped) {
    done(error{status::cancelled, "the rpc client is closed"});
    return;
  }
  const auto id = next_id++;
  header h{kind::request, static_cast<std::uint8_t>(method.size()), rpc_status::ok, id,
           static_cast<std::uint32_t>(method.size() + body.size())};
  const auto head = encode(h);
  pending_call c;
  c.frame.resize(header_bytes + method.size() + body.size());
  std::memcpy(c.frame.data(), head.data(), header_bytes);
  std::memcpy(c.frame.data() + header_bytes, method.data(), method.size());
  if (!body.empty()) {
    std::memcpy(c.frame.data() + header_bytes + method.size(), body.data(), body.size());
  }
  c.method = std::move(method);
  c.done = std::move(done);
  c.overall_deadline = clock_type::now() + milliseconds(options.overall_timeout_ms);
  calls.emplace(id, std::move(c));
  unsent.push_back(id);
  {
    std::lock_guard lock(counters_mutex);
    ++counters.calls;
  }
  pump();
}

// Sends what waits, connecting first (not before the cooldown since the
// last failure ran out).
void client::impl::pump() {
  expire_unsent();
  if (unsent.empty() || stopped) return;
  if (conn == state::connected) return write_next();
  if (conn == state::connecting) {
    // A connect may take connect_timeout_ms; a call's own bound may end
    // first, and must end it then.
    auto wake = clock_type::time_point::max();
    for (auto id : unsent) wake = std::min(wake, calls.at(id).overall_deadline);
    retry_timer.expires_at(wake);
    retry_timer.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec) self->pump();
    });
    return;
  }
  if (last_failure &&
      clock_type::now() < *last_failure + milliseconds(options.reconnect_cooldown_ms)) {
    // Wake at the end of the cooldown, or when a call's bound runs out.
    FAULTLANE_PROBE(rpc_client_waits_out_cooldown);
    auto wake = *last_failure + milliseconds(options.reconnect_cooldown_ms);
    for (auto id : unsent) wake = std::min(wake, calls.at(id).overall_deadline);
    retry_timer.expires_at(wake);
    retry_timer.async_wait([self = shared_from_this()](std::error_code ec) {
      if (!ec) self->pump();
    });
    return;
  }
  connect();
  // The connect may outlast the calls' bounds: wake for them as above.
  if (conn == state::connecting) pump();
}

void client::impl::connect() {
  conn = state::connecting;
  const auto gen = ++generation;
  std::error_code ec;
  auto address = asio::ip::make_address(options.server.address, ec);
  if (ec) return on_connected(ec, gen);
  socket = net::socket(io);
  connect_timer.expires_after(milliseconds(options.connect_timeout_ms));
  connect_timer.async_wait([self = shared_from_this(), gen](std::error_code e) {
    if (e || gen != self->generation || self->conn != state::connecting) return;
    std::error_code ignored;
    self->socket.close(ignored);  // the connect handler sees operation_aborted
  });
  socket.async_connect(
      tcp::endpoint(address, options.server.port),
      [self = shared_from_this(), gen](std::error_code e) { self->on_connected(e, gen); });
}

void client::impl::on_connected(const std::error_code& ec, std::uint64_t gen) {
  if (gen != generation || stopped) return;
  connect_timer.cancel();
  if (ec) {
    FAULTLANE_PROBE(rpc_client_connect_failed);
    {
      std::lock_guard lock(counters_mutex);
      ++counters.connect_failures;
    }
    conn = state::disconnected;
    last_failure = clock_type::now();
    std::error_code ignored;
    socket.close(ignored);
    return pump();  // waits out the cooldown, or lets the calls expire
  }
  {
    std::lock_guard lock(counters_mutex);
    ++counters.connects;
  }
  std::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  conn = state::connected;
  read_header();
  write_next();
}

void client::impl::write_next() {
  if (write_busy || conn != state::connected) return;
  expire_unsent();
  if (unsent.empty()) return;
  const auto id = unsent.front();
  unsent.pop_front();
  auto& c = calls.at(id);
  c.attempt_deadline =
      std::min(clock_type::now() + milliseconds(options.call_timeout_ms), c.overall_deadline);
  writing.push_back(id);
  write_busy = true;
  {
    std::lock_guard lock(counters_mutex);
    ++counters.attempts;
  }
  arm_attempt_timer();
  asio::async_write(socket, asio::buffer(c.frame),
                    [self = shared_from_this(), gen = generation](std::error_code ec, std::size_t) {
                      if (gen != self->generation) return;
                      self->write_busy = false;
                      if (ec) return self->reset(status::connection_failed, ec.message());
                      self->write_next();
                    });
}

void client::impl::read_header() {
  asio::async_read(socket, asio::buffer(header_in),
                   [self = shared_from_this(), gen = generation](std::error_code ec, std::size_t) {
                     if (gen == self->generation) self->on_header(ec);
                   });
}

void client::impl::on_header(const std::error_code& ec) {
  if (ec) {
    return reset(status::connection_failed,
                 ec == asio::error::eof ? "the server closed the connection" : ec.message());
  }
  auto h = decode(header_in, options.response_bytes_max);
  if (!h || h.value().type != kind::response) {
    return reset(status::protocol_error,
                 fmt::format("malformed answer: {}",
                             h ? "a request where an answer belongs" : to_string(h.error())));
  }
  current = h.value();
  payload.assign(current.payload_length, std::byte{0});
  asio::async_read(socket, asio::buffer(payload),
                   [self = shared_from_this(), gen = generation](std::error_code e, std::size_t) {
                     if (gen == self->generation) self->on_payload(e);
                   });
}

void client::impl::on_payload(const std::error_code& ec) {
  if (ec) return reset(status::connection_failed, ec.message());
  const auto id = current.request_id;
  auto it = calls.find(id);
  auto sent = std::find(writing.begin(), writing.end(), id);
  if (it == calls.end() || sent == writing.end()) {
    // An answer to nothing this connection carries: the stream is not
    // what we think it is.
    return reset(status::protocol_error, fmt::format("an answer for unknown request {}", id));
  }
  writing.erase(sent);
  const auto s = current.status;
  if (s == rpc_status::busy && options.retry_busy &&
      clock_type::now() + milliseconds(options.reconnect_cooldown_ms) <
          it->second.overall_deadline) {
    FAULTLANE_PROBE(rpc_client_busy_retried);
    unsent.push_back(id);
    last_failure = clock_type::now();  // busy: give the server the cooldown
    read_header();
    arm_attempt_timer();
    retry_timer.expires_after(milliseconds(options.reconnect_cooldown_ms));
    retry_timer.async_wait([self = shared_from_this()](std::error_code e) {
      if (!e) self->pump();
    });
    return;
  }
  read_header();
  arm_attempt_timer();
  if (s == rpc_status::ok) {
    complete(id, std::move(payload));
  } else {
    complete(id, error{status_for(s), fmt::format("{}: {}: {}", it->second.method, to_string(s),
                                                  read_error_body(payload))});
  }
}

// The connection is gone: what it carried is sent again on the next one
// (within each call's overall bound), or ends with `why`.
void client::impl::reset(status why, const std::string& what) {
  ++generation;
  {
    std::lock_guard lock(counters_mutex);
    ++counters.connections_reset;
  }
  std::error_code ignored;
  socket.close(ignored);
  connect_timer.cancel();
  attempt_timer.cancel();
  conn = state::disconnected;
  write_busy = false;
  last_failure = clock_type::now();
  auto carried = std::move(writing);
  writing.clear();
  for (auto it = carried.rbegin(); it != carried.rend(); ++it) {
    if (options.retry_sent) {
      FAULTLANE_PROBE(rpc_calls_resent_after_reset);
      unsent.push_front(*it);
    } else {
      complete(*it, error{why, fmt::format("{}: {}", calls.at(*it).method, what)});
    }
  }
  if (why == status::protocol_error) {
    // A malformed answer is not worth asking again for.
    while (!unsent.empty()) {
      auto id = unsent.front();
      unsent.pop_front();
      complete(id, error{why, fmt::format("{}: {}", calls.at(id).method, what)});
    }
  }
  pump();
}

// One timer for the connection: it fires at the earliest attempt deadline
// of the calls sent on it. A call that waited that long means the
// connection is stalled: it is reset, and its calls are sent again.
void client::impl::arm_attempt_timer() {
  if (writing.empty()) {
    attempt_timer.cancel();
    return;
  }
  auto earliest = clock_type::time_point::max();
  for (auto id : writing) earliest = std::min(earliest, calls.at(id).attempt_deadline);
  attempt_timer.expires_at(earliest);
  attempt_timer.async_wait([self = shared_from_this(), gen = generation](std::error_code ec) {
    if (!ec && gen == self->generation) self->on_attempt_timer();
  });
}

void client::impl::on_attempt_timer() {
  const auto now = clock_type::now();
  bool late = false;
  for (auto id : writing) late = late || calls.at(id).attempt_deadline <= now;
  if (!late) return arm_attempt_timer();
  FAULTLANE_PROBE(rpc_attempt_timed_out);
  reset(status::timeout,
        fmt::format("no answer within call_timeout_ms ({} ms)", options.call_timeout_ms));
}

// Calls whose overall bound passed before they could be sent end timeout.
void client::impl::expire_unsent() {
  const auto now = clock_type::now();
  for (auto it = unsent.begin(); it != unsent.end();) {
    auto& c = calls.at(*it);
    if (c.overall_deadline > now) {
      ++it;
      continue;
    }
    FAULTLANE_PROBE(rpc_unsent_call_expired);
    const auto id = *it;
    it = unsent.erase(it);
    complete(id,
             error{status::timeout, fmt::format("{}: no answer within overall_timeout_ms ({} ms)",
                                                c.method, options.overall_timeout_ms)});
  }
}

void client::impl::complete(std::uint64_t id, result<std::vector<std::byte>> r) {
  auto node = calls.extract(id);
  FL_ASSERT(!node.empty());
  if (!r && r.code() == status::timeout) {
    std::lock_guard lock(counters_mutex);
    ++counters.timeouts;
  }
  node.mapped().done(std::move(r));
}

void client::impl::stop() {
  FL_ASSERT(!io.get_executor().running_in_this_thread());  // not from a callback
  auto finished = std::make_shared<std::promise<void>>();
  auto done = finished->get_future();
  asio::post(io, [self = shared_from_this(), finished] {
    self->stopped = true;
    ++self->generation;
    std::error_code ignored;
    self->socket.close(ignored);
    self->connect_timer.cancel();
    self->attempt_timer.cancel();
    self->retry_timer.cancel();
    while (!self->calls.empty()) {
      self->complete(self->calls.begin()->first,
                     error{status::cancelled, "the rpc client was closed"});
    }
    self->unsent.clear();
    self->writing.clear();
    finished->set_value();
  });
  (void)net::wait_ready(done, net::clock::time_point::max());
  // No io.stop(): the handlers the close aborted still run (each drops its
  // hold on this object) and run() returns once nothing is left; a call
  // made from a cancelled call's callback is answered cancelled, not lost.
  guard.reset();
  if (thread.joinable()) thread.join();
  // On the world: what the close left ready runs, then the world lets go.
  if constexpr (net::simulated) net::world_drains(io);
}

result<std::unique_ptr<client>> client::create(const client_options& o) {
  for (auto [field, value] : {std::pair{"connect_timeout_ms", o.connect_timeout_ms},
                              std::pair{"call_timeout_ms", o.call_timeout_ms},
                              std::pair{"overall_timeout_ms", o.overall_timeout_ms},
                              std::pair{"reconnect_cooldown_ms", o.reconnect_cooldown_ms}}) {
    if (value == 0 || value > limits::timeout_ms_max) {
      return error{status::invalid_argument,
                   fmt::format("rpc client: {} must be in [1, {}], got {}", field,
                               limits::timeout_ms_max, value)};
    }
  }
  std::error_code ec;
  auto address = asio::ip::make_address(o.server.address, ec);
  if (ec || !address.is_v4() || address.is_unspecified() || o.server.port == 0) {
    return error{status::invalid_argument,
                 fmt::format("rpc client: server {:?} is not a numeric IPv4 address and port",
                             o.server.str())};
  }
  auto i = std::make_shared<impl>(o);
  i->start();
  // new-ok: the constructor is private to create(), which owns the result at once.
  return std::unique_ptr<client>(new client(std::move(i)));
}

client::client(std::shared_ptr<impl> i) : impl_(std::move(i)) {}

client::~client() { impl_->stop(); }

void client::call_async(std::string method, std::vector<std::byte> body, callback done) {
  FL_ASSERT(valid_method_name(method));
  if (method.size() + body.size() > limits::rpc_request_bytes_max) {
    done(error{status::invalid_argument,
               fmt::format("{}: the request is over rpc_request_bytes_max", method)});
    return;
  }
  asio::post(impl_->io, [self = impl_, method = std::move(method), body = std::move(body),
                         done = std::move(done)]() mutable {
    self->submit(std::move(method), std::move(body), std::move(done));
  });
}

result<std::vector<std::byte>> client::call(std::string_view method,
                                            std::span<const std::byte> body) {
  auto answer = std::make_shared<std::promise<result<std::vector<std::byte>>>>();
  auto future = answer->get_future();
  call_async(std::string(method), std::vector<std::byte>(body.begin(), body.end()),
             [answer](result<std::vector<std::byte>> r) { answer->set_value(std::move(r)); });
  // The io thread ends every call by its overall bound (on the world the
  // wait runs it meanwhile).
  (void)net::wait_ready(future, clock_type::time_point::max());
  return future.get();
}

client_counters client::counters() const {
  std::lock_guard lock(impl_->counters_mutex);
  return impl_->counters;
}

const client_options& client::options() const noexcept { return impl_->options; }

}  // namespace faultlane::rpc
