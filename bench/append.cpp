// BM_SharedAppend: ordered append to one shared file, the use case of tally's
// state-carrying token (helpers/shared_append.hpp). Every rank appends records of
// 1..max_body body bytes (plus a 24-byte header) to one file; the next free offset
// must be agreed. Appenders, one template argument each:
//   tally         the offset travels in the token (tally::guarded), then
//                 MPI_File_write_at outside the critical section;
//   write_shared  MPI_File_write_shared (MPI-IO's shared file pointer);
//   win_lock      MPI_Win_lock(EXCLUSIVE) on a window holding the offset at rank 0,
//                 MPI_Get, flush, MPI_Put, MPI_Win_unlock, then MPI_File_write_at;
//   fetch_and_op  MPI_Fetch_and_op(MPI_SUM) on that offset inside MPI_Win_lock_all,
//                 then MPI_File_write_at: what a tuned MPI code would do for a
//                 counter alone (but it carries no other state).
// One iteration is one append anywhere; time is the batch's span (max over ranks)
// per append, so items_per_second is appends per second of the whole job. Samples
// are per-append latencies (offset agreed and record written). After each run the
// file's size must equal the bytes appended, or the run fails: a gap or an overlap
// would change it. The file lives in $TALLY_BENCH_APPEND_DIR (default: the working
// directory), which must be visible to every rank, and is deleted on close.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

#include "baselines/mpi_util.hpp"
#include "baselines/win_lock.hpp"
#include "harness.hpp"

#if TALLY_BENCH_HAVE_TALLY
#include "helpers/shared_append.hpp"

namespace {

using namespace bench;
using record = std::vector<std::byte>;

void write_at(MPI_File fh, std::uint64_t at, const record& rec) {
  check(MPI_File_write_at(fh, static_cast<MPI_Offset>(at), rec.data(), static_cast<int>(rec.size()), MPI_BYTE,
                          MPI_STATUS_IGNORE),
        "MPI_File_write_at");
}

class tally_appender {
 public:
  static constexpr const char* name = "tally";
  tally_appender(MPI_Comm comm, MPI_File fh) : next_(comm), fh_(fh) {}
  void append(const record& rec) { tally::example::append(next_, fh_, rec); }
  void poll() { next_.mutex().poll(); }

 private:
  tally::guarded<std::uint64_t> next_;
  MPI_File fh_;
};

class write_shared_appender {
 public:
  static constexpr const char* name = "write_shared";
  write_shared_appender(MPI_Comm, MPI_File fh) : fh_(fh) {}
  void append(const record& rec) {
    check(MPI_File_write_shared(fh_, rec.data(), static_cast<int>(rec.size()), MPI_BYTE, MPI_STATUS_IGNORE),
          "MPI_File_write_shared");
  }
  void poll() {}

 private:
  MPI_File fh_;
};

// A window with the next free offset at rank 0 (for MPI_Fetch_and_op).
class offset_window {
 public:
  explicit offset_window(MPI_Comm comm) : comm_(comm) {
    const MPI_Aint bytes = comm_.rank() == home ? sizeof(std::uint64_t) : 0;
    check(rma_window_allocate(bytes, sizeof(std::uint64_t), comm_.get(), &w_), "MPI_Win_allocate(offset)");
    win_ = w_.win;
    base_ = static_cast<std::uint64_t*>(w_.base);
    check(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN), "MPI_Win_set_errhandler");
    if (comm_.rank() == home) *base_ = 0;
    check(MPI_Barrier(comm_.get()), "MPI_Barrier(offset)");
  }
  ~offset_window() { check_or_abort(rma_window_free(&w_), "MPI_Win_free(offset)"); }
  offset_window(const offset_window&) = delete;
  offset_window& operator=(const offset_window&) = delete;

  static constexpr int home = 0;
  MPI_Win win() const noexcept { return win_; }
  void poll() { kick_progress(comm_.get()); }

 private:
  comm_dup comm_;
  rma_window w_{};
  MPI_Win win_ = MPI_WIN_NULL;
  std::uint64_t* base_ = nullptr;
};

// The win_lock baseline with the offset in its word.
class win_lock_appender {
 public:
  static constexpr const char* name = "win_lock";
  win_lock_appender(MPI_Comm comm, MPI_File fh) : lk_(comm), fh_(fh) {}
  void append(const record& rec) {
    lk_.lock();  // MPI_Win_lock, MPI_Get of the offset, flush
    const auto at = static_cast<std::uint64_t>(lk_.word());
    lk_.put_word(static_cast<std::int64_t>(at + rec.size()));
    lk_.unlock();
    write_at(fh_, at, rec);
  }
  void poll() { lk_.poll(); }

 private:
  bench::win_lock lk_;
  MPI_File fh_;
};

