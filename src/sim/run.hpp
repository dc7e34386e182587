// sim/run.hpp — `tally-sim run`: the lock models, configuration, one simulation,
// its report.
//
// simulate() runs one workload under one lock model and summarizes it;
// run_command() is the command line around it. Metric definitions are in
// docs/simulator.md. Implementation: run.cpp (models, presets, simulate),
// summary.cpp, report.cpp, command.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/token_codec.hpp"
#include "sim/des.hpp"

namespace tally::sim {

// Network presets calibrated on the development machine (docs/simulator.md).
struct network_preset {
  const char* name;
  network_params params;
};
// The first is the default network and prices messages inside a node.
const std::vector<network_preset>& network_presets();
// A grant inside a node in the shm preset's setting: unlock to the waiter's entry
// under the runtime's topology::node (docs/simulator.md#calibration).
extern const ps_t shm_local_grant;

struct run_config {
  std::string algorithm = "suzuki-kasami";  // a model's name (models())
  std::string network_name = "shm";         // preset the parameters started from
  network_params net{};                     // between nodes (every message when R = 0)
  workload load{};
  // Nodes: ranks [kR, (k+1)R) share node k, and a point-to-point message inside a
  // node costs `intra` (the shm preset) in every model. R = 0: one rank per node.
  std::int32_t ranks_per_node = 0;
  network_params intra{};
  // two-level only: the local pass bound B, and the time from a local grant to the
  // waiter's entry (a shared-memory store it spins on).
  std::uint32_t pass_bound = 16;
  ps_t local_grant = 0;
  protocol::token_form node_token = protocol::token_form::shorter;  // its body (--node-token)
};

// The report. Everything here is a function of the configuration alone.
struct summary {
  std::uint64_t entries = 0;
  std::uint64_t local_entries = 0;  // entries that cost no message
  ps_t end_time = 0;                // last CS exit
  double cs_per_second = 0;         // entries / (end_time - first entry)
  std::array<std::uint64_t, msg_kinds> messages{};
  std::array<std::uint64_t, msg_kinds> bytes{};
  std::uint64_t total_messages = 0;
  std::uint64_t total_bytes = 0;
  double wait_mean = 0;  // request -> entry, picoseconds
  ps_t wait_p50 = 0, wait_p99 = 0, wait_max = 0;
  std::uint64_t handoffs = 0;  // exit -> next entry, entrant already waiting
  double handoff_mean = 0;
  ps_t handoff_p50 = 0, handoff_p99 = 0;
  std::uint64_t max_bypass = 0;
  double jain_entries = 1;  // over active ranks' CS entries
  double jain_wait = 1;     // over active ranks' mean wait (ranks with an entry)
  std::uint64_t events = 0;
};

// Nearest-rank percentile (p in (0, 100]) of v; 0 for an empty v. Reorders v.
ps_t percentile(std::vector<ps_t>& v, double p);
// Largest number of entries that overtook one request: for entry r, the entries
// before r whose request was issued strictly after r's.
std::uint64_t max_bypass(const std::vector<ps_t>& issue_times_in_entry_order);
// Jain's index (sum x)^2 / (k * sum x^2); 1 when all x are 0.
double jain(const std::vector<double>& x);

summary summarize(raw_results r, const workload& w);

// One lock model that tally-sim run can simulate: a row of models().
struct model_entry {
  const char* name;                 // --algorithm value, and the report's name
  const char* about;                // one line for --help
  std::span<const msg_kind> kinds;  // the message kinds it sends, for the report
  summary (*simulate)(const run_config&, const progress_fn&, std::uint64_t progress_every);
};
std::span<const model_entry> models() noexcept;
// The model named `name`, or nullptr.
const model_entry* find_model(std::string_view name) noexcept;

// Runs one simulation. Throws invariant_violation if a simulator check fails,
// protocol::bad_argument for an unknown algorithm or a bad workload.
summary simulate(const run_config& cfg, const progress_fn& progress = {}, std::uint64_t progress_every = 1u << 20);

std::string report_json(const run_config& cfg, const summary& s);
std::string report_table(const run_config& cfg, const summary& s);

// A duration as the command line writes it: "0", "250ns", "1.5us", "2ms".
std::string duration_text(ps_t ps);

// `tally-sim run ARGS...`: args are the words after "run". Exit status: 0 done, 1 a
// simulator check failed, 2 usage error (message on err). The report goes to out;
// wall-clock figures and the progress bar go to err, so out depends only on args.
// The progress bar is drawn when err_is_tty, unless --progress/--no-progress say.
int run_command(std::span<const std::string_view> args, std::ostream& out, std::ostream& err, bool err_is_tty);

namespace run {
// The subcommand table's entry point: run_command, with err_is_tty true iff err is
// std::cerr and standard error is a terminal.
int main(std::span<const std::string_view> args, std::ostream& out, std::ostream& err);
}  // namespace run

}  // namespace tally::sim
