// io_pool: N io_contexts, one named thread each; see io_pool.hpp.
#include "faultlane/core/io_pool.hpp"

#include <pthread.h>

#include <asio/post.hpp>
#include <asio/steady_timer.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/net.hpp"

namespace faultlane {
namespace {

thread_local const io_pool* current_pool = nullptr;
thread_local std::size_t current_shard = 0;
// Set on a shard's thread when its pool busy-polls.
thread_local io_pool* polling_pool = nullptr;

}  // namespace

result<std::unique_ptr<io_pool>> io_pool::create(std::size_t worker_count,
                                                 std::uint32_t busy_poll_us) {
  if (worker_count < limits::worker_count_min || worker_count > limits::worker_count_max) {
    return error{status::invalid_argument, "worker_count must be in [" +
                                               std::to_string(limits::worker_count_min) + ", " +
                                               std::to_string(limits::worker_count_max) +
                                               "], got " + std::to_string(worker_count)};
  }
  if (busy_poll_us > limits::busy_poll_us_max) {
    return error{status::invalid_argument, "busy_poll_us must be at most " +
                                               std::to_string(limits::busy_poll_us_max) + ", got " +
                                               std::to_string(busy_poll_us)};
  }
  // new-ok: the constructor is private to create(), which owns the result at once.
  return std::unique_ptr<io_pool>(new io_pool(worker_count, busy_poll_us));
}

io_pool::io_pool(std::size_t worker_count, std::uint32_t busy_poll_us)
    : busy_poll_us_(busy_poll_us) {
  FL_ASSERT(worker_count >= limits::worker_count_min);
  FL_ASSERT(worker_count <= limits::worker_count_max);
  shards_.reserve(worker_count);
  for (std::size_t i = 0; i < worker_count; ++i) {
    shards_.push_back(std::make_unique<shard>(busy_poll_us));
    // Asio builds a context's reactor (an epoll, an eventfd and a timerfd)
    // on its first I/O object. Building it now means a socket created
    // later, when the process is out of descriptors, fails as a socket
    // (an error code) instead of throwing from inside a handler.
    net::timer reactor_now(shards_.back()->context);
  }
  if constexpr (net::simulated) {
    // No threads: the world runs each shard's context, one handler a step.
    for (std::size_t i = 0; i < worker_count; ++i) {
      net::world_runs(shards_[i]->context, "fl-io-" + std::to_string(i));
    }
    return;
  }
  // Threads start only once every shard exists, so a handler that posts to
  // another shard never sees a half-built pool.
  for (std::size_t i = 0; i < worker_count; ++i) {
    shards_[i]->thread = net::thread([this, i] { run_shard(i); });
  }
}

io_pool::~io_pool() {
  stop();
  // Every shard's queued handlers go while every context still exists;
  // then the contexts, in any order.
  for (auto& s : shards_) s->context.shutdown();
}

void io_pool::run_shard(std::size_t index) {
  FL_ASSERT(index < shards_.size());
  FL_ASSERT(current_pool == nullptr);  // one pool per thread, one thread per shard
  std::string name = "fl-io-" + std::to_string(index);
  pthread_setname_np(pthread_self(), name.c_str());
  current_pool = this;
  current_shard = index;
  // Handlers report their own failures (the transport wraps each one); an
  // exception reaching here is a bug in a handler that was not wrapped.
  //
  // Busy polling stays inside this one run(): a thread that called poll()
  // or run_one() in a loop would leave Asio's per-thread handler memory at
  // every call, and allocate for every socket operation.
  if (busy_poll_us_ > 0) polling_pool = this;
  shards_[index]->context.run();
  polling_pool = nullptr;
  current_pool = nullptr;
}

void io_pool::handler_ran() noexcept {
  io_pool* pool = polling_pool;
  if (pool == nullptr) return;
  pool->shards_[current_shard]->polling.event();
}

asio::io_context& io_pool::context(std::size_t shard_index) noexcept {
  FL_ASSERT(shard_index < shards_.size());
  return shards_[shard_index]->context;
}

std::size_t io_pool::next_shard() noexcept {
  FL_ASSERT(!shards_.empty());
  return static_cast<std::size_t>(next_.fetch_add(1, std::memory_order_relaxed) % shards_.size());
}

bool io_pool::on_pool_thread(std::size_t* shard_index) const noexcept {
  if constexpr (net::simulated) {
    // One thread runs every context: "on a shard" means inside its handler.
    for (std::size_t i = 0; i < shards_.size(); ++i) {
      if (shards_[i]->context.get_executor().running_in_this_thread()) {
        if (shard_index != nullptr) *shard_index = i;
        return true;
      }
    }
    return false;
  }
  if (current_pool != this) return false;
  if (shard_index != nullptr) *shard_index = current_shard;
  return true;
}

void io_pool::stop() {
  FL_ASSERT(!on_pool_thread());
  std::lock_guard lock(stop_mutex_);
  if (stopped_.load(std::memory_order_relaxed)) return;
  for (auto& s : shards_) {
    s->guard.reset();
    s->context.stop();
    if constexpr (net::simulated) net::world_stops_running(s->context);
  }
  for (auto& s : shards_) {
    if (s->thread.joinable()) s->thread.join();
    FL_ASSERT(!s->thread.joinable() && s->context.stopped());
  }
  stopped_.store(true, std::memory_order_release);
}

}  // namespace faultlane
