// The machine model: when each transfer happens (docs/language.md, "When a transfer happens").
//
// The executor computes values only; while it runs it records, for every transfer, which receive
// its payload depends on and which transfer its receiver took just before it (TimingRecord).
// assign_steps then gives every transfer the earliest step allowed by the port model:
//
//   collv::TimingRecord rec;  ... filled by the executor ...
//   collv::TimingOutcome o = collv::assign_steps(trace, rec, collv::PortModel::Single);
//   trace.transfers[0].step;   // set
//
// A transfer t from u to v gets step(t) = 1 + max over its predecessors (0 if none):
//   * data:  the newest receive at u that t's payload depends on (under --port all: every
//            receive of u up to that one in program order, see the docs);
//   * single-port: the transfer u sent before t, and the transfer v received before t;
//   * all-port:    the transfer u sent to v before t (FIFO per ordered pair).
// This is a longest-path computation over a DAG, linear in the number of transfers.
//
// A model with irecvs (TimingRecord::posted non-empty) fixes no order for receives a node has
// outstanding at once: under --port single its receive port takes them in the order their data
// is ready (a list schedule, assign_steps_free in timing.cpp; docs/language.md, "Completion
// order"), O(n log n).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/node_col.hpp"
#include "exec/trace.hpp"

namespace collv {

inline constexpr std::uint32_t kNoTransfer = std::numeric_limits<std::uint32_t>::max();

// A value's dependency on received data: (receive sequence number at its node << 33) | transfer
// id of that receive, for the newest receive (in the node's program order) the value depends on;
// 0 = none. Combining values takes the max, which keeps the newest receive. A streamed run
// (StreamTiming) replaces the transfer id by the receive's step once that is known, and marks it
// with kDepResolved. Sequence numbers stay below kMaxDepSeq.
using DepTag = std::uint64_t;
inline constexpr DepTag kDepResolved = DepTag{1} << 32;
inline constexpr std::uint32_t kMaxDepSeq = 0x7FFFFFFFu;
inline DepTag dep_tag(std::uint32_t seq, std::uint32_t tid) {
  return (static_cast<DepTag>(seq) << 33) | tid;
}
inline std::uint32_t dep_transfer(DepTag d) {
  return d == 0 ? kNoTransfer : static_cast<std::uint32_t>(d & 0xFFFFFFFFu);
}

// The dependency tags of every data variable at every node, node-major: a node's tags are
// adjacent, so a streamed run that settles a transfer rewrites one cache line of its receiver
// rather than one line per variable (exec/executor.cpp numbers the data variables 0..width-1).
class DepTable {
 public:
  // Nodes base .. base + n - 1 (a slice of a partitioned run, or all of them).
  void init(std::uint32_t n, std::uint32_t width, std::uint32_t base = 0) {
    width_ = width;
    base_ = base;
    tags_.assign(std::size_t{n} * width, 0);
  }
  std::uint32_t width() const { return width_; }
  DepTag* row(std::uint32_t v) { return tags_.data() + std::size_t{v - base_} * width_; }
  const DepTag* row(std::uint32_t v) const {
    return tags_.data() + std::size_t{v - base_} * width_;
  }

 private:
  std::uint32_t width_ = 0, base_ = 0;
  std::vector<DepTag> tags_;
};

// What the executor records for the timing pass, indexed by transfer id (Trace::transfers).
struct TimingRecord {
  std::vector<std::uint32_t> dep;        // newest receive (a transfer id) the payload needs
  std::vector<std::uint32_t> prev_recv;  // what the receiver received just before this one
  // Nonblocking models only (empty otherwise), set when the run ends: for each transfer, the
  // receiver's program points (a per-node counter) at which its receive was posted and completed
  // (an irecv: its posting and its wait; a blocking receive: its own point, twice); kNoTransfer
  // if it was never received. A receive X must precede Y on the port only if completed[X] <
  // posted[Y]. prev_recv then chains each node's receives by (completed, posted): the order in
  // which their data became usable, which is also the order of their dependency tags.
  std::vector<std::uint32_t> posted, completed;
  void on_send(std::uint32_t dep_tid) {
    dep.push_back(dep_tid);
    prev_recv.push_back(kNoTransfer);
  }
  std::size_t bytes_per_transfer() const { return 2 * sizeof(std::uint32_t); }
};

// A lower bound on the step of a node's next send, known while the run goes on, so that a run
// that sends for ever stops at RunOptions::max_steps: the number of sends so far on the node's
// send port (single) or on the (node, destination) pair (all).
class StepBound {
 public:
  // Nodes base .. base + n - 1 (a slice of a partitioned run, or all of them).
  StepBound(PortModel port, std::uint32_t n, NodeId base = 0) : port_(port) {
    if (port == PortModel::Single) sends_.assign(n, 0, base);
  }
  // Records a send from u to v and returns the least step it can take.
  std::uint32_t on_send(NodeId u, NodeId v);
  // Single-port: u's sends so far.
  std::uint32_t sends(NodeId u) const { return sends_[u]; }

