// PMPI interposition behind traffic.hpp. Every wrapper counts, then forwards to
// its PMPI_ twin unchanged and returns its result.
#include "traffic.hpp"

#include <atomic>
#include <mutex>
#include <unordered_map>

namespace bench::traffic {
namespace {

struct atomic_counts {
  std::atomic<std::uint64_t> p2p{0}, p2p_bytes{0}, rma{0}, rma_fetch{0}, rma_bytes{0}, rma_sync{0}, local{0},
      max_p2p{0};
};

atomic_counts g;
MPI_Comm g_excluded = MPI_COMM_NULL;

struct send_info {
  int count;
  MPI_Datatype type;
  int dest;
  MPI_Comm comm;
};

std::mutex g_mu;                                          // guards the two maps
std::unordered_map<MPI_Request, send_info> g_persistent;  // persistent sends
std::unordered_map<MPI_Win, int> g_win_rank;              // own rank per window

void add(std::atomic<std::uint64_t>& c, std::uint64_t v) noexcept { c.fetch_add(v, std::memory_order_relaxed); }

std::uint64_t type_bytes(int count, MPI_Datatype type) noexcept {
  if (count <= 0 || type == MPI_DATATYPE_NULL) return 0;
  int size = 0;
  PMPI_Type_size(type, &size);
  return static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(size);
}

void on_send(int count, MPI_Datatype type, int dest, MPI_Comm comm) noexcept {
  if (comm == g_excluded || dest == MPI_PROC_NULL) return;
  int inter = 0, me = -1;
  PMPI_Comm_test_inter(comm, &inter);
  if (!inter) PMPI_Comm_rank(comm, &me);
  if (dest == me) {
    add(g.local, 1);
    return;
  }
  const std::uint64_t bytes = type_bytes(count, type);
  add(g.p2p, 1);
  add(g.p2p_bytes, bytes);
  std::uint64_t seen = g.max_p2p.load(std::memory_order_relaxed);
  while (bytes > seen && !g.max_p2p.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}

int rank_in(MPI_Win win) noexcept {
  std::lock_guard<std::mutex> lk(g_mu);
  auto it = g_win_rank.find(win);
  if (it != g_win_rank.end()) return it->second;
  MPI_Group group;
  int me = -1;
  PMPI_Win_get_group(win, &group);
  PMPI_Group_rank(group, &me);
  PMPI_Group_free(&group);
  g_win_rank.emplace(win, me);
  return me;
}

// One RMA operation carrying `bytes` (both directions); `fetch`: it returns data.
void on_rma(int target, MPI_Win win, std::uint64_t bytes, bool fetch) noexcept {
  if (target == MPI_PROC_NULL) return;
  if (target == rank_in(win)) {
    add(g.local, 1);
    return;
  }
  add(g.rma, 1);
  add(g.rma_bytes, bytes);
  if (fetch) add(g.rma_fetch, 1);
}

void on_rma_sync(int target, MPI_Win win) noexcept {
  if (target == MPI_PROC_NULL || target == rank_in(win)) return;
  add(g.rma_sync, 1);
}

void on_persistent_init(MPI_Request req, int count, MPI_Datatype type, int dest, MPI_Comm comm) noexcept {
  std::lock_guard<std::mutex> lk(g_mu);
  g_persistent[req] = send_info{count, type, dest, comm};
}

void on_start(MPI_Request req) noexcept {
  send_info s{};
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_persistent.find(req);
    if (it == g_persistent.end()) return;  // a persistent receive
    s = it->second;
  }
  on_send(s.count, s.type, s.dest, s.comm);
}

}  // namespace

counts counts::operator-(const counts& o) const noexcept {
  return {p2p - o.p2p,           p2p_bytes - o.p2p_bytes, rma - o.rma, rma_fetch - o.rma_fetch, rma_bytes - o.rma_bytes,
          rma_sync - o.rma_sync, local - o.local};
}

counts snapshot() noexcept {
  const auto r = std::memory_order_relaxed;
  return {g.p2p.load(r),       g.p2p_bytes.load(r), g.rma.load(r),  g.rma_fetch.load(r),
          g.rma_bytes.load(r), g.rma_sync.load(r),  g.local.load(r)};
}

void exclude(MPI_Comm comm) noexcept { g_excluded = comm; }

std::uint64_t max_p2p_bytes() noexcept { return g.max_p2p.load(std::memory_order_relaxed); }

void reset_max() noexcept { g.max_p2p.store(0, std::memory_order_relaxed); }

}  // namespace bench::traffic

