// MPI_Finalize with live mutexes: tally warns, frees them collectively inside
// MPI_Finalize, and later calls report TALLY_ERR_STATE instead of crashing. The
// C++ mutex at main scope is destroyed after MPI_Finalize, a common pattern. The
// queries (stats, size) keep answering with their final values in both APIs.
#include <mpi.h>

#include <cstdio>

#include "tally/mutex.hpp"
#include "tally/tally.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  tally::mutex cpp(MPI_COMM_WORLD);
  tally_mutex c = nullptr;
  if (tally_mutex_create(MPI_COMM_WORLD, nullptr, &c) != TALLY_SUCCESS) return 3;
  for (int i = 0; i < 10; ++i) {
    cpp.lock();
    cpp.unlock();
    tally_mutex_lock(c);
    tally_mutex_unlock(c);
  }
  MPI_Finalize();  // both mutexes still alive

  int bad = 0;
  // The queries keep their final values; everything else reports the state.
  tally_stats st;
  int size = 0;
  if (tally_mutex_get_stats(c, &st) != TALLY_SUCCESS || st.acquisitions != 10) bad = 1;
  if (tally_mutex_size(c, &size) != TALLY_SUCCESS || size < 1) bad = 1;
  if (cpp.stats().acquisitions != 10) bad = 1;
  if (tally_mutex_lock(c) != TALLY_ERR_STATE) bad = 1;
  if (tally_mutex_free(&c) != TALLY_ERR_STATE || c != nullptr) bad = 1;
  try {
    cpp.lock();
    bad = 1;
  } catch (const tally::error& e) {
    if (e.code() != tally::errc::state) bad = 1;
  }
  if (!bad) std::printf("finalize_live: ok on rank %d\n", rank);
  return bad;  // cpp's destructor runs after MPI_Finalize: must be silent and safe
}
