// runtime/mutex.cpp — tally::mutex and payload_view: the C++ API over the engine.
#include "tally/mutex.hpp"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include "runtime/engine.hpp"
#include "runtime/errors.hpp"

namespace tally {

namespace {
// The sizes of options and stats at 1.0: no caller of libtally.so.1 has smaller
// ones. Members are only appended later; pin options_1_0 to its number then.
constexpr std::size_t options_1_0 = sizeof(options);
constexpr std::size_t stats_1_0 = offsetof(tally_stats, bound_releases) + sizeof(std::uint64_t);

// The caller's options, or why they cannot be read. Every member is 1.0's today; a
// member appended later is copied only where options_size covers it.
std::optional<error> unreadable(std::size_t options_size) {
  if (options_size > sizeof(options))
    return detail::make_error(
        errc::arg, detail::newer_header("tally::options", options_size, sizeof(options), "tally/options.hpp"));
  if (options_size < options_1_0)
    return detail::make_error(errc::arg, "options of " + std::to_string(options_size) + " bytes are no tally::options");
  return std::nullopt;
}
}  // namespace

mutex::mutex(MPI_Comm comm, const options& opts, std::size_t options_size, std::span<const std::byte> initial_payload,
             const detail::refusal* why) {
  std::optional<error> refused = unreadable(options_size);
  if (why && !refused) refused = error(why->code, why->what);
  // Unreadable options are not read: the creation fails on every rank with defaults.
  engine_ = std::make_shared<detail::engine>(comm, refused ? options{} : opts, std::move(refused), initial_payload);
}

void mutex::read_stats(tally::stats& out, std::size_t size) const {
  if (size < stats_1_0)
    throw error(errc::arg, "stats of " + std::to_string(size) + " bytes, less than any tally_stats (" +
                               std::to_string(stats_1_0) + ")");
  const tally::stats s = engine_->stats();
  detail::write_sized(&out, size, &s, sizeof s);
}

mutex::~mutex() = default;

namespace {
// Runs f on e; an MPI failure it raises makes e unusable for every thread and every
// rank (engine::fault) before it reaches the caller.
template <class F>
decltype(auto) faults_kept(detail::engine& e, F&& f) {
  try {
    return f();
  } catch (const error& x) {
    if (x.code() == errc::mpi) e.fault(std::current_exception());
    throw;
  }
}
}  // namespace

void mutex::lock() {
  faults_kept(*engine_, [&] { engine_->lock(); });
}
bool mutex::try_lock() {
  return faults_kept(*engine_, [&] { return engine_->try_lock(); });
}
bool mutex::lock_until(std::chrono::steady_clock::time_point deadline) {
  return faults_kept(*engine_, [&] { return engine_->lock_until(deadline); });
}
void mutex::unlock() {
  faults_kept(*engine_, [&] { engine_->unlock(); });
}
void mutex::poll() {
  faults_kept(*engine_, [&] { engine_->poll(); });
}
payload_view mutex::payload() {
  detail::engine& e = *engine_;
  return payload_view(&e, e.payload_entry(), e.payload_size());
}

std::span<std::byte> payload_view::bytes() const { return engine_->payload(entry_); }

void payload_view::read(std::size_t offset, std::span<std::byte> dst) const {
  const std::span<std::byte> p = bytes();
  if (offset > p.size() || dst.size() > p.size() - offset)
    detail::fail(errc::arg, "payload read of " + std::to_string(dst.size()) + " bytes at " + std::to_string(offset) +
                                " exceeds its " + std::to_string(p.size()) + " bytes");
  std::memcpy(dst.data(), p.data() + offset, dst.size());
}

void payload_view::write(std::size_t offset, std::span<const std::byte> src) const {
  const std::span<std::byte> p = bytes();
  if (offset > p.size() || src.size() > p.size() - offset)
    detail::fail(errc::arg, "payload write of " + std::to_string(src.size()) + " bytes at " + std::to_string(offset) +
                                " exceeds its " + std::to_string(p.size()) + " bytes");
  std::memcpy(p.data() + offset, src.data(), src.size());
}
void mutex::free() { engine_->free(); }
int mutex::rank() const { return engine_->rank(); }
int mutex::size() const { return engine_->size(); }
progress_mode mutex::progress() const { return engine_->progress(); }
tally::topology mutex::topology() const { return engine_->topology(); }
const std::string& mutex::name() const { return engine_->name(); }

lock_request mutex::lock_async() {
  return faults_kept(*engine_, [&] { return lock_request(engine_->lock_async()); });
}

// --- lock_request ----------------------------------------------------------------------

namespace {
// The engine of a request's mutex, alive for the duration of the call.
std::shared_ptr<detail::engine> engine_of(const std::shared_ptr<detail::acquisition>& a) {
  if (!a) detail::fail(errc::state, "lock_request", "empty request (default-constructed or moved from)");
  std::shared_ptr<detail::engine> e = a->eng.lock();
  if (!e) detail::fail(errc::state, "lock_request", "its mutex was destroyed");
  return e;
}
}  // namespace

lock_request& lock_request::operator=(lock_request&& o) noexcept {
  if (this != &o) {
    lock_request gone(std::move(*this));
    acq_ = std::move(o.acq_);
  }
  return *this;
}

lock_request::~lock_request() {
  if (!acq_ || acq_->observed) return;
  if (const std::shared_ptr<detail::engine> e = acq_->eng.lock()) e->async_abandon(*acq_);
}

bool lock_request::test() {
  const auto e = engine_of(acq_);
  return faults_kept(*e, [&] { return e->async_test(*acq_); });
}
void lock_request::wait() {
  const auto e = engine_of(acq_);
  faults_kept(*e, [&] { (void)e->async_wait(*acq_, std::nullopt); });
}
bool lock_request::wait_deadline(std::chrono::steady_clock::time_point deadline) {
  const auto e = engine_of(acq_);
  const std::optional<std::chrono::steady_clock::time_point> until =
      deadline == std::chrono::steady_clock::time_point::max() ? std::nullopt : std::optional(deadline);
  return faults_kept(*e, [&] { return e->async_wait(*acq_, until); });
}
bool lock_request::cancel() {
  const auto e = engine_of(acq_);
  return faults_kept(*e, [&] { return e->async_cancel(*acq_); });
}
MPI_Request lock_request::mpi_request() { return engine_of(acq_)->async_mpi_request(acq_); }

}  // namespace tally
