#include "runtime/transport.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "core/token_layout.hpp"

namespace tally::detail {

namespace {
constexpr std::size_t first_request = 2;  // index in recv_reqs_ of REQUEST receive 0
// REQUEST receives kept posted: enough that a burst of broadcasts lands in posted
// buffers rather than MPI's unexpected-message queue.
constexpr int max_posted_requests = 16;

bool all_null(const std::vector<MPI_Request>& reqs) {
  return std::all_of(reqs.begin(), reqs.end(), [](MPI_Request r) { return r == MPI_REQUEST_NULL; });
}
}  // namespace

void transport::open(comm_handle comm, shape sh) {
  comm_ = std::move(comm);
  shape_ = std::move(sh);
  words_ = static_cast<int>((shape_.with_requester ? protocol::node_request_bytes : protocol::request_bytes) /
                            sizeof(std::uint64_t));
  wire_ = wire_format(shape_.token_entries, shape_.payload_bytes, shape_.node_of, shape_.token_self, shape_.form);
  token_buf_.assign(wire_.bytes(), std::byte{0});
  const int posted = std::min(shape_.request_receives, max_posted_requests);
  recv_reqs_.assign(first_request + static_cast<std::size_t>(posted), MPI_REQUEST_NULL);
  request_bufs_.assign(static_cast<std::size_t>(posted), words{});
  done_idx_.resize(recv_reqs_.size());
  done_status_.resize(recv_reqs_.size());
  arrived_.reserve(request_bufs_.size());
  check_mpi(MPI_Comm_rank(comm_.get(), &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(comm_.get(), &size_), "MPI_Comm_size");
  if (size_ > 1)  // every rank hears of a failure, even one that receives nothing else
    check_mpi(MPI_Irecv(fault_in_.data(), static_cast<int>(fault_in_.size()), MPI_CHAR, MPI_ANY_SOURCE, tag_fault,
                        comm_.get(), &recv_reqs_[1]),
              "MPI_Irecv(FAULT)");
  if (shape_.peers.empty() && posted == 0) return;  // nobody to talk to
  post_token_recv();
  for (std::size_t k = 0; k < request_bufs_.size(); ++k) post_request_recv(k);
}

void transport::post_token_recv() {
  check_mpi(MPI_Irecv(token_buf_.data(), wire_.count(), wire_.type(), MPI_ANY_SOURCE, tag_token, comm_.get(),
                      &recv_reqs_[0]),
            "MPI_Irecv(token)");
}

void transport::post_request_recv(std::size_t k) {
  check_mpi(MPI_Irecv(request_bufs_[k].data(), words_, MPI_UINT64_T, MPI_ANY_SOURCE, tag_request, comm_.get(),
                      &recv_reqs_[first_request + k]),
            "MPI_Irecv(REQUEST)");
}

transport::arrivals transport::test() {
  arrived_.clear();
  if (recv_reqs_.empty() || all_null(recv_reqs_)) {
    // Nothing posted (a single node, or a single rank): still drive MPI's progress
    // engine, which the caller's other MPI operations may need from this rank while
    // it waits (e.g. passive-target RMA aimed at it).
    int flag = 0;
    if (comm_) check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    return {};
  }
  int count = 0;
  check_mpi(MPI_Testsome(static_cast<int>(recv_reqs_.size()), recv_reqs_.data(), &count,
                         done_idx_.data(), done_status_.data()),
            "MPI_Testsome");
  if (count == MPI_UNDEFINED) count = 0;
  bool token = false;
  for (std::size_t c = 0; c < static_cast<std::size_t>(count); ++c) {
    const auto idx = static_cast<std::size_t>(done_idx_[c]);
    if (idx == 0) {
      token = true;
      check_mpi(MPI_Get_count(&done_status_[c], wire_.type(), &token_count_), "MPI_Get_count(token)");
      if (trace_) trace_->record(trace_log::kind::token_in, done_status_[c].MPI_SOURCE);
      continue;
    }
    if (idx == 1) {
      remote_fault_ = true;
      int chars = 0;
      MPI_Get_count(&done_status_[c], MPI_CHAR, &chars);
      const std::string text(fault_in_.data(), static_cast<std::size_t>(std::max(chars, 0)));
      fail(errc::mpi, "rank " + std::to_string(done_status_[c].MPI_SOURCE) +
                          " of this mutex failed and made it unusable on every rank: " + text);
    }
    const words& w = request_bufs_[idx - first_request];
    // The requester: the sender (flat), or the word it names (node topology).
    const bool node = words_ > 1;
    const int from = node ? static_cast<int>(static_cast<std::int64_t>(w[1])) : done_status_[c].MPI_SOURCE;
    arrived_.push_back({protocol::rank_t(from), protocol::seq_t(w[0]), node ? w[2] : 0});
    unposted_.push_back(idx - first_request);
  }
  return {arrived_, token};
}

void transport::repost_requests() {
  for (std::size_t k : unposted_) post_request_recv(k);
  unposted_.clear();
}

void transport::read_token(protocol::token& t, std::span<std::byte> payload) {
  wire_.unpack(token_buf_.data(), token_count_, payload, t);
}

void transport::read_token(std::uint64_t copy, std::span<protocol::ln_t> ln, std::vector<protocol::rank_t>& queue,
                           std::uint64_t& hop, std::span<std::int32_t> route, std::span<std::byte> payload) {
  wire_.unpack(token_buf_.data(), token_count_, payload, copy, ln, queue, hop, route);
}

void transport::repost_token() {
  if (recv_reqs_[0] == MPI_REQUEST_NULL) post_token_recv();
}

void transport::broadcast(protocol::seq_t seq, protocol::rank_t requester, std::uint64_t copy,
                          std::span<const std::int32_t> order) {
  if (recv_reqs_.empty()) return;  // opened without peers
  if (recv_reqs_[0] == MPI_REQUEST_NULL) post_token_recv();  // before anyone can answer
  auto free_slot = std::find_if(bcasts_.begin(), bcasts_.end(),
                                [](const bcast_slot& b) { return !b.partial() && all_null(b.reqs); });
  bcast_slot& slot = free_slot != bcasts_.end() ? *free_slot : bcasts_.emplace_back();
  const std::size_t n = shape_.peers.size();
  slot.reqs.assign(n, MPI_REQUEST_NULL);
  slot.to.resize(n);
  for (std::size_t k = 0; k < n; ++k) slot.to[k] = shape_.peers[order.empty() ? k : static_cast<std::size_t>(order[k])];
  slot.posted = 0;
  slot.msg = {seq.value(), static_cast<std::uint64_t>(static_cast<std::int64_t>(requester.value())), copy};
  post_window(slot, shape_.window);
  if (slot.partial()) partial_.push_back(&slot);
  sends_active_ = true;
  if (trace_) trace_->record(trace_log::kind::request, -1, seq.value());
}

void transport::post_window(bcast_slot& b, std::size_t count) {
  const std::size_t end = std::min(b.to.size(), b.posted + count);
  for (; b.posted < end; ++b.posted)
    check_mpi(MPI_Isend(b.msg.data(), words_, MPI_UINT64_T, b.to[b.posted], tag_request, comm_.get(),
                        &b.reqs[b.posted]),
              "MPI_Isend(REQUEST)");
}

void transport::pump() {
  if (partial_.empty()) return;
  bcast_slot& b = *partial_.back();  // the newest first: older ones carry older news
  post_window(b, shape_.window);
  if (!b.partial()) partial_.pop_back();
}

std::byte* transport::stage_token() {
  auto free_slot = std::find_if(token_sends_.begin(), token_sends_.end(),
                                [](const token_slot& s) { return s.req == MPI_REQUEST_NULL && !s.staged; });
  token_slot& slot = free_slot != token_sends_.end() ? *free_slot : token_sends_.emplace_back();
  slot.buf.resize(wire_.bytes());
  slot.staged = true;
  staged_ = &slot;
  return slot.buf.data();
}

void transport::send_staged(protocol::rank_t to, int count) {
  token_slot& slot = *staged_;
  staged_ = nullptr;
  slot.staged = false;
  if (trace_) trace_->record(trace_log::kind::token_out, to.value());  // stamped before it can arrive
  check_mpi(MPI_Isend(slot.buf.data(), count, wire_.type(), to.value(), tag_token, comm_.get(), &slot.req),
            "MPI_Isend(token)");
  sends_active_ = true;
}

void transport::send_token(protocol::rank_t to, const protocol::token& t,
                           std::span<const std::byte> payload) {
  const int count = wire_.pack(t, to, payload, stage_token());
  send_staged(to, count);
}

void transport::reap_sends(bool wait) {
  for (auto& b : bcasts_) {
    const int n = static_cast<int>(b.reqs.size());
    if (wait) {
      check_mpi(MPI_Waitall(n, b.reqs.data(), MPI_STATUSES_IGNORE), "MPI_Waitall(REQUEST)");
    } else {
      int flag = 0;
      check_mpi(MPI_Testall(n, b.reqs.data(), &flag, MPI_STATUSES_IGNORE), "MPI_Testall(REQUEST)");
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

bool transport::sends_pending() const noexcept {
  return !partial_.empty() ||
         !std::all_of(bcasts_.begin(), bcasts_.end(), [](const bcast_slot& b) { return all_null(b.reqs); }) ||
         std::any_of(token_sends_.begin(), token_sends_.end(),
                     [](const token_slot& s) { return s.req != MPI_REQUEST_NULL; });
}

void transport::cancel_receives() noexcept {
  for (MPI_Request& r : recv_reqs_) {
    if (r == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
}

void transport::notify_fault(const std::string& what) noexcept {
  if (fault_out_ || !comm_ || size_ < 2) return;  // once per mutex
  fault_out_ = new (std::nothrow) char[fault_text_bytes];
  if (!fault_out_) return;
  const std::size_t len = std::min(what.size(), fault_text_bytes);
  std::memcpy(fault_out_, what.data(), len);
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Isend(fault_out_, static_cast<int>(len), MPI_CHAR, r, tag_fault, comm_.get(), &req) == MPI_SUCCESS)
      MPI_Request_free(&req);
  }
}

void transport::abandon() noexcept {
  cancel_receives();
  for (auto& b : bcasts_)
    for (MPI_Request& r : b.reqs)
      if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
  for (auto& t : token_sends_)
    if (t.req != MPI_REQUEST_NULL) MPI_Request_free(&t.req);
  // Their buffers may still be read by MPI after this object is gone: moved to the
  // heap and kept (a deque's move keeps every element where it is). Faults only.
  partial_.clear();  // their remaining REQUESTs are never sent
  (void)new (std::nothrow) std::deque<bcast_slot>(std::move(bcasts_));
  (void)new (std::nothrow) std::deque<token_slot>(std::move(token_sends_));
  sends_active_ = false;
  try {
    close();
  } catch (const error&) {
    // MPI refused to free them: nothing more to do on a faulted mutex.
  }
}

void transport::close() {
  wire_.free();
  comm_.free("MPI_Comm_free");
}

}  // namespace tally::detail
