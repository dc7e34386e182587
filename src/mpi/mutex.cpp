#include "tally/mutex.hpp"

#include <cstring>
#include <string>

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
payload_view mutex::payload() {
  detail::engine& e = live();
  return payload_view(&e, e.payload_entry(), e.payload_size());
}

std::span<std::byte> payload_view::bytes() const { return engine_->payload(entry_); }

void payload_view::read(std::size_t offset, std::span<std::byte> dst) const {
  const std::span<std::byte> p = bytes();
  if (offset > p.size() || dst.size() > p.size() - offset)
    throw error(errc::arg, "tally: payload read of " + std::to_string(dst.size()) + " bytes at " +
                               std::to_string(offset) + " exceeds its " + std::to_string(p.size()) + " bytes");
  std::memcpy(dst.data(), p.data() + offset, dst.size());
}

void payload_view::write(std::size_t offset, std::span<const std::byte> src) const {
  const std::span<std::byte> p = bytes();
  if (offset > p.size() || src.size() > p.size() - offset)
    throw error(errc::arg, "tally: payload write of " + std::to_string(src.size()) + " bytes at " +
                               std::to_string(offset) + " exceeds its " + std::to_string(p.size()) + " bytes");
  std::memcpy(p.data() + offset, src.data(), src.size());
}
void mutex::free() { live().free(); }
struct stats mutex::stats() const { return live().stats(); }
int mutex::rank() const { return live().rank(); }
int mutex::size() const { return live().size(); }

}  // namespace tally
