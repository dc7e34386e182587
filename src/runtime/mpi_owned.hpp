// runtime/mpi_owned.hpp — mpi_owned(buf, bytes) declares a receive buffer that MPI
// fills. Under ThreadSanitizer it registers the range as a benign race: Open MPI is
// not instrumented, may copy a message in from whichever thread drives its progress
// (another mutex's progress thread included) and publishes completion through
// atomics TSan cannot see, so tally's read after MPI_Test reports completion looks
// unordered with that copy. A suppression by library name cannot match when TSan has
// lost the writer's stack ("failed to restore the stack"), so the range is named
// instead. TSan keeps such ranges until exit; call it once per buffer allocation.
// Elsewhere it compiles to nothing.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_THREAD__)
#define TALLY_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TALLY_TSAN 1
#endif
#endif

#if defined(TALLY_TSAN)
extern "C" void AnnotateBenignRaceSized(const char* file, int line, const volatile void* mem, unsigned long size,
                                        const char* description);
#endif

namespace tally::detail {

inline void mpi_owned([[maybe_unused]] const void* buf, [[maybe_unused]] std::size_t bytes) noexcept {
#if defined(TALLY_TSAN)
  if (bytes != 0) AnnotateBenignRaceSized(__FILE__, __LINE__, buf, bytes, "receive buffer filled by MPI");
#endif
}

}  // namespace tally::detail
