# faultlane_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s]
#                    [COST s])
# Builds one GoogleTest executable and registers each of its tests with ctest.
# COST: about the seconds the executable's slowest test takes under TSan,
# given to each of its tests. A build without ctest's timing data from an
# earlier run (a clean clone in CI) starts the tests with the highest cost
# first, so that a long one does not start near the end and run alone on
# one core while the other idles (e2e_planted's replay test, 189 s under
# TSan in one CI run, started 570th of 582).
include(GoogleTest)

function(faultlane_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT;COST" "SOURCES;LIBS;LABELS" ${ARGN})
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
  target_link_libraries(${T_NAME} PRIVATE faultlane_warnings
    faultlane_sanitizer_options GTest::gtest GTest::gtest_main ${T_LIBS})
  gtest_discover_tests(${T_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}" COST ${T_COST})
endfunction()
