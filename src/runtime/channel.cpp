#include "runtime/channel.hpp"

#include <algorithm>
#include <cstring>
#include <new>

#include "runtime/mpi_owned.hpp"
#include "runtime/pacing.hpp"

namespace tally::detail {

namespace {

// REQUEST receives kept posted per channel: enough that a burst of broadcasts lands
// in posted buffers rather than MPI's unexpected-message queue.
constexpr int max_posted_requests = 16;
// step() leaves the receives to a mutex's own polls (a waiting lock() makes them
// back to back) when one collected this recently: two threads testing the same
// receives only contend inside MPI.
constexpr double collected_recently_us = 20;

// The cache: each cached channel, owned here, and the communicator it is cached on.
struct cache_entry {
  std::shared_ptr<channel> ch;
  MPI_Comm comm;
  std::uint64_t order;  // creation order: the same on every rank
};
std::uint64_t cached_count = 0;
std::mutex cache_mu;
std::unordered_map<channel*, cache_entry> cache;
int keyval = MPI_KEYVAL_INVALID;

// Every live channel, for poll_all().
std::mutex live_mu;
std::vector<channel*> live;

int uncache(MPI_Comm, int, void* value, void*) {
  std::shared_ptr<channel> dying;  // destroyed outside the lock (it calls MPI)
  {
    std::lock_guard lk(cache_mu);
    const auto it = cache.find(static_cast<channel*>(value));
    if (it == cache.end()) return MPI_SUCCESS;
    dying = std::move(it->second.ch);
    cache.erase(it);
  }
  return MPI_SUCCESS;
}

channel* cached_locked(MPI_Comm comm) {
  if (keyval == MPI_KEYVAL_INVALID) return nullptr;
  void* value = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(comm, keyval, &value, &found), "MPI_Comm_get_attr");
  return found ? static_cast<channel*>(value) : nullptr;
}

}  // namespace

std::shared_ptr<channel> channel::of(MPI_Comm comm, const waiter& wait) {
  {
    std::lock_guard lk(cache_mu);
    if (channel* c = cached_locked(comm)) return cache.at(c).ch;
  }
  std::shared_ptr<channel> c = create(comm, wait);
  std::lock_guard lk(cache_mu);
  if (keyval == MPI_KEYVAL_INVALID)
    check_mpi(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, uncache, &keyval, nullptr), "MPI_Comm_create_keyval");
  check_mpi(MPI_Comm_set_attr(comm, keyval, c.get()), "MPI_Comm_set_attr");
  cache.emplace(c.get(), cache_entry{c, comm, cached_count++});
  return c;
}

std::shared_ptr<channel> channel::create(MPI_Comm comm, const waiter& wait) {
  std::shared_ptr<channel> c(new channel);
  c->open(comm, wait);
  std::lock_guard lk(live_mu);
  live.push_back(c.get());
  return c;
}

void channel::poll_all() noexcept {
  std::unique_lock lk(live_mu, std::try_to_lock);
  if (!lk.owns_lock()) return;  // another thread is polling them
  for (channel* c : live)
    if (c->listeners_.load(std::memory_order_relaxed) > 0) (void)c->step();
}

std::uint32_t channel::proposal(MPI_Comm comm) {
  std::lock_guard lk(cache_mu);
  channel* c = cached_locked(comm);
  return c ? c->lowest_free() : 0;
}

void channel::finalize_all() noexcept {
  // Every channel's shared receives go now, also those of channels that freed
  // mutexes not yet destroyed still hold: nothing may stay posted past MPI_Finalize.
  {
    std::lock_guard lk(live_mu);
    for (channel* c : live) c->retire();
  }
  // Then the cached ones die, in creation order (a node arena's MPI_Win_free is
  // collective over its node).
  std::vector<std::pair<std::uint64_t, MPI_Comm>> comms;
  {
    std::lock_guard lk(cache_mu);
    for (const auto& [c, e] : cache) comms.emplace_back(e.order, e.comm);
  }
  std::sort(comms.begin(), comms.end());
  for (const auto& [order, comm] : comms) MPI_Comm_delete_attr(comm, keyval);  // uncache() runs
}

