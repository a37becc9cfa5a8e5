// registry: the buffers a transport exposes, and the leases that keep them
// alive while remote work touches them.
//
// A registration id is a per-registry random namespace (64 bits from the OS)
// XORed with a monotonic sequence. A restarted process draws a new namespace,
// so an id from an earlier incarnation is rejected as stale instead of
// aliasing a new buffer. Id 0 is never issued.
//
// Every remote access goes through acquire(): it validates id, permission
// and range (overflow-safe) and returns a move-only lease that pins the
// buffer until it is destroyed. unregister_buffer() hides the buffer from new
// work first, then waits for the leases already handed out.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <map>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "faultlane/core/limits.hpp"
#include "faultlane/core/status.hpp"

namespace faultlane {

using registration_id = std::uint64_t;

enum class permission : std::uint8_t {
  local_only,         // never advertised; every remote access is denied
  remote_read,        // peers may READ
  remote_read_write,  // peers may READ and WRITE
};

enum class access : std::uint8_t { read, write };

std::string_view to_string(permission p) noexcept;
std::optional<permission> parse_permission(std::string_view text) noexcept;

struct registry_options {
  // Tests pin the namespace to build deterministic or deliberately colliding
  // incarnations; production leaves it empty and draws it from getrandom().
  std::optional<std::uint64_t> namespace_value;
  std::uint64_t sequence_max = limits::registration_sequence_max;
};

struct registration_info {
  registration_id id = 0;
  std::byte* base = nullptr;
  std::size_t length = 0;
  permission perm = permission::local_only;
  std::string name;  // empty: unnamed
};

class registry;

namespace detail {
struct registry_entry;
}

// Pins one validated range of a registered buffer. Move-only; the buffer
// cannot be unregistered (or the registry closed) while a lease is alive.
class lease {
 public:
  lease() = default;
  lease(lease&& other) noexcept;
  lease& operator=(lease&& other) noexcept;
  lease(const lease&) = delete;
  lease& operator=(const lease&) = delete;
  ~lease() { release(); }

  std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  explicit operator bool() const noexcept { return entry_ != nullptr; }
  void release() noexcept;

 private:
  friend class registry;
  lease(registry* owner, std::shared_ptr<detail::registry_entry> entry, std::byte* data,
        std::size_t size) noexcept;

  registry* owner_ = nullptr;
  std::shared_ptr<detail::registry_entry> entry_;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

class registry {
 public:
  explicit registry(registry_options options = {});
  registry(const registry&) = delete;
  registry& operator=(const registry&) = delete;
  // Closes (waiting for every lease) if the owner did not.
  ~registry();

  // The id, the buffer and its name become visible together, in one step:
  // no scan sees the id without its name.
  result<registration_id> register_buffer(void* base, std::size_t length, permission perm,
                                          std::string name = {});

  // Hides the buffer from new work, then waits for its leases. The timed
  // form returns status::timeout if leases remain; the buffer stays hidden
  // and a later call waits again.
  result<void> unregister_buffer(registration_id id);
  result<void> unregister_buffer(registration_id id, std::chrono::milliseconds timeout);

  result<lease> acquire(registration_id id, std::uint64_t offset, std::uint64_t length,
                        access kind);

  // Registrations peers may use (local_only excluded), in the order they
  // were made, a page at a time: those made after `after` (0: from the
  // first), at most `max` of them (at most limits::registration_page_max).
  // A scan passes the last id it got to take the next page; the lock is held
  // for one page only, so a scan of a million names never holds
  // registration up for longer than one page's copying. Every registration
  // made before the scan ends and still there is in it (a new one sorts
  // after the cursor, ids would not); one removed during it may be missing.
  std::vector<registration_info> advertised_page(registration_id after, std::size_t max) const;
  // Every page.
  std::vector<registration_info> advertised() const;

  // Shutdown: rejects new registrations and leases, hides every buffer and
  // waits for all leases. Returns status::timeout if leases remain.
  result<void> close(std::chrono::milliseconds timeout = std::chrono::milliseconds::max());

  std::uint64_t namespace_value() const noexcept { return namespace_; }
  std::size_t active_leases() const noexcept {
    return active_leases_.load(std::memory_order_acquire);
  }
  std::size_t registration_count() const;

 private:
  friend class lease;
  using entry_ptr = std::shared_ptr<detail::registry_entry>;

  result<void> wait_retired(const entry_ptr& entry, registration_id id,
                            std::chrono::milliseconds timeout);
  void lease_released(detail::registry_entry& entry) noexcept;

  const std::uint64_t namespace_;
  const std::uint64_t sequence_max_;
  mutable std::shared_mutex mutex_;
  std::uint64_t sequence_ = 0;
  bool closed_ = false;
  std::unordered_map<registration_id, entry_ptr> live_;
  // The live entries peers may see (local_only left out), by sequence
  // number (id ^ namespace_), for the paged scans; acquire() looks up live_.
  std::map<std::uint64_t, entry_ptr> advertised_;
  std::unordered_map<registration_id, entry_ptr> retiring_;
  std::atomic<std::size_t> active_leases_{0};
};

}  // namespace faultlane
