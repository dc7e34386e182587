// runtime/level.hpp — one mutex's protocol state on this rank, for one topology.
//
// Contract. A level holds the protocol core's state of one mutex on this rank and
// turns the engine's calls into core events, carrying out what the core returns:
// sends through the engine's transport, grants in shared memory. It decides
// nothing about the protocol (the core does) and nothing about threads, waiting or
// pacing (the engine does). Two implement it:
//   runtime/flat_level.hpp  topology::flat: a protocol::peer per rank
//   runtime/node_level.hpp  topology::node: the node's protocol::cohort in shared
//                           memory (runtime/node_slot.hpp), Suzuki–Kasami between nodes
// Every call runs under the engine's mutex, and none blocks. An event the core
// refuses throws tally::error naming `call` (protocol::describe), except where a
// call says it reports the refusal instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "runtime/transport.hpp"
#include "tally/options.hpp"

namespace tally::detail {

class level {
 public:
  level() = default;
  level(const level&) = delete;
  level& operator=(const level&) = delete;
  virtual ~level() = default;

  // -- an acquisition
  // lock(): asks for the critical section; true if this rank entered at once.
  virtual bool start(const char* call) = 0;
  // True iff this rank is in the critical section (node: takes its grant).
  virtual bool entered() = 0;
  // This rank asked and waits: not entered, not withdrawn.
  virtual bool waiting() const = 0;
  // Stops waiting: true if withdrawn, false if it entered meanwhile.
  virtual bool withdraw(const char* call) = 0;
  // Enters only if that needs no message (the token idle here); never sends.
  virtual bool try_enter(const char* call) = 0;
  virtual void leave(const char* call) = 0;
  // An exception interrupted an acquisition: stop waiting (node: leave a critical
  // section granted meanwhile). Never throws; not after close().
  virtual void abandon() noexcept = 0;

  // -- progress
  // Before each transport test (node: whether the token may come to this rank).
  virtual void before_test() {}
  // What one transport test brought: the REQUESTs, then the token.
  virtual void deliver(const transport::arrivals& a) = 0;
  // Only a progress step of this rank can move things on (a thread must watch),
  // beyond what the engine knows itself (an acquisition, sends in flight).
  // `after_event`: as of this rank's last event, without looking again.
  virtual bool needs_progress(bool after_event) const noexcept = 0;
  // unlock() tests for REQUESTs before it decides (this rank receives them), and
  // whether a waiting rank is known already.
  virtual bool receives() const noexcept = 0;
  virtual bool waiter_known() const noexcept = 0;
  // A waiting lock() looks at entered() this many times per progress step (a grant
  // in shared memory needs no MPI).
  virtual std::uint32_t looks_per_step() const noexcept { return 1; }

  // REQUESTs for this mutex need this rank's answer whenever they come, so the
  // channel listens for them (channel::listen): flat, while the token is idle here;
  // node, the leader of a node among several (the token can come to its node by
  // any of its ranks, and the leader alone hears the other nodes).
  virtual bool listens() const noexcept = 0;
  // -- an idle token here: entries that need no message (flat: the fast path;
  //    node: never)
  virtual bool token_idle_here() const noexcept { return false; }
  // The entry a fast-path thread made, given to the core now (token_idle_here()).
  virtual void enter_idle() {}

  // -- teardown
  // Every REQUEST addressed here received (`total` broadcasts in the job), no
  // request of this rank (node: of its node) left, no send pending.
  virtual bool drained(std::uint64_t total) const = 0;
  // Lets go of shared state; stats() keeps answering.
  virtual void close() noexcept {}

  virtual std::span<std::byte> payload() noexcept = 0;
  virtual tally::stats stats() const = 0;
};

}  // namespace tally::detail
