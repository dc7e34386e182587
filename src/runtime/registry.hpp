// runtime/registry.hpp — live engines, so that MPI_Finalize can free forgotten mutexes.
//
// hook_finalize() (the first creation calls it) attaches an attribute to
// MPI_COMM_SELF whose delete callback runs at the start of MPI_Finalize, while MPI
// is fully usable. The callback warns and frees every live engine collectively, in
// creation order (the order in which every rank created them), so that nothing is
// left in flight, then uncaches every channel (runtime/channel.hpp).
#pragma once

namespace tally::detail {

class engine;

namespace registry {
void hook_finalize();
void add(engine* e);
void remove(engine* e) noexcept;
// Polls every live engine in progress_mode::in_calls but `self` once, without
// blocking (engine::poll_nowait); the progress thread answers for the others.
// A rank that waits inside one mutex may hold other mutexes' tokens idle; with
// progress in calls they would otherwise go unanswered and ranks could deadlock.
void poll_others(const engine* self) noexcept;
// A channel filed REQUESTs for `e` (in_calls): polled in the next round of
// poll_others(). Takes only its own lock (callers hold a channel's).
void ready(engine* e) noexcept;
}  // namespace registry

}  // namespace tally::detail
