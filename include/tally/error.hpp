// tally/error.hpp — error codes shared by the C and C++ APIs, and tally::error.
//
// Every failure in tally is one of the codes below. The C API returns the code;
// the C++ API throws tally::error carrying it. This header needs no MPI.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

#include "tally/common.h"
#include "tally/export.h"

namespace tally {

// Each value is its TALLY_* code of tally/common.h, by definition.
enum class errc : int {
  success = TALLY_SUCCESS,
  arg = TALLY_ERR_ARG,                    // null or invalid argument, communicator, rank, size or option
  not_owner = TALLY_ERR_NOT_OWNER,        // unlock (or payload access) without holding the critical section
  deadlock = TALLY_ERR_DEADLOCK,          // lock/try_lock by a thread that already holds the critical section
  thread_level = TALLY_ERR_THREAD_LEVEL,  // MPI cannot provide the thread level the progress mode needs
  mpi = TALLY_ERR_MPI,                    // an MPI call failed; the message carries MPI's error string
  state = TALLY_ERR_STATE,                // not valid now (use after free, after MPI_Finalize, ...)
};
inline constexpr errc last_errc = errc::state;
static_assert(static_cast<int>(last_errc) == TALLY_ERR_LAST, "every TALLY_ERR_* code needs its tally::errc");

// Short, stable description of a code ("invalid argument", ...). Never null; an
// unknown code gives "unknown tally error code".
TALLY_API const char* describe(errc code) noexcept;

// What tally throws. code() is the failure class; mpi_error() is the MPI error
// class when code() == errc::mpi, else 0. The errors tally raises read
// "tally: <operation>: <detail>", operation() naming the C++ call that failed
// ("lock", "unlock", "free", ...; empty where none applies, as in creation), and
// detail() the rest: the C API reports detail() under its own function's name.
class TALLY_API error : public std::runtime_error {
 public:
  // what() is `what`; operation() is empty and detail() is what().
  error(errc code, const std::string& what, int mpi_error = 0)
      : std::runtime_error(what), code_(code), mpi_error_(mpi_error) {}
  // what() is "tally: <operation>: <detail>", or "tally: <detail>" for an empty operation.
  error(errc code, std::string_view operation, std::string_view detail, int mpi_error)
      : std::runtime_error(compose(operation, detail)),
        code_(code),
        mpi_error_(mpi_error),
        operation_size_(operation.size()),
        detail_at_(std::string_view(what()).size() - detail.size()) {}

  errc code() const noexcept { return code_; }
  int mpi_error() const noexcept { return mpi_error_; }
  std::string_view operation() const noexcept {
    return std::string_view(what()).substr(operation_size_ ? prefix.size() : 0, operation_size_);
  }
  std::string_view detail() const noexcept { return std::string_view(what()).substr(detail_at_); }

 private:
  static constexpr std::string_view prefix = "tally: ";
  static std::string compose(std::string_view operation, std::string_view detail) {
    std::string s(prefix);
    if (!operation.empty()) s.append(operation).append(": ");
    return s.append(detail);
  }

  errc code_;
  int mpi_error_;
  std::size_t operation_size_ = 0;  // what()'s operation, after the prefix
  std::size_t detail_at_ = 0;       // where detail() starts in what()
};

}  // namespace tally
