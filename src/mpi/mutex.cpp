#include "tally/mutex.hpp"

#include "mpi/engine.hpp"

namespace tally {

mutex::mutex(MPI_Comm comm, const options& opts)
    : engine_(std::make_unique<detail::engine>(comm, opts)) {}

mutex::~mutex() = default;

detail::engine& mutex::live() const { return *engine_; }

void mutex::lock() { live().lock(); }
bool mutex::try_lock() { return live().try_lock(); }
bool mutex::lock_until(std::chrono::steady_clock::time_point deadline) {
  return live().lock_until(deadline);
}
void mutex::unlock() { live().unlock(); }
void mutex::poll() { live().poll(); }
std::span<std::byte> mutex::payload() { return live().payload(); }
void mutex::free() { live().free(); }
struct stats mutex::stats() const { return live().stats(); }
int mutex::rank() const { return live().rank(); }
int mutex::size() const { return live().size(); }

}  // namespace tally
