// sim/des.hpp — tally-sim's discrete-event scheduler.
//
// scheduler<Model> owns the clock, the event queue, the network model
// (network_model.hpp), the workload (who requests when, for how long) and the raw
// measurements. The mutual-exclusion algorithm is the Model (sim/models/): it
// turns lock / unlock / message events into sends and CS entries through the
// scheduler's services. The scheduler checks, on every entry, that no other rank is in
// its critical section, and throws invariant_violation if one is.
//
// Determinism: all times are integer picoseconds; events at equal times run in the
// order they were scheduled; random draws come from per-rank streams derived from
// the seed. The same workload and parameters give the same results, bit for bit.
//
// Scale: a broadcast or multicast is ONE record that delivers to recipient p at
// t0 + p*slot and is then requeued; records with equal slot sit in a FIFO "lane"
// that stays sorted by time without a heap (see docs/simulator.md), so a delivery
// costs O(1) queue work and no allocation.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/network_model.hpp"

namespace tally::sim {

// A simulator invariant failed (mutual exclusion, token conservation, accounting).
// Always a bug in a model or in the scheduler, never a user error.
class invariant_violation : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Cache hint: start loading the line at p. Never faults. (An asm statement, because
// GCC 12 drops some __builtin_prefetch calls whose address comes from a load.)
inline void prefetch(const void* p) noexcept {
#if defined(__GNUC__) && defined(__x86_64__)
  asm volatile("prefetcht0 %0" : : "m"(*static_cast<const char*>(p)));
#elif defined(__GNUC__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

enum class msg_kind : std::uint8_t {
  request,
  token,
  reply,
  grant,
  release
};
inline constexpr std::size_t msg_kinds = 5;
const char* to_string(msg_kind k) noexcept;

struct message {
  msg_kind kind;
  std::int32_t from;
  std::int32_t to;
  std::uint64_t val;  // model-defined (sequence number, timestamp)
};

// xoshiro256** seeded through splitmix64: small, fast, and the same everywhere.
class rng {
 public:
  explicit rng(std::uint64_t seed = 0) noexcept;
  std::uint64_t next() noexcept;
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)

 private:
  std::array<std::uint64_t, 4> s_{};
};

// A duration: fixed, exponential(mean) or uniform[lo, hi].
struct duration_dist {
  enum class shape : std::uint8_t {
    fixed,
    exponential,
    uniform
  };
  shape kind = shape::fixed;
  ps_t a = 0;  // fixed value, exponential mean, or uniform lower bound
  ps_t b = 0;  // uniform upper bound
  bool always_zero() const noexcept { return kind != shape::uniform ? a == 0 : b == 0; }
  ps_t mean() const noexcept { return kind == shape::uniform ? (a + b) / 2 : a; }
  ps_t sample(rng& r) const noexcept;
};

struct workload {
  std::int32_t ranks = 0;
  std::vector<std::int32_t> active;     // ascending ids of the ranks that ever request
  duration_dist cs;                     // time spent in the critical section
  duration_dist think;                  // time before each request, the first included
  std::uint64_t requests_per_rank = 0;  // exactly one of these two is nonzero:
  std::uint64_t total_requests = 0;     // per active rank, or in total
  std::uint64_t seed = 0;
};

// What one run measured, before summarizing (run.hpp).
struct raw_results {
  ps_t first_entry = 0;      // the first CS entry
  ps_t end_time = 0;         // the last CS exit
  std::uint64_t events = 0;  // scheduler entries processed (one per message delivery)
  std::uint64_t entries = 0;
  std::array<std::uint64_t, msg_kinds> messages{};
  std::array<std::uint64_t, msg_kinds> bytes{};
  std::vector<ps_t> waits;        // request -> entry, in entry order
  std::vector<ps_t> issue_times;  // request time of each entry, in entry order
  std::vector<ps_t> handoffs;     // exit -> next entry, when the entrant was waiting
  std::vector<std::uint64_t> entries_per_rank;
  std::vector<ps_t> wait_sum_per_rank;
};

// Called every so many events with (CS entries so far, events so far).
using progress_fn = std::function<void(std::uint64_t, std::uint64_t)>;

namespace detail {

// One scheduled event. Ordered by (t, tie); tie is a global schedule counter.
struct event {
  enum class type : std::uint8_t {
    lock,
    unlock,
    arrive,
    handle,
    first_of_cast
  };
  ps_t t;
  std::uint64_t tie;
  type what;
  msg_kind kind;
  std::int32_t a;  // lock/unlock: rank; arrive/handle: from
  std::int32_t b;  // arrive/handle: to
  std::uint64_t val;
};

inline bool before(ps_t t1, std::uint64_t k1, ps_t t2, std::uint64_t k2) noexcept {
  return t1 < t2 || (t1 == t2 && k1 < k2);
}

// 4-ary min-heap of events.
class event_heap {
 public:
  bool empty() const noexcept { return h_.empty(); }
  std::size_t size() const noexcept { return h_.size(); }
  const event& top() const noexcept { return h_.front(); }
  void push(const event& e);
  event pop();

 private:
  std::vector<event> h_;
};

// A broadcast/multicast in progress: delivers to position pos at time t.
struct cast {
  ps_t t;
  std::uint64_t tie;
  std::int32_t from;
  std::int32_t pos;    // next recipient's position, 0-based
  std::int32_t count;  // number of recipients
  std::uint32_t list;  // index of the explicit recipient list, or no_list (rotating order)
  std::uint64_t val;
  std::uint32_t lane;
  msg_kind kind;
  static constexpr std::uint32_t no_list = std::numeric_limits<std::uint32_t>::max();
};

// FIFO ring buffer (power-of-two capacity, grows by doubling).
template <class T>
class ring {
 public:
  bool empty() const noexcept { return size_ == 0; }
  std::size_t size() const noexcept { return size_; }
  const T& front() const noexcept { return buf_[head_]; }
  const T& operator[](std::size_t i) const noexcept { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  T pop_front() noexcept {
    T x = buf_[head_];
    head_ = (head_ + 1) & (buf_.size() - 1);
    --size_;
    return x;
  }
  void push_back(const T& x) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & (buf_.size() - 1)] = x;
    ++size_;
  }

 private:
  void grow() {
    std::vector<T> bigger(std::max<std::size_t>(16, 2 * buf_.size()));
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = (*this)[i];
    buf_ = std::move(bigger);
    head_ = 0;
  }

  std::vector<T> buf_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

// Casts that share one slot length. Sorted by (t, tie) by construction: a cast
// joins at the back only right after a delivery, with t = now + slot, and every
// other member was last delivered at or before now.
struct cast_lane {
  ps_t slot;
  ring<cast> q;
};

// Events that were scheduled a fixed delay after the moment they were scheduled
// (messages injected at once, from an idle port). The clock never goes back, so
// appending keeps them sorted by (t, tie).
struct delay_lane {
  ps_t delay;
  ring<event> q;
};

}  // namespace detail

// Model requirements (see sim/models/ for the three models):
//   static const char* name           the --algorithm value
//   static msg_kind kinds[]           the message kinds it sends (report columns)
//   bool sink(int32 j) const          messages to j cost j nothing and change nothing
//   void prefetch(int32 to, int32 from) const   cache hint for a coming delivery
//   uint64 local_entries(const raw_results&) const   entries that cost no message
//   int64 token_entries() const       optional: LN entries of its token; each end of
//                                     a token's trip pays the link's entry_time each,
//                                     a token sent `scanned` its scan_time each first
//   int64 token_words() const         optional: 4-byte words the token in flight
//                                     moves (each end pays entry_time per word
//                                     instead of per LN entry)
//   static bool node_token            optional: true for the node topology's token
//                                     (node_entry_time and node_scan_time instead)
//   void lock(E&, int32 i)            i wants the CS (it has no outstanding request)
//   void unlock(E&, int32 i)          i leaves the CS
//   void deliver(E&, const message&)  a message is handled at m.to at e.now()
//   void finish(const E&) const       end-of-run checks; throws invariant_violation
// where E is scheduler<Model>. A model calls e.enter(i) when i enters its CS.
template <class Model>
class scheduler {
 public:
  // Throws protocol::bad_argument unless n >= 2, the active ids are ascending and
  // in range, and exactly one of the two request budgets is set.
  template <class... Args>
  scheduler(const network_params& net, workload w, Args&&... model_args);

  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  // Runs to completion (every request served). Call once.
  raw_results run(const progress_fn& progress = {}, std::uint64_t progress_every = 1u << 20);

  Model& model() noexcept { return model_; }
  const Model& model() const noexcept { return model_; }

  // --- services for the model ----------------------------------------------------
  ps_t now() const noexcept { return now_; }
  std::int32_t size() const noexcept { return n_; }
  const network_params& network() const noexcept { return net_; }
  // Point-to-point message (priced by link(from, to)). With `ahead` (send_ahead),
  // a token that overtakes the unposted part of the sender's own broadcast or
  // multicast (the runtime posts it network().window sends per progress step): it
  // starts at the end of the window being injected. The cast's
  // remaining deliveries keep their times (in the runtime they come one token slot
  // later: the model is that much early for them); the port stays busy for both.
  // A new broadcast or multicast cuts in the same way, ahead of the previous one's
  // rest, as the runtime posts the newest broadcast's windows first.
  // `scanned`: a token sent by a release, which first scans its LN for fresh
  // requests (scan_cpu(scan_time) ahead of the message on the sender's CPU).
  void send(std::int32_t from, std::int32_t to, msg_kind k, std::uint64_t bytes, std::uint64_t val = 0,
            bool ahead = false, bool scanned = false);
  void send_ahead(std::int32_t from, std::int32_t to, msg_kind k, std::uint64_t bytes, bool scanned = false) {
    send(from, to, k, bytes, 0, true, scanned);
  }
  // Not a message: `to` learns something through shared memory `delay` after now
  // (a grant inside a node). Delivered to the model as kind k; not counted, no port.
  void wake(std::int32_t from, std::int32_t to, msg_kind k, ps_t delay, std::uint64_t val = 0);
  // To every other rank, in rotating order from+1, from+2, ... (mod n).
  void broadcast(std::int32_t from, msg_kind k, std::uint64_t bytes, std::uint64_t val);
  // To `to` in the given order. Take the vector from borrow_list() to reuse storage.
  void multicast(std::int32_t from, msg_kind k, std::uint64_t bytes, std::vector<std::int32_t> to,
                 std::uint64_t val = 0);
  std::vector<std::int32_t> borrow_list();
  // Ranks [kR, (k+1)R) share node k: point-to-point messages between two of them
  // are priced by `intra` instead of the network (broadcasts and multicasts always
  // by the network). Call before run(); R = 0 (the default) means one rank per node.
  void split_nodes(std::int32_t ranks_per_node, const network_params& intra);
  const network_params& link(std::int32_t from, std::int32_t to) const noexcept {
    return rpn_ > 0 && from / rpn_ == to / rpn_ ? intra_ : net_;
  }
  // CPU per token entry (a link's entry_time or scan_time) times the model's token
  // entries for a message of kind k: 0 for other kinds and for models without one.
  // entry_time_of and scan_time_of pick the link's pair for this model's token: the
  // node topology's where Model::node_token is true.
  ps_t token_cpu(ps_t per_entry, msg_kind k) const noexcept {
    if constexpr (requires(const Model& m) { m.token_words(); })
      return k == msg_kind::token ? per_entry * model_.token_words() : 0;
    else
      return scan_cpu(per_entry, k);
  }
  // The same per LN entry (a release's scan).
  ps_t scan_cpu(ps_t per_entry, msg_kind k) const noexcept {
    if constexpr (requires(const Model& m) { m.token_entries(); })
      return k == msg_kind::token ? per_entry * model_.token_entries() : 0;
    else
      return 0;
  }
  static constexpr bool node_token() noexcept {
    if constexpr (requires { Model::node_token; })
      return Model::node_token;
    else
      return false;
  }
  static ps_t entry_time_of(const network_params& p) noexcept {
    return node_token() ? p.node_entry_time : p.entry_time;
  }
  static ps_t scan_time_of(const network_params& p) noexcept { return node_token() ? p.node_scan_time : p.scan_time; }
  // Rank i enters its critical section now. Throws invariant_violation if another
  // rank is in its CS or i has no outstanding request.
  void enter(std::int32_t i);
  // The rank in its critical section, or -1.
  std::int32_t occupant() const noexcept { return occupant_; }
  // Messages of kind k sent so far, and critical-section entries so far.
  std::uint64_t sent(msg_kind k) const noexcept { return r_.messages[static_cast<std::size_t>(k)]; }
  std::uint64_t entries() const noexcept { return r_.entries; }

 private:
  using event = detail::event;

  static void validate(const workload& w);
  // Moves the clock to t; throws invariant_violation if t is in the past.
  void advance(ps_t t);
  void schedule(ps_t t, event::type what, msg_kind k, std::int32_t a, std::int32_t b, std::uint64_t val);
  // A message injected now: through a delay lane (no heap work).
  void schedule_in(ps_t delay, event::type what, msg_kind k, std::int32_t a, std::int32_t b, std::uint64_t val);
  ps_t reserve_port(std::int32_t from, ps_t busy);
  // Where network().window applies (the port busy with a cast, nothing behind it):
  // sets `start` to the end of the cast's current window, keeps the port busy
  // `busy` longer, and returns true.
  bool cut_in(std::int32_t from, ps_t busy, ps_t& start);
  void start_cast(std::int32_t from, msg_kind k, std::uint64_t bytes, std::int32_t count, std::uint32_t list,
                  std::uint64_t val);
  std::int32_t recipient(const detail::cast& c) const noexcept;
  // m reaches its receiver at t; o: the receiver's handling overhead on its link,
  // extra: its CPU beyond o for this message.
  void arrive(ps_t t, const message& m, ps_t o, ps_t extra);
  void fire_cast(std::size_t lane_index, detail::cast c);
  void fire(const event& e);
  void issue(std::int32_t i);
  void leave(std::int32_t i);
  void verify_end() const;

  network_params net_;
  network_params intra_{};
  std::int32_t rpn_ = 0;
  workload w_;
  std::int32_t n_;
  Model model_;

  ps_t now_ = 0;
  std::uint64_t tie_ = 0;
  detail::event_heap heap_;
  std::vector<detail::cast_lane> lanes_;
  std::vector<detail::delay_lane> delays_;
  std::vector<detail::cast> pending_;  // casts waiting for their first delivery
  std::vector<std::uint32_t> free_pending_;
  std::vector<std::vector<std::int32_t>> lists_;
  std::vector<std::uint32_t> free_lists_;
  std::vector<std::vector<std::int32_t>> spare_lists_;

  struct cast_span {  // the last cast a rank started: its injections' start, slot and end
    ps_t start = 0, slot = 0, end = 0;
  };
  std::vector<cast_span> casting_;
  std::vector<ps_t> tx_, rx_;    // send port / receive handler free at
  std::vector<ps_t> issued_at_;  // outstanding request's time
  std::vector<std::uint8_t> requesting_;
  std::vector<std::uint64_t> budget_;  // per-rank requests left (per-rank mode)
  std::vector<rng> rng_;
  std::uint64_t total_left_ = 0;  // requests left (total mode)
  std::uint64_t issued_ = 0;
  std::int32_t occupant_ = -1;
  ps_t last_exit_ = -1;
  raw_results r_;
};

}  // namespace tally::sim

#include "sim/des_impl.hpp"
