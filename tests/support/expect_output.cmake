# cmake -DCMD=<|-list> -DEXPECT=<|-list of regexes> -P expect_output.cmake
# Runs CMD; passes only if it exits 0 and its combined output matches every regex.
string(REPLACE "|" ";" CMD "${CMD}")
string(REPLACE "|" ";" EXPECT "${EXPECT}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
foreach(re IN LISTS EXPECT)
  if(NOT "${out}${err}" MATCHES "${re}")
    message(FATAL_ERROR "output does not match: ${re}")
  endif()
endforeach()