void channel::retire() noexcept {
  guard t(test_mu_);
  for (MPI_Request& r : reqs_) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  unposted_.clear();
  guard lk(mu_);
  if (broken_.empty()) broken_ = "MPI_Finalize was called";
  broken_flag_.store(true);
}

void channel::break_all(const std::string& why) noexcept {
  guard lk(mu_);
  broken_ = why;
  broken_flag_.store(true);
  for (auto& [id, m] : members_) {
    if (!m.attached || m.retired) continue;
    m.fault = why;
    if (m.notify) m.notify();
  }
}

void channel::open(MPI_Comm comm, const waiter& wait) {
  // One duplication at a time: Open MPI 4.1 can hang two MPI_Comm_idup outstanding
  // on one communicator (seen here as one rank done with both while the others
  // waited for the second forever; open-mpi/ompi#2025).
  for (comm_handle* h : {&requests_, &messages_}) {
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Comm_idup(comm, h->out(), &req), "MPI_Comm_idup");
    wait(req, "MPI_Comm_idup");
  }
  for (MPI_Comm c : {requests_.get(), messages_.get()})
    check_mpi(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_rank(comm, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm, &size_), "MPI_Comm_size");
  void* ub = nullptr;
  int found = 0;
  check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found), "MPI_Comm_get_attr(MPI_TAG_UB)");
  const long long tag_ub = found ? *static_cast<int*>(ub) : 32767;  // the least the standard allows
  max_id_ = static_cast<std::uint32_t>((tag_ub - first_mutex_tag - 1) / 2);
  if (size_ < 2) return;  // nobody to hear from
  const std::size_t posted = static_cast<std::size_t>(std::min(size_ - 1, max_posted_requests));
  guard lk(test_mu_);
  reqs_.assign(1 + posted, MPI_REQUEST_NULL);
  bufs_.resize(posted);
  mpi_owned(bufs_.data(), bufs_.size() * sizeof(bufs_[0]));
  mpi_owned(fault_in_.data(), fault_in_.size());
  done_idx_.resize(reqs_.size());
  done_status_.resize(reqs_.size());
  check_mpi(MPI_Irecv(fault_in_.data(), static_cast<int>(fault_in_.size()), MPI_CHAR, MPI_ANY_SOURCE, tag_fault,
                      messages_.get(), &reqs_[0]),
            "MPI_Irecv(FAULT)");
  for (std::size_t k = 1; k < reqs_.size(); ++k) post_locked(k);
}

channel::~channel() {
  progress_.stop();
  {
    std::lock_guard lk(live_mu);
    live.erase(std::remove(live.begin(), live.end(), this), live.end());
  }
  if (mpi_usable()) retire();
}

void channel::post_locked(std::size_t k) {
  check_mpi(MPI_Irecv(bufs_[k - 1].data(), static_cast<int>(max_words), MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG,
                      requests_.get(), &reqs_[k]),
            "MPI_Irecv(REQUEST)");
}

channel::member& channel::member_locked(std::uint32_t id) { return members_[id]; }

std::uint32_t channel::lowest_free(std::uint32_t from) const {
  guard lk(mu_);
  const auto it = free_below_.lower_bound(from);
  if (it != free_below_.end()) return *it;
  return std::max(from, next_);
}

void channel::attach(std::uint32_t id, std::function<void()> notify) {
  guard lk(mu_);
  if (id >= next_) {
    for (std::uint32_t k = next_; k < id; ++k) free_below_.insert(k);
    next_ = id + 1;
  } else {
    free_below_.erase(id);
  }
  member& m = member_locked(id);
  m.attached = true;
  m.notify = std::move(notify);
  if (!m.inbox.empty() || !m.fault.empty()) m.notify();
}

void channel::detach(std::uint32_t id, bool retire) noexcept {
  guard lk(mu_);
  if (retire) {
    member& m = member_locked(id);
    m.retired = true;
    m.notify = nullptr;
    return;
  }
  members_.erase(id);
  if (id + 1 == next_) {
    --next_;
    while (next_ > 0 && free_below_.erase(next_ - 1) != 0) --next_;
  } else {
    free_below_.insert(id);
  }
}

