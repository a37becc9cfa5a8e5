// fiber: the world's fibers (world.hpp), on ucontext, with the switches
// announced to AddressSanitizer and ThreadSanitizer so that both follow
// the stacks (each fiber has its own, with a guard page below it).
#include <dlfcn.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <utility>

#include "faultlane/base/assert.hpp"
#include "faultlane/dsim/world.hpp"

#include "fiber_state.hpp"

namespace faultlane::dsim {

namespace {

// Deep enough for a stream's submit through the core and a checker's
// formatting, under AddressSanitizer's larger frames.
constexpr std::size_t fiber_stack_bytes = 1u << 20;

#if defined(FAULTLANE_DSIM_ASAN)
// glibc's swapcontext, past AddressSanitizer's interceptor: the interceptor
// only clears the new stack's shadow (done once per stack, at spawn) and
// warns that it cannot follow the switch, which the annotations here make
// it do.
int swap_contexts(ucontext_t* from, const ucontext_t* to) {
  using fn = int (*)(ucontext_t*, const ucontext_t*);
  static const auto real = reinterpret_cast<fn>(::dlsym(RTLD_NEXT, "swapcontext"));
  FL_ASSERT(real != nullptr);
  return real(from, to);
}
#else
int swap_contexts(ucontext_t* from, const ucontext_t* to) { return swapcontext(from, to); }
#endif

// Leaves `from` for `to`; returns when something switches back to `from`.
void switch_to(fiber_switch_side& from, fiber_switch_side& to, bool from_ends = false) {
#if defined(FAULTLANE_DSIM_ASAN)
  __sanitizer_start_switch_fiber(from_ends ? nullptr : &from.asan_fake_stack, to.stack_bottom,
                                 to.stack_size);
#else
  (void)from_ends;
#endif
#if defined(FAULTLANE_DSIM_TSAN)
  __tsan_switch_to_fiber(to.tsan_fiber, 0);
#endif
  FL_ASSERT(swap_contexts(&from.context, &to.context) == 0);
#if defined(FAULTLANE_DSIM_ASAN)
  // Back on `from`: learn where the side that switched here lives.
  __sanitizer_finish_switch_fiber(from.asan_fake_stack, &to.stack_bottom, &to.stack_size);
#endif
}

}  // namespace

world::fiber_id world::spawn(std::string name, unique_function<void()> fn) {
  FL_ASSERT(fn);
  if (!host_) {
    host_ = std::make_unique<fiber_host>();
#if defined(FAULTLANE_DSIM_TSAN)
    host_->driver.tsan_fiber = __tsan_get_current_fiber();
#endif
  }
  auto f = std::make_unique<fiber>();
  f->id = next_fiber_++;
  f->name = std::move(name);
  f->fn = std::move(fn);
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  f->mapped = fiber_stack_bytes + page;
  f->stack = ::mmap(nullptr, f->mapped, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  FL_ASSERT(f->stack != MAP_FAILED);
  FL_ASSERT(::mprotect(f->stack, page, PROT_NONE) == 0);  // an overflow faults, loudly
#if defined(FAULTLANE_DSIM_ASAN)
  // The mapping may reuse addresses an earlier stack left poisoned.
  __asan_unpoison_memory_region(static_cast<char*>(f->stack) + page, fiber_stack_bytes);
#endif
  f->side.stack_bottom = static_cast<char*>(f->stack) + page;
  f->side.stack_size = fiber_stack_bytes;
  FL_ASSERT(getcontext(&f->side.context) == 0);
  f->side.context.uc_stack.ss_sp = const_cast<void*>(f->side.stack_bottom);
  f->side.context.uc_stack.ss_size = fiber_stack_bytes;
  f->side.context.uc_link = nullptr;  // fiber_main switches back itself
  makecontext(&f->side.context, &world::fiber_main, 0);
#if defined(FAULTLANE_DSIM_TSAN)
  f->side.tsan_fiber = __tsan_create_fiber(0);
#endif
  const auto id = f->id;
  record("spawn", id);
  fibers_.emplace(id, std::move(f));
  return id;
}

world::fiber_id world::current_fiber() const noexcept {
  return current_fiber_ != nullptr ? current_fiber_->id : 0;
}

bool world::finished(fiber_id id) const noexcept { return fibers_.count(id) == 0; }

bool world::runnable(const fiber& f) const {
  if (!f.started) return true;
  FL_ASSERT(f.ready != nullptr);
  return now_ >= f.deadline || (*f.ready)();
}

// On the driver's stack: runs `f` until it parks or ends.
void world::resume(fiber& f) {
  FL_ASSERT(current_fiber_ == nullptr && !in_step_);
  record("fiber", f.id);
  f.started = true;
  current_fiber_ = &f;
  switch_to(host_->driver, f.side);
  current_fiber_ = nullptr;
  if (!f.done) return;
  auto failure = std::move(f.failure);
  fibers_.erase(f.id);
  if (failure) std::rethrow_exception(failure);
}

void world::fiber_main() {
  auto& w = world::current();
  fiber& f = *w.current_fiber_;
#if defined(FAULTLANE_DSIM_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, &w.host_->driver.stack_bottom,
                                  &w.host_->driver.stack_size);
#endif
  try {
    f.fn();
  } catch (...) {
    f.failure = std::current_exception();
  }
  f.fn = nullptr;  // what it holds goes while the world still runs
  f.done = true;
  w.record("fiber_end", f.id);
  switch_to(f.side, w.host_->driver, true);
  ::faultlane::detail::assert_failed("an ended fiber is never resumed", __FILE__, __LINE__);
}

// On a fiber's stack: back to the driver until `ready()` holds or virtual
// time reaches `deadline`.
void world::park(const std::function<bool()>& ready, clock::time_point deadline) {
  fiber& f = *current_fiber_;
  f.ready = &ready;
  f.deadline = deadline;
  // The wake-up event moves time to the deadline when nothing else comes
  // first; it does nothing else.
  if (deadline != clock::time_point::max()) f.wake = at(deadline, [] {});
  switch_to(f.side, host_->driver);
  if (f.wake != 0) (void)cancel(f.wake);
  f.wake = 0;
  f.ready = nullptr;
  f.deadline = clock::time_point::max();
}

bool world::wait(const std::function<bool()>& done, clock::time_point deadline) {
  FL_ASSERT(!in_step_);  // a handler would wait for work only its return lets run
  if (done()) return true;
  if (current_fiber_ != nullptr) {
    if (now_ < deadline) park(done, deadline);
    return done();
  }
  const auto r = run_until(done, deadline);
  if (r == wait_result::idle && deadline == clock::time_point::max()) {
    std::fprintf(stderr, "dsim: deadlock: a wait with no deadline, and nothing left to run\n%s",
                 trace_text().c_str());
    ::faultlane::detail::assert_failed("no deadlock in the simulated world", __FILE__, __LINE__);
  }
  return r == wait_result::met || done();
}

}  // namespace faultlane::dsim
