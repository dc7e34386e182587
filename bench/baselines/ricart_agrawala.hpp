// bench/baselines/ricart_agrawala.hpp — Ricart & Agrawala (CACM 1981) over MPI.
//
// The algorithm is protocol::ricart_agrawala (core/ricart_agrawala.hpp), the same
// state machine the simulator drives; this class carries its messages: REQUEST =
// the 64-bit stamp to every other rank, REPLY = an empty message, deferred REPLYs
// sent at unlock in priority order. Every entry costs exactly 2(n-1) messages.
// Requests are answered only inside lock(), unlock() and poll().
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "baselines/mpi_util.hpp"
#include "core/ricart_agrawala.hpp"

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
  enum tag : int {
    tag_request = 1,
    tag_reply = 2
  };

  void teardown();
  void post_recv();
  void reply(int to);

  comm_dup comm_;
  tally::protocol::ricart_agrawala ra_;
  std::uint64_t my_stamp_ = 0;  // what the outstanding REQUEST sends read
  std::uint64_t recv_buf_ = 0;
  MPI_Request recv_ = MPI_REQUEST_NULL;
  std::vector<std::int32_t> owed_;          // REPLYs to send at unlock
  std::vector<MPI_Request> request_sends_;  // by destination; all read my_stamp_
  std::vector<MPI_Request> reply_sends_;    // by destination
};

}  // namespace bench
