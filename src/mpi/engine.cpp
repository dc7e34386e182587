#include "mpi/engine.hpp"

#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "mpi/registry.hpp"

namespace tally::detail {

namespace {

constexpr int tag_request = 1;
constexpr int tag_token = 2;
// REQUEST receives kept posted: enough that a burst of broadcasts lands in posted
// buffers rather than MPI's unexpected-message queue.
constexpr int max_posted_requests = 16;
// unlock() polls for MPI messages every time, until this many unlock() polls in a
// row found nothing; from then on (a holder re-entering with nobody asking) it
// skips its poll while less time has passed since its last poll than
// unlock_poll_factor times that poll's cost. Any message ends the quiet spell.
// See docs/design.md, "Polling in unlock".
constexpr std::uint32_t unlock_quiet_polls = 64;
// A waiting lock() releases mu_ (and polls the process's other mutexes) once per
// this many polls of its own.
constexpr std::uint32_t release_every = 16;
constexpr std::uint64_t unlock_poll_factor = 4;

// A cheap monotonic tick count; its unit does not matter (only ratios are used).
std::uint64_t ticks() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t v;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

[[noreturn]] void fail(errc code, const std::string& what) { throw error(code, "tally: " + what); }

void throw_step(protocol::status st, const char* call) {
  fail(protocol::to_errc(st), std::string(call) + ": " + protocol::describe(st));
}

int thread_level() {
  int provided = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread");
  return provided;
}

}  // namespace

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  int cls = rc;
  MPI_Error_class(rc, &cls);
  MPI_Error_string(rc, msg, &len);
  throw error(errc::mpi, std::string("tally: ") + what + " failed: " + std::string(msg, static_cast<std::size_t>(len)), cls);
}

