// bench/baselines/lock_server.hpp — a central lock server over point-to-point
// messages.
//
// Rank 0 keeps the lock's state (free or held, and a FIFO of waiting ranks) and
// competes for the lock itself, through the same FIFO as everyone else. A client
// entry costs 3 zero-byte messages (REQUEST to the server, GRANT back, RELEASE);
// the server's own entry costs none. Under contention a handoff between clients
// is RELEASE + GRANT: two one-way latencies through the server.
// The server answers only while it is inside lock(), unlock() or poll() (there is
// no asynchronous progress in MPI), exactly like tally in in_calls mode.
#pragma once

#include <mpi.h>

#include <deque>

#include "baselines/mpi_util.hpp"

namespace bench {

class lock_server {
 public:
  static constexpr const char* name = "lock_server";

  // Collective over comm.
  explicit lock_server(MPI_Comm comm);
  // Collective: the server keeps serving until every rank arrived and the last
  // RELEASE was received. The calling rank must not hold the lock.
  ~lock_server();
  lock_server(const lock_server&) = delete;
  lock_server& operator=(const lock_server&) = delete;

  void lock();
  void unlock();
  // The server handles every message that has arrived; a no-op on clients.
  void poll();

 private:
  enum tag : int {
    tag_request = 1,
    tag_grant = 2,
    tag_release = 3
  };
  static constexpr int server = 0;
  static constexpr int nobody = -1;

  void teardown();
  bool is_server() const noexcept { return comm_.rank() == server; }
  void post_recv();
  // Gives the lock to the head of the queue, or marks it free. Server only.
  void pass_on();
  void grant(int to);

  comm_dup comm_;
  // Server state.
  int holder_ = nobody;
  std::deque<int> waiting_;
  MPI_Request recv_ = MPI_REQUEST_NULL;
};

}  // namespace bench
