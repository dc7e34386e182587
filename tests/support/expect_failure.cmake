# cmake -DCMD=<|-list> -DEXPECT=<|-list of regexes> -DBOUND=<seconds> -P expect_failure.cmake
# Runs CMD; passes only if it ends within BOUND seconds with a non-zero exit status
# and its combined output matches every regex (a job that must fail, not hang).
string(REPLACE "|" ";" CMD "${CMD}")
string(REPLACE "|" ";" EXPECT "${EXPECT}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
  TIMEOUT ${BOUND})
message("${out}${err}")
if(rc MATCHES "timeout")
  message(FATAL_ERROR "still running after ${BOUND} s: the job hangs")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "exit status 0: the failure went unnoticed")
endif()
foreach(re IN LISTS EXPECT)
  if(NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "output does not match: ${re}")
  endif()
endforeach()
message("exit status ${rc}, as expected")
