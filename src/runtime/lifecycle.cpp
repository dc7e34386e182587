// runtime/lifecycle.cpp — creating and freeing an engine, both collective.
//
// Contract. Creation validates the arguments locally, then agrees across the
// communicator with one MPI_Iallreduce (runtime/agreement.hpp: error code, payload
// size, owner, topology, pass bound, tracing, the mutex's id), so that one rank's
// bad argument fails the creation on every rank instead of leaving the others
// waiting in a collective. Teardown leaves nothing in flight: every REQUEST
// addressed to this rank is received, every send completed, then a barrier,
// before the communicator is freed (docs/design.md, "Teardown"). Both use
// nonblocking collectives and keep every other mutex of the process answering
// while they wait (registry::poll_others).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <utility>

#include "runtime/agreement.hpp"
#include "runtime/channel.hpp"
#include "runtime/engine.hpp"
#include "runtime/flat_level.hpp"
#include "runtime/node_level.hpp"
#include "runtime/registry.hpp"
#include "runtime/settings.hpp"

namespace tally::detail {

namespace {

// Process-wide creation count, for default names.
std::atomic<unsigned> created{0};

}  // namespace

engine::engine(MPI_Comm comm, const options& opts, std::optional<error> caller_error,
               std::span<const std::byte> initial_payload)
    : opts_(opts) {
  if (comm == MPI_COMM_NULL) fail(errc::arg, "communicator is MPI_COMM_NULL");
  if (!mpi_usable()) fail(errc::state, "MPI is not initialized, or already finalized");
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS) fail(errc::arg, "invalid communicator");
  if (inter) fail(errc::arg, "intercommunicators are not supported");

  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  registry::hook_finalize();
  const channel::waiter waiter = [this](MPI_Request& r, const char* what) { wait_progressing(r, what); };

  // Agree on validity before anything else is collective. Payload size and owner
  // must also match across ranks: each is agreed as a [min, max] range, as is the
  // id proposed for the mutex on comm's channel.
  std::optional<error> local = caller_error ? std::move(caller_error) : validate(opts, size_);
  if (!local && !initial_payload.empty() && initial_payload.size() != opts.payload_bytes)
    local = make_error(errc::arg, "initial payload of " + std::to_string(initial_payload.size()) +
                                      " bytes for a payload of " + std::to_string(opts.payload_bytes));
  const long long payload = static_cast<long long>(std::min(opts.payload_bytes, max_payload_bytes + 1));
  opts_.topology = resolve_topology(opts.topology);
  opts_.trace = trace_directory(opts);
  agreement a;
  a.set(agreement::refusal, local ? static_cast<long long>(local->code()) : 0);
  a.set(agreement::payload, payload);
  a.set(agreement::owner, opts.initial_owner);
  a.set(agreement::topology, static_cast<long long>(opts_.topology));
  a.set(agreement::pass_bound, opts.pass_bound);
  a.set(agreement::traced, opts_.trace.empty() ? 0 : 1);
  a.set(agreement::proposed_id, static_cast<long long>(channel::proposal(comm)));
  a.reduce(comm, waiter);
  if (local) throw *local;
  if (a.hi(agreement::refusal) != 0)
    fail(static_cast<errc>(a.hi(agreement::refusal)), "another rank rejected its arguments to the collective create");
  if (!a.same(agreement::payload))
    fail(errc::arg, "payload size differs across ranks (from " + std::to_string(a.lo(agreement::payload)) + " to " +
                        std::to_string(a.hi(agreement::payload)) + " bytes)");
  if (!a.same(agreement::owner)) fail(errc::arg, "initial_owner differs across ranks");
  if (!a.same(agreement::topology)) fail(errc::arg, "topology differs across ranks (flat, node or automatic)");
  if (!a.same(agreement::pass_bound)) fail(errc::arg, "pass_bound differs across ranks");

