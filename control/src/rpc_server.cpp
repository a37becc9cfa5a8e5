// The control plane's service side; see rpc_server.hpp.
//
// Threads: the acceptor lives on shard 0, each session on the shard it was
// accepted onto, and everything a session owns is touched only there.
// Pooled handlers run on the worker pool and post their answer back to the
// session's shard. Handlers keep the session alive, and the session keeps
// the server's state alive, so a late handler never outlives what it uses.
#include "faultlane/control/rpc_server.hpp"
#include "faultlane/core/net.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "faultlane/core/accept_loop.hpp"
#include "faultlane/core/failpoint.hpp"
#include "rpc_worker_pool.hpp"

namespace faultlane::rpc {

using asio::ip::tcp;
using clock_type = net::clock;

namespace {

struct method_entry {
  placement where;
  handler fn;
};

std::uint64_t micros_since(clock_type::time_point from) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - from).count());
}

reply run_handler(const method_entry& m, const call& c) {
  try {
    return m.fn(c);
  } catch (const std::exception& e) {
    return reply::failure(rpc_status::internal_error, fmt::format("handler threw: {}", e.what()));
  } catch (...) {
    return reply::failure(rpc_status::internal_error, "handler threw a non-exception");
  }
}

}  // namespace

class session;

class server::impl : public std::enable_shared_from_this<server::impl> {
 public:
  impl(io_pool& p, const server_options& o)
      : pool(p), options(o), listener(p.context(0), listener_hooks()) {
    if (o.workers > 0) workers = std::make_unique<rpc_worker_pool>(o.workers, o.queue_max);
  }

  result<void> listen();
  accept_hooks listener_hooks();
  void on_accept(net::socket socket, std::size_t shard);
  const method_entry* find(std::string_view name) const;
  void session_closed(std::uint64_t id);
  bool close_sessions(bool gracefully, clock_type::time_point deadline);

  io_pool& pool;
  const server_options options;
  std::unique_ptr<rpc_worker_pool> workers;  // null: every handler inline
  rpc_metrics metrics;
  std::atomic<bool> stopped{false};

  mutable std::shared_mutex methods_mutex;
  std::map<std::string, std::unique_ptr<method_entry>, std::less<>> methods;

  accept_loop listener;  // on shard 0

  std::mutex sessions_mutex;
  net::condition_variable sessions_gone;
  std::unordered_map<std::uint64_t, std::pair<std::size_t, std::weak_ptr<session>>> sessions;
  // Who else holds this impl: live session objects (a closed session
  // leaves `sessions` at once, but lives on in its handlers still queued on
  // its shard, its read cancelled by the close) and the accept loop's
  // handlers (through listener_owner(); the cancelled accept may still be
  // queued on shard 0). stop() waits for them too: a server that outlived
  // its owner would be destroyed by the pool's own destructor, its
  // listener's timer after shard 0's services. Kept apart from the impl so
  // that each holder lets go of the impl before it says so: a stop() it
  // wakes finds the impl held by the server alone.
  struct holders {
    std::mutex mutex;
    net::condition_variable released;
    std::size_t sessions = 0;
    bool listener = false;
    void session_gone();
    bool wait_until(clock_type::time_point deadline);
  };
  const std::shared_ptr<holders> holding = std::make_shared<holders>();
  std::shared_ptr<void> listener_owner();
  std::uint64_t next_session = 1;

  std::mutex stop_mutex;
  bool stop_done = false;
  result<void> stop_result;
};

class session : public std::enable_shared_from_this<session> {
 public:
  session(std::shared_ptr<server::impl> owner, net::socket socket, std::size_t shard,
          std::uint64_t id)
      : owner_(std::move(owner)), socket_(std::move(socket)), shard_(shard), id_(id) {}
  ~session() {
    auto holding = owner_->holding;
    owner_.reset();
    holding->session_gone();
  }
  session(const session&) = delete;
  session& operator=(const session&) = delete;

  void start() { read_header(); }
  // From any thread: `respond` on the session's shard.
  void post_respond(std::uint64_t request_id, std::string method, reply r);
  void respond(std::uint64_t request_id, const std::string& method, reply r);
  // Closes once what is queued was written (or at once, when `gracefully`
  // is false).
  void finish(bool gracefully);

 private:
  void read_header();
  void on_header(const std::error_code& ec);
  void on_payload(const std::error_code& ec);
  void dispatch();
  void write_next();
  void maybe_resume_reading();
  void close();

