// Delivery and ports, a room of the executor (exec/machine.hpp): the mailboxes' sources, waking
// a node that waits for a message, self-messages, the messages left unreceived, and the timing
// references (exec/timing.hpp) that sends and receives carry: which receive each value depends on.
#pragma once

#include <optional>
#include <utility>

#include "exec/eval.hpp"

namespace collv::interp {

class Ports : public Evaluator {
 public:
  using Evaluator::Evaluator;

  // Messages still queued when the run ends: sent, never received (ascending transfer ids).
  std::vector<std::uint32_t> unreceived() const;
  // A self-message still queued when the run ends (sent, never received): its send's position.
  std::optional<std::pair<NodeId, SourceLoc>> unreceived_self() const;

 protected:
  void self_send(const Stmt& s, std::uint32_t pc, NodeId v, Buffer val);
  void self_receive(const Stmt& s, std::uint32_t pc, const std::vector<NodeId>& nodes);

  NodeId src_of(std::uint32_t tid) const {
    return stream_ ? stream_->src(tid) : tr_.transfers[tid].src;
  }
  // dst was waiting for a message from v, which has just been sent.
  void wake(NodeId v, NodeId dst) {
    if (waiting_on_[dst] != v) return;
    waiting_on_[dst] = kNone;
    ready_[blocked_pc_[dst]].push_back(dst);
    mark_ready(blocked_pc_[dst]);
  }

  // Timing dependencies (exec/timing.hpp). A value depends on the newest receive among the
  // variables it reads; assigning a whole variable replaces its dependency, assigning part of
  // it adds to it; a receive makes the target depend on that receive.
  DepTag deps_of(std::uint32_t pc, NodeId v) const {
    DepTag d = 0;
    const DepTag* row = deps_.row(v);
    for (int j : reads_[pc]) d = std::max(d, row[j]);
    return d;
  }
  void track_assign(std::uint32_t pc, const Expr& target, const NodeId* nodes, std::size_t cnt);
  void track_receive(const Expr& target, const NodeId* nodes, std::size_t cnt,
                     const std::uint32_t* tids);
};

}  // namespace collv::interp
