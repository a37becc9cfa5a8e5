# faultlane_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s]
#                    [COST s] [SEPARATE_UNITS])
# Builds one GoogleTest executable and registers each of its tests with ctest.
# COST: about the seconds the executable's slowest test takes under TSan,
# given to each of its tests. A build without ctest's timing data from an
# earlier run (a clean clone in CI) starts the tests with the highest cost
# first, so that a long one does not start near the end and run alone on
# one core while the other idles (e2e_planted's replay test, 189 s under
# TSan in one CI run, started 570th of 582).
include(GoogleTest)

function(faultlane_add_test)
  cmake_parse_arguments(T "SEPARATE_UNITS" "NAME;TIMEOUT;COST" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_COST)
    set(T_COST 0)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  # Unit and loopback tests (a `tests` or `tests_dsim` folder) compile at -O0 in sanitizer
  # builds: a test body is calls into the instrumented -O1 libraries, and
  # its gtest-heavy code took 2.5x as long to compile at -O1 (10.4 s against
  # 4.1 s for transport_hardening_test.cpp under ASan). Properties go to -O0
  # in the asan and tsan builds too (faultlane_glue_at_O0, props/).
  if(NOT FAULTLANE_SANITIZER STREQUAL "none" AND CMAKE_CURRENT_SOURCE_DIR MATCHES "/tests(_dsim)?$")
    target_compile_options(${T_NAME} PRIVATE -O0)
  endif()
  # A test executable's files compile a few at a time as one unit (CMake's
  # unity build): each test file spends 3.4 to 5 CPU s parsing the same
  # headers (GoogleTest, Asio, fmt, the standard library) before its own few
  # hundred lines, so a batch pays that once. The files of one executable
  # must therefore not define the same name in their anonymous namespaces.
  # ci/tidy reads the files themselves, not the units. SEPARATE_UNITS: an
  # executable whose files each spell the same names (the properties' state
  # machines: `command`, `reserve`, ...) compiles file by file.
  if(FAULTLANE_UNITY_TESTS AND NOT T_SEPARATE_UNITS)
    set_target_properties(${T_NAME} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH
      UNITY_BUILD_BATCH_SIZE 8)
  endif()
  target_link_libraries(${T_NAME} PRIVATE faultlane_warnings
    faultlane_sanitizer_options GTest::gtest GTest::gtest_main ${T_LIBS})
  gtest_discover_tests(${T_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}" COST ${T_COST})
endfunction()
