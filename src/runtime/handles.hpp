// runtime/handles.hpp — move-only owners of MPI handles and the MPI error check.
// (Raising errors in general: runtime/errors.hpp.)
//
// Destructors are noexcept and do nothing once MPI is finalized (the handle died
// with MPI). Freeing can fail only with MPI_ERRORS_RETURN set; such a failure in a
// destructor is ignored, because there is nobody left to report it to.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>

#include "runtime/errors.hpp"

namespace tally::detail {

// Throws tally::error(errc::mpi) naming `what` and MPI's error string unless rc is
// MPI_SUCCESS.
void check_mpi(int rc, const char* what);

// True iff MPI_Init has been called and MPI_Finalize has not.
bool mpi_usable() noexcept;

// Traits: `static Handle null()` and `static int free(Handle*)`. (Open MPI's null
// handles are addresses, not constant expressions, so they cannot be template
// arguments themselves.)
template <class Traits>
class unique_handle {
  using Handle = decltype(Traits::null());

 public:
  unique_handle() noexcept : h_(Traits::null()) {}
  explicit unique_handle(Handle h) noexcept : h_(h) {}
  unique_handle(unique_handle&& o) noexcept : h_(std::exchange(o.h_, Traits::null())) {}
  unique_handle& operator=(unique_handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, Traits::null());
    }
    return *this;
  }
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;
  ~unique_handle() { reset(); }

  Handle get() const noexcept { return h_; }
  Handle* out() noexcept { return &h_; }  // for MPI calls that create the handle
  explicit operator bool() const noexcept { return h_ != Traits::null(); }

  // Frees the handle, reporting failure (throws tally::error).
  void free(const char* what) {
    if (h_ == Traits::null()) return;
    Handle h = std::exchange(h_, Traits::null());
    if (mpi_usable()) check_mpi(Traits::free(&h), what);
  }
  // Frees the handle, ignoring failure.
  void reset() noexcept {
    if (h_ == Traits::null()) return;
    Handle h = std::exchange(h_, Traits::null());
    if (mpi_usable()) Traits::free(&h);
  }

 private:
  Handle h_;
};

struct comm_traits {
  static MPI_Comm null() noexcept { return MPI_COMM_NULL; }
  static int free(MPI_Comm* c) noexcept { return MPI_Comm_free(c); }
};
struct type_traits {
  static MPI_Datatype null() noexcept { return MPI_DATATYPE_NULL; }
  static int free(MPI_Datatype* t) noexcept { return MPI_Type_free(t); }
};

struct win_traits {
  static MPI_Win null() noexcept { return MPI_WIN_NULL; }
  static int free(MPI_Win* w) noexcept { return MPI_Win_free(w); }
};

using comm_handle = unique_handle<comm_traits>;
using win_handle = unique_handle<win_traits>;
using type_handle = unique_handle<type_traits>;

}  // namespace tally::detail
