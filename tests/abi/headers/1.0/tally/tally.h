/* tally/tally.h — C API of tally, a distributed critical section for MPI.
 *
 * Usable from C11 and C++. Every function returns TALLY_SUCCESS or one of the
 * TALLY_ERR_* codes of tally/common.h; tally_strerror() explains a code. Create and free are
 * collective over the communicator; the other calls are local to the rank.
 *
 *   tally_mutex m;
 *   tally_mutex_create(MPI_COMM_WORLD, NULL, &m);
 *   tally_mutex_lock(m);  ... critical section ...  tally_mutex_unlock(m);
 *   tally_mutex_free(&m);
 */
#ifndef TALLY_TALLY_H
#define TALLY_TALLY_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "tally/common.h"  /* TALLY_SUCCESS, TALLY_ERR_*, tally_stats */
#include "tally/version.h" /* TALLY_VERSION_MAJOR, _MINOR, _PATCH: the header's */
#include "tally/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tally_mutex_s *tally_mutex;
/* An asynchronous acquisition (tally_mutex_ilock); see tally::lock_request. */
typedef struct tally_request_s *tally_request;

/* Who drives progress: inside tally calls; a progress thread (needs
 * MPI_THREAD_MULTIPLE); or AUTO, the default: the thread where MPI provides
 * MPI_THREAD_MULTIPLE, else inside calls. See tally::progress_mode. */
typedef enum {
  TALLY_PROGRESS_IN_CALLS = 0,
  TALLY_PROGRESS_THREAD = 1,
  TALLY_PROGRESS_AUTO = 2,
  TALLY_PROGRESS_INLINE = TALLY_PROGRESS_IN_CALLS /* the same, by its name before 2026-12-07 */
} tally_progress;

/* How the progress thread waits between polls (see tally::poll_policy). */
typedef enum {
  TALLY_POLL_SPIN = 0,
  TALLY_POLL_BACKOFF = 1,
  TALLY_POLL_SLEEP = 2,
  TALLY_POLL_ADAPTIVE = 3
} tally_poll;

/* How the ranks are organized (see tally::topology): one Suzuki-Kasami participant
 * per rank; two levels (shared memory inside a node, Suzuki-Kasami between nodes);
 * or AUTO, the default: $TALLY_TOPOLOGY (flat, node or auto) if set, else NODE where
 * some node holds two or more ranks, else FLAT. */
typedef enum {
  TALLY_TOPOLOGY_FLAT = 0,
  TALLY_TOPOLOGY_NODE = 1,
  TALLY_TOPOLOGY_AUTO = 2
} tally_topology;

/* Creation options. Set them with tally_options_init, then change fields: `size`
 * records how large this header's struct is, so that a library of a later 1.x
 * release reads only what the caller has (the rest takes its defaults) and an
 * earlier one refuses fields it does not know (TALLY_ERR_ARG). Fields are only
 * ever appended, and a field added after 1.0 has 0 as its default. */
typedef struct {
  size_t size;               /* sizeof(tally_options) in the caller's header */
  int initial_owner;         /* rank holding the token at creation; default 0 */
  tally_progress progress;   /* default TALLY_PROGRESS_AUTO */
  tally_poll poll;           /* default TALLY_POLL_ADAPTIVE */
  unsigned poll_interval_us; /* longest wait between polls; default 1000, at most 1000000 */
  const char *name;          /* name in diagnostics (copied); NULL: "mutex #k" */
  double wait_warning_s;     /* diagnostic after this long waiting; 0 off; < 0 (the
                                default): $TALLY_WAIT_WARNING, else 30 s */
  tally_topology topology;   /* default TALLY_TOPOLOGY_AUTO */
  unsigned pass_bound;       /* NODE: local passes in a row while another node
                                waits, >= 1; default 16 */
} tally_options;

/* The library's version (the header's is TALLY_VERSION_MAJOR, _MINOR, _PATCH);
 * a NULL argument is not written. Local, and callable before MPI_Init; always
 * TALLY_SUCCESS. */
TALLY_API int tally_get_version(int *major, int *minor, int *patch);

/* Sets *opts to the defaults (owner 0, automatic progress, adaptive polling up to
 * 1 ms, no name, the wait warning from the environment or 30 s) and opts->size to
 * sizeof(tally_options) as compiled here. TALLY_ERR_ARG for a NULL opts. */
static inline int tally_options_init(tally_options *opts);

/* What tally_options_init calls, with the caller's sizeof(tally_options): `size`
 * bytes at opts are written (fields this library does not know are zeroed), none
 * beyond. TALLY_ERR_ARG if opts is NULL or size is below 1.0's struct. For
 * bindings that lay the struct out themselves (Fortran, ctypes). */
TALLY_API int tally_options_init_sized(tally_options *opts, size_t size);

/* Collective over comm. opts may be NULL (defaults). On success *out is the mutex. */
TALLY_API int tally_mutex_create(MPI_Comm comm, const tally_options *opts, tally_mutex *out);

