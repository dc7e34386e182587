/* tally/common.h — the declarations the C and C++ APIs share; needs no MPI.
 *
 * The error codes and the per-rank statistics are defined here once: tally.h
 * (C) uses them directly, tally::errc and tally::stats (C++) are built on them.
 */
#ifndef TALLY_COMMON_H
#define TALLY_COMMON_H

#include <stddef.h>
#include <stdint.h>

#define TALLY_SUCCESS 0
#define TALLY_ERR_ARG 1                /* null/invalid argument, communicator, rank, size or option */
#define TALLY_ERR_NOT_OWNER 2          /* unlock or payload access without holding the critical section */
#define TALLY_ERR_DEADLOCK 3           /* lock, trylock or timedlock while already holding it */
#define TALLY_ERR_THREAD_LEVEL 4       /* TALLY_PROGRESS_THREAD without MPI_THREAD_MULTIPLE */
#define TALLY_ERR_MPI 5                /* an MPI call failed; the message carries MPI's error string */
#define TALLY_ERR_STATE 6              /* not valid now: use after free, after MPI_Finalize, ... */
#define TALLY_ERR_LAST TALLY_ERR_STATE /* the highest code */

/* Largest payload (bytes of application state carried in the token): 1 MiB. */
#define TALLY_MAX_PAYLOAD_BYTES ((size_t)1 << 20)

/* Per-rank counters of one mutex since its creation. */
typedef struct {
  uint64_t acquisitions;       /* critical-section entries */
  uint64_t local_acquisitions; /* entries that cost zero messages (token held idle here) */
  uint64_t requests_sent;      /* REQUEST messages sent: n-1 per broadcast */
  uint64_t requests_received;  /* REQUEST messages received, stale ones included */
  uint64_t tokens_sent;
  uint64_t tokens_received;
  uint64_t broadcasts; /* REQUEST broadcasts started */
  /* Topology TALLY_TOPOLOGY_NODE only (zero otherwise); REQUESTs and tokens above then
   * count the level between nodes. */
  uint64_t local_handoffs_sent;     /* entries this rank granted to a rank of its node */
  uint64_t local_handoffs_received; /* entries granted to this rank by a rank of its node */
  uint64_t bound_releases;          /* token sent away with local waiters left (pass bound) */
} tally_stats;

#endif /* TALLY_COMMON_H */
