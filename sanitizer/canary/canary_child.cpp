// A program with one deliberate bug per sanitizer, chosen by argv[1]:
//   race      two threads write one int with no synchronisation (TSan)
//   overflow  a heap write one past the end of an array (ASan)
//   leak      memory that is never freed (LSan)
//   clean     no bug: must exit 0 under every sanitizer
#include <cstdio>
#include <cstring>
#include <thread>

namespace {

int shared_counter = 0;

int race() {
  std::thread other([] { shared_counter++; });
  shared_counter++;
  other.join();
  return shared_counter == 0 ? 1 : 0;
}

int overflow() {
  volatile int index = 16;
  int* array = new int[16];  // new-ok: the canary needs a raw heap overflow
  array[index] = 1;  // one past the end
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