  std::shared_ptr<server::impl> owner_;
  net::socket socket_;
  const std::size_t shard_;
  const std::uint64_t id_;
  header_bytes_array header_in_{};
  header current_;
  std::vector<std::byte> payload_;
  // Answers to write: a header and its body, sent together without being
  // copied into one buffer (a describe answer may be tens of MiB, and a
  // copy on the io thread would hold every ping behind it).
  struct frame {
    header_bytes_array head;
    std::vector<std::byte> body;
  };
  std::deque<frame> out_;
  std::size_t out_bytes_ = 0;   // bodies in out_
  std::size_t unanswered_ = 0;  // read, answer not yet written
  bool reading_ = false;
  bool writing_ = false;
  bool closing_ = false;
  bool closed_ = false;
};

void session::read_header() {
  if (closed_ || closing_) return;
  reading_ = true;
  asio::async_read(socket_, asio::buffer(header_in_),
                   [self = shared_from_this()](std::error_code ec, std::size_t) {
                     (void)FAULTLANE_FAILPOINT("rpc.session_read_done");
                     self->reading_ = false;
                     self->on_header(ec);
                   });
}

void session::on_header(const std::error_code& ec) {
  if (ec || closed_) return close();
  auto h = decode(header_in_, owner_->options.request_bytes_max);
  if (!h || h.value().type != kind::request) {
    owner_->metrics.malformed();
    return close();
  }
  current_ = h.value();
  payload_.assign(current_.payload_length, std::byte{0});
  reading_ = true;
  asio::async_read(socket_, asio::buffer(payload_),
                   [self = shared_from_this()](std::error_code ec2, std::size_t) {
                     self->reading_ = false;
                     self->on_payload(ec2);
                   });
}

void session::on_payload(const std::error_code& ec) {
  if (ec || closed_) return close();
  ++unanswered_;
  dispatch();
  maybe_resume_reading();
}

// Reads the next request unless this connection already holds its share:
// calls not yet answered, or answers not yet written (a client that sends
// and never reads is then pushed back by TCP instead of growing out_).
void session::maybe_resume_reading() {
  const auto& o = owner_->options;
  if (!reading_ && !closed_ && unanswered_ < o.unanswered_per_connection_max &&
      out_bytes_ < o.unwritten_bytes_per_connection_max) {
    read_header();
  }
}

void session::dispatch() {
  const std::string name(reinterpret_cast<const char*>(payload_.data()), current_.method_length);
  const auto id = current_.request_id;
  const auto* m = valid_method_name(name) ? owner_->find(name) : nullptr;
  const std::string metric_name = valid_method_name(name) ? name : "(invalid)";
  if (m == nullptr) {
    return respond(id, metric_name,
                   reply::failure(rpc_status::unknown_method,
                                  fmt::format("no method named {:?}", name.substr(0, 64))));
  }
  if (owner_->stopped.load(std::memory_order_acquire)) {
    return respond(id, name, reply::failure(rpc_status::shutting_down, "the service is stopping"));
  }
  if (m->where == placement::inline_on_io || !owner_->workers) {
    const auto started = clock_type::now();
    call c{std::span(payload_).subspan(current_.method_length), &owner_->stopped};
    auto r = run_handler(*m, c);
    owner_->metrics.handled(micros_since(started));
    return respond(id, name, std::move(r));
  }
  std::vector<std::byte> body(payload_.begin() + current_.method_length, payload_.end());
  auto job = [self = shared_from_this(), id, name, m, body = std::move(body),
              queued = clock_type::now()](bool cancelled) mutable {
    auto& owner = *self->owner_;
    if (cancelled) {
      return self->post_respond(
          id, std::move(name),
          reply::failure(rpc_status::cancelled, "the service stopped before the call ran"));
    }
    owner.metrics.waited(micros_since(queued));
    const auto started = clock_type::now();
    auto r = run_handler(*m, call{body, &owner.workers->stopping()});
    owner.metrics.handled(micros_since(started));
    self->post_respond(id, std::move(name), std::move(r));
  };
  switch (owner_->workers->try_push(std::move(job))) {
    case rpc_worker_pool::push_result::queued: return;
    case rpc_worker_pool::push_result::busy:
      owner_->metrics.busy_rejected();
      return respond(
          id, name,
          reply::failure(rpc_status::busy, fmt::format("the worker queue is full ({} calls); retry",
                                                       owner_->workers->queue_max())));
    case rpc_worker_pool::push_result::stopped:
      return respond(id, name,
                     reply::failure(rpc_status::shutting_down, "the service is stopping"));
  }
}

void session::post_respond(std::uint64_t request_id, std::string method, reply r) {
  FAULTLANE_PERTURB("rpc.respond");
  asio::post(owner_->pool.context(shard_),
             [self = shared_from_this(), request_id, method = std::move(method),
              r = std::move(r)]() mutable { self->respond(request_id, method, std::move(r)); });
}

