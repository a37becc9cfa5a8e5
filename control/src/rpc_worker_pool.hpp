// rpc_worker_pool: the threads and the bounded queue that run the control
// plane's slow handlers, so an io thread never waits for one.
//
// A job runs exactly once: job(false) on a worker, or job(true) on the
// thread that stops the pool if it never started. The queue holds at most
// queue_max jobs that have not started; past that try_push() answers busy
// at once and the caller answers its client (nothing waits unboundedly).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "faultlane/base/unique_function.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane::rpc {

class rpc_worker_pool {
 public:
  using job = unique_function<void(bool cancelled)>;
  enum class push_result { queued, busy, stopped };

  rpc_worker_pool(std::size_t threads, std::size_t queue_max);
  // Stops (cancelling what is queued) and waits for running jobs, however
  // long they take: handlers watch stopping(). Safe on a worker thread (a
  // job that held the pool's last owner): that thread is left to finish.
  ~rpc_worker_pool();
  rpc_worker_pool(const rpc_worker_pool&) = delete;
  rpc_worker_pool& operator=(const rpc_worker_pool&) = delete;

  push_result try_push(job j);

  // Takes no more jobs, runs every queued job as job(true) on this thread,
  // raises stopping(), and waits until `deadline` for running jobs. True
  // when no job runs any more.
  bool stop(net::clock::time_point deadline);

  // Raised by stop(): a long handler checks it and gives up early.
  const std::atomic<bool>& stopping() const noexcept { return state_->stopping; }
  std::size_t depth() const;    // queued, not started
  std::size_t running() const;  // started, not finished
  std::size_t threads() const noexcept { return threads_.size(); }
  std::size_t queue_max() const noexcept { return queue_max_; }

 private:
  // Shared with every worker thread, so a worker that outlives the pool
  // (see the destructor) still has what it touches.
  struct state {
    std::mutex mutex;
    net::condition_variable work;  // a job arrived, or closed
    net::condition_variable idle;  // a job finished
    std::deque<job> queue;
    std::size_t running = 0;
    bool closed = false;
    std::atomic<bool> stopping{false};
  };
  static void run(const std::shared_ptr<state>& s);

  const std::size_t queue_max_;
  std::shared_ptr<state> state_;
  std::vector<net::worker_thread> threads_;
};

}  // namespace faultlane::rpc
