// io_pool: the event loops the core runs on.
//
// N shards, each one asio::io_context run by exactly one thread (named
// fl-io-<i>) and kept alive by a work guard. Everything that owns a socket
// lives on one shard for its whole life, so Asio's per-object serialization
// holds without strands; crossing shards is asio::post/dispatch only.
//
// Sockets are placed round-robin (next_shard()), so one hot peer still
// spreads over several cores; a lane's or session's socket then stays on its
// shard for life.
#pragma once

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "faultlane/core/net.hpp"
#include "faultlane/core/poll_window.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane {

class io_pool {
 public:
  // Validates worker_count against [worker_count_min, worker_count_max]
  // and starts the threads.
  //
  // busy_poll_us > 0: before blocking in the kernel, each io thread keeps
  // polling its io_context for that long after its last event. It trades
  // CPU for latency (a wake-up costs several microseconds); 0 blocks at
  // once. The thread stays inside one run() either way: polling is a
  // handler that posts itself while the window is open, so Asio's
  // per-thread handler memory is kept and reused, as without polling.
  static result<std::unique_ptr<io_pool>> create(std::size_t worker_count,
                                                 std::uint32_t busy_poll_us = 0);

  io_pool(const io_pool&) = delete;
  io_pool& operator=(const io_pool&) = delete;
  ~io_pool();

  std::size_t size() const noexcept { return shards_.size(); }
  asio::io_context& context(std::size_t shard) noexcept;

  std::size_t next_shard() noexcept;

  // True on one of this pool's threads; shard index through `shard`.
  bool on_pool_thread(std::size_t* shard = nullptr) const noexcept;

  // On a busy-polling shard's thread: an event was handled, so the thread
  // polls without blocking for busy_poll_us from now (the transfer core's
  // handlers call it through run_guarded: its socket, timer and hand-off
  // handlers and the user's callbacks). A no-op elsewhere.
  static void handler_ran() noexcept;

  // Stops every shard and joins every thread. Handlers still queued never
  // run; they are destroyed with the pool, every shard's before any shard's
  // context goes (a handler queued on one shard may own an object bound to
  // another's: an rpc answer holds its session, which holds the server's
  // acceptor on shard 0). Idempotent. Must not be called from a pool thread
  // (it would join itself).
  void stop();
  bool stopped() const noexcept { return stopped_.load(std::memory_order_acquire); }

 private:
  // An io_context whose queued handlers the pool can destroy while every
  // other shard's context still exists (execution_context::shutdown,
  // which its destructor would run anyway, and which may run twice).
  struct shard_context : asio::io_context {
    using asio::io_context::io_context;
    using asio::execution_context::shutdown;
  };
  struct shard {
    explicit shard(std::uint32_t busy_poll_us)
        : polling(context, std::chrono::microseconds(busy_poll_us)) {}
    shard_context context{1};
    asio::executor_work_guard<asio::io_context::executor_type> guard{context.get_executor()};
    net::thread thread;
    poll_window polling;  // the shard's thread only
  };

  io_pool(std::size_t worker_count, std::uint32_t busy_poll_us);
  void run_shard(std::size_t index);

  std::vector<std::unique_ptr<shard>> shards_;
  const std::uint32_t busy_poll_us_;
  std::atomic<std::uint64_t> next_{0};
  std::atomic<bool> stopped_{false};
  std::mutex stop_mutex_;
};

}  // namespace faultlane