void session::respond(std::uint64_t request_id, const std::string& method, reply r) {
  if (r.body.size() > owner_->options.response_bytes_max) {
    r = reply::failure(rpc_status::too_large,
                       fmt::format("the answer is {} bytes, over the {}-byte frame limit",
                                   r.body.size(), owner_->options.response_bytes_max));
  }
  owner_->metrics.answered(method, r.status);
  if (closed_) return;
  header h{kind::response, 0, r.status, request_id, static_cast<std::uint32_t>(r.body.size())};
  out_bytes_ += r.body.size();
  out_.push_back({encode(h), std::move(r.body)});
  write_next();
}

void session::write_next() {
  if (writing_ || closed_) return;
  if (out_.empty()) {
    if (closing_) close();
    return;
  }
  writing_ = true;
  const auto& next = out_.front();
  const std::array<asio::const_buffer, 2> buffers{asio::buffer(next.head), asio::buffer(next.body)};
  asio::async_write(socket_, buffers, [self = shared_from_this()](std::error_code ec, std::size_t) {
    self->writing_ = false;
    if (ec || self->closed_) return self->close();  // close() already dropped out_
    self->out_bytes_ -= self->out_.front().body.size();
    self->out_.pop_front();
    --self->unanswered_;
    self->maybe_resume_reading();
    self->write_next();
  });
}

void session::finish(bool gracefully) {
  closing_ = true;
  if (!gracefully || (!writing_ && out_.empty())) close();
}

void session::close() {
  if (closed_) return;
  closed_ = true;
  std::error_code ignored;
  socket_.shutdown(net::socket::shutdown_both, ignored);
  socket_.close(ignored);
  out_.clear();
  out_bytes_ = 0;
  owner_->session_closed(id_);
}

result<void> server::impl::listen() {
  std::error_code ec;
  auto ip = asio::ip::make_address(options.bind_address, ec);
  if (ec) {
    return error{status::invalid_argument,
                 fmt::format("rpc listen address {:?}: {}", options.bind_address, ec.message())};
  }
  ec = listener.listen(tcp::endpoint(ip, options.port));
  if (ec) {
    return error{
        status::connection_failed,
        fmt::format("rpc listen on {}:{}: {}", options.bind_address, options.port, ec.message())};
  }
  asio::post(pool.context(0), [this, owner = listener_owner()] { listener.start(owner); });
  return {};
}

// Out of descriptors or buffers: the loop waits, longer each time, then
// goes on. Every pending accept handler holds this impl (start(self)).
accept_hooks server::impl::listener_hooks() {
  return {
      .place =
          [this] {
            const auto shard = pool.next_shard();
            return accept_destination{pool.context(shard), shard};
          },
      .failed = [](const std::error_code&) {},
      .accepted = [this](net::socket s, std::size_t shard) { on_accept(std::move(s), shard); },
  };
}

void server::impl::on_accept(net::socket socket, std::size_t shard) {
  std::unique_lock lock(sessions_mutex);
  if (sessions.size() >= options.connections_max || stopped.load(std::memory_order_acquire)) {
    lock.unlock();
    std::error_code ignored;
    socket.close(ignored);  // over the bound, or stopping: closed before any byte
    return;
  }
  const auto id = next_session++;
  auto s = std::make_shared<session>(shared_from_this(), std::move(socket), shard, id);
  sessions.emplace(id, std::pair{shard, std::weak_ptr<session>(s)});
  {
    std::lock_guard held(holding->mutex);
    ++holding->sessions;
  }
  lock.unlock();
  metrics.accepted();
  asio::post(pool.context(shard), [s] { s->start(); });
}

const method_entry* server::impl::find(std::string_view name) const {
  std::shared_lock lock(methods_mutex);
  auto it = methods.find(name);
  return it == methods.end() ? nullptr : it->second.get();
}

void server::impl::session_closed(std::uint64_t id) {
  metrics.closed();
  {
    std::lock_guard lock(sessions_mutex);
    sessions.erase(id);
  }
  sessions_gone.notify_all();
}

// Keeps this impl alive while any of the accept loop's handlers holds it,
// and says so once the last one let go of it.
std::shared_ptr<void> server::impl::listener_owner() {
  struct release {
    std::shared_ptr<impl> owner;
    std::shared_ptr<holders> holding;
    void operator()(void*) {
      owner.reset();
      {
        std::lock_guard lock(holding->mutex);
        holding->listener = false;
      }
      holding->released.notify_all();
    }
  };
  {
    std::lock_guard lock(holding->mutex);
    holding->listener = true;
  }
  return {static_cast<void*>(this), release{shared_from_this(), holding}};
}

void server::impl::holders::session_gone() {
  {
    std::lock_guard lock(mutex);
    --sessions;
  }
  released.notify_all();
}