 private:
  PortModel port_;
  NodeCol<std::uint32_t> sends_;
  std::unordered_map<std::uint64_t, std::uint32_t> pair_sends_;  // all-port
};

struct TimingOutcome {
  // Single-port only: the program orders of the ports contradict each other (a receiver takes
  // transfers in an order their senders cannot send them in), so no schedule exists; the
  // transfers that close the cycle, in cycle order. Steps are still assigned (ignoring the
  // order edge that closes the cycle) so that the trace can be drawn.
  std::vector<std::uint32_t> cycle;
  // Nonblocking models: the cycle passes through a data dependency collv takes conservatively (a
  // value is counted as ready only when every receive its node completed no later has happened,
  // and one of those, not the value's own receive, closes the cycle): the data may not need it,
  // so a schedule may exist.
  bool approximate = false;
};

// The entries of a window of ids lo .. next-1 (ids count up and never wrap): chunks of 2^13
// entries, chunk c holding ids c * 2^13 ..; a chunk is allocated when the first of its ids is
// opened and given back once the window's low end passed it. The window never holds two copies
// of itself (a ring that grows holds the old one and the new one while it copies) and holds at
// most one chunk more than its span.
template <class E>
class ChunkWindow {
 public:
  static constexpr unsigned kShift = 13;
  static constexpr std::uint32_t kMask = (1u << kShift) - 1;
  E& operator[](std::uint32_t id) { return chunks_[id >> kShift][id & kMask]; }
  const E& operator[](std::uint32_t id) const { return chunks_[id >> kShift][id & kMask]; }
  // Before id is first written (ids are opened in ascending order).
  void open(std::uint32_t id) {
    const std::size_t c = id >> kShift;
    if (c < chunks_.size() && chunks_[c]) return;
    if (chunks_.size() <= c) chunks_.resize(c + 1);
    if (!spare_.empty()) {
      chunks_[c] = std::move(spare_.back());
      spare_.pop_back();
    } else {
      chunks_[c] = std::make_unique<E[]>(std::size_t{kMask} + 1);
      ++held_;
      peak_ = std::max(peak_, held_);
    }
  }
  // Every id below lo is done with: the chunks wholly below it are given back (one kept spare).
  void release_below(std::uint32_t lo) {
    const std::size_t end = std::min<std::size_t>(chunks_.size(), lo >> kShift);
    for (; first_ < end; ++first_) {
      auto& c = chunks_[first_];
      if (!c) continue;
      if (spare_.empty()) {
        spare_.push_back(std::move(c));
      } else {
        c.reset();
        --held_;
      }
    }
  }
  // The most bytes the chunks held at once, and what they hold now (the chunk table included).
  std::uint64_t peak_bytes() const { return peak_ * kChunkBytes + chunks_.capacity() * 8; }
  std::uint64_t bytes() const { return held_ * kChunkBytes + chunks_.capacity() * 8; }

