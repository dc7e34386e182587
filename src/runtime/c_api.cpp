// runtime/c_api.cpp — the C API: a thin layer over tally::mutex that turns
// exceptions into codes and C types into C++ ones.
#include "tally/tally.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "runtime/errors.hpp"
#include "tally/mutex.hpp"

// Handles (mutexes and requests) are never returned to the allocator: a freed
// handle stays readable and is marked dead, so that use after free is reported
// (TALLY_ERR_STATE) rather than undefined, until a later create recycles it.
struct tally_mutex_s {
  static constexpr std::uint32_t live_magic = 0x74616c79;  // "taly"
  std::uint32_t magic = 0;
  std::unique_ptr<tally::mutex> object;
};

struct tally_request_s {
  static constexpr std::uint32_t live_magic = 0x74726571;  // "treq"
  std::uint32_t magic = 0;
  tally::lock_request object;
};

namespace {

thread_local std::string last_error;

// Handles are never returned to the allocator (see tally_mutex_s): a retired one
// is kept for reuse by the next create of its kind.
template <class Handle>
class handle_pool {
 public:
  Handle* get() {
    {
      std::lock_guard lk(mu_);
      if (!free_.empty()) {
        Handle* h = free_.back();
        free_.pop_back();
        return h;
      }
    }
    return new Handle;
  }
  void retire(Handle* h) noexcept {
    h->magic = 0;
    h->object = {};
    std::lock_guard lk(mu_);
    free_.push_back(h);
  }

