// runtime/acquisition.hpp — one asynchronous acquisition (tally::lock_request),
// shared by the request object, the engine and, once asked for, an MPI
// generalized request.
//
// Contract. `st` and `entry` change only under the engine's mutex; they are
// atomic so that a request can still read them after its mutex is gone. At most
// one acquisition per mutex per rank is outstanding (waiting_slot or pending). The
// generalized request, if any, is completed exactly once: when the lock is
// acquired, or when the acquisition is cancelled (then MPI_Test_cancelled is true).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace tally::detail {

class engine;

struct acquisition {
  enum class state : std::uint8_t {
    waiting_slot,  // another thread of this rank drives the mutex; starts when it is done
    pending,       // REQUEST broadcast (or re-armed), waiting for the token
    acquired,      // in the critical section, owned by `owner`
    cancelled,     // withdrawn before it was acquired; never will be
  };

  acquisition(std::weak_ptr<engine> e, std::thread::id t) : eng(std::move(e)), owner(t) {}

  const std::weak_ptr<engine> eng;
  const std::thread::id owner;
  std::atomic<state> st{state::waiting_slot};
  std::atomic<std::uint64_t> entry{0};  // the acquisitions count at entry, once acquired
  // Somebody learned that it was acquired: test()/wait() returned true, cancel()
  // returned false, or MPI completed and freed the generalized request.
  std::atomic<bool> observed{false};

  // The generalized request (runtime/async.cpp); guarded by the engine's mutex.
  MPI_Request greq = MPI_REQUEST_NULL;
  bool greq_completed = false;
  std::atomic<bool> greq_freed{false};
};

}  // namespace tally::detail
