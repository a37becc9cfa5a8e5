// The READ slicing arithmetic; see slice_plan.hpp.
#include "faultlane/core/slice_plan.hpp"

#include "faultlane/base/assert.hpp"

namespace faultlane {

bool read_is_sliced(std::uint64_t length, std::size_t rail_count, std::uint64_t step) noexcept {
  FL_ASSERT(step > 0);
  if (rail_count < 2) return false;
  // length >= rail_count * step, without overflowing the product.
  return length / rail_count >= step;
}

slice_plan plan_read_slices(std::uint64_t length, std::size_t rail_count,
                            std::uint64_t step) noexcept {
  FL_ASSERT(rail_count >= 1 && rail_count <= limits::rail_count_max);
  FL_ASSERT(length > 0);
  slice_plan plan;
  if (!read_is_sliced(length, rail_count, step)) {
    plan.slices_[0] = {0, 0, length};
    plan.count_ = 1;
    return plan;
  }
  const std::uint64_t base = length / rail_count;
  const std::uint64_t remainder = length % rail_count;
  std::uint64_t offset = 0;
  for (std::size_t rail = 0; rail < rail_count; ++rail) {
    std::uint64_t size = base + (rail < remainder ? 1 : 0);
    plan.slices_[rail] = {rail, offset, size};
    offset += size;
  }
  FL_ASSERT(offset == length);
  plan.count_ = rail_count;
  return plan;
}

}  // namespace faultlane
