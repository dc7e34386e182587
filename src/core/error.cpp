#include "tally/error.hpp"

namespace tally {

const char* describe(errc code) noexcept {
  switch (code) {
    case errc::success: return "success";
    case errc::arg: return "invalid argument";
    case errc::not_owner: return "calling rank does not hold the critical section";
    case errc::deadlock: return "calling rank already holds the critical section";
    case errc::thread_level: return "MPI does not provide the required thread level";
    case errc::mpi: return "MPI call failed";
    case errc::state: return "call not valid in the current state";
  }
  return "unknown tally error code";
}

}  // namespace tally
