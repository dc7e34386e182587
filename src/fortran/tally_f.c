/* src/fortran/tally_f.c — what the Fortran module cannot do through iso_c_binding
 * alone: turn a Fortran communicator handle (type(MPI_Comm)%MPI_VAL, an MPI_Fint)
 * into the C MPI_Comm the C API takes. Everything else the module binds directly. */
#include <mpi.h>
#include <stddef.h>

#include "tally/tally.h"

int tally_f_mutex_create(MPI_Fint comm, const tally_options *opts, size_t bytes, tally_mutex *out) {
  return tally_mutex_create_payload(MPI_Comm_f2c(comm), opts, bytes, out);
}
