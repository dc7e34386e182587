// tally_core_bench: the CPU one token hop costs in the protocol core, no MPI. Two
// ranks of an n-rank group (flat) or two nodes of K (node topology, one rank each)
// pass the token back and forth; every hop is one REQUEST handled by an idle
// holder, the token encoded, decoded and taken in, then the receiver's
// release (its scan of LN and RN for fresh requests). Its time per LN entry
// calibrates tally-sim's --entry-time and --scan-time, the node topology's hop and
// scan its --node-entry-time and --node-scan-time (docs/simulator.md). The flat
// hop's two ends are also timed alone (BM_TokenEncode, BM_TokenDecode).
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <vector>

#include "core/cohort.hpp"
#include "core/protocol.hpp"
#include "core/token_codec.hpp"
#include "core/token_layout.hpp"

namespace {

using namespace tally::protocol;

// Both ends of a hop, the messages' storage reused as the runtime reuses it.
struct hop_bench {
  explicit hop_bench(std::int32_t n)
      : peers{peer(rank_t(0), n, rank_t(0)), peer(rank_t(1), n, rank_t(0))},
        frame{static_cast<std::size_t>(n), {}},
        buf(token_layout::bytes(static_cast<std::size_t>(n))),
        marks(static_cast<std::size_t>(n), 0) {}

  // The holder h hands the token to the other rank, which enters and leaves.
  void hop(bool codec) {
    const int r = 1 - h;
    const step asked = peers[r].lock();
    const step s = peers[h].on_request(rank_t(r), asked.act.seq);
    if (s.act.what != action::kind::send_token) throw std::logic_error("no handoff");
    token t = *peers[h].take_token();
    if (codec) {
      encode_token(frame, t, static_cast<std::size_t>(r), {}, buf);
      if (!decode_token(buf, frame, static_cast<std::size_t>(r), spare, {}, marks)) throw std::logic_error("decode");
      std::swap(t, spare);  // the decoded token goes in; the old one's storage is reused
    }
    peers[r].on_token(std::move(t));
    peers[r].unlock();
    h = r;
  }

