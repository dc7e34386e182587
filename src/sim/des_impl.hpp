// sim/des_impl.hpp — scheduler<Model> member definitions; included by des.hpp only.
#pragma once

#include <algorithm>
#include <string>

#include "core/protocol.hpp"

namespace tally::sim {

template <class Model>
template <class... Args>
scheduler<Model>::scheduler(const network_params& net, workload w, Args&&... model_args)
    : net_(net),
      w_(std::move(w)),
      n_(w_.ranks),
      model_((validate(w_), w_.ranks), w_.active, std::forward<Args>(model_args)...) {
  const auto n = static_cast<std::size_t>(n_);
  tx_.assign(n, 0);
  casting_.assign(n, cast_span{});
  rx_.assign(n, 0);
  issued_at_.assign(n, 0);
  requesting_.assign(n, 0);
  budget_.assign(n, 0);
  rng_.reserve(n);
  for (std::size_t i = 0; i < n; ++i) rng_.emplace_back(w_.seed * 0x9e3779b97f4a7c15ULL + i);
  if (w_.requests_per_rank > 0)
    for (std::int32_t i : w_.active) budget_[static_cast<std::size_t>(i)] = w_.requests_per_rank;
  total_left_ = w_.total_requests;
  r_.entries_per_rank.assign(n, 0);
  r_.wait_sum_per_rank.assign(n, 0);
}

template <class Model>
void scheduler<Model>::validate(const workload& w) {
  auto bad = [](const std::string& why) { throw protocol::bad_argument(why); };
  if (w.ranks < 2) bad("need at least 2 ranks, got " + std::to_string(w.ranks));
  if (w.active.empty()) bad("no rank requests");
  for (std::size_t k = 0; k < w.active.size(); ++k)
    if (w.active[k] < 0 || w.active[k] >= w.ranks || (k > 0 && w.active[k] <= w.active[k - 1]))
      bad("active ranks must be distinct ids in [0, ranks), ascending");
  if ((w.requests_per_rank > 0) == (w.total_requests > 0))
    bad("set exactly one of requests_per_rank and total_requests");
}

template <class Model>
void scheduler<Model>::advance(ps_t t) {
  if (t < now_)
    throw invariant_violation("time went backwards, from " + std::to_string(now_) + " to " + std::to_string(t) + " ps");
  now_ = t;
}

template <class Model>
void scheduler<Model>::schedule(ps_t t, event::type what, msg_kind k, std::int32_t a, std::int32_t b,
                                std::uint64_t val) {
  heap_.push(event{t, tie_++, what, k, a, b, val});
}

template <class Model>
void scheduler<Model>::schedule_in(ps_t delay, event::type what, msg_kind k, std::int32_t a, std::int32_t b,
                                   std::uint64_t val) {
  std::size_t d = 0;
  while (d < delays_.size() && delays_[d].delay != delay) ++d;
  if (d == delays_.size()) delays_.push_back({delay, {}});
  delays_[d].q.push_back(event{now_ + delay, tie_++, what, k, a, b, val});
}

template <class Model>
ps_t scheduler<Model>::reserve_port(std::int32_t from, ps_t busy) {
  ps_t& port = tx_[static_cast<std::size_t>(from)];
  const ps_t start = std::max(now_, port);
  port = start + busy;
  return start;
}

template <class Model>
void scheduler<Model>::send(std::int32_t from, std::int32_t to, msg_kind k, std::uint64_t bytes, std::uint64_t val,
                            bool ahead, bool scanned) {
  const network_params& p = link(from, to);
  // A token's CPU beyond o: the sender's (scan, encoding) before injection (the port
  // is its CPU), the receiver's decoding after its o (arrive()).
  const ps_t before = scanned ? scan_cpu(scan_time_of(p), k) : 0;
  const ps_t extra = token_cpu(entry_time_of(p), k);
  const ps_t busy = before + p.slot(bytes) + extra;
  ps_t start = 0;
  if (!ahead || !cut_in(from, busy, start)) start = reserve_port(from, busy);
  const auto ki = static_cast<std::size_t>(k);
  ++r_.messages[ki];
  r_.bytes[ki] += bytes;
  const ps_t transit = before + p.transit(bytes) + extra;
  if (start == now_)
    schedule_in(transit, event::type::arrive, k, from, to, val);
  else
    schedule(start + transit, event::type::arrive, k, from, to, val);
}

template <class Model>
bool scheduler<Model>::cut_in(std::int32_t from, ps_t busy, ps_t& start) {
  const auto f = static_cast<std::size_t>(from);
  const cast_span c = casting_[f];
  ps_t& port = tx_[f];
  // Only while the port is busy with a cast and nothing queued behind it.
  if (net_.window == 0 || port <= now_ || port != c.end) return false;
  const ps_t w = static_cast<ps_t>(net_.window) * c.slot;
  const ps_t windows = now_ <= c.start ? 1 : (now_ - c.start + w - 1) / w;
  start = std::max(now_, std::min(c.end, c.start + std::max<ps_t>(windows, 1) * w));
  port = c.end + busy;
  casting_[f].end = port;  // the cast's rest leaves `busy` later: later sends cut in again
  return true;
}

template <class Model>
void scheduler<Model>::wake(std::int32_t from, std::int32_t to, msg_kind k, ps_t delay, std::uint64_t val) {
  schedule_in(delay, event::type::handle, k, from, to, val);
}

template <class Model>
void scheduler<Model>::split_nodes(std::int32_t ranks_per_node, const network_params& intra) {
  if (ranks_per_node < 0 || (ranks_per_node > 0 && n_ % ranks_per_node != 0))
    throw protocol::bad_argument(std::to_string(n_) + " ranks do not split into nodes of " +
                                 std::to_string(ranks_per_node));
  rpn_ = ranks_per_node;
  intra_ = intra;
}

// Reserves the sender's port for `count` back-to-back messages and schedules the
// first delivery; the cast then moves to its lane (fire_cast).
template <class Model>
void scheduler<Model>::start_cast(std::int32_t from, msg_kind k, std::uint64_t bytes, std::int32_t count,
                                  std::uint32_t list, std::uint64_t val) {
  const ps_t slot = net_.slot(bytes);
  // A new cast cuts in ahead of the unposted rest of the rank's previous one.
  ps_t start = 0;
  if (!cut_in(from, slot * count, start)) start = reserve_port(from, slot * count);
  casting_[static_cast<std::size_t>(from)] = {start, slot, tx_[static_cast<std::size_t>(from)]};
  const auto ki = static_cast<std::size_t>(k);
  r_.messages[ki] += static_cast<std::uint64_t>(count);
  r_.bytes[ki] += bytes * static_cast<std::uint64_t>(count);
  std::uint32_t li = 0;
  while (li < lanes_.size() && lanes_[li].slot != slot) ++li;
  if (li == lanes_.size()) lanes_.push_back({slot, {}});
  const detail::cast c{start + net_.transit(bytes), 0, from, 0, count, list, val, li, k};
  std::uint32_t pi;
  if (free_pending_.empty()) {
    pi = static_cast<std::uint32_t>(pending_.size());
    pending_.push_back(c);
  } else {
    pi = free_pending_.back();
    free_pending_.pop_back();
    pending_[pi] = c;
  }
  if (start == now_)
    schedule_in(c.t - now_, event::type::first_of_cast, k, from, 0, pi);
  else
    schedule(c.t, event::type::first_of_cast, k, from, 0, pi);
}

template <class Model>
void scheduler<Model>::broadcast(std::int32_t from, msg_kind k, std::uint64_t bytes, std::uint64_t val) {
  start_cast(from, k, bytes, n_ - 1, detail::cast::no_list, val);
}

template <class Model>
std::vector<std::int32_t> scheduler<Model>::borrow_list() {
  if (spare_lists_.empty()) return {};
  std::vector<std::int32_t> v = std::move(spare_lists_.back());
  spare_lists_.pop_back();
  v.clear();
  return v;
}

template <class Model>
void scheduler<Model>::multicast(std::int32_t from, msg_kind k, std::uint64_t bytes, std::vector<std::int32_t> to,
                                 std::uint64_t val) {
  if (to.empty()) {
    spare_lists_.push_back(std::move(to));
    return;
  }
  const auto count = static_cast<std::int32_t>(to.size());
  std::uint32_t list;
  if (free_lists_.empty()) {
    list = static_cast<std::uint32_t>(lists_.size());
    lists_.push_back(std::move(to));
  } else {
    list = free_lists_.back();
    free_lists_.pop_back();
    lists_[list] = std::move(to);
  }
  start_cast(from, k, bytes, count, list, val);
}

template <class Model>
std::int32_t scheduler<Model>::recipient(const detail::cast& c) const noexcept {
  if (c.list != detail::cast::no_list) return lists_[c.list][static_cast<std::size_t>(c.pos)];
  std::int32_t r = c.from + 1 + c.pos;
  return r >= n_ ? r - n_ : r;
}

// A message reaches m.to's receive handler; `t` is when an idle handler would be done
// with it (arrival + o), so events reach here in arrival order. `extra`: handling
// beyond o (a token's decoding). A busy handler defers it; a sink drops it.
template <class Model>
void scheduler<Model>::arrive(ps_t t, const message& m, ps_t o, ps_t extra) {
  advance(t);
  if (model_.sink(m.to)) return;
  ps_t& rx = rx_[static_cast<std::size_t>(m.to)];
  const ps_t arrival = t - o;
  if (rx > arrival || extra > 0) {
    rx = std::max(rx, arrival) + o + extra;
    schedule(rx, event::type::handle, m.kind, m.from, m.to, m.val);
    return;
  }
  rx = t;
  model_.deliver(*this, m);
}

template <class Model>
void scheduler<Model>::fire_cast(std::size_t lane_index, detail::cast c) {
  arrive(c.t, message{c.kind, c.from, recipient(c), c.val}, net_.overhead, 0);
  if (++c.pos < c.count) {
    c.t += lanes_[lane_index].slot;
    c.tie = tie_++;
    lanes_[lane_index].q.push_back(c);
  } else if (c.list != detail::cast::no_list) {
    spare_lists_.push_back(std::move(lists_[c.list]));
    free_lists_.push_back(c.list);
  }
}

template <class Model>
void scheduler<Model>::fire(const event& e) {
  switch (e.what) {
    case event::type::lock:
      advance(e.t);
      issue(e.a);
      return;
    case event::type::unlock:
      advance(e.t);
      leave(e.a);
      return;
    case event::type::arrive: {
      const network_params& p = link(e.a, e.b);
      arrive(e.t, message{e.kind, e.a, e.b, e.val}, p.overhead, token_cpu(entry_time_of(p), e.kind));
      return;
    }
      return;
    case event::type::handle:
      advance(e.t);
      model_.deliver(*this, message{e.kind, e.a, e.b, e.val});
      return;
    case event::type::first_of_cast: {
      const auto pi = static_cast<std::uint32_t>(e.val);
      const detail::cast c = pending_[pi];
      free_pending_.push_back(pi);
      fire_cast(c.lane, c);
      return;
    }
  }
}

template <class Model>
void scheduler<Model>::issue(std::int32_t i) {
  const auto k = static_cast<std::size_t>(i);
  if (w_.requests_per_rank > 0) {
    if (budget_[k] == 0) return;
    --budget_[k];
  } else {
    if (total_left_ == 0) return;
    --total_left_;
  }
  ++issued_;
  requesting_[k] = 1;
  issued_at_[k] = now_;
  model_.lock(*this, i);
}

template <class Model>
void scheduler<Model>::enter(std::int32_t i) {
  const auto k = static_cast<std::size_t>(i);
  if (occupant_ >= 0)
    throw invariant_violation("mutual exclusion violated at t=" + std::to_string(now_) + " ps: rank " +
                              std::to_string(i) + " entered while rank " + std::to_string(occupant_) +
                              " is in its critical section");
  if (!requesting_[k])
    throw invariant_violation("rank " + std::to_string(i) + " entered its critical section without a request");
  occupant_ = i;
  requesting_[k] = 0;
  const ps_t wait = now_ - issued_at_[k];
  r_.waits.push_back(wait);
  r_.issue_times.push_back(issued_at_[k]);
  if (last_exit_ >= 0 && issued_at_[k] < last_exit_) r_.handoffs.push_back(now_ - last_exit_);
  if (r_.entries++ == 0) r_.first_entry = now_;
  ++r_.entries_per_rank[k];
  r_.wait_sum_per_rank[k] += wait;
  schedule(now_ + w_.cs.sample(rng_[k]), event::type::unlock, msg_kind::request, i, 0, 0);
}

template <class Model>
void scheduler<Model>::leave(std::int32_t i) {
  if (occupant_ != i) throw invariant_violation("rank " + std::to_string(i) + " left a critical section it was not in");
  occupant_ = -1;
  last_exit_ = now_;
  r_.end_time = now_;
  model_.unlock(*this, i);
  if (w_.think.always_zero())
    issue(i);
  else
    schedule(now_ + w_.think.sample(rng_[static_cast<std::size_t>(i)]), event::type::lock, msg_kind::request, i, 0, 0);
}

template <class Model>
raw_results scheduler<Model>::run(const progress_fn& progress, std::uint64_t progress_every) {
  for (std::int32_t i : w_.active)
    schedule(w_.think.sample(rng_[static_cast<std::size_t>(i)]), event::type::lock, msg_kind::request, i, 0, 0);
  constexpr std::size_t lookahead = 8;  // prefetch for the delivery this many casts ahead
  std::uint64_t next_report = progress_every;
  for (;;) {
    // The earliest of the heap's top and the (few) lane fronts.
    enum class src {
      none,
      heap,
      cast,
      delay
    } from = src::none;
    std::size_t which = 0;
    ps_t t = 0;
    std::uint64_t tie = 0;
    auto consider = [&](src s, std::size_t i, ps_t t2, std::uint64_t k2) {
      if (from == src::none || detail::before(t2, k2, t, tie)) {
        from = s;
        which = i;
        t = t2;
        tie = k2;
      }
    };
    if (!heap_.empty()) consider(src::heap, 0, heap_.top().t, heap_.top().tie);
    for (std::size_t l = 0; l < lanes_.size(); ++l)
      if (!lanes_[l].q.empty()) consider(src::cast, l, lanes_[l].q.front().t, lanes_[l].q.front().tie);
    for (std::size_t l = 0; l < delays_.size(); ++l)
      if (!delays_[l].q.empty()) consider(src::delay, l, delays_[l].q.front().t, delays_[l].q.front().tie);
    switch (from) {
      case src::none: break;
      case src::heap: fire(heap_.pop()); break;
      case src::delay: fire(delays_[which].q.pop_front()); break;
      case src::cast: {
        detail::ring<detail::cast>& q = lanes_[which].q;
        if (q.size() > 1) {
          const detail::cast& ahead = q[std::min(lookahead, q.size() - 1)];
          model_.prefetch(recipient(ahead), ahead.from);
        }
        fire_cast(which, q.pop_front());
        break;
      }
    }
    if (from == src::none) break;
    if (++r_.events == next_report) {
      next_report += progress_every;
      if (progress) progress(r_.entries, r_.events);
    }
  }
  verify_end();
  model_.finish(*this);
  return std::move(r_);
}

template <class Model>
void scheduler<Model>::verify_end() const {
  if (occupant_ >= 0)
    throw invariant_violation("run ended with rank " + std::to_string(occupant_) + " in its critical section");
  if (r_.entries != issued_)
    throw invariant_violation("" + std::to_string(issued_) + " requests but " + std::to_string(r_.entries) +
                              " critical-section entries");
  for (std::size_t k = 0; k < requesting_.size(); ++k)
    if (requesting_[k])
      throw invariant_violation("rank " + std::to_string(k) + " was never served (the run went quiet)");
}

}  // namespace tally::sim