void channel::repost_locked() {
  if (broken_flag_.load()) return;
  for (std::size_t k : unposted_) post_locked(k);
  unposted_.clear();
}

void channel::repost() {
  if (!test_mu_.try_lock()) return;  // its holder reposts them
  guard t(test_mu_, std::adopt_lock);
  repost_locked();
}

bool channel::test_locked(std::optional<std::uint32_t> collector) {
  if (reqs_.empty()) return false;
  int count = 0;
  check_mpi(MPI_Testsome(static_cast<int>(reqs_.size()), reqs_.data(), &count, done_idx_.data(), done_status_.data()),
            "MPI_Testsome");
  if (count == MPI_UNDEFINED || count == 0) return false;
  arrived_.clear();
  faults_.clear();
  for (std::size_t c = 0; c < static_cast<std::size_t>(count); ++c) {
    const auto k = static_cast<std::size_t>(done_idx_[c]);
    const MPI_Status& st = done_status_[c];
    if (k == 0) {  // a FAULT: the id, then the text
      int chars = 0;
      MPI_Get_count(&st, MPI_CHAR, &chars);
      std::uint64_t id = 0;
      const auto len = static_cast<std::size_t>(std::max(chars, 0));
      if (len >= sizeof id) {
        std::memcpy(&id, fault_in_.data(), sizeof id);
        faults_.emplace_back(static_cast<std::uint32_t>(id),
                             "rank " + std::to_string(st.MPI_SOURCE) +
                                 " of this mutex failed and made it unusable on every rank: " +
                                 std::string(fault_in_.data() + sizeof id, len - sizeof id));
      }
      check_mpi(MPI_Irecv(fault_in_.data(), static_cast<int>(fault_in_.size()), MPI_CHAR, MPI_ANY_SOURCE, tag_fault,
                          messages_.get(), &reqs_[0]),
                "MPI_Irecv(FAULT)");
      continue;
    }
    raw_request r;
    r.source = st.MPI_SOURCE;
    check_mpi(MPI_Get_count(&st, MPI_UINT64_T, &r.words), "MPI_Get_count(REQUEST)");
    r.w = bufs_[k - 1];
    arrived_.emplace_back(static_cast<std::uint32_t>(st.MPI_TAG), r);
    unposted_.push_back(k);
  }
  guard lk(mu_);
  for (auto& [id, text] : faults_) {
    member& m = member_locked(id);
    m.fault = std::move(text);
    if (m.notify) m.notify();
  }
  for (const auto& [id, r] : arrived_) {
    member& m = member_locked(id);
    m.inbox.push_back(r);
    if (m.notify && collector != id) m.notify();  // the collector takes its own at once
  }
  return true;
}

progress_thread::found channel::step() noexcept {
  const std::uint64_t now = ticks();
  if (now - last_collect_.load(std::memory_order_relaxed) <
      static_cast<std::uint64_t>(collected_recently_us * ticks_per_us()))
    return progress_thread::found::watching;
  if (broken_flag_.load()) return progress_thread::found::idle;
  if (!test_mu_.try_lock()) return progress_thread::found::watching;
  guard t(test_mu_, std::adopt_lock);
  bool any = false;
  try {
    repost_locked();
    any = test_locked(std::nullopt);
    repost_locked();
  } catch (const std::exception& e) {
    break_all(e.what());  // the shared receives are unusable: every mutex fails with them
    return progress_thread::found::idle;
  }
  if (any) return progress_thread::found::busy;
  return listeners_.load(std::memory_order_relaxed) > 0 ? progress_thread::found::watching
                                                        : progress_thread::found::idle;
}

void channel::listen(bool on) noexcept {
  if (!on) {
    listeners_.fetch_sub(1, std::memory_order_relaxed);
    return;
  }
  listeners_.fetch_add(1, std::memory_order_relaxed);
  progress_.nudge();
}