  peer peers[2];
  token_frame frame;
  std::vector<std::byte> buf;
  std::vector<std::uint8_t> marks;
  token spare;
  int h = 0;
};

void report(benchmark::State& st, std::int64_t n) {
  st.counters["per_entry"] = benchmark::Counter(static_cast<double>(st.iterations() * n),
                                                benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The whole hop: what --entry-time charges, half at each end.
void BM_TokenHop(benchmark::State& st) {
  hop_bench b(static_cast<std::int32_t>(st.range(0)));
  for (auto _ : st) b.hop(true);
  report(st, st.range(0));
}

// The hop without the codec (the token moved in memory): the core's share.
void BM_TokenHopNoCodec(benchmark::State& st) {
  hop_bench b(static_cast<std::int32_t>(st.range(0)));
  for (auto _ : st) b.hop(false);
  report(st, st.range(0));
}

// One end of the hop alone: the holder encoding the token (the rest is the
// receiver's decoding).
void BM_TokenEncode(benchmark::State& st) {
  hop_bench b(static_cast<std::int32_t>(st.range(0)));
  token t;
  t.ln.assign(static_cast<std::size_t>(st.range(0)), 7);
  for (auto _ : st) {
    encode_token(b.frame, t, 1, {}, b.buf);
    benchmark::DoNotOptimize(b.buf.data());
    benchmark::ClobberMemory();
  }
  report(st, st.range(0));
}

// The other end alone: decoding.
void BM_TokenDecode(benchmark::State& st) {
  hop_bench b(static_cast<std::int32_t>(st.range(0)));
  token t;
  t.ln.assign(static_cast<std::size_t>(st.range(0)), 7);
  encode_token(b.frame, t, 1, {}, b.buf);
  for (auto _ : st) {
    if (!decode_token(b.buf, b.frame, 1, b.spare, {}, b.marks)) throw std::logic_error("decode");
    benchmark::DoNotOptimize(b.spare.ln.data());
    benchmark::ClobberMemory();
  }
  report(st, st.range(0));
}
// The node topology's hop: nodes 0 and 1 of K, each one rank, their states as the
// runtime keeps them (one block per node); the token is packed from the holder's
// state, as node_level does, and taken in by cohort::on_token. `delta`: the REQUEST
// says the asking node's copy is from the move before (a delta of one pair goes);
// else it says 0 and the whole LN goes.
struct node_hop_bench {
  node_hop_bench(std::int32_t k, bool as_delta)
      : delta(as_delta),
        node_of(static_cast<std::size_t>(k)),
        layout(cohort_layout::of(k, 1)),
        frame{static_cast<std::size_t>(k), node_of},
        buf(node_token::bytes(static_cast<std::size_t>(k))),
        marks(static_cast<std::size_t>(k), 0) {
    for (std::int32_t r = 0; r < k; ++r) node_of[static_cast<std::size_t>(r)] = r;
    for (std::int32_t i = 0; i < 2; ++i) {
      mem[i].assign(layout.bytes / 8 + 1, 0);
      members[i] = {i};
      nodes.emplace_back(cohort_shape{k, i, 1, 16}, cohort_view::at(mem[i].data(), layout), node_of, members[i]);
      nodes.back().reset(0);
    }
  }

  void hop() {
    const int r = 1 - h;
    const cohort_step asked = nodes[r].lock(0);
    const cohort_step s = nodes[h].on_request(0, rank_t(r), asked.act.seq, delta ? asked.act.copy_hop : 0);
    if (s.act.token_to != rank_t(r)) throw std::logic_error("no handoff");
    const std::size_t len = nodes[h].encode_token(rank_t(r), {}, buf);
    // As the runtime takes it in: LN decoded straight into the node's state.
    const std::span<ln_t> ln = nodes[r].ln_inbox();
    std::uint64_t hop = 0;
    if (!decode_node_token(std::span(buf).first(len), frame, static_cast<std::size_t>(r), *nodes[r].state().hop, ln,
                           spare.queue, hop, route, {}, marks))
      throw std::logic_error("decode");
    if (!nodes[r].on_token(0, ln, spare.queue, {hop, route}).ok()) throw std::logic_error("on_token");
    nodes[r].unlock(0);
    h = r;
  }

  bool delta;
  std::vector<std::int32_t> node_of;
  cohort_layout layout;
  token_frame frame;
  std::vector<std::byte> buf;
  std::vector<std::uint8_t> marks;
  std::vector<std::uint64_t> mem[2];
  std::vector<std::int32_t> members[2];
  std::vector<cohort> nodes;
  token spare;
  std::array<std::int32_t, node_token::route> route{};
  int h = 0;
};

// The node topology's whole hop, K = range(0) nodes: the whole LN, or a delta.
void BM_NodeTokenHop(benchmark::State& st) {
  node_hop_bench b(static_cast<std::int32_t>(st.range(0)), false);
  for (auto _ : st) b.hop();
  report(st, st.range(0));
}
void BM_NodeTokenHopDelta(benchmark::State& st) {
  node_hop_bench b(static_cast<std::int32_t>(st.range(0)), true);
  for (auto _ : st) b.hop();
  report(st, st.range(0));
}

// The release's scan in the node topology alone: K entries of RN against LN's low
// 32 bits, none fresh (the hop's share that is not the token's transfer).
void BM_NodeScan(benchmark::State& st) {
  const auto k = static_cast<std::size_t>(st.range(0));
  std::vector<seq_t> rn(k, seq_t(9));
  std::vector<ln_t> ln(k, 9);
  for (auto _ : st) {
    benchmark::DoNotOptimize(next_fresh(rn.data(), ln.data(), 0, k));
    benchmark::ClobberMemory();
  }
  report(st, st.range(0));
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t n : {2, 64, 512, 1024, 4096, 65536}) b->Arg(n);
}
BENCHMARK(BM_TokenHop)->Apply(sizes);
BENCHMARK(BM_TokenHopNoCodec)->Apply(sizes);
BENCHMARK(BM_TokenEncode)->Apply(sizes);
BENCHMARK(BM_TokenDecode)->Apply(sizes);
BENCHMARK(BM_NodeTokenHop)->Arg(64)->Arg(512)->Arg(1024)->Arg(4096);
BENCHMARK(BM_NodeTokenHopDelta)->Arg(64)->Arg(512)->Arg(1024)->Arg(4096);
BENCHMARK(BM_NodeScan)->Arg(64)->Arg(512)->Arg(1024)->Arg(4096);

}  // namespace

BENCHMARK_MAIN();
