// tally/error.hpp — error codes shared by the C and C++ APIs, and tally::error.
//
// Every failure in tally is one of the codes below. The C API returns the code;
// the C++ API throws tally::error carrying it. This header needs no MPI.
#pragma once

#include <stdexcept>
#include <string>

#include "tally/export.h"

namespace tally {

// Numerically identical to the TALLY_* codes in tally.h.
enum class errc : int {
  success = 0,
  arg = 1,          // null or invalid argument, communicator, rank or size
  not_owner = 2,    // unlock (or payload access) without holding the critical section
  deadlock = 3,     // lock/try_lock on a rank (or thread) that already holds the critical section
  thread_level = 4, // MPI cannot provide the thread level the chosen progress mode needs
  mpi = 5,          // an MPI call failed; the message carries MPI's error string
  state = 6,        // call not valid in the current state (use after free, after MPI_Finalize, ...)
};

// Short, stable description of a code ("invalid argument", ...). Never null.
TALLY_API const char* describe(errc code) noexcept;

// What tally throws. code() is the failure class; mpi_error() is the MPI error
// class when code() == errc::mpi, else 0.
class TALLY_API error : public std::runtime_error {
 public:
  error(errc code, const std::string& what, int mpi_error = 0)
      : std::runtime_error(what), code_(code), mpi_error_(mpi_error) {}

  errc code() const noexcept { return code_; }
  int mpi_error() const noexcept { return mpi_error_; }

 private:
  errc code_;
  int mpi_error_;
};

}  // namespace tally
