#include "runtime/handles.hpp"

namespace tally::detail {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  int cls = rc;
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, msg, &len);
  fail(errc::mpi, std::string(what) + " failed: " + std::string(msg, static_cast<std::size_t>(len)), cls);
}

bool mpi_usable() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace tally::detail
