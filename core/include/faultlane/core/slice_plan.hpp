// slice_plan: how a READ is split across rails.
//
// One pure function, used by the core to dispatch, by the harness checkers
// to predict what the relay taps must see, and by the property tests. A READ
// of at least rail_count x step bytes becomes one contiguous slice per rail,
// in rail order, sizes differing by at most one byte, the remainder on the
// first slices. Anything smaller, and any single-rail READ, is one slice on
// rail 0. (WRITEs are never split; the caller does not ask.)
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "faultlane/core/limits.hpp"

namespace faultlane {

struct slice {
  std::size_t rail = 0;
  std::uint64_t offset = 0;  // within the READ
  std::uint64_t length = 0;
  friend bool operator==(const slice&, const slice&) = default;
};

class slice_plan {
 public:
  const slice* begin() const noexcept { return slices_.data(); }
  const slice* end() const noexcept { return slices_.data() + count_; }
  std::size_t size() const noexcept { return count_; }
  const slice& operator[](std::size_t i) const noexcept { return slices_[i]; }
  bool sliced() const noexcept { return count_ > 1; }

 private:
  friend slice_plan plan_read_slices(std::uint64_t, std::size_t, std::uint64_t) noexcept;
  std::array<slice, limits::rail_count_max> slices_{};
  std::size_t count_ = 0;
};

// True when a READ of `length` is split over `rail_count` rails.
bool read_is_sliced(std::uint64_t length, std::size_t rail_count,
                    std::uint64_t step = limits::slice_step_bytes) noexcept;

// rail_count in [1, rail_count_max], step > 0, length > 0.
slice_plan plan_read_slices(std::uint64_t length, std::size_t rail_count,
                            std::uint64_t step = limits::slice_step_bytes) noexcept;

}  // namespace faultlane
