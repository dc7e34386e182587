# cmake/TallyMPI.cmake — how tally's tests start MPI programs on this machine, for
# the MPI that find_package(MPI) found; written once for every test directory.
# (The shell scripts' counterpart, for named transports, is scripts/lib/transport.sh.)
#
#   TALLY_MPI_FLAVOR    openmpi, mpich or other (from `MPIEXEC_EXECUTABLE --version`)
#   TALLY_MPI_TEST_ENV  environment for a test that runs an MPI program: more ranks
#                       than cores allowed, root allowed, one-sided MPI that works
#                       on one node (docs/design.md, "Known environment issue")
#   tally_mpiexec(<var> <ranks> <program> [args...])
#                       sets <var> to the launch line, in the canonical form
#                       MPIEXEC_EXECUTABLE MPIEXEC_NUMPROC_FLAG n MPIEXEC_PREFLAGS
#                       program MPIEXEC_POSTFLAGS args
include_guard(GLOBAL)

# The one-sided component of the shm transport (scripts/lib/transports.tsv, the one
# table of transports): the tests run on one node, over shared memory.
file(STRINGS ${PROJECT_SOURCE_DIR}/scripts/lib/transports.tsv tally_shm_row REGEX "^shm[ \t]")
string(REGEX REPLACE "[ \t]+" ";" tally_shm_row "${tally_shm_row}")
list(GET tally_shm_row 3 TALLY_SHM_OSC)  # name ompi_pml ompi_btl ompi_osc ...

execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version
  OUTPUT_VARIABLE tally_mpiexec_version ERROR_VARIABLE tally_mpiexec_version)
if(tally_mpiexec_version MATCHES "Open MPI|OpenRTE")
  set(TALLY_MPI_FLAVOR openmpi)
  set(TALLY_MPI_TEST_ENV
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1
    OMPI_MCA_osc=${TALLY_SHM_OSC})
elseif(tally_mpiexec_version MATCHES "HYDRA|MPICH")
  set(TALLY_MPI_FLAVOR mpich)
  set(TALLY_MPI_TEST_ENV "")  # hydra runs as root and oversubscribes by default
else()
  set(TALLY_MPI_FLAVOR other)
  set(TALLY_MPI_TEST_ENV "")
endif()

message(STATUS "tally: tests launch MPI programs with ${MPIEXEC_EXECUTABLE} (${TALLY_MPI_FLAVOR})")

function(tally_mpiexec var ranks program)
  set(${var} ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ranks} ${MPIEXEC_PREFLAGS}
      ${program} ${MPIEXEC_POSTFLAGS} ${ARGN} PARENT_SCOPE)
endfunction()
