// runtime/settings.hpp — what creation reads besides its arguments: the options
// validated on this rank, and the environment variables that override defaults
// (each one ignored, with a warning on stderr, when it does not parse).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "core/token_layout.hpp"
#include "core/token_codec.hpp"
#include "tally/error.hpp"
#include "tally/options.hpp"

namespace tally::detail {

// MPI's thread level (MPI_Query_thread).
int thread_level();
// The wait warning: the option, else $TALLY_WAIT_WARNING (seconds), else 30 s.
std::chrono::steady_clock::duration wait_warning(const options& o);
// REQUESTs posted per progress step: $TALLY_BROADCAST_WINDOW, else
// protocol::broadcast_window.
std::size_t broadcast_window();
// The node topology's token body: $TALLY_NODE_TOKEN (shorter, delta or full), else
// shorter.
protocol::token_form node_token_form();
// The folder of the timeline's trace: the option, else $TALLY_TRACE, else none ("").
std::string trace_directory(const options& o);
// topology::automatic as $TALLY_TOPOLOGY says (flat, node or auto), else unchanged.
topology resolve_topology(topology t);
// This rank's error for `o` on a communicator of `size` ranks, if any.
std::optional<error> validate(const options& o, int size);

}  // namespace tally::detail