class fetch_and_op_appender {
 public:
  static constexpr const char* name = "fetch_and_op";
  fetch_and_op_appender(MPI_Comm comm, MPI_File fh) : w_(comm), fh_(fh) {
    check(MPI_Win_lock_all(MPI_MODE_NOCHECK, w_.win()), "MPI_Win_lock_all");
  }
  ~fetch_and_op_appender() { check_or_abort(MPI_Win_unlock_all(w_.win()), "MPI_Win_unlock_all"); }
  fetch_and_op_appender(const fetch_and_op_appender&) = delete;
  fetch_and_op_appender& operator=(const fetch_and_op_appender&) = delete;
  void append(const record& rec) {
    const int home = offset_window::home;
    const std::uint64_t size = rec.size();
    std::uint64_t at = 0;
    check(MPI_Fetch_and_op(&size, &at, MPI_UINT64_T, home, 0, MPI_SUM, w_.win()), "MPI_Fetch_and_op(offset)");
    check(MPI_Win_flush(home, w_.win()), "MPI_Win_flush(offset)");
    write_at(fh_, at, rec);
  }
  void poll() { w_.poll(); }

 private:
  offset_window w_;
  MPI_File fh_;
};

// The shared file: opened collectively on world().comm (so its own traffic is not
// counted), deleted on close.
class shared_file {
 public:
  shared_file() {
    const char* dir = std::getenv("TALLY_BENCH_APPEND_DIR");
    long id = static_cast<long>(getpid());  // rank 0's, so that concurrent jobs differ
    MPI_Bcast(&id, 1, MPI_LONG, 0, world().comm);
    path_ = std::string(dir && *dir ? dir : ".") + "/tally_bench_append." + std::to_string(id);
    check(MPI_File_open(world().comm, path_.c_str(), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                        MPI_INFO_NULL, &fh_),
          ("MPI_File_open(" + path_ + ")").c_str());
  }
  ~shared_file() { check_or_abort(MPI_File_close(&fh_), "MPI_File_close"); }
  shared_file(const shared_file&) = delete;
  shared_file& operator=(const shared_file&) = delete;
  MPI_File get() const noexcept { return fh_; }

  // Collective: "" if the file holds exactly `bytes` bytes, else what is wrong.
  std::string check_size(std::uint64_t bytes) {
    check(MPI_File_sync(fh_), "MPI_File_sync");
    MPI_Barrier(world().comm);
    check(MPI_File_sync(fh_), "MPI_File_sync");
    MPI_Offset size = 0;
    check(MPI_File_get_size(fh_, &size), "MPI_File_get_size");
    if (static_cast<std::uint64_t>(size) == bytes) return "";
    return "file holds " + std::to_string(size) + " bytes, " + std::to_string(bytes) +
           " were appended (a gap or an overlap)";
  }

 private:
  std::string path_;
  MPI_File fh_ = MPI_FILE_NULL;
};

constexpr std::int64_t max_batch_per_rank = 256;
constexpr std::uint32_t distinct_records = 64;  // per rank, reused cyclically

template <class A>
void BM_SharedAppend(benchmark::State& state) {
  const world_info& w = world();
  const auto max_body = static_cast<std::uint32_t>(state.range(0));
  std::optional<shared_file> file;
  std::optional<A> app;
  try {
    file.emplace();
    app.emplace(w.comm, file->get());
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());  // fails alike on every rank (collective calls)
    return;
  }
  std::vector<record> recs;
  for (std::uint32_t i = 0; i < distinct_records; ++i) recs.push_back(tally::example::make_record(w.rank, i, max_body));
  auto poll = [&] { app->poll(); };
  measurement m;
  std::uint64_t appended = 0, k = 0;
  auto appends = [&](std::int64_t count, bool timed) {
    for (std::int64_t i = 0; i < count; ++i) {
      const auto& rec = recs[k++ % distinct_records];
      const ns_t t = now_ns();
      app->append(rec);
      if (timed) m.add_sample(static_cast<double>(now_ns() - t));
      appended += rec.size();
    }
  };

  appends(16, false);
  barrier_polling(poll);
  m.begin();
  run_all_ranks(
      state, m, max_batch_per_rank, [&](std::int64_t per_rank) { appends(per_rank, true); }, poll);
  barrier_polling(poll);
  m.end();
  m.publish(state, compare_to::nothing);

  const auto total = static_cast<std::uint64_t>(allreduce_polling(static_cast<ns_t>(appended), MPI_SUM, poll));
  app.reset();
  if (const std::string problem = file->check_size(total); !problem.empty()) state.SkipWithError(problem.c_str());
  state.SetItemsProcessed(state.iterations());
  if (w.rank == 0) state.counters["max_body"] = max_body;
}

// max_body 16: the append is dominated by agreeing on the offset; 4000: records
// of the example's mix (2 KB mean), where writing the data matters too.
void append_args(benchmark::internal::Benchmark* b) { b->ArgName("max_body")->Arg(16)->Arg(4000)->UseManualTime(); }

using tally = tally_appender;
using write_shared = write_shared_appender;
using win_lock = win_lock_appender;
using fetch_and_op = fetch_and_op_appender;
BENCHMARK_TEMPLATE(BM_SharedAppend, tally)->Apply(append_args);
BENCHMARK_TEMPLATE(BM_SharedAppend, write_shared)->Apply(append_args);
BENCHMARK_TEMPLATE(BM_SharedAppend, win_lock)->Apply(append_args);
BENCHMARK_TEMPLATE(BM_SharedAppend, fetch_and_op)->Apply(append_args);

}  // namespace
#endif
