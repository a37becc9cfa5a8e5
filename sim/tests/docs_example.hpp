// The scenario that opens docs/scenarios.md, as text: the loader test
// checks it loads to the values the docs describe, the runner test that it
// passes as written.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace faultlane::sim::test {

// The first ```yaml block of docs/scenarios.md under `source_dir`; empty if
// there is none.
inline std::string docs_opening_example(const std::string& source_dir) {
  std::ifstream in(source_dir + "/docs/scenarios.md");
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string text = doc.str();
  const auto start = text.find("```yaml\n");
  if (start == std::string::npos) return {};
  const auto end = text.find("```\n", start + 8);
  return text.substr(start + 8, end == std::string::npos ? std::string::npos : end - start - 8);
}

}  // namespace faultlane::sim::test
