# cmake/TallyPython.cmake — TALLY_PYTHON: the first python3 on PATH that has
# matplotlib (bench/report's plots need it), else the first python3. A python3 of
# a virtual environment or pyenv often lacks Debian's python3-matplotlib.
include_guard(GLOBAL)

function(tally_python_has_matplotlib result candidate)
  execute_process(COMMAND "${candidate}" -c "import matplotlib"
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(${result} FALSE PARENT_SCOPE)
  endif()
endfunction()

find_program(TALLY_PYTHON NAMES python3 NAMES_PER_DIR VALIDATOR tally_python_has_matplotlib
  DOC "python3 with matplotlib, for bench/report and the scripts")
if(NOT TALLY_PYTHON)
  find_program(TALLY_PYTHON NAMES python3 REQUIRED)
  message(STATUS "tally: no python3 with matplotlib; plots will fail (python3-matplotlib)")
endif()
