# libFuzzer targets: a decoder's target and its planted-bug twin, and their
# bounded smoke runs under ctest (core/fuzz, control/fuzz; sim/fuzz uses the
# run script alone). Included by the top-level CMakeLists.txt when
# FAULTLANE_FUZZ is on.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "FAULTLANE_FUZZ needs clang (libFuzzer)")
endif()

# A fuzz target and its planted twin (FAULTLANE_FUZZ_PLANTED). The codec's
# own sources are compiled into the targets (not taken from faultlane_core)
# so that libFuzzer's coverage instrumentation reaches them; LIBS supply the
# rest, and the targets' own objects are preferred over the library's.
function(faultlane_fuzz_pair name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  foreach(target ${name} ${name}_planted)
    add_executable(${target} ${ARG_SOURCES})
    target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/base/include
                                                ${PROJECT_SOURCE_DIR}/core/include
                                                ${PROJECT_SOURCE_DIR}/core/src
                                                ${PROJECT_SOURCE_DIR}/control/include)
    target_compile_options(${target} PRIVATE -fsanitize=fuzzer)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${target} PRIVATE ${ARG_LIBS} faultlane_warnings
                          faultlane_sanitizer_options)
  endforeach()
  target_compile_definitions(${name}_planted PRIVATE FAULTLANE_FUZZ_PLANTED)
endfunction()

# NAME_smoke runs the target over a fresh copy of the committed seeds (so
# new inputs never land in the source tree); NAME_catches_planted_bug runs
# the twin with the same budget and passes only if it fails on its own
# assertion.
function(faultlane_fuzz_tests name corpus runs max_len)
  foreach(kind smoke planted)
    if(kind STREQUAL "smoke")
      set(test ${name}_smoke)
      set(target ${name})
      set(expect "")
    else()
      set(test ${name}_catches_planted_bug)
      set(target ${name}_planted)
      set(expect -DEXPECT_FAILURE=ON)
    endif()
    add_test(NAME ${test}
      COMMAND ${CMAKE_COMMAND}
        -DFUZZER=$<TARGET_FILE:${target}>
        -DSEEDS=${CMAKE_CURRENT_SOURCE_DIR}/${corpus}
        -DWORK=${CMAKE_CURRENT_BINARY_DIR}/${test}_corpus
        -DRUNS=${runs}
        -DMAX_LEN=${max_len}
        ${expect}
        -P ${PROJECT_SOURCE_DIR}/cmake/faultlane_fuzz_run.cmake)
    set_tests_properties(${test} PROPERTIES TIMEOUT 300 LABELS fuzz)
  endforeach()
endfunction()
