#include "baselines/lock_server.hpp"

#include <exception>

namespace bench {

lock_server::lock_server(MPI_Comm comm) : comm_(comm) {
  if (is_server()) post_recv();
}

lock_server::~lock_server() {
  try {
    teardown();
  } catch (const std::exception& e) {
    die(e.what());
  }
}

void lock_server::teardown() {
  MPI_Request bar = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_.get(), &bar), "MPI_Ibarrier(lock_server)");
  for (int done = 0; !done;) {
    poll();
    check(MPI_Test(&bar, &done, MPI_STATUS_IGNORE), "MPI_Test(lock_server)");
  }
  if (!is_server()) return;
  // Every client has finished, but its last RELEASE may still be in flight.
  while (holder_ != nobody) poll();
  check(MPI_Cancel(&recv_), "MPI_Cancel(lock_server)");
  check(MPI_Wait(&recv_, MPI_STATUS_IGNORE), "MPI_Wait(lock_server)");
}

void lock_server::post_recv() {
  check(MPI_Irecv(nullptr, 0, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &recv_), "MPI_Irecv(lock_server)");
}

void lock_server::grant(int to) {
  // Zero bytes: completes locally under any eager protocol.
  check(MPI_Send(nullptr, 0, MPI_BYTE, to, tag_grant, comm_.get()), "MPI_Send(GRANT)");
}

void lock_server::pass_on() {
  if (waiting_.empty()) {
    holder_ = nobody;
    return;
  }
  holder_ = waiting_.front();
  waiting_.pop_front();
  if (holder_ != server) grant(holder_);
}

void lock_server::poll() {
  if (!is_server()) return;
  for (;;) {
    int done = 0;
    MPI_Status st;
    check(MPI_Test(&recv_, &done, &st), "MPI_Test(lock_server)");
    if (!done) return;
    const int from = st.MPI_SOURCE;
    const int kind = st.MPI_TAG;
    post_recv();
    if (kind == tag_request) {
      if (holder_ == nobody) {
        holder_ = from;
        grant(from);
      } else {
        waiting_.push_back(from);
      }
    } else if (kind == tag_release && holder_ == from) {
      pass_on();
    } else {
      throw mpi_failure("lock_server: unexpected message (protocol violation)");
    }
  }
}

void lock_server::lock() {
  if (is_server()) {
    poll();  // requests that arrived first are served first
    if (holder_ == nobody) {
      holder_ = server;
      return;
    }
    waiting_.push_back(server);
    while (holder_ != server) poll();
    return;
  }
  check(MPI_Send(nullptr, 0, MPI_BYTE, server, tag_request, comm_.get()), "MPI_Send(REQUEST)");
  check(MPI_Recv(nullptr, 0, MPI_BYTE, server, tag_grant, comm_.get(), MPI_STATUS_IGNORE), "MPI_Recv(GRANT)");
}

void lock_server::unlock() {
  if (is_server()) {
    pass_on();
    return;
  }
  check(MPI_Send(nullptr, 0, MPI_BYTE, server, tag_release, comm_.get()), "MPI_Send(RELEASE)");
}

}  // namespace bench
