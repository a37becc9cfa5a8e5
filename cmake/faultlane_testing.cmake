# faultlane_add_test(NAME name SOURCES ... [LIBS ...] [LABELS ...] [TIMEOUT s])
# Builds one GoogleTest executable and registers each of its tests with ctest.
include(GoogleTest)

function(faultlane_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE faultlane_warnings
    faultlane_sanitizer_options GTest::gtest GTest::gtest_main ${T_LIBS})
  gtest_discover_tests(${T_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${T_TIMEOUT} LABELS "${T_LABELS}")
endfunction()
