// region_ranges (region_ranges.hpp).
#include "runner/region_ranges.hpp"

#include <algorithm>

namespace faultlane::sim {

bool region_ranges::try_take(const std::string& region, std::uint64_t offset,
                             std::uint64_t length) {
  std::lock_guard lock(mutex_);
  auto& taken = taken_[region];
  auto next = taken.lower_bound(offset);
  if (next != taken.end() && next->first < offset + length) return false;
  if (next != taken.begin() && std::prev(next)->second > offset) return false;
  taken.emplace(offset, offset + length);
  return true;
}

std::optional<std::uint64_t> region_ranges::take_first_fit(const std::string& region,
                                                           std::uint64_t size, std::uint64_t length,
                                                           std::uint64_t from) {
  std::lock_guard lock(mutex_);
  auto& taken = taken_[region];
  std::optional<std::uint64_t> at;    // the lowest fit at or after `from`
  std::optional<std::uint64_t> wrap;  // the lowest fit of all
  auto consider = [&](std::uint64_t begin, std::uint64_t end) {  // free [begin, end)
    if (end < begin || end - begin < length) return;
    if (!wrap) wrap = begin;
    if (!at && end - length >= from) at = std::max(begin, from);
  };
  std::uint64_t free_from = 0;
  for (const auto& [offset, end] : taken) {
    consider(free_from, offset);
    free_from = std::max(free_from, end);
  }
  consider(free_from, size);
  if (!at) at = wrap;
  if (at) taken.emplace(*at, *at + length);
  return at;
}

void region_ranges::release(const std::string& region, std::uint64_t offset) {
  std::lock_guard lock(mutex_);
  taken_[region].erase(offset);
  ++releases_;
  cv_.notify_all();
}

std::uint64_t region_ranges::releases() {
  std::lock_guard lock(mutex_);
  return releases_;
}

region_ranges::wait_result region_ranges::wait(std::uint64_t seen, const std::string& region,
                                               threads::clock::time_point deadline) {
  std::unique_lock lock(mutex_);
  auto only_deferred = [&] {
    for (const auto& [offset, end] : taken_[region]) {
      auto held = std::find(deferred_.begin(), deferred_.end(), std::pair{region, offset});
      if (held == deferred_.end()) return false;
    }
    return true;
  };
  if (cv_.wait_until(lock, deadline, [&] { return releases_ != seen || only_deferred(); })) {
    return releases_ != seen ? wait_result::released : wait_result::blocked;
  }
  return wait_result::timed_out;
}

void region_ranges::defer(const std::string& region, std::uint64_t offset) {
  std::lock_guard lock(mutex_);
  deferred_.emplace_back(region, offset);
  cv_.notify_all();  // a waiter may now be blocked for good: wait() says so
}

bool region_ranges::has_deferred() {
  std::lock_guard lock(mutex_);
  return !deferred_.empty();
}

void region_ranges::release_deferred() {
  std::lock_guard lock(mutex_);
  for (const auto& [region, offset] : deferred_) taken_[region].erase(offset);
  deferred_.clear();
  ++releases_;
  cv_.notify_all();
}

}  // namespace faultlane::sim
