#include "baselines/mpi_util.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace bench {

namespace {

std::string describe(int rc, const char* call) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = 0;
  return std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(len));
}

}  // namespace

void check(int rc, const char* call) {
  if (rc != MPI_SUCCESS) throw mpi_failure(describe(rc, call));
}

void die(const char* what) noexcept {
  std::fprintf(stderr, "tally_bench: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();  // MPI_Abort does not return; this only tells the compiler so
}

void check_or_abort(int rc, const char* call) noexcept {
  if (rc != MPI_SUCCESS) die(describe(rc, call).c_str());
}

comm_dup::comm_dup(MPI_Comm parent) {
  // The parent may still have MPI_ERRORS_ARE_FATAL; a failing dup aborts there.
  MPI_Comm_dup(parent, &comm_);
  check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
  check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
}

comm_dup::~comm_dup() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && comm_ != MPI_COMM_NULL) check_or_abort(MPI_Comm_free(&comm_), "MPI_Comm_free");
}

void kick_progress(MPI_Comm comm) {
  int flag = 0;
  check(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
}

}  // namespace bench
