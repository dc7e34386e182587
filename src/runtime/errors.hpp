// runtime/errors.hpp — how the runtime raises and reports errors, and maps the core's
// outcomes onto the public API's codes and statistics.
//
// Every tally::error the runtime throws is made by make_error(), which prefixes
// "tally: " (the prefix is written nowhere else); every diagnostic goes through
// warn(). The core knows no public type: to_errc() and to_stats() are the one
// mapping from protocol::status and protocol::counters to tally::errc and tally_stats.
#pragma once

#include <string>

#include "core/protocol.hpp"
#include "tally/error.hpp"
#include "tally/options.hpp"

namespace tally::detail {

// tally::error(code, "tally: " + what, mpi_error), no operation; with `operation`,
// "tally: <operation>: <detail>" (tally::error::operation(): the C++ call that
// failed, which the C API replaces by its own name). fail() throws it.
error make_error(errc code, const std::string& what, int mpi_error = 0);
// Why a struct of `caller_bytes` from the caller's `header` cannot be read by this
// library, whose struct `type` has `own_bytes`: the caller was built against a
// newer header. Names this library's version.
std::string newer_header(const char* type, std::size_t caller_bytes, std::size_t own_bytes, const char* header);
// Writes a public struct into the caller's `caller_bytes` at out: the first of
// this library's `own_bytes` at ours that fit, zeros beyond them, nothing past
// caller_bytes (docs/design.md, "A stable ABI").
void write_sized(void* out, std::size_t caller_bytes, const void* ours, std::size_t own_bytes) noexcept;
error make_error(errc code, const char* operation, const std::string& detail, int mpi_error = 0);
[[noreturn]] void fail(errc code, const std::string& what, int mpi_error = 0);
[[noreturn]] void fail(errc code, const char* operation, const std::string& detail, int mpi_error = 0);
// A diagnostic on stderr, "tally: " then the printf-formatted text (which ends its
// own line): warnings, and failures that have nobody to be thrown to.
void warn(const char* format, ...) noexcept __attribute__((format(printf, 1, 2)));

// The API error class of a core outcome (errc::success for ok and would_block).
errc to_errc(protocol::status s) noexcept;
// Throws the error for a core refusal of `call`: "<call>: <what the core said>".
[[noreturn]] void refuse(protocol::status s, const char* call);
// Runs make() (which builds a core object) and turns the core's bad_argument into
// tally::error(errc::arg).
template <class Make>
decltype(auto) build_core(Make&& make) {
  try {
    return make();
  } catch (const protocol::bad_argument& e) {
    fail(errc::arg, e.what());
  }
}

// The public statistics of a core's counters.
stats to_stats(const protocol::counters& c) noexcept;

}  // namespace tally::detail
