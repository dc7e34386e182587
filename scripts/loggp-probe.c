/* loggp-probe: the LogGP numbers tally-sim's network model needs, between 2 ranks.
 *
 *   mpicc -O2 -o loggp-probe scripts/loggp-probe.c
 *   mpiexec -n 2 --mca btl self,vader ./loggp-probe
 *
 * Prints key=value lines, times in ns. Each figure is the minimum over 31 short
 * repetitions: on a shared machine the fastest repetition is the one that ran
 * undisturbed, and each repetition's value is already a mean over many messages.
 *   oneway_<bytes>   half a round trip of a <bytes> message (blocking ping-pong)
 *   overhead         mean time of one MPI_Isend call posting an 8-byte message
 *                    (the receiver has pre-posted its receives)
 *   gap              time per message in a stream of back-to-back 8-byte sends
 * scripts/calibrate-sim turns them, with tally_bench's BM_Floor, into L, o, g, G,
 * E and R (docs/simulator.md#calibration). Not part of the build. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum {
  REPS = 31,
  POSTS = 64
};

static int by_value(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static double minimum(double* v) {
  qsort(v, REPS, sizeof *v, by_value);
  return v[0];
}

static void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    fprintf(stderr, "loggp-probe: %s failed\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

/* Mean one-way time of `iters` round trips of `bytes` between ranks 0 and 1. */
static double pingpong(int rank, char* buf, int bytes, int iters) {
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  const double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) {
    if (rank == 0) {
      check(MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD), "MPI_Send");
      check(MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    } else {
      check(MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      check(MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD), "MPI_Send");
    }
  }
  return (MPI_Wtime() - t0) / iters / 2;
}

/* Mean MPI_Isend call time for POSTS 8-byte messages, over `rounds` rounds. */
static double isend_overhead(int rank, char* buf, int rounds) {
  MPI_Request req[POSTS];
  double sum = 0;
  for (int r = 0; r < rounds; ++r) {
    if (rank == 1) {
      for (int k = 0; k < POSTS; ++k)
        check(MPI_Irecv(buf + 8 * k, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req[k]), "MPI_Irecv");
      check(MPI_Send(buf, 0, MPI_BYTE, 0, 2, MPI_COMM_WORLD), "MPI_Send");
    } else {
      check(MPI_Recv(buf, 0, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      const double t0 = MPI_Wtime();
      for (int k = 0; k < POSTS; ++k)
        check(MPI_Isend(buf + 8 * k, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &req[k]), "MPI_Isend");
      sum += MPI_Wtime() - t0;
    }
    check(MPI_Waitall(POSTS, req, MPI_STATUSES_IGNORE), "MPI_Waitall");
  }
  return sum / rounds / POSTS;
}

/* Time per message of `count` back-to-back 8-byte sends, closed by an ack. */
static double stream_gap(int rank, char* buf, int count) {
  check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
  const double t0 = MPI_Wtime();
  if (rank == 0) {
    for (int k = 0; k < count; ++k) check(MPI_Send(buf, 8, MPI_BYTE, 1, 3, MPI_COMM_WORLD), "MPI_Send");
    check(MPI_Recv(buf, 0, MPI_BYTE, 1, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  } else {
    for (int k = 0; k < count; ++k)
      check(MPI_Recv(buf + 64, 8, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
    check(MPI_Send(buf, 0, MPI_BYTE, 0, 4, MPI_COMM_WORLD), "MPI_Send");
  }
  return (MPI_Wtime() - t0) / count;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "loggp-probe: run with exactly 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
  /* 8: a REQUEST; 12n+4: the token at n = 2, 4, 1024, 4096, 16384, 65536. */
  static const int sizes[] = {8, 28, 52, 12292, 49156, 196612, 786436};
  char* buf = calloc(1 << 20, 1);
  if (!buf) MPI_Abort(MPI_COMM_WORLD, 1);
  double t[REPS];
  for (unsigned s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const int bytes = sizes[s], iters = bytes < 65536 ? 1000 : 100;
    pingpong(rank, buf, bytes, iters / 10);
    for (int r = 0; r < REPS; ++r) t[r] = pingpong(rank, buf, bytes, iters);
    if (rank == 0) printf("oneway_%d=%.2f\n", bytes, minimum(t) * 1e9);
  }
  for (int r = 0; r < REPS; ++r) t[r] = isend_overhead(rank, buf, 50);
  if (rank == 0) printf("overhead=%.2f\n", minimum(t) * 1e9);
  for (int r = 0; r < REPS; ++r) t[r] = stream_gap(rank, buf, 5000);
  if (rank == 0) printf("gap=%.2f\n", minimum(t) * 1e9);
  free(buf);
  MPI_Finalize();
  return 0;
}
