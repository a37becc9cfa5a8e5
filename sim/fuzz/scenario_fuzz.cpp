// libFuzzer target for the scenario loader: any bytes either load or give
// an error that names the file and a place; a scenario that loads writes
// back (to_yaml) as a file that loads again and writes back to the same
// text, so the shrinker's NAME.min.yaml always means what it shrank.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "faultlane/core/assert.hpp"
#include "faultlane/sim/scenario.hpp"

namespace {

// No valid scenario fits in fewer than about 140 bytes, and the shared
// smoke script (core/fuzz/run_smoke.cmake) passes -max_len=128 for the
// frame fuzzer; a smaller -max_len is raised to this so the fuzzer reaches
// the write-back checks at all.
constexpr long max_len_floor = 4096;

std::vector<std::string> args;
std::vector<char*> arg_pointers;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string flag = "-max_len=";
  for (int i = 0; i < *argc; ++i) {
    std::string arg = (*argv)[i];
    if (arg.rfind(flag, 0) == 0 && std::atol(arg.c_str() + flag.size()) < max_len_floor) {
      arg = flag + std::to_string(max_len_floor);
    }
    args.push_back(arg);
  }
  for (auto& arg : args) arg_pointers.push_back(arg.data());
  arg_pointers.push_back(nullptr);
  *argv = arg_pointers.data();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace faultlane::sim;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto s = parse_scenario(text, "fuzz.yaml");
  if (!s.ok()) {
    FL_ASSERT(s.error().message.rfind("fuzz.yaml:", 0) == 0);
    return 0;
  }
  const std::string written = to_yaml(s.value());
  auto back = parse_scenario(written, "fuzz.yaml");
  FL_ASSERT(back.ok());
  FL_ASSERT(to_yaml(back.value()) == written);
  return 0;
}
