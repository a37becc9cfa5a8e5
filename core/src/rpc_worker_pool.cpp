// rpc_worker_pool; see rpc_worker_pool.hpp.
#include "rpc_worker_pool.hpp"

#include <pthread.h>
#include <sys/resource.h>
#include <unistd.h>

#include <string>

#include "faultlane/core/assert.hpp"
#include "faultlane/core/failpoint.hpp"

namespace faultlane::rpc {

namespace {
constexpr int worker_nice = 10;
}  // namespace

rpc_worker_pool::rpc_worker_pool(std::size_t threads, std::size_t queue_max)
    : queue_max_(queue_max) {
  FL_ASSERT(threads > 0);
  FL_ASSERT(queue_max > 0);
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i] {
      const auto name = "fl-rpc-" + std::to_string(i);
      pthread_setname_np(pthread_self(), name.c_str());
      // Below the io threads: on a machine with fewer cores than busy
      // threads, a ping's io thread then preempts a long scan at once
      // instead of waiting out its time slice. Linux applies the nice value
      // to this thread only; raising it needs no privilege. A failure (some
      // other kernel) leaves the default, which is only slower.
      (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), worker_nice);
      run();
    });
  }
}

rpc_worker_pool::~rpc_worker_pool() {
  (void)stop(std::chrono::steady_clock::now());
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  work_.notify_all();
  for (auto& t : threads_) {
    if (!t.joinable()) continue;
    // The last job of a server that stopped late may release the server,
    // and this pool with it, on a worker: that thread cannot join itself,
    // and returns from run() right after (the queue is closed and empty).
    if (t.get_id() == std::this_thread::get_id()) {
      t.detach();
    } else {
      t.join();
    }
  }
}

rpc_worker_pool::push_result rpc_worker_pool::try_push(job j) {
  {
    std::lock_guard lock(mutex_);
    if (closed_) return push_result::stopped;
    if (queue_.size() >= queue_max_) return push_result::busy;
    queue_.push_back(std::move(j));
  }
  FAULTLANE_PERTURB("rpc.queued");
  work_.notify_one();
  return push_result::queued;
}

void rpc_worker_pool::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [this] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closed, nothing left to run
    auto j = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    j(false);
    j = nullptr;  // whatever the job holds goes before it counts as finished
    lock.lock();
    --running_;
    idle_.notify_all();
  }
}

bool rpc_worker_pool::stop(std::chrono::steady_clock::time_point deadline) {
  std::deque<job> cancelled;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    cancelled.swap(queue_);
  }
  stopping_.store(true, std::memory_order_release);
  work_.notify_all();
  for (auto& j : cancelled) j(true);
  cancelled.clear();
  bool idle = false;
  {
    std::unique_lock lock(mutex_);
    idle = idle_.wait_until(lock, deadline, [this] { return running_ == 0; });
  }
  if (!idle) return false;
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  return true;
}

std::size_t rpc_worker_pool::depth() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

std::size_t rpc_worker_pool::running() const {
  std::lock_guard lock(mutex_);
  return running_;
}

}  // namespace faultlane::rpc
