// runtime/settings.cpp — see settings.hpp.
#include "runtime/settings.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/handles.hpp"

namespace tally::detail {

int thread_level() {
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
  return provided;
}

std::chrono::steady_clock::duration wait_warning(const options& o) {
  using namespace std::chrono;
  if (o.wait_warning) return *o.wait_warning;
  if (const char* env = std::getenv("TALLY_WAIT_WARNING")) {
    char* end = nullptr;
    const double secs = std::strtod(env, &end);
    if (end != env && *end == '\0' && secs >= 0 && secs < 1e9)
      return duration_cast<steady_clock::duration>(duration<double>(secs));
    warn("ignoring TALLY_WAIT_WARNING='%s' (not a number of seconds)\n", env);
  }
  return seconds(30);
}

std::size_t broadcast_window() {
  if (const char* env = std::getenv("TALLY_BROADCAST_WINDOW")) {
    char* end = nullptr;
    const long w = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && w > 0 && w <= (1L << 30)) return static_cast<std::size_t>(w);
    warn("ignoring TALLY_BROADCAST_WINDOW='%s' (a positive integer)\n", env);
  }
  return protocol::broadcast_window;
}

protocol::token_form node_token_form() {
  if (const char* env = std::getenv("TALLY_NODE_TOKEN")) {
    if (const auto f = protocol::parse_token_form(env)) return *f;
    warn("ignoring TALLY_NODE_TOKEN='%s' (shorter, delta or full)\n", env);
  }
  return protocol::token_form::shorter;
}

std::string trace_directory(const options& o) {
  if (!o.trace.empty()) return o.trace;
  const char* env = std::getenv("TALLY_TRACE");
  return env ? env : "";
}

topology resolve_topology(topology t) {
  if (t != topology::automatic) return t;
  const char* env = std::getenv("TALLY_TOPOLOGY");
  if (!env || !*env) return t;
  const std::string v(env);
  if (v == "flat") return topology::flat;
  if (v == "node") return topology::node;
  if (v != "auto" && v != "automatic") warn("ignoring TALLY_TOPOLOGY='%s' (flat, node or auto)\n", env);
  return t;
}

std::optional<error> validate(const options& o, int size) {
  if (o.initial_owner < 0 || o.initial_owner >= size)
    return make_error(errc::arg, "initial_owner " + std::to_string(o.initial_owner) +
                                     " out of range for a communicator of " + std::to_string(size) + " ranks");
  if (o.payload_bytes > max_payload_bytes)
    return make_error(errc::arg, "payload of " + std::to_string(o.payload_bytes) + " bytes exceeds the limit of " +
                                     std::to_string(max_payload_bytes));
  if (o.progress != progress_mode::in_calls && o.progress != progress_mode::thread &&
      o.progress != progress_mode::automatic)
    return make_error(errc::arg, "unknown progress mode");
  using strategy = poll_policy::strategy;
  if (o.polling.how != strategy::spin && o.polling.how != strategy::backoff && o.polling.how != strategy::sleep &&
      o.polling.how != strategy::adaptive)
    return make_error(errc::arg, "unknown polling strategy");
  if (o.polling.interval.count() < 0 || o.polling.idle_drain.count() < 0)
    return make_error(errc::arg, "negative polling interval");
  if (o.polling.interval > max_poll_interval || o.polling.idle_drain > max_poll_interval)
    return make_error(errc::arg, "polling interval " +
                                     std::to_string(std::max(o.polling.interval, o.polling.idle_drain).count()) +
                                     " us exceeds the limit of " + std::to_string(max_poll_interval.count()) +
                                     " us (every handoff could wait that long)");
  if (o.wait_warning && o.wait_warning->count() < 0) return make_error(errc::arg, "negative wait warning");
  if (o.topology != topology::flat && o.topology != topology::node && o.topology != topology::automatic)
    return make_error(errc::arg, "unknown topology");
  if (o.pass_bound < 1 || o.pass_bound > max_pass_bound)
    return make_error(errc::arg, "pass_bound " + std::to_string(o.pass_bound) + " out of range [1, " +
                                     std::to_string(max_pass_bound) +
                                     "] (local passes in a row while another node waits)");
  if (o.progress == progress_mode::thread && thread_level() < MPI_THREAD_MULTIPLE)
    return make_error(errc::thread_level,
                      "progress_mode::thread needs MPI_THREAD_MULTIPLE; initialize MPI with "
                      "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
  return std::nullopt;
}

}  // namespace tally::detail