  // The channel: comm's (created with its first mutex), or a traced mutex's own.
  all_traced_ = a.lo(agreement::traced) == 1;
  std::shared_ptr<channel> ch = all_traced_ ? channel::create(comm, waiter) : channel::of(comm, waiter);
  long long id = 0;
  if (!all_traced_) {
    id = agree_on_id(
        a.hi(agreement::proposed_id), a.lo(agreement::proposed_id),
        [&](long long from) { return ch->lowest_free(static_cast<std::uint32_t>(from)); },
        [&](long long next) {
          long long again[2] = {next, -next}, both[2];
          MPI_Request req = MPI_REQUEST_NULL;
          check_mpi(MPI_Iallreduce(again, both, 2, MPI_LONG_LONG, MPI_MAX, comm, &req), "MPI_Iallreduce(id)");
          wait_progressing(req, "MPI_Iallreduce(id)");
          return std::pair<long long, long long>{both[0], -both[1]};
        });
  }
  if (id > static_cast<long long>(ch->max_id()))
    fail(errc::state, "too many mutexes alive on one communicator (" + std::to_string(id) + "); MPI_TAG_UB allows " +
                          std::to_string(ch->max_id() + 1));

  if (opts_.progress == progress_mode::automatic)
    opts_.progress = thread_level() == MPI_THREAD_MULTIPLE ? progress_mode::thread : progress_mode::in_calls;
  const unsigned k = ++created;
  if (opts_.name.empty()) opts_.name = "mutex #" + std::to_string(k);
  wait_warning_ = wait_warning(opts_);
  trace_.open(opts_.trace, opts_.name, rank_, size_);
  transport_.set_trace(&trace_);
  // The timeline's clock offsets, where every rank traces (a collective).
  if (all_traced_) sync_trace_clock(ch->messages());
  transport::shape sh;
  sh.payload_bytes = opts.payload_bytes;
  sh.window = broadcast_window();
  if (opts_.topology != topology::flat) {
    // Node topology: the shared-memory level. `automatic` keeps it only where some
    // node holds two or more ranks, and falls back to flat where it cannot be built.
    auto node = std::make_unique<node_level>(transport_, rank_);
    try {
      std::shared_ptr<node_arena> arena = ch->arena(waiter);
      if (opts_.topology == topology::automatic && arena->nodes() == size_) {
        node.reset();  // every rank has a node of its own: nothing to share
      } else {
        node->open(std::move(arena), static_cast<std::uint32_t>(id), ch->messages(), opts.pass_bound,
                   opts.initial_owner, opts.payload_bytes, initial_payload, waiter);
        node->describe(sh);
      }
    } catch (const error&) {
      if (opts_.topology == topology::node) throw;
      node.reset();
    }
    level_ = std::move(node);
  }
  opts_.topology = level_ ? topology::node : topology::flat;
  if (!level_) {
    level_ =
        std::make_unique<flat_level>(transport_, rank_, size_, opts.initial_owner, opts.payload_bytes, initial_payload);
    flat_level::describe(sh, rank_, size_);
  }
  // The fast path serves an idle token, which only the flat topology keeps on a rank.
  fast_allowed_ = opts_.topology == topology::flat && !trace_.on();
  const bool thread = opts_.progress == progress_mode::thread;
  registry::add(this);
  try {
    // REQUESTs filed for this mutex by any poll of the channel: its thread's turn,
    // or (in_calls) one in the next round of registry::poll_others.
    std::function<void()> notify = [this] { progress_.nudge(); };
    if (!thread) notify = [this] { registry::ready(this); };
    transport_.open(std::move(ch), static_cast<std::uint32_t>(id), std::move(sh), std::move(notify));
    if (thread) {
      transport_.chan().use_thread(opts_.polling);
      using_thread_ = true;
      progress_.start(opts_.polling, [this] { return progress_from_thread(); });
    }
    guard lk(mu_);
    listen_locked();
  } catch (...) {
    progress_.stop();
    if (using_thread_) transport_.chan().unuse_thread();
    using_thread_ = false;
    registry::remove(this);
    transport_.cancel_receives();
    try {
      transport_.close();
    } catch (const error&) {
      // the first failure is the one to report
    }
    live_ = false;
    throw;
  }
}

engine::~engine() {
  if (!live_) return;
  try {
    free();
  } catch (const std::exception& e) {
    warn("error while destroying a mutex: %s\n", e.what());
  }
}

void engine::wait_progressing(MPI_Request& req, const char* what) {
  int done = 0;
  for (patience wait;; wait()) {
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    registry::poll_others(this);
  }
}

void engine::wait_progressing_locked(MPI_Request& req, const char* what) {
  int done = 0;
  for (patience wait;; wait()) {
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    progress_locked();
    registry::poll_others(this);
  }
}