bool mpi_usable() noexcept {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// --- construction ------------------------------------------------------------------

namespace {

// Local validation; returns the error to raise on this rank, if any.
std::optional<error> validate(const options& o, int size) {
  if (o.initial_owner < 0 || o.initial_owner >= size)
    return error(errc::arg, "tally: initial_owner " + std::to_string(o.initial_owner) +
                                " out of range for a communicator of " + std::to_string(size) +
                                " ranks");
  if (o.payload_bytes > max_payload_bytes)
    return error(errc::arg, "tally: payload of " + std::to_string(o.payload_bytes) +
                                " bytes exceeds the limit of " +
                                std::to_string(max_payload_bytes));
  if (o.progress != progress_mode::in_calls && o.progress != progress_mode::thread)
    return error(errc::arg, "tally: unknown progress mode");
  if (o.polling.interval.count() < 0)
    return error(errc::arg, "tally: negative polling interval");
  if (o.progress == progress_mode::thread && thread_level() < MPI_THREAD_MULTIPLE)
    return error(errc::thread_level,
                 "tally: progress_mode::thread needs MPI_THREAD_MULTIPLE; initialize MPI with "
                 "MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
  return std::nullopt;
}

}  // namespace

engine::engine(MPI_Comm comm, const options& opts, std::optional<error> caller_error)
    : opts_(opts), node_(protocol::rank_t(0), 1, protocol::rank_t(0)) {
  if (comm == MPI_COMM_NULL) fail(errc::arg, "communicator is MPI_COMM_NULL");
  if (!mpi_usable()) fail(errc::state, "MPI is not initialized, or already finalized");
  int inter = 0;
  if (MPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
    fail(errc::arg, "invalid communicator");
  if (inter) fail(errc::arg, "intercommunicators are not supported");

  // Nonblocking collectives, so that other mutexes of this process keep answering
  // while this rank waits for the rest of the communicator.
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(MPI_Comm_idup(comm, comm_.out(), &req), "MPI_Comm_idup");
  wait_progressing(req, "MPI_Comm_idup", false);
  check_mpi(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm_.get(), &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_.get(), &size_), "MPI_Comm_size");

  // Agree on validity before anything else is collective, so that every rank fails
  // (and none waits) when one rank's arguments are bad. Payload size and owner must
  // match across ranks.
  std::optional<error> local = caller_error ? std::move(caller_error) : validate(opts, size_);
  const long long payload = static_cast<long long>(std::min(opts.payload_bytes, max_payload_bytes + 1));
  long long mine[5] = {local ? static_cast<long long>(local->code()) : 0, payload, -payload,
                       opts.initial_owner, -static_cast<long long>(opts.initial_owner)};
  long long agreed[5];
  check_mpi(MPI_Iallreduce(mine, agreed, 5, MPI_LONG_LONG, MPI_MAX, comm_.get(), &req),
            "MPI_Iallreduce(options)");
  wait_progressing(req, "MPI_Iallreduce(options)", false);
  if (local) throw *local;
  if (agreed[0] != 0)
    fail(static_cast<errc>(agreed[0]), "another rank rejected its arguments to the collective create");
  if (agreed[1] != -agreed[2])
    fail(errc::arg, "payload size differs across ranks (from " + std::to_string(-agreed[2]) +
                        " to " + std::to_string(agreed[1]) + " bytes)");
  if (agreed[3] != -agreed[4]) fail(errc::arg, "initial_owner differs across ranks");

  node_ = protocol::node(protocol::rank_t(rank_), size_, protocol::rank_t(opts.initial_owner));
  wire_ = wire_format(size_, opts.payload_bytes);
  payload_.assign(opts.payload_bytes, std::byte{0});
  token_buf_.assign(wire_.bytes(), std::byte{0});

  const int posted = std::min(size_ - 1, max_posted_requests);
  recv_reqs_.assign(size_ > 1 ? static_cast<std::size_t>(1 + posted) : 0, MPI_REQUEST_NULL);
  request_bufs_.assign(recv_reqs_.empty() ? 0 : static_cast<std::size_t>(posted), 0);
  done_idx_.resize(recv_reqs_.size());
  done_status_.resize(recv_reqs_.size());
  registry::add(this);
  try {
    if (!recv_reqs_.empty()) {
      post_token_recv();
      for (std::size_t k = 0; k < request_bufs_.size(); ++k) post_request_recv(k);
    }
    if (opts_.progress == progress_mode::thread)
      progress_ = std::thread([this] { progress_thread_main(); });
  } catch (...) {
    registry::remove(this);
    cancel_receives();
    live_ = false;
    throw;
  }
}

engine::~engine() {
  if (!live_) return;
  try {
    free();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tally: error while destroying a mutex: %s\n", e.what());
  }
}

// --- receives and sends --------------------------------------------------------------

void engine::post_token_recv() {
  check_mpi(MPI_Irecv(token_buf_.data(), 1, wire_.type(), MPI_ANY_SOURCE, tag_token, comm_.get(),
                      &recv_reqs_[0]),
            "MPI_Irecv(token)");
}

void engine::post_request_recv(std::size_t k) {
  check_mpi(MPI_Irecv(&request_bufs_[k], 1, MPI_UINT64_T, MPI_ANY_SOURCE, tag_request, comm_.get(),
                      &recv_reqs_[k + 1]),
            "MPI_Irecv(REQUEST)");
}

void engine::broadcast(protocol::seq_t seq) {
  if (recv_reqs_[0] == MPI_REQUEST_NULL) post_token_recv();  // before anyone can answer
  // Reuse a broadcast slot whose sends all completed, else add one.
  bcast_slot* slot = nullptr;
  for (auto& b : bcasts_)
    if (std::all_of(b.reqs.begin(), b.reqs.end(), [](MPI_Request r) { return r == MPI_REQUEST_NULL; })) {
      slot = &b;
      break;
    }
  if (!slot) {
    slot = &bcasts_.emplace_back();
    slot->reqs.assign(static_cast<std::size_t>(size_ - 1), MPI_REQUEST_NULL);
  }
  slot->seq = seq.value();
  std::size_t k = 0;
  // Start with the next rank up, so that simultaneous broadcasts spread their load.
  for (int d = 1; d < size_; ++d) {
    const int to = (rank_ + d) % size_;
    check_mpi(MPI_Isend(&slot->seq, 1, MPI_UINT64_T, to, tag_request, comm_.get(), &slot->reqs[k++]),
              "MPI_Isend(REQUEST)");
  }
  sends_active_ = true;
}

void engine::send_token(protocol::rank_t to) {
  std::optional<protocol::token> t = node_.take_token();
  token_slot* slot = nullptr;
  for (auto& s : token_sends_)
    if (s.req == MPI_REQUEST_NULL) {
      slot = &s;
      break;
    }
  if (!slot) {
    slot = &token_sends_.emplace_back();
    slot->buf.resize(wire_.bytes());
  }
  wire_.pack(*t, payload_, slot->buf.data());
  spare_ = std::move(*t);  // its storage receives the next token
  check_mpi(MPI_Isend(slot->buf.data(), 1, wire_.type(), to.value(), tag_token, comm_.get(), &slot->req),
            "MPI_Isend(token)");
  sends_active_ = true;
}

void engine::execute(const protocol::step& s, const char* event) {
  if (!s.ok()) throw_step(s.st, event);
  switch (s.act.what) {
    case protocol::action::kind::none: return;
    case protocol::action::kind::broadcast_request: broadcast(s.act.seq); return;
    case protocol::action::kind::send_token: send_token(s.act.to); return;
  }
}

void engine::reap_sends(bool wait) {
  for (auto& b : bcasts_) {
    if (b.reqs.empty()) continue;
    if (wait) {
      check_mpi(MPI_Waitall(static_cast<int>(b.reqs.size()), b.reqs.data(), MPI_STATUSES_IGNORE),
                "MPI_Waitall(REQUEST)");
    } else {
      int flag = 0;
      check_mpi(MPI_Testall(static_cast<int>(b.reqs.size()), b.reqs.data(), &flag, MPI_STATUSES_IGNORE),
                "MPI_Testall(REQUEST)");
    }
  }
  for (auto& s : token_sends_) {
    if (s.req == MPI_REQUEST_NULL) continue;
    if (wait) {
      check_mpi(MPI_Wait(&s.req, MPI_STATUS_IGNORE), "MPI_Wait(token)");
    } else {
      int flag = 0;
      check_mpi(MPI_Test(&s.req, &flag, MPI_STATUS_IGNORE), "MPI_Test(token)");
    }
  }
  sends_active_ = sends_pending();
}

bool engine::sends_pending() const noexcept {
  for (const auto& b : bcasts_)
    for (MPI_Request r : b.reqs)
      if (r != MPI_REQUEST_NULL) return true;
  for (const auto& s : token_sends_)
    if (s.req != MPI_REQUEST_NULL) return true;
  return false;
}

bool engine::progress_locked(bool repost) {
  if (recv_reqs_.empty()) return false;
  int count = 0;
  check_mpi(MPI_Testsome(static_cast<int>(recv_reqs_.size()), recv_reqs_.data(), &count,
                         done_idx_.data(), done_status_.data()),
            "MPI_Testsome");
  if (count == MPI_UNDEFINED) count = 0;
  // Handle REQUESTs before the token: either order is a valid execution (channels
  // are unordered), and this one lets a just-arrived token be routed at once.
  for (int c = 0; c < count; ++c) {
    const auto idx = static_cast<std::size_t>(done_idx_[static_cast<std::size_t>(c)]);
    if (idx == 0) continue;
    const int from = done_status_[static_cast<std::size_t>(c)].MPI_SOURCE;
    const protocol::seq_t seq(request_bufs_[idx - 1]);
    // Answer first (an idle holder sends the token now), post the receive again after.
    execute(node_.on_request(protocol::rank_t(from), seq), "REQUEST received");
    if (repost) post_request_recv(idx - 1);
    else unposted_.push_back(idx - 1);
  }
  for (int c = 0; c < count; ++c) {
    if (done_idx_[static_cast<std::size_t>(c)] != 0) continue;
    // The token receive is posted again by the next broadcast(): until this rank
    // requests again, no token can be sent to it. That keeps the Irecv off the
    // path from the token's arrival to the critical section.
    wire_.unpack(token_buf_.data(), payload_, spare_);
    execute(node_.on_token(std::move(spare_)), "token received");
  }
  // Sends are reaped by polls that found nothing, off the path from a message's
  // arrival to what it triggers (or when slots pile up).
  if (sends_active_ && (count == 0 || bcasts_.size() + token_sends_.size() > 8)) reap_sends(false);
  if (count > 0) quiet_unlocks_ = 0;
  return count > 0;
}

// --- locking -----------------------------------------------------------------------

void engine::require_live() const {
  if (!live_) fail(errc::state, "mutex used after free() or after MPI_Finalize");
  rethrow_fault();
}

void engine::rethrow_fault() const {
  if (fault_) std::rethrow_exception(fault_);
}

bool engine::acquire(std::optional<clock::time_point> deadline) {
  const std::thread::id me = std::this_thread::get_id();
  std::unique_lock lk(mu_);
  require_live();
  if (owner_ == me) fail(errc::deadlock, "lock: calling thread already holds the critical section");

  // One thread per rank at a time drives the protocol (at most one broadcast).
  // Waiters need not poll: the slot's owner is either polling for the token or in
  // the critical section, where REQUESTs are deferred anyway. In inline mode they
  // wake now and then to keep this process's other mutexes answering.
  while (slot_taken_) {
    auto until = deadline ? *deadline : clock::time_point::max();
    if (opts_.progress == progress_mode::in_calls)
      until = std::min(until, clock::now() + std::chrono::microseconds(200));
    if (until == clock::time_point::max())
      slot_cv_.wait(lk);
    else
      slot_cv_.wait_until(lk, until);
    require_live();
    if (!slot_taken_) break;
    if (deadline && clock::now() >= *deadline) return false;
    if (opts_.progress == progress_mode::in_calls) {
      lk.unlock();
      registry::poll_others(this);
      lk.lock();
      require_live();
    }
  }
  slot_taken_ = true;
  try {
    execute(node_.lock(), "lock");
    for (std::uint32_t spin = 1; node_.mode() != protocol::mode::in_cs; ++spin) {
      progress_locked();
      if (node_.mode() == protocol::mode::in_cs) break;
      if (deadline && clock::now() >= *deadline) {
        execute(node_.withdraw(), "lock timeout");
        slot_taken_ = false;
        slot_cv_.notify_one();
        return false;
      }
      if (spin % release_every != 0) continue;  // a tight loop detects the token soonest
      // Let the progress thread and other callers in between polls, and keep this
      // process's other mutexes answering.
      lk.unlock();
      registry::poll_others(this);
      lk.lock();
      require_live();
    }
  } catch (...) {
    if (live_ && node_.mode() == protocol::mode::requesting && !node_.withdrawn()) node_.withdraw();
    slot_taken_ = false;
    slot_cv_.notify_one();
    throw;
  }
  owner_ = me;
  return true;
}

bool engine::try_lock() {
  const std::thread::id me = std::this_thread::get_id();
  std::lock_guard lk(mu_);
  require_live();
  if (owner_ == me) fail(errc::deadlock, "try_lock: calling thread already holds the critical section");
  if (slot_taken_) return false;
  const protocol::step s = node_.try_lock();
  if (s.st == protocol::status::would_block) return false;
  execute(s, "try_lock");
  slot_taken_ = true;
  owner_ = me;
  return true;
}

void engine::unlock() {
  std::lock_guard lk(mu_);
  require_live();
  if (owner_ != std::this_thread::get_id())
    fail(errc::not_owner, "unlock: calling thread does not hold the critical section");
  // Learn of waiting ranks first, so that the token leaves with this unlock;
  // unless a waiter is known already: then it leaves at once, and requests not yet
  // seen here reach the next holder too. In a quiet spell, spend at most
  // 1/unlock_poll_factor of the time polling: a poll over TCP costs far more than
  // a local re-entry.
  if (!node_.waiter_known() &&
      (quiet_unlocks_ < unlock_quiet_polls ||
       ticks() - last_poll_ >= unlock_poll_factor * poll_cost_)) {
    // REQUEST receives are posted again after the token has left.
    const std::uint64_t t0 = ticks();
    const bool arrived = progress_locked(false);
    last_poll_ = ticks();
    // Follows a cheaper poll at once but a dearer one at most twofold, so that one
    // poll stretched by the scheduler cannot stretch the quiet-spell interval.
    poll_cost_ = std::min(last_poll_ - t0, 2 * poll_cost_ + 1);
    if (!arrived && quiet_unlocks_ < unlock_quiet_polls) ++quiet_unlocks_;
  }
  auto repost = [&] {
    for (std::size_t k : unposted_) post_request_recv(k);
    unposted_.clear();
  };
  try {
    execute(node_.unlock(), "unlock");
  } catch (...) {
    repost();
    throw;
  }
  repost();
  owner_ = {};
  slot_taken_ = false;
  slot_cv_.notify_one();
}

void engine::poll_nowait() noexcept {
  if (opts_.progress != progress_mode::in_calls) return;  // its thread does it
  std::unique_lock lk(mu_, std::try_to_lock);
  if (!lk.owns_lock() || !live_ || fault_) return;
  try {
    progress_locked();
  } catch (...) {
    fault_ = std::current_exception();
  }
}

void engine::wait_progressing(MPI_Request& req, const char* what, bool own) {
  int done = 0;
  for (;;) {
    check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (own) progress_locked();
    registry::poll_others(this);
  }
}

void engine::poll() {
  std::lock_guard lk(mu_);
  require_live();
  while (progress_locked()) {
  }
}

std::uint64_t engine::payload_entry() const {
  std::lock_guard lk(mu_);
  require_live();
  if (owner_ != std::this_thread::get_id())
    fail(errc::not_owner, "payload: calling thread does not hold the critical section");
  return node_.counters().acquisitions;
}

std::span<std::byte> engine::payload(std::uint64_t entry) {
  std::lock_guard lk(mu_);
  require_live();
  if (owner_ != std::this_thread::get_id() || node_.counters().acquisitions != entry)
    fail(errc::not_owner, "payload: view used outside the critical section it was taken in");
  return payload_;
}

struct stats engine::stats() const {
  std::lock_guard lk(mu_);
  const protocol::counters& c = node_.counters();
  return {c.acquisitions, c.local_acquisitions, c.requests_sent, c.requests_received, c.tokens_sent,
          c.tokens_received};
}

// --- progress thread -------------------------------------------------------------------

void engine::progress_thread_main() {
  // Ask the kernel for precise sleeps: the default 50 us timer slack would dominate
  // short polling intervals.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  using us = std::chrono::microseconds;
  const us interval = opts_.polling.interval;
  us backoff{1};
  while (!stop_.load(std::memory_order_acquire)) {
    bool active = false;
    {
      std::unique_lock lk(mu_, std::try_to_lock);
      if (lk.owns_lock() && live_ && !fault_) {
        try {
          active = progress_locked();
        } catch (...) {
          fault_ = std::current_exception();
        }
      }
    }
    switch (opts_.polling.how) {
      case poll_policy::strategy::spin: break;
      case poll_policy::strategy::sleep: std::this_thread::sleep_for(interval); break;
      case poll_policy::strategy::backoff:
        if (active) {
          backoff = us{1};
        } else {
          std::this_thread::sleep_for(backoff);
          backoff = std::min(backoff * 2, std::max(interval, us{1}));
        }
        break;
    }
  }
}

void engine::stop_progress_thread() noexcept {
  if (!progress_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  progress_.join();
}

// --- teardown --------------------------------------------------------------------------

void engine::cancel_receives() noexcept {
  for (MPI_Request& r : recv_reqs_) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

void engine::free(bool at_finalize) {
  stop_progress_thread();
  std::unique_lock lk(mu_);
  if (!live_) fail(errc::state, "free: mutex already freed");
  registry::remove(this);
  live_ = false;  // from here on, other threads' calls fail with errc::state
  slot_cv_.notify_all();

  bool held = false;
  std::exception_ptr failure;
  try {
    if (node_.mode() == protocol::mode::in_cs) {
      held = true;
      progress_locked();
      execute(node_.unlock(), "free");
    } else if (node_.mode() == protocol::mode::requesting && !node_.withdrawn()) {
      node_.withdraw();
    }
    owner_ = {};
    slot_taken_ = false;

    // Every rank learns how many REQUESTs are addressed to it: each broadcast sends
    // exactly one to every other rank.
    const unsigned long long mine = node_.counters().broadcasts;
    unsigned long long total = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm_.get(), &req),
              "MPI_Iallreduce(free)");
    wait_progressing(req, "MPI_Iallreduce(free)", true);
    const std::uint64_t expected = total - mine;
    // Drain: receive every REQUEST, let withdrawn requests be served (the token is
    // only ever in flight to a requesting rank), complete every send.
    while (node_.counters().requests_received < expected ||
           node_.mode() == protocol::mode::requesting || sends_pending()) {
      progress_locked();
      registry::poll_others(this);
    }
    check_mpi(MPI_Ibarrier(comm_.get(), &req), "MPI_Ibarrier(free)");
    wait_progressing(req, "MPI_Ibarrier(free)", false);
    // Nothing can arrive any more: retire the posted receives.
    cancel_receives();
    wire_.free();
    comm_.free("MPI_Comm_free");
  } catch (...) {
    failure = std::current_exception();
    cancel_receives();
  }
  if (failure) std::rethrow_exception(failure);
  if (held) {
    if (at_finalize)
      std::fprintf(stderr, "tally: rank %d still held the critical section at MPI_Finalize; released it\n", rank_);
    fail(errc::state, "free: the calling rank still held the critical section; it was released and the mutex freed");
  }
}

}  // namespace tally::detail