/* As tally_mutex_create, with `bytes` of application state carried in the token
 * (equal on all ranks, at most TALLY_MAX_PAYLOAD_BYTES, else TALLY_ERR_ARG everywhere). */
TALLY_API int tally_mutex_create_payload(MPI_Comm comm, const tally_options *opts, size_t bytes, tally_mutex *out);

/* Blocks until this rank is in the critical section. */
TALLY_API int tally_mutex_lock(tally_mutex m);

/* *acquired = 1 and enters if this rank holds the token idle, else *acquired = 0.
 * Never sends, never blocks. */
TALLY_API int tally_mutex_trylock(tally_mutex m, int *acquired);

/* Waits up to timeout_seconds. On timeout *acquired = 0; the request stays
 * outstanding and a token that arrives later is passed on or kept idle. */
TALLY_API int tally_mutex_timedlock(tally_mutex m, double timeout_seconds, int *acquired);

/* Leaves the critical section; this rank must hold it. */
TALLY_API int tally_mutex_unlock(tally_mutex m);

/* Starts an acquisition without waiting (tally::mutex::lock_async). *req is the
 * request; the critical section it acquires belongs to the calling thread. At most
 * one per mutex and rank may be outstanding (TALLY_ERR_DEADLOCK otherwise). */
TALLY_API int tally_mutex_ilock(tally_mutex m, tally_request *req);

/* *acquired = 1 once the lock is acquired (the calling thread holds the critical
 * section), else 0; one progress step. TALLY_ERR_STATE for a cancelled request or
 * one whose mutex was freed. */
TALLY_API int tally_request_test(tally_request req, int *acquired);

/* Blocks until acquired. */
TALLY_API int tally_request_wait(tally_request req);

/* Withdraws a pending acquisition: *cancelled = 1 if it will never be acquired;
 * *cancelled = 0 if it had been acquired already: the caller holds the critical
 * section and must unlock it. */
TALLY_API int tally_request_cancel(tally_request req, int *cancelled);

/* The acquisition as an MPI generalized request, for MPI_Waitany and friends over
 * lock and communication requests; completed when the lock is acquired (or the
 * request cancelled). Needs thread progress (TALLY_ERR_STATE otherwise). */
TALLY_API int tally_request_get_mpi(tally_request req, MPI_Request *out);

/* Frees the request and sets *req = NULL. An acquisition nobody saw complete is
 * cancelled; a lock it acquired meanwhile is released. */
TALLY_API int tally_request_free(tally_request *req);

/* Drives progress once (answers REQUESTs, hands over an idle token). */
TALLY_API int tally_mutex_poll(tally_mutex m);

/* The token's payload: valid only while this rank holds the critical section,
 * else TALLY_ERR_NOT_OWNER. *bytes may be 0 (no payload). */
TALLY_API int tally_mutex_payload(tally_mutex m, void **ptr, size_t *bytes);

/* Counters of this rank. The queries (get_stats, rank, size, topology) keep
 * answering with final values after MPI_Finalize freed the mutex, as in C++ after
 * free(); a handle passed to tally_mutex_free is gone (TALLY_ERR_STATE). */
static inline int tally_mutex_get_stats(tally_mutex m, tally_stats *out);

/* What tally_mutex_get_stats calls, with the caller's sizeof(tally_stats): `size`
 * bytes at out are written, none beyond; counters this library does not keep read
 * 0. TALLY_ERR_ARG if out is NULL or size is below 1.0's struct. */
TALLY_API int tally_mutex_get_stats_sized(tally_mutex m, tally_stats *out, size_t size);

/* Rank and size of the calling process in the mutex's communicator. */
TALLY_API int tally_mutex_rank(tally_mutex m, int *rank);
TALLY_API int tally_mutex_size(tally_mutex m, int *size);
/* The topology in effect: TALLY_TOPOLOGY_FLAT or TALLY_TOPOLOGY_NODE (AUTO resolved
 * at creation, the same on every rank). */
TALLY_API int tally_mutex_topology(tally_mutex m, tally_topology *topology);

/* Collective: drains all messages, frees the mutex and sets *m = NULL. If this rank
 * still held the critical section it is released and TALLY_ERR_STATE is returned,
 * after the mutex was freed. */
TALLY_API int tally_mutex_free(tally_mutex *m);

/* Short description of a code. Never NULL. */
TALLY_API const char *tally_strerror(int code);

/* The full message of the calling thread's last failing tally call (with MPI's
 * error string for TALLY_ERR_MPI), or "" if none failed. Never NULL. */
TALLY_API const char *tally_last_error(void);

static inline int tally_options_init(tally_options *opts) {
  return tally_options_init_sized(opts, sizeof(tally_options));
}

static inline int tally_mutex_get_stats(tally_mutex m, tally_stats *out) {
  return tally_mutex_get_stats_sized(m, out, sizeof(tally_stats));
}

#ifdef __cplusplus
}
#endif

#endif /* TALLY_TALLY_H */