void engine::sync_trace_clock(MPI_Comm comm) {
  int domain = 0;
  const clock_sample s = sync_clock(
      trace_.clock(), comm, tag_clock, [this](MPI_Request& r, const char* what) { wait_progressing(r, what); }, domain);
  trace_.add_sample(s, domain);
}

void engine::free_faulted_locked() {
  if (async_) {
    async_->st = acquisition::state::cancelled;
    complete_greq_locked(*async_);
    async_.reset();
  }
  slot_.release();
  transport_.abandon();
  level_->close();
}

void engine::leave_for_free_locked(bool& held, bool& outstanding) {
  if (async_) {  // not acquired yet: withdrawn like a timed-out lock
    outstanding = true;
    // Granted, but never acquired: give it back.
    if (async_->st == acquisition::state::pending && !level_->withdraw("free")) level_->leave("free");
    async_->st = acquisition::state::cancelled;
    complete_greq_locked(*async_);
    async_.reset();
  }
  // Leave the critical section, or stop waiting (node topology: a grant that
  // comes meanwhile is taken and given up at once, so look at `waiting` first).
  const bool waiting = level_->waiting();
  if (level_->entered()) {
    held = true;
    trace_exit_locked();
    progress_locked();  // REQUESTs first, so that the token leaves with the exit
    level_->leave("free");
  } else if (waiting && !level_->withdraw("free")) {
    level_->leave("free");
  }
  slot_.release();
}

void engine::drain_and_close_locked() {
  // Every rank learns how many REQUESTs are addressed to it: each broadcast sends
  // exactly one to every other rank (node topology: to every other node).
  const unsigned long long mine = stats_locked().broadcasts;
  // Called by allreduce_sum below, with mu_ held.
  const channel::waiter own = [this](MPI_Request& r, const char* what)
                                  TALLY_REQUIRES(mu_) { wait_progressing_locked(r, what); };
  const channel::waiter others = [this](MPI_Request& r, const char* what) { wait_progressing(r, what); };
  const unsigned long long total = transport_.chan().allreduce_sum(transport_.id(), mine, own);
  // Drain: receive every REQUEST, let withdrawn requests be served (the token is
  // only ever in flight to a requesting rank), complete every send.
  for (patience wait; !level_->drained(total); wait()) {
    progress_locked();
    registry::poll_others(this);
  }
  (void)transport_.chan().allreduce_sum(transport_.id(), 0, others);  // a barrier
  if (all_traced_) sync_trace_clock(transport_.chan().messages());
  // Nothing can arrive any more: retire the posted receives.
  transport_.cancel_receives();
  level_->close();
  transport_.close();
}

void engine::free(bool at_finalize) {
  progress_.stop();
  unique_guard lk(mu_);
  settle_fast_locked();
  if (!live_) fail(errc::state, "free", "mutex already freed");
  registry::remove(this);
  if (using_thread_) transport_.chan().unuse_thread();
  using_thread_ = false;
  live_ = false;    // from here on, other threads' calls fail with errc::state
  listen_locked();  // off: free's own polls answer from here on
  slot_.wake_all();
  if (fault_) {
    free_faulted_locked();
    trace_.flush();
    std::rethrow_exception(fault_);
  }

  bool held = false;
  bool outstanding = false;
  std::exception_ptr failure;
  try {
    leave_for_free_locked(held, outstanding);
    drain_and_close_locked();
  } catch (const error& e) {
    failure = std::current_exception();
    if (e.code() == errc::mpi) {  // here or (a FAULT message) on another rank
      fault_locked(failure);
      free_faulted_locked();
    } else {
      transport_.cancel_receives();
    }
  } catch (...) {
    failure = std::current_exception();
    transport_.cancel_receives();
  }
  trace_.flush();
  if (failure) std::rethrow_exception(failure);
  if (held) {
    if (at_finalize) warn("rank %d still held the critical section at MPI_Finalize; released it\n", rank_);
    fail(errc::state, "free", "the calling rank still held the critical section; it was released and the mutex freed");
  }
  if (outstanding)
    fail(errc::state, "free",
         "an asynchronous acquisition (lock_async) was still outstanding; it was "
         "cancelled and the mutex freed");
}

}  // namespace tally::detail
