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
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "exec/trace.hpp"

namespace collv {

inline constexpr std::uint32_t kNoTransfer = std::numeric_limits<std::uint32_t>::max();

// A value's dependency on received data: (receive sequence number at its node << 32) | transfer
// id of that receive, for the newest receive (in the node's program order) the value depends on;
// 0 = none. Combining values takes the max, which keeps the newest receive.
using DepTag = std::uint64_t;
inline DepTag dep_tag(std::uint32_t seq, std::uint32_t tid) {
  return (static_cast<DepTag>(seq) << 32) | tid;
}
inline std::uint32_t dep_transfer(DepTag d) {
  return d == 0 ? kNoTransfer : static_cast<std::uint32_t>(d & 0xFFFFFFFFu);
}

// What the executor records for the timing pass, indexed by transfer id (Trace::transfers).
struct TimingRecord {
  std::vector<std::uint32_t> dep;        // newest receive (a transfer id) the payload needs
  std::vector<std::uint32_t> prev_recv;  // what the receiver received just before this one
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
  StepBound(PortModel port, std::uint32_t p) : port_(port) {
    if (port == PortModel::Single) sends_.assign(p, 0);
  }
  // Records a send from u to v and returns the least step it can take.
  std::uint32_t on_send(NodeId u, NodeId v);

 private:
  PortModel port_;
  std::vector<std::uint32_t> sends_;
  std::unordered_map<std::uint64_t, std::uint32_t> pair_sends_;  // all-port
};

struct TimingOutcome {
  // Single-port only: the program orders of the ports contradict each other (a receiver takes
  // transfers in an order their senders cannot send them in), so no schedule exists; the
  // transfers that close the cycle, in cycle order. Steps are still assigned (ignoring the
  // order edge that closes the cycle) so that the trace can be drawn.
  std::vector<std::uint32_t> cycle;
};

// Sets Transfer::step of every transfer of tr (and tr.port); tr.compute_stats() is left to the
// caller. rec must have one entry per transfer.
TimingOutcome assign_steps(Trace& tr, const TimingRecord& rec, PortModel port);

}  // namespace collv