 private:
  static constexpr std::uint64_t kChunkBytes = sizeof(E) << kShift;
  std::vector<std::unique_ptr<E[]>> chunks_;  // by id >> kShift; empty below first_
  std::vector<std::unique_ptr<E[]>> spare_;
  std::size_t first_ = 0;
  std::uint64_t held_ = 0, peak_ = 0;  // chunks allocated (spare included)
};

// Timing while the run goes on, for streamed runs (RunOptions::stream, single-port only): the
// transfers are not kept. Each transfer waits in a window until it is received and its three
// predecessors (as in assign_steps: the sender's previous send, the receive its payload depends
// on, the receiver's previous receive) have steps; it then gets the same step as assign_steps
// would give it, is counted into the per-step statistics and leaves the window. A predecessor's
// step is copied into whatever refers to it (waiting transfers, each node's last send and
// receive, the dependency tags of the receiver's variables) when it is known, so a transfer that
// left the window is never looked up again.
//
//   collv::StreamTiming st(p, &deps);   // deps: a DepTable
//   st.make_room();  auto id = st.on_send(u, v, 1, 12, dep, payload.data());  // len items
//   Buffer got = st.on_receive(id, v);  st.resolve(false);
//   st.finish();  st.steps();  st.per_step();
//
// Partitioned runs (verify/partition.hpp): a transfer between slices is an entry on both sides.
// The sender's (on_send_remote) waits for its step, which the receiver's process decides; once
// the sender's two predecessors have steps, its bound max(previous send, data) is queued in
// bounds_out() for the receiver's process. The receiver's (on_arrive) waits for that bound
// (set_bound) in place of those two predecessors, and once resolved queues its step in
// steps_out() for the sender's process (set_step). The receiver's side counts the transfer into
// the statistics; the sender's counts as issued. The sender's sides are not in the window but in
// a window of their own (32 bytes an entry, numbered apart): each waits a round trip for its
// step, and in the window it held every transfer issued after it for that long. The one transfer
// that waits for a sender's side (the sender's next send) is recorded in it, and set_step gives
// it the step. Both windows are ChunkWindows: they hold what they span, never a second copy.
class StreamTiming {
 public:
  // Nodes base .. base + n - 1 (a slice of a partitioned run, or all of them).
  StreamTiming(std::uint32_t n, DepTable* deps, NodeId base = 0);
  // Before each send, and before the dependency tag it passes is read: settles waiting transfers
  // or grows the window so that one more fits (settling rewrites the tags).
  void make_room();
  // Records a send (u to v) of the len items at `payload` (copied) and returns its transfer id
  // (ids count up from 0, in issue order, as the stored Trace numbers its transfers).
  // `link`: 1 + the link number the send went along when that is below kMaxLinkTag, else 0
  // (link_tag() gives it back to the receiver).
  std::uint32_t on_send(NodeId u, NodeId v, std::uint16_t len, std::uint16_t line, DepTag dep,
                        const Item* payload, std::uint8_t link = 0);
  static constexpr std::int64_t kMaxLinkTag = 31;
  NodeId src(std::uint32_t tid) const { return at(tid).src; }
  std::uint8_t link_tag(std::uint32_t tid) const { return at(tid).link; }
  // Partitioned runs (see above). A send to a node of another process (no payload kept here).
  // Its id is among the senders' sides (numbered apart from the window's).
  std::uint32_t on_send_remote(NodeId u, NodeId v, DepTag dep);
  // A transfer from a node of another process arrives (`origin`: its id there).
  std::uint32_t on_arrive(NodeId u, NodeId v, std::uint16_t len, std::uint16_t line,
                          std::uint32_t origin, Buffer&& payload);
  void set_bound(std::uint32_t tid, std::uint32_t bound);  // receiver's side
  void set_step(std::uint32_t tid, std::uint32_t step);    // sender's side
  struct RemoteTiming {
    NodeId node;          // bounds: the receiver; steps: the sender (its process is the peer)
    std::uint32_t tid;    // bounds: the id here; steps: the id at the sender (origin)
    std::uint32_t value;  // the bound or the step
  };
  std::vector<RemoteTiming>& bounds_out() { return bounds_out_; }
  std::vector<RemoteTiming>& steps_out() { return steps_out_; }
  // Unresolved transfers this process counts (not the sender's side of a remote one).
  std::uint64_t unresolved_here() const;
  std::uint64_t arrived() const { return arrived_; }
  // A hint: transfer tid will be looked at soon.
  void prefetch(std::uint32_t tid) const { __builtin_prefetch(&at(tid), 1); }
  // v receives transfer tid: returns its payload.
  Buffer on_receive(std::uint32_t tid, NodeId v);
  // The same for a payload of one item, given in x; false (nothing done) for any other payload.
  bool on_receive_one(std::uint32_t tid, NodeId v, Item& x);
  // Gives steps to the waiting transfers that can have them; cheap unless enough has been
  // received since the last pass (always a full pass if `force`).
  void resolve(bool force);
  // The run is over: transfers never received take no receive predecessor, and everything that
  // can be resolved is. What is left waits on a cycle of port orders (assign_steps' "cycle").
  void finish();
  std::uint64_t issued() const { return std::uint64_t{next_} + rnext_; }
  std::uint64_t unresolved() const { return pending_.size() + rpending_.size(); }
  std::uint64_t unreceived() const { return unreceived_; }
  std::uint32_t steps() const { return steps_; }
  const std::vector<StepStats>& per_step() const { return per_step_; }
  std::uint64_t bytes() const;       // what the window holds now (--max-memory)
  std::uint64_t peak_bytes() const;  // the most it held (each part's most, added)
  // The most senders' sides it held at once (from the oldest still waiting for its step).
  std::uint32_t peak_remote_span() const { return rpeak_; }

