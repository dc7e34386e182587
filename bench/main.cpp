// tally_bench: Google Benchmark under MPI. Every rank runs every benchmark; rank 0
// alone reports (console and --benchmark_out); the other ranks use a reporter that
// prints nothing and never see --benchmark_out.
//
// Own flags (removed before Google Benchmark parses the rest):
//   --mpi_thread_level=single|funneled|serialized|multiple   (default multiple;
//       tally_thread needs multiple and is skipped otherwise)
//   --tally_poll=spin|backoff|sleep|adaptive  --tally_poll_us=N  (tally_thread's policy)
#include <mpi.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "baselines/mpi_util.hpp"
#include "harness.hpp"
#include "lock_kinds.hpp"

namespace {

class null_reporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

struct own_flags {
  int thread_level = MPI_THREAD_MULTIPLE;
  std::string poll = "adaptive";  // the library's default
  long poll_us = -1;              // -1: tally's default
};

[[noreturn]] void usage(const char* what) {
  std::fprintf(stderr, "tally_bench: %s\n", what);
  std::exit(2);
}

// Takes our flags out of argv (before MPI_Init, identically on every rank).
own_flags take_own_flags(int& argc, char** argv) {
  own_flags f;
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view key) -> const char* {
      return a.substr(0, key.size()) == key ? argv[i] + key.size() : nullptr;
    };
    if (const char* v = value("--mpi_thread_level=")) {
      const std::string_view s = v;
      if (s == "single")
        f.thread_level = MPI_THREAD_SINGLE;
      else if (s == "funneled")
        f.thread_level = MPI_THREAD_FUNNELED;
      else if (s == "serialized")
        f.thread_level = MPI_THREAD_SERIALIZED;
      else if (s == "multiple")
        f.thread_level = MPI_THREAD_MULTIPLE;
      else
        usage("--mpi_thread_level must be single, funneled, serialized or multiple");
    } else if (const char* p = value("--tally_poll=")) {
      f.poll = p;
      if (f.poll != "spin" && f.poll != "backoff" && f.poll != "sleep" && f.poll != "adaptive")
        usage("--tally_poll must be spin, backoff, sleep or adaptive");
    } else if (const char* u = value("--tally_poll_us=")) {
      char* end = nullptr;
      f.poll_us = std::strtol(u, &end, 10);
      if (*u == '\0' || *end != '\0' || f.poll_us < 0) usage("--tally_poll_us must be an integer >= 0");
    } else {
      argv[out++] = argv[i];
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return f;
}

// Drops --benchmark_out and --benchmark_out_format (ranks other than 0).
void drop_file_output(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("--benchmark_out=") || a.starts_with("--benchmark_out_format=")) continue;
    argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
}

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

void add_context(const own_flags& f, int provided) {
  const bench::world_info& w = bench::world();
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  std::string version(lib, static_cast<std::size_t>(len));
  if (const auto nl = version.find_first_of("\n,"); nl != std::string::npos) version.resize(nl);
  const char* levels[] = {"single", "funneled", "serialized", "multiple"};
  benchmark::AddCustomContext("mpi_library", version);
  benchmark::AddCustomContext("mpi_ranks", std::to_string(w.size));
  benchmark::AddCustomContext("mpi_nodes", std::to_string(w.nodes));
  benchmark::AddCustomContext("mpi_thread_level", provided >= 0 && provided <= 3 ? levels[provided] : "?");
  // mpirun passes --mca settings to the ranks as OMPI_MCA_* variables.
  benchmark::AddCustomContext("mpi_btl", env_or("OMPI_MCA_btl", "default"));
  benchmark::AddCustomContext("mpi_pml", env_or("OMPI_MCA_pml", "default"));
  benchmark::AddCustomContext("mpi_osc", env_or("OMPI_MCA_osc", "default"));
  // The transport's name in scripts/lib/transport.sh, as bench/run-local sets it
  // (the report's label; needed with MPICH, whose settings name no BTL).
  benchmark::AddCustomContext("transport", env_or("TALLY_TRANSPORT", "default"));
  benchmark::AddCustomContext("ucx_tls", env_or("UCX_TLS", "default"));
  benchmark::AddCustomContext("token_bytes", std::to_string(bench::token_bytes(w.size)));
  char clock[32];
  std::snprintf(clock, sizeof clock, "%.1f", bench::clock_read_ns());
  benchmark::AddCustomContext("clock_read_ns", clock);
#if TALLY_BENCH_HAVE_TALLY
  benchmark::AddCustomContext("tally_thread_polling",
                              f.poll + (f.poll_us >= 0 ? " " + std::to_string(f.poll_us) + "us" : ""));
#else
  (void)f;
  benchmark::AddCustomContext("tally", "not built (no tally target)");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const own_flags flags = take_own_flags(argc, argv);
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, flags.thread_level, &provided);
  bench::init_world();
  const bool reporter = bench::world().rank == 0;

#if TALLY_BENCH_HAVE_TALLY
  using strategy = tally::poll_policy::strategy;
  bench::tally_thread_polling.how = flags.poll == "spin"      ? strategy::spin
                                    : flags.poll == "sleep"   ? strategy::sleep
                                    : flags.poll == "backoff" ? strategy::backoff
                                                              : strategy::adaptive;
  if (flags.poll_us >= 0) bench::tally_thread_polling.interval = std::chrono::microseconds(flags.poll_us);
#endif

  if (!reporter) {
    drop_file_output(argc, argv);
    // Google Benchmark prints some things (--benchmark_list_tests) outside reporters.
    if (!std::freopen("/dev/null", "w", stdout)) std::perror("tally_bench: freopen");
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    bench::finalize_world();
    MPI_Finalize();
    return 2;
  }
  add_context(flags, provided);

  try {
    null_reporter quiet;
    if (reporter)
      benchmark::RunSpecifiedBenchmarks();
    else
      benchmark::RunSpecifiedBenchmarks(&quiet);
  } catch (const std::exception& e) {
    bench::die(e.what());  // one failing rank takes the job down, not a hang
  }
  benchmark::Shutdown();
  bench::finalize_world();
  MPI_Finalize();
  return 0;
}
