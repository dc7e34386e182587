// runtime/channel.hpp — the messages of every mutex created on one communicator.
//
// Contract. A channel owns two duplicates of a user's communicator (errors
// returned, not fatal) and carries the messages of every mutex created on it. Each
// mutex holds an id, the same on every rank, that its messages carry in their tag:
//   requests()  REQUESTs only, tag = id. The channel keeps up to 16 receives posted
//               (MPI_ANY_SOURCE, MPI_ANY_TAG) for all its mutexes together, and files
//               each REQUEST that completes in the inbox of its mutex (a REQUEST for
//               an id not attached yet waits until attach()).
//   messages()  the token (tag_token(id)), free's collectives (tag_collective(id)),
//               FAULT texts (tag_fault, the id in the message's first word) and the
//               clock sync (tag_clock, private channels only). The channel keeps one
//               FAULT receive posted; a mutex posts its own token receive, and only
//               while the token may come to it, so posted receives do not grow with
//               the number of mutexes.
// A channel is cached on the user's communicator as an MPI attribute, so the k-th
// mutex created on a communicator allocates no communicator; it lives until that
// communicator is freed (its delete callback) or MPI_Finalize (finalize_all()),
// and after that until its last mutex is freed. A traced mutex gets a private
// channel (its clock sync runs MPI collectives on it) that dies with it.
// Progress: a REQUEST filed for a mutex calls its `notify` (the engine's: a nudge of
// its progress membership, or a turn in registry::poll_others). A mutex whose
// token is here listens (listen()); while any does, the channel itself is watched
// by the process's progress thread (when a mutex in thread mode uses it) and
// tested by every paced round of registry::poll_others (poll_all()), so that
// answering for a thousand idle tokens costs one test of the shared receives, not
// a poll of each mutex (docs/design.md, "Progress").
// Ids: creation agrees on one across the user's communicator (lifecycle.cpp); an
// id is reused once its mutex's free() has completed on this rank, never after a
// fault (a late FAULT or REQUEST could name it). Thread-safe: one thread at a time
// tests the shared receives for every mutex (the others skip the test rather than
// wait), and a second mutex, never held across an MPI call, guards the inboxes;
// MPI calls on a mutex's own operations are its engine's business.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "runtime/handles.hpp"
#include "runtime/node_arena.hpp"
#include "runtime/progress_thread.hpp"
#include "runtime/thread_safety.hpp"

namespace tally::detail {

// The tags on messages(); REQUESTs on requests() are tagged with the id alone.
inline constexpr int tag_fault = 1, tag_clock = 2, first_mutex_tag = 16;
inline int tag_token(std::uint32_t id) noexcept { return first_mutex_tag + 2 * static_cast<int>(id); }
inline int tag_collective(std::uint32_t id) noexcept { return tag_token(id) + 1; }

class channel {
 public:
  // Waits for a nonblocking operation while the process keeps making progress.
  using waiter = std::function<void(MPI_Request&, const char*)>;
  static constexpr std::size_t max_words = 3;  // the longest REQUEST (node topology)
  // A REQUEST as it arrived: its sender and its words.
  struct raw_request {
    int source = 0;
    int words = 0;
    std::array<std::uint64_t, max_words> w{};
  };

  // The channel cached on `comm`, created (collective over comm) if it has none.
  static std::shared_ptr<channel> of(MPI_Comm comm, const waiter& wait);
  // A channel of its own (collective over comm), never cached.
  static std::shared_ptr<channel> create(MPI_Comm comm, const waiter& wait);
  // The lowest free id of comm's cached channel, or 0 if it has none (local).
  static std::uint32_t proposal(MPI_Comm comm);
  // MPI_Finalize (after the live mutexes were freed): every channel's shared
  // receives are cancelled, and every cached channel is uncached in creation order
  // (and dies once the mutex objects holding it are destroyed).
  static void finalize_all() noexcept;

  channel(const channel&) = delete;
  channel& operator=(const channel&) = delete;
  ~channel();

  MPI_Comm requests() const noexcept { return requests_.get(); }
  MPI_Comm messages() const noexcept { return messages_.get(); }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // The largest id whose tags fit MPI_TAG_UB.
  std::uint32_t max_id() const noexcept { return max_id_; }

  // The lowest id free here that is >= `from`.
  std::uint32_t lowest_free(std::uint32_t from = 0) const;
  // Takes id (free here) for a mutex; REQUESTs that came for it early wait in its
  // inbox. `notify` is called (the channel's lock held: it must only flag work,
  // never call back into the channel) whenever REQUESTs or a FAULT are filed for id.
  void attach(std::uint32_t id, std::function<void()> notify);
  // Gives id back (its mutex is freed: nothing for it can arrive any more); with
  // `retire`, keeps it taken for good (a faulted mutex).
  void detach(std::uint32_t id, bool retire = false) noexcept;