 private:
  // A reference to a transfer's step: 0 none, kStep | step once known, else tid + 1.
  // (kRemote | id + 1: a sender's side, by its id among those.)
  using Ref = std::uint64_t;
  static constexpr Ref kStep = Ref{1} << 63;
  static constexpr Ref kRemote = Ref{1} << 62;
  struct Entry {
    NodeId src = 0, dst = 0;
    std::uint32_t step = 0;  // 0 until resolved
    std::uint16_t len = 0, line = 0;
    // Previous send of src, the payload's receive, previous receive of dst: a transfer id, or its
    // step once known (kind[k] says which).
    std::uint32_t pred[3] = {0, 0, 0};
    // 0 none, 1 transfer id, 2 step, 3 decided by another process (partitioned runs: pred[0] of
    // a receiver's side), 5 the id of a sender's side (pred[0]).
    std::uint8_t kind[3] = {0, 0, 0};
    // Three bit-fields in one byte: an entry is 48 bytes, not 56.
    std::uint8_t received : 1 = 0;
    std::uint8_t remote : 2 = 0;  // 0 local, 2 the receiver's side (pred[1]: the id at the sender)
    std::uint8_t link : 5 = 0;    // on_send's `link` (0: not known)
    SmallVec<Item, 1> payload;    // until received
  };
  // A sender's side (partitioned runs): its previous send and data as in Entry (kinds 0, 1, 2,
  // 5), whether its bound is queued, its step once it comes back, and the sender's next send
  // (succ: kRemote | id + 1 or id + 1; 0 none yet), which is given the step.
  struct RemoteEntry {
    NodeId src = 0, dst = 0;
    std::uint32_t pred[2] = {0, 0};
    std::uint32_t step = 0;
    std::uint8_t kind[2] = {0, 0};
    bool bound_sent = false;
    Ref succ = 0;
  };
  template <class E>
  static void set_pred(E& e, int k, Ref r) {
    e.kind[k] = r == 0 ? 0 : (r & kStep) ? 2 : (r & kRemote) ? 5 : 1;
    e.pred[k] = r == 0        ? 0
                : (r & kStep) ? static_cast<std::uint32_t>(r)
                              : static_cast<std::uint32_t>((r & ~kRemote) - 1);
  }
  // u's previous send: the transfer u sends now (ref `self`) comes after it. A sender's side
  // still waiting for its step records the new one as its successor.
  void link_send(NodeId u, Ref self);
  // Copies a known predecessor step into (kind, pred); false if it is not known yet.
  bool pred_known(std::uint8_t& kind, std::uint32_t& pred);
  RemoteEntry& rat(std::uint32_t rid) { return rring_[rid]; }
  bool try_resolve_remote(std::uint32_t rid);
  bool resolve_remote();  // one pass over the senders' sides waiting to queue their bounds
  Entry& at(std::uint32_t tid) { return ring_[tid]; }
  const Entry& at(std::uint32_t tid) const { return ring_[tid]; }
  bool try_resolve(std::uint32_t tid, bool at_end);
  void mark_received(Entry& e, std::uint32_t tid, NodeId v);  // v receives tid
  void grow();
  // A fresh window entry for a transfer u -> v (the next id), its other fields zero.
  std::uint32_t open_entry(NodeId u, NodeId v, std::uint16_t len, std::uint16_t line);

  std::uint32_t p_;
  DepTable* deps_;
  ChunkWindow<Entry> ring_;
  // When the window spans cap_ ids, make_room settles what it can before it spans more (cap_ then
  // grows by a quarter if that was not enough).
  std::size_t cap_ = 1024;
  std::uint32_t next_ = 0, lo_ = 0;     // the window: ids lo_ .. next_-1
  std::vector<std::uint32_t> pending_;  // unresolved ids, ascending
  NodeCol<Ref> last_send_, last_recv_;  // per node
  std::uint64_t since_ = 0, unreceived_ = 0, arrived_ = 0;
  std::vector<RemoteTiming> bounds_out_, steps_out_;
  // Senders' sides: ids rlo_ .. rnext_-1; those whose bound is not queued yet.
  ChunkWindow<RemoteEntry> rring_;
  std::uint32_t rnext_ = 0, rlo_ = 0, rpeak_ = 0;
  std::vector<std::uint32_t> rpending_;
  std::uint32_t steps_ = 0;
  std::vector<StepStats> per_step_;
};

// Sets Transfer::step of every transfer of tr (and tr.port); tr.compute_stats() is left to the
// caller. rec must have one entry per transfer.
TimingOutcome assign_steps(Trace& tr, const TimingRecord& rec, PortModel port);

}  // namespace collv