void channel::use_thread(const poll_policy& policy) {
  guard lk(use_mu_);
  if (thread_users_++ == 0) progress_.start(policy, [this] { return step(); });
}

void channel::unuse_thread() noexcept {
  // stop() waits for a step of the channel in progress, which never takes use_mu_.
  guard lk(use_mu_);
  if (--thread_users_ == 0) progress_.stop();
}

void channel::collect(std::uint32_t id, std::vector<raw_request>& out, bool repost, std::string& fault) {
  last_collect_.store(ticks(), std::memory_order_relaxed);
  if (!broken_flag_.load() && test_mu_.try_lock()) {  // else its holder tests for everyone
    guard t(test_mu_, std::adopt_lock);
    repost_locked();
    (void)test_locked(id);
    if (repost) repost_locked();
  }
  guard lk(mu_);
  const auto it = members_.find(id);
  if (it == members_.end()) return;
  member& m = it->second;
  if (!m.inbox.empty()) {
    out.insert(out.end(), m.inbox.begin(), m.inbox.end());
    m.inbox.clear();
  }
  if (!m.fault.empty()) fault = std::move(m.fault), m.fault.clear();
}

std::shared_ptr<node_arena> channel::arena(const waiter& wait) {
  if (!arena_) arena_ = std::make_shared<node_arena>(messages_.get(), rank_, size_, wait);
  return arena_;
}

void channel::notify_fault(std::uint32_t id, const std::string& what) noexcept {
  if (size_ < 2 || !messages_) return;
  // Never freed: its sends are let go of without waiting (a failed peer may never
  // receive them).
  char* text = new (std::nothrow) char[fault_bytes];
  if (!text) return;
  const std::uint64_t word = id;
  std::memcpy(text, &word, sizeof word);
  const std::size_t len = std::min(what.size(), fault_bytes - sizeof word);
  std::memcpy(text + sizeof word, what.data(), len);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(text, static_cast<int>(sizeof word + len), MPI_CHAR, r, tag_fault, messages_.get(), &req) ==
        MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

std::uint64_t channel::allreduce_sum(std::uint32_t id, std::uint64_t value, const waiter& wait) {
  // Binomial tree rooted at rank 0: rank r's parent is r with its lowest set bit
  // cleared; its children are r + m for every power of two m below that bit.
  const int tag = tag_collective(id);
  MPI_Comm c = messages_.get();
  int top = 1;  // the lowest set bit of rank_ (rank 0: above every child)
  while (top < size_ && (rank_ & top) == 0) top <<= 1;
  if (rank_ == 0) top = size_ > 1 ? size_ * 2 : 1;
  std::uint64_t sum = value;
  for (int m = 1; m < top && rank_ + m < size_; m <<= 1) {
    std::uint64_t part = 0;
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Irecv(&part, 1, MPI_UNSIGNED_LONG_LONG, rank_ + m, tag, c, &req), "MPI_Irecv(free)");
    wait(req, "MPI_Irecv(free)");
    sum += part;
  }
  if (rank_ != 0) {
    MPI_Request req = MPI_REQUEST_NULL;
    check_mpi(MPI_Isend(&sum, 1, MPI_UNSIGNED_LONG_LONG, rank_ - top, tag, c, &req), "MPI_Isend(free)");
    wait(req, "MPI_Isend(free)");
    check_mpi(MPI_Irecv(&sum, 1, MPI_UNSIGNED_LONG_LONG, rank_ - top, tag, c, &req), "MPI_Irecv(free)");
    wait(req, "MPI_Irecv(free)");
  }
  std::vector<MPI_Request> down;
  for (int m = 1; m < top && rank_ + m < size_; m <<= 1) {
    down.push_back(MPI_REQUEST_NULL);
    check_mpi(MPI_Isend(&sum, 1, MPI_UNSIGNED_LONG_LONG, rank_ + m, tag, c, &down.back()), "MPI_Isend(free)");
  }
  for (MPI_Request& r : down) wait(r, "MPI_Isend(free)");
  return sum;
}

}  // namespace tally::detail
