// A program with one deliberate bug per sanitizer, chosen by argv[1]:
//   race      two threads write one int with no synchronisation (TSan), in
//             rounds ordered so that every run reports it
//   overflow  a heap write one past the end of an array (ASan)
//   leak      memory that is never freed (LSan)
//   clean     no bug: must exit 0 under every sanitizer
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <thread>

namespace {

// ThreadSanitizer missed a race of two threads that each just wrote the int
// (7 runs in 300): two writes at the same instant can each miss the other in
// the shadow, and a thread spinning on an atomic after its write fills its
// trace until the write's stack is gone and the report is dropped. So each
// round orders the two writes in real time by a raw futex, which
// ThreadSanitizer does not intercept and so counts as no synchronisation:
// the other thread writes and then blocks, and the main thread writes once
// it has seen that. Several rounds, each with its own int and thread, make a
// missed report need every one of them missed (with two busy loops beside,
// one round alone went unreported 8 runs in 500, four rounds 0 in 500).
constexpr int race_rounds = 8;

struct race_round {
  int shared = 0;
  int first_written = 0;
  int second_written = 0;
};
race_round rounds[race_rounds];

void raise_flag(int* word) {
  __atomic_store_n(word, 1, __ATOMIC_RELAXED);
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void await_flag(int* word) {
  while (__atomic_load_n(word, __ATOMIC_RELAXED) == 0) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, 0, nullptr, nullptr, 0);
  }
}

int race() {
  for (race_round& r : rounds) {
    std::thread other([&r] {
      r.shared++;
      raise_flag(&r.first_written);
      await_flag(&r.second_written);
    });
    await_flag(&r.first_written);
    r.shared++;  // the race, unordered with the other thread's write
    raise_flag(&r.second_written);
    other.join();
  }
  return rounds[0].shared == 0 ? 1 : 0;
}

int overflow() {
  volatile int index = 16;
  int* array = new int[16];  // new-ok: the canary needs a raw heap overflow
  array[index] = 1;          // one past the end
  int result = array[0];
  delete[] array;  // delete-ok: pairs with the canary's raw new
  return result;
}

int leak() {
  int* lost = new int[64];  // new-ok: the canary needs a raw leak
  lost[0] = 1;
  lost = nullptr;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s race|overflow|leak|clean\n", argv[0]);
    return 2;
  }
  if (std::strcmp(argv[1], "race") == 0) return race();
  if (std::strcmp(argv[1], "overflow") == 0) return overflow();
  if (std::strcmp(argv[1], "leak") == 0) return leak();
  if (std::strcmp(argv[1], "clean") == 0) return 0;
  std::fprintf(stderr, "unknown canary %s\n", argv[1]);
  return 2;
}