using bench::traffic::on_persistent_init;
using bench::traffic::on_rma;
using bench::traffic::on_rma_sync;
using bench::traffic::on_send;
using bench::traffic::on_start;
using bench::traffic::type_bytes;

extern "C" {

// --- point-to-point ---------------------------------------------------------------
int MPI_Send(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  on_send(count, type, dest, comm);
  return PMPI_Send(buf, count, type, dest, tag, comm);
}
int MPI_Ssend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  on_send(count, type, dest, comm);
  return PMPI_Ssend(buf, count, type, dest, tag, comm);
}
int MPI_Rsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  on_send(count, type, dest, comm);
  return PMPI_Rsend(buf, count, type, dest, tag, comm);
}
int MPI_Bsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm) {
  on_send(count, type, dest, comm);
  return PMPI_Bsend(buf, count, type, dest, tag, comm);
}
int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  on_send(count, type, dest, comm);
  return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}
int MPI_Issend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  on_send(count, type, dest, comm);
  return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}
int MPI_Irsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  on_send(count, type, dest, comm);
  return PMPI_Irsend(buf, count, type, dest, tag, comm, req);
}
int MPI_Ibsend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  on_send(count, type, dest, comm);
  return PMPI_Ibsend(buf, count, type, dest, tag, comm, req);
}
int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf, int rcount,
                 MPI_Datatype rtype, int source, int rtag, MPI_Comm comm, MPI_Status* status) {
  on_send(scount, stype, dest, comm);
  return PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status);
}
int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype type, int dest, int stag, int source, int rtag,
                         MPI_Comm comm, MPI_Status* status) {
  on_send(count, type, dest, comm);
  return PMPI_Sendrecv_replace(buf, count, type, dest, stag, source, rtag, comm, status);
}

// Persistent sends count once per MPI_Start.
int MPI_Send_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  const int rc = PMPI_Send_init(buf, count, type, dest, tag, comm, req);
  if (rc == MPI_SUCCESS) on_persistent_init(*req, count, type, dest, comm);
  return rc;
}
int MPI_Ssend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  const int rc = PMPI_Ssend_init(buf, count, type, dest, tag, comm, req);
  if (rc == MPI_SUCCESS) on_persistent_init(*req, count, type, dest, comm);
  return rc;
}
int MPI_Rsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  const int rc = PMPI_Rsend_init(buf, count, type, dest, tag, comm, req);
  if (rc == MPI_SUCCESS) on_persistent_init(*req, count, type, dest, comm);
  return rc;
}
int MPI_Bsend_init(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  const int rc = PMPI_Bsend_init(buf, count, type, dest, tag, comm, req);
  if (rc == MPI_SUCCESS) on_persistent_init(*req, count, type, dest, comm);
  return rc;
}
int MPI_Start(MPI_Request* req) {
  on_start(*req);
  return PMPI_Start(req);
}
int MPI_Startall(int count, MPI_Request reqs[]) {
  for (int i = 0; i < count; ++i) on_start(reqs[i]);
  return PMPI_Startall(count, reqs);
}
int MPI_Request_free(MPI_Request* req) {
  {
    std::lock_guard<std::mutex> lk(bench::traffic::g_mu);
    bench::traffic::g_persistent.erase(*req);
  }
  return PMPI_Request_free(req);
}

