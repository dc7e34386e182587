// sim/run.cpp — the lock models tally-sim run knows (one row each), the network
// presets, and one simulation (sim/run.hpp).
#include "sim/run.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "sim/models/central.hpp"
#include "sim/models/ricart_agrawala.hpp"
#include "sim/models/suzuki_kasami.hpp"
#include "sim/models/two_level.hpp"

namespace tally::sim {

namespace {

template <class Model>
summary run_model(const run_config& cfg, const progress_fn& progress, std::uint64_t every) {
  auto make = [&]() -> scheduler<Model> {
    if constexpr (std::is_constructible_v<Model, std::int32_t, const std::vector<std::int32_t>&, const run_config&>)
      return scheduler<Model>(cfg.net, cfg.load, cfg);
    else
      return scheduler<Model>(cfg.net, cfg.load);
  };
  scheduler<Model> e = make();
  if (cfg.ranks_per_node > 0) e.split_nodes(cfg.ranks_per_node, cfg.intra);
  raw_results r = e.run(progress, every);
  const std::uint64_t local = e.model().local_entries(r);
  summary s = summarize(std::move(r), cfg.load);
  s.local_entries = local;
  return s;
}

template <class Model>
constexpr model_entry row(const char* about) {
  return {Model::name, about, Model::kinds, &run_model<Model>};
}

// To add a lock model: a file in sim/models/ and a row here.
constexpr model_entry table[] = {
    row<suzuki_kasami>("the real protocol core (the default)"),
    row<two_level>("the real two-level core: SK between nodes, grants inside"),
    row<ricart_agrawala>("Ricart-Agrawala, 2(n-1) messages per entry"),
    row<central>("a lock server on rank 0"),
};

}  // namespace

std::span<const model_entry> models() noexcept { return table; }

const model_entry* find_model(std::string_view name) noexcept {
  for (const model_entry& m : table)
    if (name == m.name) return &m;
  return nullptr;
}

const std::vector<network_preset>& network_presets() {
  // scripts/calibrate-sim on the development machine (Open MPI 4.1 shared memory,
  // 2 ranks); e and s from tally_core_bench: flat, the slopes per entry of
  // BM_TokenHop less BM_TokenHopNoCodec, halved, and of BM_TokenHopNoCodec; node,
  // BM_NodeTokenHop less BM_NodeScan, halved, and BM_NodeScan (node from a later run,
  // after its receiver stopped copying LN twice). The runs and their inputs:
  // docs/simulator.md#calibration.
  static const std::vector<network_preset> presets{
      //        L        o       g       G (ps/B)  E     R          W                          e    s    node e, s
      {"shm", {145'600, 24'000, 41'900, 66.45, 4096, 1'737'000, protocol::broadcast_window, 40, 90, 50, 80}},
  };
  return presets;
}

// tally_bench's BM_Handoff<tally_node> mean at 2 ranks over shared memory on the
// development machine: docs/results/2026-12-04-topology (bench/run-local).
const ps_t shm_local_grant = 197'000;

summary simulate(const run_config& cfg, const progress_fn& progress, std::uint64_t every) {
  const model_entry* m = find_model(cfg.algorithm);
  if (!m) throw protocol::bad_argument("unknown algorithm '" + cfg.algorithm + "'");
  return m->simulate(cfg, progress, every);
}

}  // namespace tally::sim
