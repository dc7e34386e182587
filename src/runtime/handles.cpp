#include "runtime/handles.hpp"

#include <cstdarg>
#include <cstdio>

namespace tally::detail {

error make_error(errc code, const std::string& what, int mpi_error) { return error(code, "tally: " + what, mpi_error); }

void fail(errc code, const std::string& what, int mpi_error) { throw make_error(code, what, mpi_error); }

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

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  int cls = rc;
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, msg, &len);
  fail(errc::mpi, std::string(what) + " failed: " + std::string(msg, static_cast<std::size_t>(len)), cls);
}

bool mpi_usable() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace tally::detail