// --- one-sided ----------------------------------------------------------------------
int MPI_Put(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
            MPI_Datatype ttype, MPI_Win win) {
  on_rma(target, win, type_bytes(ocount, otype), false);
  return PMPI_Put(origin, ocount, otype, target, disp, tcount, ttype, win);
}
int MPI_Rput(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
             MPI_Datatype ttype, MPI_Win win, MPI_Request* req) {
  on_rma(target, win, type_bytes(ocount, otype), false);
  return PMPI_Rput(origin, ocount, otype, target, disp, tcount, ttype, win, req);
}
int MPI_Get(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
            MPI_Win win) {
  on_rma(target, win, type_bytes(ocount, otype), true);
  return PMPI_Get(origin, ocount, otype, target, disp, tcount, ttype, win);
}
int MPI_Rget(void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype,
             MPI_Win win, MPI_Request* req) {
  on_rma(target, win, type_bytes(ocount, otype), true);
  return PMPI_Rget(origin, ocount, otype, target, disp, tcount, ttype, win, req);
}
int MPI_Accumulate(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                   MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  on_rma(target, win, type_bytes(ocount, otype), false);
  return PMPI_Accumulate(origin, ocount, otype, target, disp, tcount, ttype, op, win);
}
int MPI_Raccumulate(const void* origin, int ocount, MPI_Datatype otype, int target, MPI_Aint disp, int tcount,
                    MPI_Datatype ttype, MPI_Op op, MPI_Win win, MPI_Request* req) {
  on_rma(target, win, type_bytes(ocount, otype), false);
  return PMPI_Raccumulate(origin, ocount, otype, target, disp, tcount, ttype, op, win, req);
}
int MPI_Get_accumulate(const void* origin, int ocount, MPI_Datatype otype, void* result, int rcount, MPI_Datatype rtype,
                       int target, MPI_Aint disp, int tcount, MPI_Datatype ttype, MPI_Op op, MPI_Win win) {
  const std::uint64_t out = op == MPI_NO_OP ? 0 : type_bytes(ocount, otype);
  on_rma(target, win, out + type_bytes(rcount, rtype), true);
  return PMPI_Get_accumulate(origin, ocount, otype, result, rcount, rtype, target, disp, tcount, ttype, op, win);
}
int MPI_Rget_accumulate(const void* origin, int ocount, MPI_Datatype otype, void* result, int rcount,
                        MPI_Datatype rtype, int target, MPI_Aint disp, int tcount, MPI_Datatype ttype, MPI_Op op,
                        MPI_Win win, MPI_Request* req) {
  const std::uint64_t out = op == MPI_NO_OP ? 0 : type_bytes(ocount, otype);
  on_rma(target, win, out + type_bytes(rcount, rtype), true);
  return PMPI_Rget_accumulate(origin, ocount, otype, result, rcount, rtype, target, disp, tcount, ttype, op, win, req);
}
int MPI_Fetch_and_op(const void* origin, void* result, MPI_Datatype type, int target, MPI_Aint disp, MPI_Op op,
                     MPI_Win win) {
  const std::uint64_t one = type_bytes(1, type);
  on_rma(target, win, op == MPI_NO_OP ? one : 2 * one, true);
  return PMPI_Fetch_and_op(origin, result, type, target, disp, op, win);
}
int MPI_Compare_and_swap(const void* origin, const void* compare, void* result, MPI_Datatype type, int target,
                         MPI_Aint disp, MPI_Win win) {
  on_rma(target, win, 3 * type_bytes(1, type), true);
  return PMPI_Compare_and_swap(origin, compare, result, type, target, disp, win);
}
int MPI_Win_lock(int lock_type, int rank, int assert_, MPI_Win win) {
  on_rma_sync(rank, win);
  return PMPI_Win_lock(lock_type, rank, assert_, win);
}
int MPI_Win_unlock(int rank, MPI_Win win) {
  on_rma_sync(rank, win);
  return PMPI_Win_unlock(rank, win);
}
int MPI_Win_free(MPI_Win* win) {
  {
    std::lock_guard<std::mutex> lk(bench::traffic::g_mu);
    bench::traffic::g_win_rank.erase(*win);
  }
  return PMPI_Win_free(win);
}

}  // extern "C"
