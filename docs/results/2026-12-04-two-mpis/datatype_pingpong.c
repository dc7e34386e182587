/* The token's datatype under each MPI: a 2-rank ping-pong of a 2-rank token (LN: 2
 * uint64, then length and queue: 3 int32; 28 bytes), sent as 28 MPI_BYTE or as one
 * element of a datatype, blocking (MPI_Send/MPI_Recv) and in tally's pattern (a
 * pre-posted MPI_ANY_SOURCE MPI_Irecv beside a second one, MPI_Testsome, MPI_Isend).
 * VARIANT picks the datatype: s (default) the runtime's struct {n x MPI_UINT64_T,
 * n+1 x MPI_INT32_T} resized to 28 bytes; c contiguous 28 MPI_BYTE; i contiguous 7
 * MPI_INT32_T; r contiguous bytes, resized. Prints the one-way time of each case.
 * Build and run: see pingpong.txt beside this file. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const int n = 2, bytes = n * 8 + (n + 1) * 4;
  char buf[64];
  memset(buf, 0, sizeof buf);
  int lengths[2] = {n, n + 1};
  MPI_Aint displs[2] = {0, n * 8};
  MPI_Datatype types[2] = {MPI_UINT64_T, MPI_INT32_T}, raw, tok;
  MPI_Type_create_struct(2, lengths, displs, types, &raw);
  MPI_Type_create_resized(raw, 0, bytes, &tok);
  const char* v = getenv("VARIANT");
  if (v && v[0] == 'c') MPI_Type_contiguous(bytes, MPI_BYTE, &tok);
  if (v && v[0] == 'i') MPI_Type_contiguous(bytes / 4, MPI_INT32_T, &tok);
  if (v && v[0] == 'r') {
    MPI_Datatype c;
    MPI_Type_contiguous(bytes, MPI_BYTE, &c);
    MPI_Type_create_resized(c, 0, bytes, &tok);
  }
  MPI_Type_commit(&tok);
  for (int mode = 0; mode < 4; ++mode) {
    MPI_Datatype t = mode % 2 ? tok : MPI_BYTE;
    const int cnt = mode % 2 ? 1 : bytes, iters = 200000;
    double t0 = 0;
    for (int i = -1000; i < iters; ++i) {
      if (i == 0) t0 = MPI_Wtime();
      if (mode < 2) {
        if (me == 0) {
          MPI_Send(buf, cnt, t, 1, 0, MPI_COMM_WORLD);
          MPI_Recv(buf, cnt, t, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
          MPI_Recv(buf, cnt, t, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(buf, cnt, t, 0, 0, MPI_COMM_WORLD);
        }
      } else {
        MPI_Request r[2], s;
        MPI_Status st[2];
        int done = 0, idx[2], c = 0;
        MPI_Irecv(buf, cnt, t, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &r[0]);
        MPI_Irecv(buf + 32, 2, MPI_UINT64_T, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &r[1]);
        if (me == 0) {
          MPI_Isend(buf, cnt, t, 1, 0, MPI_COMM_WORLD, &s);
          MPI_Wait(&s, MPI_STATUS_IGNORE);
        }
        while (!done) {
          MPI_Testsome(2, r, &c, idx, st);
          if (c > 0 && idx[0] == 0) done = 1;
        }
        if (me == 1) {
          MPI_Isend(buf, cnt, t, 0, 0, MPI_COMM_WORLD, &s);
          MPI_Wait(&s, MPI_STATUS_IGNORE);
        }
        MPI_Cancel(&r[1]);
        MPI_Wait(&r[1], MPI_STATUS_IGNORE);
      }
    }
    if (me == 0)
      printf("%s %s: %.0f ns one-way\n", mode < 2 ? "blocking" : "testsome", mode % 2 ? "datatype" : "bytes",
             (MPI_Wtime() - t0) / iters / 2 * 1e9);
  }
  MPI_Type_free(&tok);
  MPI_Finalize();
  return 0;
}
