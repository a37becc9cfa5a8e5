// How a frame exchange gives back its reference on a task; see task.hpp.
#include "initiator/task.hpp"

namespace faultlane::detail {

void retire(op_ptr op, status code, std::uint64_t bytes) noexcept {
  FL_ASSERT(op);
  FL_ASSERT(!op->retired);
  op->retired = true;
  auto batch = op->batch;  // keeps the task alive through its finalize
  op->task->settle->retire(code, bytes);
}

transfer_op::~transfer_op() {
  if (task != nullptr && !retired) {
    retired = true;
    // A WRITE with a byte on the wire may have run: never definite.
    const bool may_have_run = op == wire::opcode::write && request_left;
    task->settle->retire(may_have_run ? status::ambiguous_write : status::shutting_down, 0);
  }
}

}  // namespace faultlane::detail
