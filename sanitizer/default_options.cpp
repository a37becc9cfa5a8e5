// Default runtime options for the sanitizers, linked into every faultlane
// executable. Each sanitizer reads its hook only when it is compiled in, so
// in a plain build these functions are simply never called.
//
// Every report must fail the run: halt on the first one, and point each
// runtime at its suppression file (empty unless a line is justified there).

#define FL_SUPP(file) "suppressions=" FAULTLANE_SANITIZER_DIR "/" file

extern "C" {

__attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=1:"
         "strict_string_checks=1:check_initialization_order=1";
}

__attribute__((visibility("default"), used)) const char* __lsan_default_options() {
  return FL_SUPP("lsan.supp") ":print_suppressions=0";
}

__attribute__((visibility("default"), used)) const char* __ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1:" FL_SUPP("ubsan.supp");
}

// intercept_send=0: ThreadSanitizer records a send's read of its buffer
// after the send's release, which reports races TCP makes impossible in
// one-process tests (core/src/runtime/tsan_order.hpp explains). The core records
// every payload read itself, before sending, so no read goes unchecked.
__attribute__((visibility("default"), used)) const char* __tsan_default_options() {
  return "halt_on_error=1:second_deadlock_stack=1:print_suppressions=0:intercept_send=0:" FL_SUPP(
      "tsan.supp");
}

}  // extern "C"
