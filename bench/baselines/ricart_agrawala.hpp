// bench/baselines/ricart_agrawala.hpp — Ricart & Agrawala, "An optimal algorithm
// for mutual exclusion in computer networks", CACM 24(1), 1981.
//
// A rank that wants the lock stamps a REQUEST with its Lamport clock and sends it
// to every other rank; it enters once all n-1 have replied. A rank replies at once
// unless it is in the critical section or requesting with an older stamp
// (ties broken by rank), in which case it defers the REPLY until unlock. Every
// entry costs exactly 2(n-1) messages; no state stays with the last holder, so a
// re-entry costs the same as any other. Requests are answered only inside lock(),
// unlock() and poll().
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "baselines/mpi_util.hpp"

namespace bench {

class ricart_agrawala {
 public:
  static constexpr const char* name = "ricart_agrawala";

  // Collective over comm.
  explicit ricart_agrawala(MPI_Comm comm);
  // Collective: answers requests until every rank arrived, then completes every
  // send. The calling rank must not hold the lock.
  ~ricart_agrawala();
  ricart_agrawala(const ricart_agrawala&) = delete;
  ricart_agrawala& operator=(const ricart_agrawala&) = delete;

  void lock();
  void unlock();
  // Answers every REQUEST and counts every REPLY that has arrived.
  void poll();

 private:
  enum tag : int { tag_request = 1, tag_reply = 2 };

  void teardown();
  void post_recv();
  void reply(int to);
  // True if REQUEST(stamp, from) must wait for this rank's own entry.
  bool defers(std::uint64_t stamp, int from) const noexcept;

  comm_dup comm_;
  std::uint64_t clock_ = 0;       // Lamport clock
  std::uint64_t my_stamp_ = 0;    // stamp of the outstanding request
  bool requesting_ = false;       // from lock() until unlock()
  bool in_cs_ = false;
  int replies_ = 0;               // REPLYs received for the outstanding request
  std::vector<char> deferred_;    // deferred_[j]: REPLY owed to j at unlock
  std::uint64_t recv_buf_ = 0;
  MPI_Request recv_ = MPI_REQUEST_NULL;
  std::vector<MPI_Request> request_sends_;  // by destination; all read my_stamp_
  std::vector<MPI_Request> reply_sends_;    // by destination
};

}  // namespace bench
