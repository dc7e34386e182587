#include "baselines/ricart_agrawala.hpp"

#include <algorithm>
#include <exception>

namespace bench {

ricart_agrawala::ricart_agrawala(MPI_Comm comm)
    : comm_(comm),
      ra_(comm_.rank(), comm_.size()),
      request_sends_(static_cast<std::size_t>(comm_.size()), MPI_REQUEST_NULL),
      reply_sends_(static_cast<std::size_t>(comm_.size()), MPI_REQUEST_NULL) {
  post_recv();
}

ricart_agrawala::~ricart_agrawala() {
  try {
    teardown();
  } catch (const std::exception& e) {
    die(e.what());
  }
}

void ricart_agrawala::teardown() {
  // Once every rank has arrived, every REQUEST has been answered and every REPLY
  // received (each lock() waited for all of them), so nothing is left in flight.
  MPI_Request bar = MPI_REQUEST_NULL;
  check(MPI_Ibarrier(comm_.get(), &bar), "MPI_Ibarrier(ricart_agrawala)");
  for (int done = 0; !done;) {
    poll();
    check(MPI_Test(&bar, &done, MPI_STATUS_IGNORE), "MPI_Test(ricart_agrawala)");
  }
  check(MPI_Waitall(static_cast<int>(request_sends_.size()), request_sends_.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall(REQUEST)");
  check(MPI_Waitall(static_cast<int>(reply_sends_.size()), reply_sends_.data(), MPI_STATUSES_IGNORE),
        "MPI_Waitall(REPLY)");
  check(MPI_Cancel(&recv_), "MPI_Cancel(ricart_agrawala)");
  check(MPI_Wait(&recv_, MPI_STATUS_IGNORE), "MPI_Wait(ricart_agrawala)");
}

void ricart_agrawala::post_recv() {
  check(MPI_Irecv(&recv_buf_, 1, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &recv_),
        "MPI_Irecv(ricart_agrawala)");
}

void ricart_agrawala::reply(int to) {
  MPI_Request& r = reply_sends_[static_cast<std::size_t>(to)];
  check(MPI_Wait(&r, MPI_STATUS_IGNORE), "MPI_Wait(REPLY)");  // the previous one, long done
  check(MPI_Isend(nullptr, 0, MPI_BYTE, to, tag_reply, comm_.get(), &r), "MPI_Isend(REPLY)");
}

void ricart_agrawala::poll() {
  for (;;) {
    int done = 0;
    MPI_Status st;
    check(MPI_Test(&recv_, &done, &st), "MPI_Test(ricart_agrawala)");
    if (!done) return;
    const int from = st.MPI_SOURCE;
    const std::uint64_t stamp = recv_buf_;
    const int kind = st.MPI_TAG;
    post_recv();
    if (kind == tag_reply)
      (void)ra_.on_reply();  // in_cs() tells lock() when the last one came
    else if (ra_.on_request(from, stamp))
      reply(from);
  }
}

void ricart_agrawala::lock() {
  const int n = comm_.size();
  // The previous broadcast is complete at its targets (all of them replied);
  // finish it locally before my_stamp_ changes.
  check(MPI_Waitall(n, request_sends_.data(), MPI_STATUSES_IGNORE), "MPI_Waitall(REQUEST)");
  my_stamp_ = ra_.lock();
  for (int j = 0; j < n; ++j) {  // none when n == 1: lock() entered at once
    if (j == comm_.rank()) continue;
    check(MPI_Isend(&my_stamp_, 1, MPI_UINT64_T, j, tag_request, comm_.get(),
                    &request_sends_[static_cast<std::size_t>(j)]),
          "MPI_Isend(REQUEST)");
  }
  while (!ra_.in_cs()) poll();
}

void ricart_agrawala::unlock() {
  owed_.clear();
  ra_.unlock(owed_);
  for (std::int32_t j : owed_) reply(j);
}

}  // namespace bench
