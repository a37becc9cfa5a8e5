// rpc_worker_pool; see rpc_worker_pool.hpp.
#include "rpc_worker_pool.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>

#include "faultlane/base/assert.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::rpc {

namespace {
// Below the io threads: on a machine with fewer cores than busy threads, a
// ping's io thread then preempts a long scan at once instead of waiting out
// its time slice (docs/benchmarks.md, "Ping while the pool is saturated").
constexpr int worker_nice = 10;
}  // namespace

rpc_worker_pool::rpc_worker_pool(std::size_t threads, std::size_t queue_max)
    : queue_max_(queue_max), state_(std::make_shared<state>()) {
  FL_ASSERT(threads > 0);
  FL_ASSERT(queue_max > 0);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([s = state_, name = "fl-rpc-" + std::to_string(i)] {
      if constexpr (!net::simulated) {  // a fiber on the world is no OS thread
        pthread_setname_np(pthread_self(), name.c_str());
        // Linux applies the nice value to this thread only; raising it needs
        // no privilege. A failure leaves the default, which is only slower.
        (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), worker_nice);
      }
      run(s);
    });
  }
}

rpc_worker_pool::~rpc_worker_pool() {
  (void)stop(net::clock::time_point::max());
  for (auto& t : threads_) {
    if (!t.joinable()) continue;
    // The last job of a server may release the server, and this pool with
    // it, on a worker: that thread cannot join itself. It touches only the
    // shared state from here on, and returns (the queue is closed).
    if (t.get_id() == net::this_worker_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

rpc_worker_pool::push_result rpc_worker_pool::try_push(job j) {
  {
    std::lock_guard lock(state_->mutex);
    if (state_->closed) return push_result::stopped;
    if (state_->queue.size() >= queue_max_) return push_result::busy;
    state_->queue.push_back(std::move(j));
  }
  FAULTLANE_PERTURB("rpc.queued");
  state_->work.notify_one();
  return push_result::queued;
}

void rpc_worker_pool::run(const std::shared_ptr<state>& s) {
  std::unique_lock lock(s->mutex);
  for (;;) {
    s->work.wait(lock, [&] { return s->closed || !s->queue.empty(); });
    if (s->queue.empty()) return;  // closed, nothing left to run
    auto j = std::move(s->queue.front());
    s->queue.pop_front();
    ++s->running;
    lock.unlock();
    j(false);
    j = nullptr;  // what the job holds goes before it counts as finished
    lock.lock();
    --s->running;
    s->idle.notify_all();
  }
}

bool rpc_worker_pool::stop(net::clock::time_point deadline) {
  std::deque<job> cancelled;
  {
    std::lock_guard lock(state_->mutex);
    state_->closed = true;
    cancelled.swap(state_->queue);
  }
  state_->stopping.store(true, std::memory_order_release);
  state_->work.notify_all();
  for (auto& j : cancelled) j(true);
  cancelled.clear();
  std::unique_lock lock(state_->mutex);
  // A worker releasing the pool's owner waits here for itself: count it out.
  const bool on_worker = [&] {
    for (const auto& t : threads_) {
      if (t.get_id() == net::this_worker_id()) return true;
    }
    return false;
  }();
  const std::size_t self = on_worker ? 1 : 0;
  auto done = [&] { return state_->running <= self; };
  if (deadline == net::clock::time_point::max()) {
    state_->idle.wait(lock, done);
    return true;
  }
  return state_->idle.wait_until(lock, deadline, done);
}

std::size_t rpc_worker_pool::depth() const {
  std::lock_guard lock(state_->mutex);
  return state_->queue.size();
}

std::size_t rpc_worker_pool::running() const {
  std::lock_guard lock(state_->mutex);
  return state_->running;
}

}  // namespace faultlane::rpc
