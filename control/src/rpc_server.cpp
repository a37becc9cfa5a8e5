// The control plane's service side: the listener, the registry of
// methods and the ordered stop; see rpc_server.hpp, and
// rpc_server_state.hpp for the threads and who keeps whom alive.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <asio/ip/tcp.hpp>
#include <condition_variable>
#include <future>

#include "faultlane/core/failpoint.hpp"
#include "rpc_server_state.hpp"

namespace faultlane::rpc {

using asio::ip::tcp;

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

// Any thread, any time: the port listen() bound (set once, before the
// server is handed out), kept after stop(): a caller handed it then is
// normally refused at connect, as by a peer that went away, not told the
// address is malformed (the port is free again, and another listener may
// take it). Not the acceptor's local_endpoint(): that is for its io
// thread, and read beside stop() closing it there it raced (TSan, in the
// scenario control_queue_full).
endpoint server::local_endpoint() const {
  return {impl_->options.bind_address, impl_->listener.port()};
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
