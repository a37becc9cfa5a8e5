# Runs the fuzzer for a fixed number of inputs from a fresh copy of the seeds.
file(REMOVE_RECURSE "${WORK}")
file(COPY "${SEEDS}/" DESTINATION "${WORK}")
execute_process(
  COMMAND "${FUZZER}" -runs=${RUNS} -seed=1 -max_len=128 "${WORK}"
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "frame_fuzz failed with ${rc}")
endif()
