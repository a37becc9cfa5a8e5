// libFuzzer target for the scenario loader: any bytes either load or give
// an error that names the file and a place; a scenario that loads writes
// back (to_yaml) as a file that loads again and writes back to the same
// text, so the shrinker's NAME.min.yaml always means what it shrank. Its
// smoke run passes -max_len=4096: no valid scenario is under ~140 bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "faultlane/base/assert.hpp"
#include "faultlane/sim/scenario.hpp"

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
