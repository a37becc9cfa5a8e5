// The piece of runtime.hpp that is not a template: bounded rounds over the
// shards.
#include "runtime/runtime.hpp"

#include <condition_variable>
#include <mutex>

#include "faultlane/core/net.hpp"

namespace faultlane::detail {

bool run_on_every_shard(runtime& rt, std::function<void(std::size_t)> fn,
                        net::clock::time_point deadline) {
  FL_ASSERT(!rt.pool->on_pool_thread());
  // Shared with the posted handlers, which may outlive this call.
  struct round {
    std::function<void(std::size_t)> fn;
    std::mutex mutex;
    net::condition_variable done;
    std::size_t left = 0;
  };
  auto r = std::make_shared<round>();
  r->fn = std::move(fn);
  r->left = rt.pool->size();
  for (std::size_t shard = 0; shard < rt.pool->size(); ++shard) {
    asio::post(rt.pool->context(shard), [&rt, r, shard] {
      run_guarded(rt, [&] { r->fn(shard); });
      std::lock_guard lock(r->mutex);
      if (--r->left == 0) r->done.notify_all();
    });
  }
  std::unique_lock lock(r->mutex);
  return r->done.wait_until(lock, deadline, [&] { return r->left == 0; });
}

}  // namespace faultlane::detail
