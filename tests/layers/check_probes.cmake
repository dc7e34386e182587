# cmake -DBUILD_DIR=<build> -DPROBES=<target=forbidden header;...> -P check_probes.cmake
# Builds each probe target; each must fail to compile, and on its forbidden header
# alone (not on the allowed one it includes first, not for any other reason).
list(LENGTH PROBES count)
if(count EQUAL 0)
  message(FATAL_ERROR "no probes given")
endif()
foreach(entry IN LISTS PROBES)
  string(REPLACE "=" ";" pair "${entry}")
  list(GET pair 0 target)
  list(GET pair 1 forbidden)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(REPLACE "." "\\." pattern "${forbidden}")
  if(rc EQUAL 0)
    message(FATAL_ERROR "${target}: compiled, but its layer may not include ${forbidden}")
  endif()
  # GCC: "x.hpp: No such file or directory"; Clang: "'x.hpp' file not found".
  if(NOT out MATCHES "${pattern}: No such file or directory|'${pattern}' file not found")
    message(FATAL_ERROR "${target}: failed, but not on ${forbidden}:\n${out}")
  endif()
  string(REGEX MATCHALL "fatal error|error:" errors "${out}")
  list(LENGTH errors n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${target}: expected one error (${forbidden} not found), got ${n}:\n${out}")
  endif()
  message(STATUS "${target}: refused ${forbidden}")
endforeach()
message(STATUS "${count} wrong includes refused")
