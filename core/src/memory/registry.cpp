// registry and lease; see registry.hpp.
#include "faultlane/core/registry.hpp"

#include "faultlane/base/probe.hpp"
#include "faultlane/core/failpoint.hpp"
#include "faultlane/core/net.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>

namespace faultlane {

namespace detail {
struct registry_entry {
  registration_id id = 0;
  std::byte* base = nullptr;
  std::size_t length = 0;
  permission perm = permission::local_only;
  std::string name;
  // Leases are counted under `mutex` so that a waiter in unregister/close
  // can never miss the wake-up of the last release.
  std::mutex mutex;
  net::condition_variable retired;
  std::size_t leases = 0;
};
}  // namespace detail

std::string_view to_string(permission p) noexcept {
  switch (p) {
    case permission::local_only: return "local_only";
    case permission::remote_read: return "remote_read";
    case permission::remote_read_write: return "remote_read_write";
  }
  return "unknown";
}

std::optional<permission> parse_permission(std::string_view text) noexcept {
  for (auto p : {permission::local_only, permission::remote_read, permission::remote_read_write}) {
    if (text == to_string(p)) return p;
  }
  return std::nullopt;
}

// --- lease -------------------------------------------------------------------

lease::lease(registry* owner, std::shared_ptr<detail::registry_entry> entry, std::byte* data,
             std::size_t size) noexcept
    : owner_(owner), entry_(std::move(entry)), data_(data), size_(size) {
  FL_ASSERT(owner_ != nullptr && entry_ != nullptr);
  FL_ASSERT(data_ >= entry_->base && size_ <= entry_->length);  // within its registration
}

lease::lease(lease&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      entry_(std::move(other.entry_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {
  FL_ASSERT(!other.entry_ && other.owner_ == nullptr);  // a moved-from lease holds nothing
}

lease& lease::operator=(lease&& other) noexcept {
  if (this != &other) {
    release();
    owner_ = std::exchange(other.owner_, nullptr);
    entry_ = std::move(other.entry_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  FL_ASSERT(!other.entry_ || this == &other);
  return *this;
}

void lease::release() noexcept {
  if (!entry_) return;
  FL_ASSERT(owner_ != nullptr);
  FAULTLANE_PERTURB("lease.release");
  owner_->lease_released(*entry_);
  entry_.reset();
  owner_ = nullptr;
  data_ = nullptr;
  size_ = 0;
}

// --- registry ----------------------------------------------------------------

registry::registry(registry_options options)
    : namespace_(options.namespace_value.value_or(net::os_random_u64())),
      sequence_max_(options.sequence_max) {
  FL_ASSERT(sequence_max_ > 0);
  FL_ASSERT(sequence_max_ <= limits::registration_sequence_max);
}

registry::~registry() {
  auto closed = close();
  // Destroying a registry whose leases are still alive would let them
  // touch freed memory; that is a lifetime bug in the owner.
  FL_ASSERT(closed.ok());
  FL_ASSERT(active_leases() == 0);
}

result<registration_id> registry::register_buffer(void* base, std::size_t length, permission perm,
                                                  std::string name) {
  if (base == nullptr || length == 0) {
    return error{status::invalid_argument, "register_buffer needs a non-null buffer of length > 0"};
  }
  auto address = reinterpret_cast<std::uintptr_t>(base);
  if (length > std::numeric_limits<std::uintptr_t>::max() - address) {
    return error{status::invalid_argument, "register_buffer range wraps the address space"};
  }
  std::unique_lock lock(mutex_);
  if (closed_) return error{status::shutting_down, "registry is closed"};
  registration_id id = 0;
  do {
    if (sequence_ >= sequence_max_) {
      return error{status::sequence_exhausted,
                   "registration sequence exhausted after " + std::to_string(sequence_) + " ids"};
    }
    id = namespace_ ^ ++sequence_;
  } while (id == 0);  // the one sequence value that would map to 0 is skipped
  auto entry = std::make_shared<detail::registry_entry>();
  entry->id = id;
  entry->base = static_cast<std::byte*>(base);
  entry->length = length;
  entry->perm = perm;
  entry->name = std::move(name);
  if (perm != permission::local_only) advertised_.emplace(sequence_, entry);
  const bool inserted = live_.emplace(id, std::move(entry)).second;
  FL_ASSERT(inserted);
  FL_ASSERT(id != 0);
  lock.unlock();
  // Where a second step once stored the name: a scan paused here must
  // already see both (transport_control_test).
  (void)FAULTLANE_FAILPOINT("registry.after_publish");
  return id;
}

result<void> registry::unregister_buffer(registration_id id) {
  return unregister_buffer(id, std::chrono::milliseconds::max());
}

result<void> registry::unregister_buffer(registration_id id, std::chrono::milliseconds timeout) {
  entry_ptr entry;
  {
    std::unique_lock lock(mutex_);
    if (auto it = live_.find(id); it != live_.end()) {
      entry = it->second;
      live_.erase(it);
      advertised_.erase(id ^ namespace_);  // its sequence number
      retiring_.emplace(id, entry);
    } else if (auto r = retiring_.find(id); r != retiring_.end()) {
      entry = r->second;  // an earlier timed-out unregister: wait again
    } else {
      return error{status::stale_registration, "unknown registration id"};
    }
    FL_ASSERT(!live_.count(id));  // hidden from new requests before the wait
  }
  FL_ASSERT(entry != nullptr && entry->id == id);
  FAULTLANE_PERTURB("unregister.hide");
  return wait_retired(entry, id, timeout);
}

result<void> registry::wait_retired(const entry_ptr& entry, registration_id id,
                                    std::chrono::milliseconds timeout) {
  FL_ASSERT(timeout.count() >= 0);
  {
    std::unique_lock lock(entry->mutex);
    auto drained = [&] { return entry->leases == 0; };
    FAULTLANE_PROBE_IF(!drained(), unregister_waits_for_leases);
    if (timeout == std::chrono::milliseconds::max()) {
      entry->retired.wait(lock, drained);
    } else if (!entry->retired.wait_for(lock, timeout, drained)) {
      return error{status::timeout, std::to_string(entry->leases) +
                                        " lease(s) still held on registration after timeout"};
    }
  }
  std::unique_lock lock(mutex_);
  retiring_.erase(id);
  FL_ASSERT(!live_.count(id));
  return {};
}

result<lease> registry::acquire(registration_id id, std::uint64_t offset, std::uint64_t length,
                                access kind) {
  std::shared_lock lock(mutex_);
  if (closed_) {
    FAULTLANE_PROBE(acquire_after_registry_closed);
    return error{status::shutting_down, "registry is closed"};
  }
  auto it = live_.find(id);
  if (it == live_.end()) {
    FAULTLANE_PROBE(acquire_of_unknown_id);
    return error{status::stale_registration, "unknown registration id"};
  }
  const entry_ptr& entry = it->second;
  bool allowed = kind == access::read ? entry->perm != permission::local_only
                                      : entry->perm == permission::remote_read_write;
  if (!allowed) {
    return error{status::permission_denied,
                 std::string("registration is ") + std::string(to_string(entry->perm))};
  }
  // Overflow-safe: offset + length is never computed.
  if (length == 0 || offset > entry->length || length > entry->length - offset) {
    return error{status::range_rejected, "range [" + std::to_string(offset) + ", +" +
                                             std::to_string(length) + ") outside registration of " +
                                             std::to_string(entry->length) + " bytes"};
  }
  {
    std::lock_guard entry_lock(entry->mutex);
    ++entry->leases;
  }
  active_leases_.fetch_add(1, std::memory_order_acq_rel);
  FL_ASSERT(offset + length <= entry->length);  // checked above without overflow
  return lease(this, entry, entry->base + offset, static_cast<std::size_t>(length));
}

void registry::lease_released(detail::registry_entry& entry) noexcept {
  const auto before = active_leases_.fetch_sub(1, std::memory_order_acq_rel);
  FL_ASSERT(before > 0);
  std::lock_guard lock(entry.mutex);
  FL_ASSERT(entry.leases > 0);
  if (--entry.leases == 0) entry.retired.notify_all();
}

std::vector<registration_info> registry::advertised_page(registration_id after,
                                                         std::size_t max) const {
  max = std::min(max, limits::registration_page_max);
  std::vector<registration_info> out;
  out.reserve(max);
  std::shared_lock lock(mutex_);
  // The cursor is the last id a page gave; pages run in sequence order.
  const std::uint64_t after_sequence = after == 0 ? 0 : after ^ namespace_;
  for (auto it = advertised_.upper_bound(after_sequence);
       it != advertised_.end() && out.size() < max; ++it) {
    const auto& entry = *it->second;
    FL_ASSERT((entry.id ^ namespace_) == it->first && entry.length > 0 &&
              entry.perm != permission::local_only);
    out.push_back({entry.id, entry.base, entry.length, entry.perm, entry.name});
  }
  return out;
}

std::vector<registration_info> registry::advertised() const {
  std::vector<registration_info> out;
  registration_id after = 0;
  while (true) {
    auto page = advertised_page(after, limits::registration_page_max);
    if (page.empty()) return out;
    after = page.back().id;
    std::move(page.begin(), page.end(), std::back_inserter(out));
  }
}

result<void> registry::close(std::chrono::milliseconds timeout) {
  std::vector<std::pair<registration_id, entry_ptr>> pending;
  {
    std::unique_lock lock(mutex_);
    closed_ = true;
    for (auto& [id, entry] : live_) retiring_.emplace(id, entry);
    live_.clear();
    advertised_.clear();
    pending.assign(retiring_.begin(), retiring_.end());
    FL_ASSERT(closed_ && live_.empty());
  }
  const bool unbounded = timeout == std::chrono::milliseconds::max();
  const auto deadline = net::clock::now() + (unbounded ? std::chrono::milliseconds(0) : timeout);
  for (auto& [id, entry] : pending) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - net::clock::now());
    auto waited =
        wait_retired(entry, id, unbounded ? timeout : std::max(left, std::chrono::milliseconds(0)));
    if (!waited.ok()) return waited;
  }
  return {};
}

std::size_t registry::registration_count() const {
  std::shared_lock lock(mutex_);
  return live_.size();
}

}  // namespace faultlane
