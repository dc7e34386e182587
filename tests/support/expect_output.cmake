# cmake -DCMD=<|-list> -DEXPECT=<|-list of regexes> [-DMUST_FAIL=1 -DBOUND=<s>]
#       -P expect_output.cmake
# Runs CMD; passes only if its combined output matches every regex and it exits 0,
# or, with MUST_FAIL, it ends within BOUND seconds with a non-zero status (a job
# that must fail, not hang).
string(REPLACE "|" ";" CMD "${CMD}")
string(REPLACE "|" ";" EXPECT "${EXPECT}")
set(limit)
if(MUST_FAIL)
  set(limit TIMEOUT ${BOUND})
endif()
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err ${limit})
message("${out}${err}")
if(MUST_FAIL)
  if(rc MATCHES "timeout")
    message(FATAL_ERROR "still running after ${BOUND} s: the job hangs")
  elseif(rc EQUAL 0)
    message(FATAL_ERROR "exit status 0: the failure went unnoticed")
  endif()
elseif(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
foreach(re IN LISTS EXPECT)
  if(NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "output does not match: ${re}")
  endif()
endforeach()