 private:
  std::mutex mu_;
  std::vector<Handle*> free_;
};

handle_pool<tally_mutex_s> mutex_handles;
handle_pool<tally_request_s> request_handles;

int fail(int code, const std::string& what) {
  last_error = what;
  return code;
}

// The C API speaks in C names: the message of a failure in C function `api` reads
// "tally: API: detail", where the C++ API's would name its own operation
// (tally::error::operation(), "tally: unlock: ...").
int fail(int code, const char* api, std::string_view detail) {
  std::string text("tally: ");
  text.append(api).append(": ").append(detail);
  return fail(code, text);
}

// Runs f for C function `api`, mapping exceptions to codes and recording their
// message in C terms.
template <class F>
int guarded(const char* api, F&& f) noexcept {
  try {
    f();
    return TALLY_SUCCESS;
  } catch (const tally::error& e) {
    return fail(static_cast<int>(e.code()), api, e.detail());
  } catch (const std::bad_alloc&) {
    return fail(TALLY_ERR_STATE, api, "out of memory");
  } catch (const std::exception& e) {
    return fail(TALLY_ERR_STATE, api, e.what());
  } catch (...) {
    return fail(TALLY_ERR_STATE, api, "unknown failure");
  }
}

// Runs f on a live handle's mutex.
template <class F>
int with(const char* api, tally_mutex m, F&& f) noexcept {
  if (!m) return fail(TALLY_ERR_ARG, api, "null mutex handle");
  if (m->magic != tally_mutex_s::live_magic)
    return fail(TALLY_ERR_STATE, api, "mutex handle used after tally_mutex_free");
  return guarded(api, [&] { f(*m->object); });
}

// A C enum member read as the int it holds: an out-of-range value is a valid int
// but not a valid value of the C++ view of the C enum.
template <class Enum>
int enum_value(const Enum& e) noexcept {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized here");
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

// tally_options' size at 1.0 (the end of its last 1.0 field): no caller of
// libtally.so.1 has a smaller one. Fields are only appended after it.
constexpr std::size_t options_1_0 = offsetof(tally_options, pass_bound) + sizeof(unsigned);

// The caller's options (o->size bytes of them) as this library's struct: fields the
// caller's header lacked take their defaults. An empty result is valid; otherwise it
// says why not: a size no tally_options_init wrote, or fields set that this library
// does not know (a program built against a newer tally.h).
std::string read_options(const tally_options* o, tally_options& out) {
  const std::size_t size = o->size;
  tally_options_init_sized(&out, sizeof out);
  if (size < options_1_0)
    return "opts->size is " + std::to_string(size) + ", less than any tally_options (" + std::to_string(options_1_0) +
           " bytes or more): set opts with tally_options_init";
  if (size > sizeof out) {
    const auto* tail = reinterpret_cast<const unsigned char*>(o);
    for (std::size_t k = sizeof out; k < size; ++k)
      if (tail[k] != 0) return tally::detail::newer_header("tally_options", size, sizeof out, "tally.h");
  }
  std::memcpy(&out, o, std::min(size, sizeof out));
  out.size = sizeof out;
  return {};
}

tally::options to_options(const tally_options* o) {
  tally::options opts;
  if (!o) return opts;
  opts.initial_owner = o->initial_owner;
  // Scoped enums hold any int: out-of-range values pass through and are rejected
  // collectively at creation, with every other bad option.
  opts.progress = static_cast<tally::progress_mode>(enum_value(o->progress));
  opts.polling.how = static_cast<tally::poll_policy::strategy>(enum_value(o->poll));
  opts.polling.interval = std::chrono::microseconds(o->poll_interval_us);
  opts.topology = static_cast<tally::topology>(enum_value(o->topology));
  opts.pass_bound = o->pass_bound;
  if (o->name) opts.name = o->name;
  if (o->wait_warning_s >= 0 && o->wait_warning_s < 1e9)
    opts.wait_warning = std::chrono::milliseconds(std::llround(o->wait_warning_s * 1000));
  else if (!(o->wait_warning_s < 0))  // NaN or absurdly long: rejected at creation
    opts.wait_warning = std::chrono::milliseconds(-1);
  return opts;
}
static_assert(static_cast<int>(tally::progress_mode::in_calls) == TALLY_PROGRESS_IN_CALLS &&
              static_cast<int>(tally::progress_mode::thread) == TALLY_PROGRESS_THREAD &&
              static_cast<int>(tally::progress_mode::automatic) == TALLY_PROGRESS_AUTO);
static_assert(static_cast<int>(tally::topology::flat) == TALLY_TOPOLOGY_FLAT &&
              static_cast<int>(tally::topology::node) == TALLY_TOPOLOGY_NODE &&
              static_cast<int>(tally::topology::automatic) == TALLY_TOPOLOGY_AUTO);
static_assert(static_cast<int>(tally::poll_policy::strategy::spin) == TALLY_POLL_SPIN &&
              static_cast<int>(tally::poll_policy::strategy::backoff) == TALLY_POLL_BACKOFF &&
              static_cast<int>(tally::poll_policy::strategy::sleep) == TALLY_POLL_SLEEP &&
              static_cast<int>(tally::poll_policy::strategy::adaptive) == TALLY_POLL_ADAPTIVE);

// Runs f on a live request.
template <class F>
int with_request(const char* api, tally_request r, F&& f) noexcept {
  if (!r) return fail(TALLY_ERR_ARG, api, "null request handle");
  if (r->magic != tally_request_s::live_magic)
    return fail(TALLY_ERR_STATE, api, "request handle used after tally_request_free");
  return guarded(api, [&] { f(r->object); });
}

}  // namespace

extern "C" {

int tally_options_init_sized(tally_options* opts, size_t size) {
  if (!opts) return fail(TALLY_ERR_ARG, __func__, "opts is NULL");
  if (size < options_1_0)
    return fail(TALLY_ERR_ARG, __func__,
                "size " + std::to_string(size) + " is less than any tally_options (" + std::to_string(options_1_0) +
                    " bytes or more)");
  tally_options d;
  std::memset(&d, 0, sizeof d);  // padding included: a later field may lie there
  const tally::options defaults;
  d.size = size;
  d.initial_owner = defaults.initial_owner;
  d.progress = static_cast<tally_progress>(defaults.progress);
  d.poll = static_cast<tally_poll>(defaults.polling.how);
  d.poll_interval_us = static_cast<unsigned>(defaults.polling.interval.count());
  d.name = nullptr;
  d.wait_warning_s = -1.0;
  d.topology = static_cast<tally_topology>(defaults.topology);
  d.pass_bound = defaults.pass_bound;
  tally::detail::write_sized(opts, size, &d, sizeof d);
  return TALLY_SUCCESS;
}

namespace tally::detail {
// The C API's access to tally::mutex's private refusing constructor.
struct c_api {
  static std::unique_ptr<tally::mutex> refused(MPI_Comm comm, const options& opts, const refusal& why) {
    return std::unique_ptr<tally::mutex>(new tally::mutex(comm, opts, sizeof opts, {}, &why));
  }
};
}  // namespace tally::detail

namespace {

int create(const char* api, MPI_Comm comm, const tally_options* opts, size_t bytes, tally_mutex* out) {
  if (out) *out = nullptr;
  tally_options mine;
  const std::string bad = opts ? read_options(opts, mine) : std::string();
  tally::options o = to_options(opts && bad.empty() ? &mine : nullptr);
  o.payload_bytes = bytes;
  std::unique_ptr<tally::mutex> m;
  const int rc = guarded(api, [&] {
    if (!bad.empty())  // fails on every rank, not just here
      m = tally::detail::c_api::refused(comm, o, {tally::errc::arg, bad});
    else if (out)
      m = std::make_unique<tally::mutex>(comm, o);
    else
      m = tally::detail::c_api::refused(comm, o, {tally::errc::arg, "out is NULL"});
  });
  if (rc != TALLY_SUCCESS) return rc;
  tally_mutex_s* h = nullptr;
  const int rc2 = guarded(api, [&] { h = mutex_handles.get(); });
  if (rc2 != TALLY_SUCCESS) return rc2;  // m's destructor frees the mutex collectively
  h->object = std::move(m);
  h->magic = tally_mutex_s::live_magic;
  *out = h;
  return TALLY_SUCCESS;
}

}  // namespace

int tally_mutex_create_payload(MPI_Comm comm, const tally_options* opts, size_t bytes, tally_mutex* out) {
  return create(__func__, comm, opts, bytes, out);
}

int tally_mutex_create(MPI_Comm comm, const tally_options* opts, tally_mutex* out) {
  return create(__func__, comm, opts, 0, out);
}

int tally_mutex_lock(tally_mutex m) {
  return with(__func__, m, [](tally::mutex& x) { x.lock(); });
}

int tally_mutex_trylock(tally_mutex m, int* acquired) {
  if (!acquired) return fail(TALLY_ERR_ARG, __func__, "acquired is NULL");
  *acquired = 0;
  return with(__func__, m, [&](tally::mutex& x) { *acquired = x.try_lock() ? 1 : 0; });
}

int tally_mutex_timedlock(tally_mutex m, double timeout_seconds, int* acquired) {
  if (!acquired) return fail(TALLY_ERR_ARG, __func__, "acquired is NULL");
  *acquired = 0;
  if (!(timeout_seconds >= 0.0))  // also rejects NaN
    return fail(TALLY_ERR_ARG, __func__, "timeout must be >= 0 seconds");
  // Beyond ~30 years a timeout is indistinguishable from none; clamp to avoid overflow.
  const double secs = std::fmin(timeout_seconds, 1e9);
  return with(__func__, m,
              [&](tally::mutex& x) { *acquired = x.try_lock_for(std::chrono::duration<double>(secs)) ? 1 : 0; });
}

int tally_mutex_unlock(tally_mutex m) {
  return with(__func__, m, [](tally::mutex& x) { x.unlock(); });
}

int tally_mutex_ilock(tally_mutex m, tally_request* req) {
  if (!req) return fail(TALLY_ERR_ARG, __func__, "req is NULL");
  *req = nullptr;
  return with(__func__, m, [&](tally::mutex& x) {
    tally::lock_request r = x.lock_async();
    tally_request_s* h = request_handles.get();
    h->object = std::move(r);
    h->magic = tally_request_s::live_magic;
    *req = h;
  });
}

int tally_request_test(tally_request req, int* acquired) {
  if (!acquired) return fail(TALLY_ERR_ARG, __func__, "acquired is NULL");
  *acquired = 0;
  return with_request(__func__, req, [&](tally::lock_request& r) { *acquired = r.test() ? 1 : 0; });
}

int tally_request_wait(tally_request req) {
  return with_request(__func__, req, [](tally::lock_request& r) { r.wait(); });
}

int tally_request_cancel(tally_request req, int* cancelled) {
  if (!cancelled) return fail(TALLY_ERR_ARG, __func__, "cancelled is NULL");
  *cancelled = 0;
  return with_request(__func__, req, [&](tally::lock_request& r) { *cancelled = r.cancel() ? 1 : 0; });
}

int tally_request_get_mpi(tally_request req, MPI_Request* out) {
  if (!out) return fail(TALLY_ERR_ARG, __func__, "out is NULL");
  *out = MPI_REQUEST_NULL;
  return with_request(__func__, req, [&](tally::lock_request& r) { *out = r.mpi_request(); });
}

int tally_request_free(tally_request* req) {
  if (!req) return fail(TALLY_ERR_ARG, __func__, "NULL pointer to handle");
  const int rc = with_request(__func__, *req, [](tally::lock_request& r) { tally::lock_request gone(std::move(r)); });
  if (rc == TALLY_SUCCESS) {
    request_handles.retire(*req);
    *req = nullptr;
  }
  return rc;
}

int tally_mutex_poll(tally_mutex m) {
  return with(__func__, m, [](tally::mutex& x) { x.poll(); });
}

int tally_mutex_payload(tally_mutex m, void** ptr, size_t* bytes) {
  if (!ptr || !bytes) return fail(TALLY_ERR_ARG, __func__, "NULL output pointer");
  *ptr = nullptr;
  *bytes = 0;
  return with(__func__, m, [&](tally::mutex& x) {
    const std::span<std::byte> p = x.payload().bytes();
    *ptr = p.data();
    *bytes = p.size();
  });
}

int tally_mutex_get_stats_sized(tally_mutex m, tally_stats* out, size_t size) {
  if (!out) return fail(TALLY_ERR_ARG, __func__, "out is NULL");
  return with(__func__, m, [&](tally::mutex& x) { x.read_stats(*out, size); });
}

int tally_mutex_rank(tally_mutex m, int* rank) {
  if (!rank) return fail(TALLY_ERR_ARG, __func__, "rank is NULL");
  return with(__func__, m, [&](tally::mutex& x) { *rank = x.rank(); });
}

int tally_mutex_size(tally_mutex m, int* size) {
  if (!size) return fail(TALLY_ERR_ARG, __func__, "size is NULL");
  return with(__func__, m, [&](tally::mutex& x) { *size = x.size(); });
}

int tally_mutex_topology(tally_mutex m, tally_topology* topology) {
  if (!topology) return fail(TALLY_ERR_ARG, __func__, "topology is NULL");
  return with(__func__, m, [&](tally::mutex& x) { *topology = static_cast<tally_topology>(x.topology()); });
}

int tally_mutex_free(tally_mutex* pm) {
  if (!pm) return fail(TALLY_ERR_ARG, __func__, "NULL pointer to handle");
  tally_mutex m = *pm;
  const int rc = with(__func__, m, [](tally::mutex& x) { x.free(); });
  if (m && m->magic == tally_mutex_s::live_magic) {
    // The mutex is dead after free(), whether it succeeded or not.
    mutex_handles.retire(m);
    *pm = nullptr;
  }
  return rc;
}

const char* tally_strerror(int code) {
  if (code < TALLY_SUCCESS || code > TALLY_ERR_LAST) return "unknown tally error code";
  return tally::describe(static_cast<tally::errc>(code));
}

const char* tally_last_error(void) { return last_error.c_str(); }

int tally_get_version(int* major, int* minor, int* patch) {
  // The library's own: the values of tally/version.h when it was built.
  if (major) *major = TALLY_VERSION_MAJOR;
  if (minor) *minor = TALLY_VERSION_MINOR;
  if (patch) *patch = TALLY_VERSION_PATCH;
  return TALLY_SUCCESS;
}

}  // extern "C"
