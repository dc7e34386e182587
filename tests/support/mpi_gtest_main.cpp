// GoogleTest main for MPI tests: initializes MPI (MPI_THREAD_MULTIPLE unless
// TALLY_TEST_THREAD_LEVEL says otherwise), prints the full report on rank 0 and
// only failures elsewhere, and fails on every rank if any rank failed.
#include <mpi.h>

#include <gtest/gtest.h>

#include <cstdio>

#ifndef TALLY_TEST_THREAD_LEVEL
#define TALLY_TEST_THREAD_LEVEL MPI_THREAD_MULTIPLE
#endif

namespace {

// Prints failed assertions of a non-zero rank, prefixed with the rank.
class rank_failure_printer : public ::testing::EmptyTestEventListener {
 public:
  explicit rank_failure_printer(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank_, r.file_name() ? r.file_name() : "?", r.line_number(),
                   r.summary());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, TALLY_TEST_THREAD_LEVEL, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new rank_failure_printer(rank));
  }
  const int local = RUN_ALL_TESTS();
  int global = 0;
  MPI_Allreduce(&local, &global, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && global != local) std::fprintf(stderr, "a test failed on another rank\n");
  MPI_Finalize();
  return global;
}
