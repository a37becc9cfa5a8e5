// Runs the canary child under this build's sanitizer and checks that the
// sanitizer reported the deliberate bug and failed the child.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace {

struct run_result {
  int exit_code = -1;
  std::string output;
};

run_result run_child(const std::string& mode) {
  std::string command = std::string(FAULTLANE_CANARY_CHILD) + " " + mode + " 2>&1";
  run_result r;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  std::size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) r.output.append(buffer, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

const std::string kind = FAULTLANE_SANITIZER_KIND;

TEST(sanitizer_canary, clean_child_passes) {
  auto r = run_child("clean");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "");
}

TEST(sanitizer_canary, deliberate_bug_is_reported_and_fails_the_child) {
  if (kind == "thread") {
    auto r = run_child("race");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("WARNING: ThreadSanitizer: data race"), std::string::npos) << r.output;
  } else {
    ASSERT_EQ(kind, "address");
    auto r = run_child("overflow");
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("ERROR: AddressSanitizer: heap-buffer-overflow"), std::string::npos)
        << r.output;
  }
}

TEST(sanitizer_canary, leak_is_reported_under_asan) {
  if (kind != "address") {
    // ThreadSanitizer has no leak checker; the race canary covers this preset.
    EXPECT_EQ(kind, "thread");
    return;
  }
  auto r = run_child("leak");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("ERROR: LeakSanitizer: detected memory leaks"), std::string::npos)
      << r.output;
}

}  // namespace
