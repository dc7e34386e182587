#include "runtime/errors.hpp"

#include <cstdarg>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "tally/version.h"

namespace tally {

const char* describe(errc code) noexcept {
  switch (code) {
    case errc::success: return "success";
    case errc::arg: return "invalid argument";
    case errc::not_owner: return "calling rank does not hold the critical section";
    case errc::deadlock: return "calling rank already holds the critical section";
    case errc::thread_level: return "MPI does not provide the required thread level";
    case errc::mpi: return "MPI call failed";
    case errc::state: return "call not valid in the current state";
  }
  return "unknown tally error code";
}

}  // namespace tally

namespace tally::detail {

std::string newer_header(const char* type, std::size_t caller_bytes, std::size_t own_bytes, const char* header) {
  return std::string(type) + " of " + std::to_string(caller_bytes) + " bytes sets fields this library (tally " +
         std::to_string(TALLY_VERSION_MAJOR) + "." + std::to_string(TALLY_VERSION_MINOR) + "." +
         std::to_string(TALLY_VERSION_PATCH) + ", " + std::to_string(own_bytes) +
         " bytes) does not know: the program was built against a newer " + header;
}

void write_sized(void* out, std::size_t caller_bytes, const void* ours, std::size_t own_bytes) noexcept {
  std::memcpy(out, ours, std::min(caller_bytes, own_bytes));
  if (caller_bytes > own_bytes) std::memset(static_cast<unsigned char*>(out) + own_bytes, 0, caller_bytes - own_bytes);
}

error make_error(errc code, const std::string& what, int mpi_error) { return error(code, {}, what, mpi_error); }

error make_error(errc code, const char* operation, const std::string& detail, int mpi_error) {
  return error(code, operation, detail, mpi_error);
}

void fail(errc code, const std::string& what, int mpi_error) { throw make_error(code, what, mpi_error); }

void fail(errc code, const char* operation, const std::string& detail, int mpi_error) {
  throw make_error(code, operation, detail, mpi_error);
}

void warn(const char* format, ...) noexcept {
  std::va_list args, again;
  va_start(args, format);
  va_copy(again, args);
  const int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string text = "tally: ";
  if (n > 0) {
    const std::size_t at = text.size();
    text.resize(at + static_cast<std::size_t>(n) + 1);
    std::vsnprintf(text.data() + at, static_cast<std::size_t>(n) + 1, format, again);
    text.resize(at + static_cast<std::size_t>(n));
  }
  va_end(again);
  std::fputs(text.c_str(), stderr);  // one write: lines of different ranks do not interleave
}

errc to_errc(protocol::status s) noexcept {
  using protocol::status;
  switch (s) {
    case status::ok:
    case status::would_block: return errc::success;
    case status::not_in_cs: return errc::not_owner;
    case status::already_in_cs: return errc::deadlock;
    case status::self_request:
    case status::bad_rank:
    case status::bad_token: return errc::arg;
    case status::already_requesting:
    case status::not_requesting:
    case status::unsettled: return errc::state;
  }
  return errc::state;
}

void refuse(protocol::status s, const char* call) { fail(to_errc(s), call, protocol::describe(s)); }

stats to_stats(const protocol::counters& c) noexcept {
  stats s{};
  s.acquisitions = c.acquisitions;
  s.local_acquisitions = c.local_acquisitions;
  s.requests_sent = c.requests_sent;
  s.requests_received = c.requests_received;
  s.tokens_sent = c.tokens_sent;
  s.tokens_received = c.tokens_received;
  s.broadcasts = c.broadcasts;
  s.local_handoffs_sent = c.local_handoffs_sent;
  s.local_handoffs_received = c.local_handoffs_received;
  s.bound_releases = c.bound_releases;
  return s;
}
// A field added to one side and not the other changes its size first.
static_assert(sizeof(stats) == sizeof(protocol::counters), "tally_stats and protocol::counters differ");

}  // namespace tally::detail
