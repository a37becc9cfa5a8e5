# Runs the fuzzer for a fixed number of inputs from a fresh copy of the seeds.
# MAX_LEN bounds an input (default 128, a frame header with room to spare).
# With EXPECT_FAILURE, passes only if the fuzzer found a crashing input and
# the crash is the target's own assertion (not some unrelated failure).
if(NOT MAX_LEN)
  set(MAX_LEN 128)
endif()
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SEEDS}/" DESTINATION "${WORK}")
execute_process(
  COMMAND "${FUZZER}" -runs=${RUNS} -seed=1 -max_len=${MAX_LEN} "${WORK}"
  WORKING_DIRECTORY "${WORK}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(EXPECT_FAILURE)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the planted decoder bug was not found in ${RUNS} runs")
  endif()
  if(NOT out MATCHES "assertion failed: std::memcmp")
    message(FATAL_ERROR "the fuzzer failed, but not on the canonical-encoding check:\n${out}")
  endif()
  message(STATUS "planted bug found")
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "${FUZZER} failed with ${rc}:\n${out}")
endif()
