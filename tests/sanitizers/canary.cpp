// A planted bug for each sanitizer, in an MPI program run like tally's tests (the
// same launcher, options and suppressions): the sanitizer builds must report it,
// so a sanitizer that went silent (a blanket suppression, a lost option) fails the
// run instead of passing it. Usage: canary race|overflow|ub
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {
int shared_value = 0;  // written by two threads without synchronization

int race() {
  std::thread t([] { shared_value = 1; });
  shared_value = 2;
  t.join();
  return shared_value;
}

int overflow(int k) {
  std::vector<int> v(4, 0);
  int* p = v.data();
  return p[k];  // k = 4: one past the end of the heap block
}

int signed_overflow(int x) { return x + 1; }  // x = INT_MAX: undefined
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int r = 0;
  const char* what = argc > 1 ? argv[1] : "";
  if (std::strcmp(what, "race") == 0) r = race();
  if (std::strcmp(what, "overflow") == 0) r = overflow(argc + 2);
  if (std::strcmp(what, "ub") == 0) r = signed_overflow(argc > 1 ? 2147483647 : 0);
  std::printf("canary %s: %d\n", what, r);
  MPI_Finalize();
  return 0;
}