  // Tests the shared receives once, files what completed, and moves id's inbox into
  // `out` (appended). Receives that completed are posted again at once unless
  // `repost` is false (then: by repost(), or at the next collect()). A FAULT that
  // came for id: its text (naming the sender) into `fault`, once.
  void collect(std::uint32_t id, std::vector<raw_request>& out, bool repost, std::string& fault);
  void repost();
  // The node topology's shared memory for this channel's mutexes, built (collective
  // over the communicator) by the first creation that asks. Creation only.
  std::shared_ptr<node_arena> arena(const waiter& wait);

  // A FAULT for id to every other rank, best effort (runtime/transport.hpp).
  void notify_fault(std::uint32_t id, const std::string& what) noexcept;

  // A mutex whose token is here starts (true) or stops listening.
  void listen(bool on) noexcept;
  // A mutex in progress_mode::thread starts or stops using the channel: the channel
  // is a member of the progress thread while any does (policy: the first one's).
  void use_thread(const poll_policy& policy);
  void unuse_thread() noexcept;
  // Tests the shared receives of every channel with listeners once, never
  // blocking (registry::poll_others).
  static void poll_all() noexcept;

  // Sum of `value` over the ranks, on messages() with tag_collective(id), by
  // point-to-point messages along a binomial tree, so that the collectives of
  // different mutexes never need an order between them. Doubles as a barrier. Its
  // messages are MPI_UNSIGNED_LONG_LONG (REQUESTs: MPI_UINT64_T).
  std::uint64_t allreduce_sum(std::uint32_t id, std::uint64_t value, const waiter& wait);

 private:
  channel() = default;
  void open(MPI_Comm comm, const waiter& wait);
  void post_locked(std::size_t k) TALLY_REQUIRES(test_mu_);
  // Files what completed, notifying each mutex but the collector (which takes its
  // inbox at once); true if anything did.
  bool test_locked(std::optional<std::uint32_t> collector) TALLY_REQUIRES(test_mu_);
  void repost_locked() TALLY_REQUIRES(test_mu_);
  // Cancels the shared receives for good; `why` for the mutexes.
  void retire() noexcept;
  // The shared receives failed: every attached mutex gets `why` as its FAULT.
  void break_all(const std::string& why) noexcept;
  // One test, if the lock is free (the progress thread's step, poll_all()).
  progress_thread::found step() noexcept;

  struct member {
    bool attached = false;
    bool retired = false;
    std::function<void()> notify;
    std::vector<raw_request> inbox;
    std::string fault;  // a FAULT's text, "" if none came
  };
  member& member_locked(std::uint32_t id) TALLY_REQUIRES(mu_);

  comm_handle requests_, messages_;
  int rank_ = 0, size_ = 1;
  std::uint32_t max_id_ = 0;

  // The shared receives are tested by one thread at a time, for everyone: a thread
  // that finds test_mu_ taken skips the test (never waits behind an MPI call, which
  // may yield the core while oversubscribed) and takes what was filed for it.
  // Lock order: test_mu_, then mu_.
  mutable guarded_mutex test_mu_;
  // [0] FAULT (on messages()), [1..] REQUEST into bufs_[k - 1].
  std::vector<MPI_Request> reqs_ TALLY_GUARDED_BY(test_mu_);
  std::vector<std::array<std::uint64_t, max_words>> bufs_ TALLY_GUARDED_BY(test_mu_);
  static constexpr std::size_t fault_bytes = 520;  // the id word, then the text
  std::array<char, fault_bytes> fault_in_ TALLY_GUARDED_BY(test_mu_){};
  std::vector<int> done_idx_ TALLY_GUARDED_BY(test_mu_);
  std::vector<MPI_Status> done_status_ TALLY_GUARDED_BY(test_mu_);
  std::vector<std::size_t> unposted_ TALLY_GUARDED_BY(test_mu_);
  std::vector<std::pair<std::uint32_t, raw_request>> arrived_ TALLY_GUARDED_BY(test_mu_);  // one test's
  std::vector<std::pair<std::uint32_t, std::string>> faults_ TALLY_GUARDED_BY(test_mu_);
  std::atomic<bool> broken_flag_{false};  // broken_ is set (read without mu_)
  // The inboxes and ids; never held across an MPI call.
  mutable guarded_mutex mu_;
  // Attached, retired, or early news.
  std::unordered_map<std::uint32_t, member> members_ TALLY_GUARDED_BY(mu_);
  std::set<std::uint32_t> free_below_ TALLY_GUARDED_BY(mu_);  // free ids below next_
  std::uint32_t next_ TALLY_GUARDED_BY(mu_) = 0;              // every id >= next_ is free
  std::string broken_ TALLY_GUARDED_BY(mu_);                  // an MPI failure of the shared receives
  std::atomic<int> listeners_{0};
  std::atomic<std::uint64_t> last_collect_{0};  // ticks() of the last collect()
  guarded_mutex use_mu_;                        // not taken by step(): unuse_thread() waits for a step
  int thread_users_ TALLY_GUARDED_BY(use_mu_) = 0;
  std::shared_ptr<node_arena> arena_;  // creation only (ordered on the communicator)
  progress_thread progress_;
};

}  // namespace tally::detail
