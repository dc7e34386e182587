// Every buffer of a pending nonblocking send keeps its address and its bytes until
// the send completes (MPI forbids touching it before; Open MPI copies small sends
// at once and hides a violation, MPICH may read the buffer later). A PMPI layer
// packs each send's data when MPI_Isend starts it and again, from the same address
// and datatype, when MPI_Test/Testall/Wait/Waitall completes it: the two must be
// equal. A buffer that moved (a reallocated container) or was reused is caught here
// under either MPI, and under AddressSanitizer as a use after free.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <vector>

#include "support.hpp"
#include "tally/mutex.hpp"

namespace {

struct pending {
  const void* buf;
  int count;
  MPI_Datatype type;
  MPI_Comm comm;
  std::vector<char> packed;  // the data as MPI_Isend saw it
};

std::mutex mu;
std::map<MPI_Request, pending> sends;  // started and not yet completed
std::atomic<long> checked{0}, changed{0};

std::vector<char> pack(const void* buf, int count, MPI_Datatype type, MPI_Comm comm) {
  int size = 0;
  PMPI_Pack_size(count, type, comm, &size);
  std::vector<char> out(static_cast<std::size_t>(size));
  int pos = 0;
  PMPI_Pack(buf, count, type, out.data(), size, &pos, comm);
  out.resize(static_cast<std::size_t>(pos));
  return out;
}

// Called with the handles as they were before a completion call and after it.
void completed(const MPI_Request* before, const MPI_Request* after, int n) {
  std::lock_guard lk(mu);
  for (int i = 0; i < n; ++i) {
    if (before[i] == MPI_REQUEST_NULL || after[i] != MPI_REQUEST_NULL) continue;
    const auto it = sends.find(before[i]);
    if (it == sends.end()) continue;  // a receive, or a send this layer did not see start
    const pending& p = it->second;
    if (pack(p.buf, p.count, p.type, p.comm) != p.packed) ++changed;
    ++checked;
    sends.erase(it);
  }
}

}  // namespace

extern "C" {
int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* req) {
  std::vector<char> packed = pack(buf, count, type, comm);
  const int rc = PMPI_Isend(buf, count, type, dest, tag, comm, req);
  if (rc == MPI_SUCCESS) {
    std::lock_guard lk(mu);
    sends[*req] = pending{buf, count, type, comm, std::move(packed)};
  }
  return rc;
}
int MPI_Request_free(MPI_Request* req) {  // the send's completion is not observed
  {
    std::lock_guard lk(mu);
    sends.erase(*req);
  }
  return PMPI_Request_free(req);
}
int MPI_Test(MPI_Request* req, int* flag, MPI_Status* status) {
  const MPI_Request before = *req;
  const int rc = PMPI_Test(req, flag, status);
  completed(&before, req, 1);
  return rc;
}
int MPI_Wait(MPI_Request* req, MPI_Status* status) {
  const MPI_Request before = *req;
  const int rc = PMPI_Wait(req, status);
  completed(&before, req, 1);
  return rc;
}
int MPI_Testall(int n, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  const std::vector<MPI_Request> before(reqs, reqs + n);
  const int rc = PMPI_Testall(n, reqs, flag, statuses);
  completed(before.data(), reqs, n);
  return rc;
}
int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status statuses[]) {
  const std::vector<MPI_Request> before(reqs, reqs + n);
  const int rc = PMPI_Waitall(n, reqs, statuses);
  completed(before.data(), reqs, n);
  return rc;
}
}

namespace {

using tally::test::progress_barrier;
using tally::test::world_rank;

// Contention from every rank with REQUEST broadcasts piling up (several pending per
// rank: the case that reallocated a growing container of send slots), timed locks
// that withdraw, a payload in the token, then a collective free.
TEST(SendBuffers, StayInPlaceUntilTheirSendsComplete) {
  const long checked0 = checked, changed0 = changed;
  tally::options o;
  o.payload_bytes = 24;
  {
    tally::mutex m(MPI_COMM_WORLD, o);
    for (int i = 0; i < 200; ++i) {
      if (i % 5 == 4) {
        if (m.try_lock_for(std::chrono::microseconds(i % 3))) m.unlock();
        continue;
      }
      m.lock();
      const std::uint64_t v = m.payload().load<std::uint64_t>() + 1;
      m.payload().store(v);
      m.unlock();
    }
    progress_barrier(MPI_COMM_WORLD, m);
  }
  const long mine = checked - checked0;
  long all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  EXPECT_EQ(changed - changed0, 0) << "sends whose buffer changed or moved before completion";
  EXPECT_GT(all, 0) << "no completed send was checked";
}

}  // namespace
