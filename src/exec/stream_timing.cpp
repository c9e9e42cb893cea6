// Timing while the run goes on, for streamed runs: StreamTiming (see timing.hpp).
#include <algorithm>

#include "exec/timing.hpp"
#include "util/error.hpp"

namespace collv {

StreamTiming::StreamTiming(std::uint32_t n, DepTable* deps, NodeId base) : p_(n), deps_(deps) {
  last_send_.assign(n, 0, base);
  last_recv_.assign(n, 0, base);
}

std::uint64_t StreamTiming::bytes() const {
  static_assert(sizeof(Entry) <= 48, "a window entry is 48 bytes (docs/benchmarks.md)");
  static_assert(sizeof(RemoteEntry) <= 32, "a sender's side is 32 bytes (docs/benchmarks.md)");
  return ring_.bytes() + rring_.bytes() +
         (pending_.capacity() + rpending_.capacity()) * sizeof(std::uint32_t) +
         per_step_.capacity() * sizeof(StepStats) + 2 * std::uint64_t{p_} * sizeof(Ref);
}

std::uint64_t StreamTiming::peak_bytes() const {
  return bytes() - ring_.bytes() - rring_.bytes() + ring_.peak_bytes() + rring_.peak_bytes();
}

void StreamTiming::grow() { cap_ += std::max<std::size_t>(1024, cap_ / 4); }

__attribute__((always_inline)) inline std::uint32_t StreamTiming::open_entry(NodeId u, NodeId v,
                                                                             std::uint16_t len,
                                                                             std::uint16_t line) {
  if (next_ == kNoTransfer - 1)
    throw LimitError("the run sends more than 2^32 transfers; it is too large");
  COLLV_ASSERT(next_ - lo_ < cap_);  // make_room() first
  const std::uint32_t tid = next_++;
  ring_.open(tid);
  // Every field written once (no zeroed Entry assigned first). The payload of an entry that left
  // the window was given back when it was received or resolved; a fresh chunk's is empty.
  Entry& e = at(tid);
  e.src = u;
  e.dst = v;
  e.step = 0;
  e.len = len;
  e.line = line;
  e.pred[0] = e.pred[1] = e.pred[2] = 0;
  e.kind[0] = e.kind[1] = e.kind[2] = 0;
  e.received = 0;
  e.remote = 0;
  e.link = 0;
  e.payload.clear();
  return tid;
}

std::uint32_t StreamTiming::on_send(NodeId u, NodeId v, std::uint16_t len, std::uint16_t line,
                                    DepTag dep, const Item* payload, std::uint8_t link) {
  const std::uint32_t tid = open_entry(u, v, len, line);
  Entry& e = at(tid);
  e.link = link & 31u;
  set_pred(e, 0, last_send_[u]);
  if (dep != 0)
    set_pred(e, 1, (dep & kDepResolved) ? kStep | (dep & 0xFFFFFFFFu) : (dep & 0xFFFFFFFFu) + 1);
  e.payload.assign(payload, len);
  link_send(u, Ref{tid} + 1);
  pending_.push_back(tid);
  ++unreceived_;
  return tid;
}

void StreamTiming::link_send(NodeId u, Ref self) {
  const Ref prev = last_send_[u];
  if ((prev & kRemote) && !(prev & kStep))
    rat(static_cast<std::uint32_t>((prev & ~kRemote) - 1)).succ = self;
  last_send_[u] = self;
}

std::uint32_t StreamTiming::on_send_remote(NodeId u, NodeId v, DepTag dep) {
  if (rnext_ == kNoTransfer - 1)
    throw LimitError("the run sends more than 2^32 transfers; it is too large");
  const std::uint32_t rid = rnext_++;
  rring_.open(rid);
  rpeak_ = std::max(rpeak_, rnext_ - rlo_);
  RemoteEntry& e = rat(rid);
  e = RemoteEntry{};
  e.src = u;
  e.dst = v;
  set_pred(e, 0, last_send_[u]);
  if (dep != 0)
    set_pred(e, 1, (dep & kDepResolved) ? kStep | (dep & 0xFFFFFFFFu) : (dep & 0xFFFFFFFFu) + 1);
  link_send(u, kRemote | (Ref{rid} + 1));
  rpending_.push_back(rid);
  return rid;
}

__attribute__((always_inline)) inline bool StreamTiming::pred_known(std::uint8_t& kind,
                                                                    std::uint32_t& pred) {
  if (kind == 0 || kind == 2) return true;
  if (kind != 1) return false;  // decided by another process, or a sender's side (set_step)
  const std::uint32_t q = pred;
  COLLV_ASSERT(q - lo_ < next_ - lo_);  // waiting transfers refer only into the window
  if (at(q).step == 0) return false;
  kind = 2;
  pred = at(q).step;
  return true;
}

// A sender's side: queues its bound once its two predecessors have steps.
bool StreamTiming::try_resolve_remote(std::uint32_t rid) {
  RemoteEntry& e = rat(rid);
  std::uint32_t latest = 0;
  bool known = true;
  for (int k = 0; k < 2; ++k) {
    if (!pred_known(e.kind[k], e.pred[k]))
      known = false;
    else if (e.kind[k] == 2)
      latest = std::max(latest, e.pred[k]);
  }
  if (!known) return false;
  bounds_out_.push_back({e.dst, rid, latest});
  e.bound_sent = true;
  return true;
}

std::uint32_t StreamTiming::on_arrive(NodeId u, NodeId v, std::uint16_t len, std::uint16_t line,
                                      std::uint32_t origin, Buffer&& payload) {
  const std::uint32_t tid = open_entry(u, v, len, line);
  Entry& e = at(tid);
  e.remote = 2;
  e.kind[0] = 3;  // the sender's bound, from its process
  e.pred[1] = origin;
  e.payload.assign(payload.data(), payload.size());
  pending_.push_back(tid);
  ++unreceived_;
  ++arrived_;
  return tid;
}

void StreamTiming::set_bound(std::uint32_t tid, std::uint32_t bound) {
  Entry& e = at(tid);
  COLLV_ASSERT(e.remote == 2 && e.kind[0] == 3);
  e.kind[0] = 2;
  e.pred[0] = bound;
}

void StreamTiming::set_step(std::uint32_t rid, std::uint32_t step) {
  COLLV_ASSERT(rid - rlo_ < rnext_ - rlo_);
  RemoteEntry& e = rat(rid);
  COLLV_ASSERT(e.bound_sent && e.step == 0 && step >= 1);
  e.step = step;
  // The one transfer that waits for it: the sender's next send, or the sender's last send.
  if (e.succ == 0) {
    COLLV_ASSERT(last_send_[e.src] == (kRemote | (Ref{rid} + 1)));
    last_send_[e.src] = kStep | step;
  } else if (e.succ & kRemote) {
    RemoteEntry& s = rat(static_cast<std::uint32_t>((e.succ & ~kRemote) - 1));
    s.kind[0] = 2;
    s.pred[0] = step;
  } else {
    Entry& s = at(static_cast<std::uint32_t>(e.succ - 1));
    s.kind[0] = 2;
    s.pred[0] = step;
  }
  while (rlo_ != rnext_ && rat(rlo_).step != 0) ++rlo_;
  rring_.release_below(rlo_);
}

std::uint64_t StreamTiming::unresolved_here() const { return pending_.size(); }

void StreamTiming::make_room() {
  if (next_ - lo_ < cap_) return;
  resolve(true);  // full: settle what can be settled before growing
  if (next_ - lo_ >= cap_) grow();
}

inline void StreamTiming::mark_received(Entry& e, std::uint32_t tid, NodeId v) {
  set_pred(e, 2, last_recv_[v]);
  e.received = true;
  last_recv_[v] = Ref{tid} + 1;
  --unreceived_;
  ++since_;
}

bool StreamTiming::on_receive_one(std::uint32_t tid, NodeId v, Item& x) {
  Entry& e = at(tid);
  if (e.payload.size() != 1) return false;
  x = e.payload[0];
  e.payload.clear();
  mark_received(e, tid, v);
  return true;
}

Buffer StreamTiming::on_receive(std::uint32_t tid, NodeId v) {
  Entry& e = at(tid);
  mark_received(e, tid, v);
  Buffer out;
  out.assign(e.payload.data(), e.payload.size());
  if (e.payload.size() > 1)
    e.payload = SmallVec<Item, 1>{};  // gives its heap storage back
  else
    e.payload.clear();
  return out;
}

// Copies known predecessor steps into the entry; resolves it if all are known and it has been
// received (or the run is over).
__attribute__((always_inline)) inline bool StreamTiming::try_resolve(std::uint32_t tid,
                                                                     bool at_end) {
  Entry& e = at(tid);
  std::uint32_t latest = 0;
  bool known = true;
  for (int k = 0; k < 3; ++k) {
    if (e.kind[k] == 0 || (k == 1 && e.remote == 2)) continue;  // (pred[1]: the sender's id)
    if (!pred_known(e.kind[k], e.pred[k])) {
      known = false;
      continue;
    }
    latest = std::max(latest, e.pred[k]);
  }
  if (!known || (!e.received && !at_end)) return false;
  const std::uint32_t s = latest + 1;
  e.step = s;
  if (!e.payload.empty()) e.payload = SmallVec<Item, 1>{};  // never received (at_end)
  const Ref self = Ref{tid} + 1;
  if (e.remote == 2) steps_out_.push_back({e.src, e.pred[1], s});
  if (s > per_step_.size()) per_step_.resize(s);
  StepStats& st = per_step_[s - 1];
  ++st.transfers;
  st.max_link_items = std::max<std::uint32_t>(st.max_link_items, e.len);
  st.max_link_transfers = 1;  // single-port, neighbours only: one transfer per link and step
  steps_ = std::max(steps_, s);
  // Whatever still refers to tid by id now holds its step.
  if (e.remote == 0 && last_send_[e.src] == self) last_send_[e.src] = kStep | s;
  if (last_recv_[e.dst] == self) last_recv_[e.dst] = kStep | s;
  if (e.received) {
    // A tag that names tid unresolved: its low 33 bits are tid (the kDepResolved bit clear), and
    // it is not 0 (no dependency) when tid is 0. Branch-free, so the compiler can vectorise it.
    DepTag* row = deps_->row(e.dst);
    const DepTag resolved = kDepResolved | s;
    constexpr DepTag kLow33 = (DepTag{1} << 33) - 1;
    for (std::uint32_t j = 0, w = deps_->width(); j < w; ++j) {
      const DepTag d = row[j];
      const bool hit = (d & kLow33) == tid && d != 0;
      row[j] = hit ? (d & ~kLow33) | resolved : d;
    }
  }
  return true;
}

void StreamTiming::resolve(bool force) {
  if (!force && since_ < std::max<std::uint64_t>(65536, pending_.size())) return;
  since_ = 0;
  // Ascending ids: a predecessor issued earlier is settled before the transfers that wait on it.
  // A receive predecessor may be issued later; it is picked up on the next pass.
  bool progress = true;
  while (progress) {
    progress = false;
    // Each transfer's receiver row of dependency tags is a cache miss at star:10 and beyond:
    // prefetched a few transfers ahead (the entries themselves are read in ring order). The
    // unresolved ones are kept in place (keep <= i).
    constexpr std::size_t kAhead = 8;
    std::size_t keep = 0;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      const std::uint32_t tid = pending_[i];
      if (i + kAhead < pending_.size()) {
        const Entry& a = at(pending_[i + kAhead]);
        __builtin_prefetch(deps_->row(a.dst), 1);
        __builtin_prefetch(&last_recv_[a.dst], 1);
      }
      if (try_resolve(tid, false))
        progress = true;
      else
        pending_[keep++] = tid;
    }
    pending_.resize(keep);
    // Senders' sides read the steps of the transfers just settled in this same pass, before the
    // window moves past them.
    if (resolve_remote()) progress = true;
    if (!force) break;
  }
  lo_ = pending_.empty() ? next_ : pending_.front();
  ring_.release_below(lo_);
}

bool StreamTiming::resolve_remote() {
  if (rpending_.empty()) return false;
  bool progress = false;
  std::size_t keep = 0;
  for (std::size_t i = 0; i < rpending_.size(); ++i) {
    if (try_resolve_remote(rpending_[i]))
      progress = true;
    else
      rpending_[keep++] = rpending_[i];
  }
  rpending_.resize(keep);
  return progress;
}

void StreamTiming::finish() {
  bool progress = true;
  while (progress && (!pending_.empty() || !rpending_.empty())) {
    progress = false;
    std::size_t keep = 0;
    for (std::size_t i = 0; i < pending_.size(); ++i) {
      if (try_resolve(pending_[i], true))
        progress = true;
      else
        pending_[keep++] = pending_[i];
    }
    pending_.resize(keep);
    if (resolve_remote()) progress = true;
  }
  lo_ = pending_.empty() ? next_ : pending_.front();
  ring_.release_below(lo_);
}

}  // namespace collv