bool server::impl::holders::wait_until(clock_type::time_point deadline) {
  std::unique_lock lock(mutex);
  return released.wait_until(lock, deadline, [this] { return sessions == 0 && !listener; });
}

// Asks every session to finish on its shard, then waits for all to close
// and for every session object and accept handler to be gone.
bool server::impl::close_sessions(bool gracefully, clock_type::time_point deadline) {
  std::vector<std::pair<std::size_t, std::weak_ptr<session>>> all;
  {
    std::lock_guard lock(sessions_mutex);
    for (const auto& [id, entry] : sessions) all.push_back(entry);
  }
  for (auto& [shard, weak] : all) {
    asio::post(pool.context(shard), [weak = weak, gracefully] {
      if (auto s = weak.lock()) s->finish(gracefully);
    });
  }
  std::unique_lock lock(sessions_mutex);
  if (!sessions_gone.wait_until(lock, deadline, [this] { return sessions.empty(); })) return false;
  lock.unlock();
  return holding->wait_until(deadline);
}

result<std::unique_ptr<server>> server::start(io_pool& pool, const server_options& options) {
  FL_ASSERT(options.queue_max > 0);
  FL_ASSERT(options.unanswered_per_connection_max > 0);
  auto i = std::make_shared<impl>(pool, options);
  if (auto listening = i->listen(); !listening) return listening.error();
  // new-ok: the constructor is private to start(), which owns the result at once.
  return std::unique_ptr<server>(new server(std::move(i)));
}

server::server(std::shared_ptr<impl> i) : impl_(std::move(i)) {}

server::~server() {
  if (!impl_) return;
  auto& pool = impl_->pool;
  if (!pool.stopped() && !pool.on_pool_thread()) {
    (void)stop(clock_type::now() + std::chrono::seconds(1));
  } else {
    // The io threads are gone (or this is one): nothing more can be read
    // or answered; queued calls are dropped as cancelled.
    impl_->stopped.store(true, std::memory_order_release);
  }
  // Whatever stop() returned, no handler may run once the owner is gone:
  // what it reads (a transport's registry, say) goes next.
  if (impl_->workers) (void)impl_->workers->stop(clock_type::time_point::max());
}

void server::add(std::string name, placement where, handler h) {
  FL_ASSERT(valid_method_name(name));
  FL_ASSERT(h != nullptr);
  std::unique_lock lock(impl_->methods_mutex);
  auto [it, added] = impl_->methods.emplace(
      std::move(name), std::make_unique<method_entry>(method_entry{where, std::move(h)}));
  FL_ASSERT(added);
}

endpoint server::local_endpoint() const {
  std::error_code ec;
  auto ep = impl_->listener.local_endpoint(ec);
  return {impl_->options.bind_address, ec ? std::uint16_t{0} : ep.port()};
}

metrics_snapshot server::metrics() const {
  auto m = impl_->metrics.snapshot();
  m.workers = impl_->workers ? impl_->workers->threads() : 0;
  m.queue_max = impl_->workers ? impl_->workers->queue_max() : 0;
  m.queue_depth = impl_->workers ? impl_->workers->depth() : 0;
  return m;
}

result<void> server::stop(clock_type::time_point deadline) {
  FL_ASSERT(!impl_->pool.on_pool_thread());
  std::lock_guard guard(impl_->stop_mutex);
  if (impl_->stop_done) return impl_->stop_result;
  impl_->stop_done = true;
  impl_->stopped.store(true, std::memory_order_release);
  auto closed = std::make_shared<std::promise<void>>();
  auto acceptor_closed = closed->get_future();
  // The handler lets go of the impl before it signals: once stop()
  // returns, nothing but the server holds it.
  asio::post(impl_->pool.context(0), [i = impl_, closed]() mutable {
    i->listener.close();
    i.reset();
    closed->set_value();
  });
  std::vector<std::string> late;
  if (!net::wait_ready(acceptor_closed, deadline)) {
    late.emplace_back("the acceptor's io thread did not answer");
  }
  if (impl_->workers && !impl_->workers->stop(deadline)) {
    late.push_back(fmt::format("{} handler(s) still running", impl_->workers->running()));
  }
  // Answers already queued (the cancelled calls' among them) go out first;
  // what is still open at three quarters of the time left is cut.
  const auto now = clock_type::now();
  const auto graceful_until = now < deadline ? now + (deadline - now) * 3 / 4 : now;
  if (!impl_->close_sessions(true, graceful_until) && !impl_->close_sessions(false, deadline)) {
    late.emplace_back("connections still open");
  }
  if (!late.empty()) {
    impl_->stop_result =
        error{status::timeout, fmt::format("rpc server stop: {}", fmt::join(late, "; "))};
  }
  return impl_->stop_result;
}

}  // namespace faultlane::rpc
