#include "runtime/transport.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/token_layout.hpp"
#include "runtime/mpi_owned.hpp"

namespace tally::detail {

namespace {
bool all_null(const std::vector<MPI_Request>& reqs) {
  return std::all_of(reqs.begin(), reqs.end(), [](MPI_Request r) { return r == MPI_REQUEST_NULL; });
}
}  // namespace

void transport::open(std::shared_ptr<channel> ch, std::uint32_t id, shape sh, std::function<void()> notify) {
  channel_ = std::move(ch);
  id_ = id;
  shape_ = std::move(sh);
  words_ = static_cast<int>((shape_.with_requester ? protocol::node_request_bytes : protocol::request_bytes) /
                            sizeof(std::uint64_t));
  wire_ = wire_format(shape_.token_entries, shape_.payload_bytes, shape_.node_of, shape_.token_self, shape_.form);
  token_buf_.assign(wire_.bytes(), std::byte{0});
  mpi_owned(token_buf_.data(), token_buf_.size());
  channel_->attach(id_, std::move(notify));
  attached_ = true;
}

void transport::post_token_recv() {
  check_mpi(MPI_Irecv(token_buf_.data(), wire_.count(), wire_.type(), MPI_ANY_SOURCE, tag_token(id_),
                      channel_->messages(), &token_req_),
            "MPI_Irecv(token)");
}

transport::arrivals transport::test(bool repost) {
  arrived_.clear();
  if (channel_->size() < 2) {
    // A single rank: still drive MPI's progress engine, which the caller's other MPI
    // operations may need from this rank while it waits (e.g. passive-target RMA
    // aimed at it).
    int flag = 0;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, channel_->messages(), &flag, MPI_STATUS_IGNORE), "MPI_Iprobe");
    return {};
  }
  raw_.clear();
  channel_->collect(id_, raw_, repost, fault_text_);
  if (!fault_text_.empty()) {
    remote_fault_ = true;
    fail(errc::mpi, fault_text_);
  }
  const bool node = words_ > 1;
  for (const channel::raw_request& r : raw_) {
    // The requester: the sender (flat), or the word it names (node topology).
    const int from = node ? static_cast<int>(static_cast<std::int64_t>(r.w[1])) : r.source;
    arrived_.push_back({protocol::rank_t(from), protocol::seq_t(r.w[0]), node ? r.w[2] : 0});
  }
  bool token = false;
  if (token_req_ != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Status st;
    check_mpi(MPI_Test(&token_req_, &done, &st), "MPI_Test(token)");
    if (done) {
      token = true;
      check_mpi(MPI_Get_count(&st, wire_.type(), &token_count_), "MPI_Get_count(token)");
      if (trace_) trace_->record(trace_log::kind::token_in, st.MPI_SOURCE);
    }
  }
  return {arrived_, token};
}

void transport::repost_requests() {
  if (channel_->size() > 1) channel_->repost();
}

void transport::read_token(protocol::token& t, std::span<std::byte> payload) {
  wire_.unpack(token_buf_.data(), token_count_, payload, t);
}

void transport::read_token(std::uint64_t copy_hop, std::span<protocol::ln_t> ln, std::vector<protocol::rank_t>& queue,
                           std::uint64_t& hop, std::span<std::int32_t> route, std::span<std::byte> payload) {
  wire_.unpack(token_buf_.data(), token_count_, payload, copy_hop, ln, queue, hop, route);
}

void transport::want_token(bool named) {
  if (named && token_req_ == MPI_REQUEST_NULL && channel_->size() > 1) post_token_recv();
}

void transport::broadcast(protocol::seq_t seq, protocol::rank_t requester, std::uint64_t copy_hop,
                          std::span<const std::int32_t> order) {
  if (shape_.peers.empty()) return;                       // nobody to ask
  if (token_req_ == MPI_REQUEST_NULL) post_token_recv();  // before anyone can answer
  auto free_slot = std::find_if(bcasts_.begin(), bcasts_.end(),
                                [](const bcast_slot& b) { return !b.partial() && all_null(b.reqs); });
  bcast_slot& slot = free_slot != bcasts_.end() ? *free_slot : bcasts_.emplace_back();
  const std::size_t n = shape_.peers.size();
  slot.reqs.assign(n, MPI_REQUEST_NULL);
  slot.to.resize(n);
  for (std::size_t k = 0; k < n; ++k) slot.to[k] = shape_.peers[order.empty() ? k : static_cast<std::size_t>(order[k])];
  slot.posted = 0;
  slot.msg = {seq.value(), static_cast<std::uint64_t>(static_cast<std::int64_t>(requester.value())), copy_hop};
  post_window(slot, shape_.window);
  if (slot.partial()) partial_.push_back(&slot);
  sends_active_ = true;
  if (trace_) trace_->record(trace_log::kind::request, -1, seq.value());
}

void transport::post_window(bcast_slot& b, std::size_t count) {
  const std::size_t end = std::min(b.to.size(), b.posted + count);
  for (; b.posted < end; ++b.posted)
    check_mpi(MPI_Isend(b.msg.data(), words_, MPI_UINT64_T, b.to[b.posted], static_cast<int>(id_), channel_->requests(),
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
  check_mpi(
      MPI_Isend(slot.buf.data(), count, wire_.type(), to.value(), tag_token(id_), channel_->messages(), &slot.req),
      "MPI_Isend(token)");
  sends_active_ = true;
}

void transport::send_token(protocol::rank_t to, const protocol::token& t, std::span<const std::byte> payload) {
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
  if (token_req_ == MPI_REQUEST_NULL) return;
  MPI_Cancel(&token_req_);
  MPI_Wait(&token_req_, MPI_STATUS_IGNORE);
}

void transport::notify_fault(const std::string& what) noexcept {
  if (fault_sent_ || !channel_) return;  // once per mutex
  fault_sent_ = true;
  channel_->notify_fault(id_, what);
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
  if (attached_) channel_->detach(id_, true);  // a late FAULT or REQUEST may still name it
  attached_ = false;
  try {
    close();
  } catch (const error&) {
    // MPI refused to free them: nothing more to do on a faulted mutex.
  }
}

void transport::close() {
  if (attached_) channel_->detach(id_);
  attached_ = false;
  wire_.free();
}

}  // namespace tally::detail
