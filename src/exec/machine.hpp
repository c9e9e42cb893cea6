// The executor's machine (exec/executor.hpp runs it). Its rooms, each deriving from the one
// below it:
//   program.hpp        program compilation: the procedure as a flat list of instructions
//   machine_state.hpp  the run's state: variable columns (data and buffers), ready lists,
//                      mailboxes, timing references; failing a run, charging memory
//   eval.hpp           expression evaluation over chunks of nodes, and the lvalues stored into
//   ports.hpp          delivery and ports: mailboxes, self-messages, timing dependencies
//   request_locks.hpp  the buffers outstanding nonblocking requests hold, and MPI's rules
//                      for them
//   requests.hpp       nonblocking requests: irecv, isend, wait, waitall
//   statements.hpp     statement execution: one instruction for a chunk of nodes
//   machine.hpp        the scheduler (lowest program point first) and the SliceMachine of
//                      partitioned runs; machine.cpp, and stream.cpp for the streamed side
// The value domains (domain.hpp, domain_sets.hpp) and the timing pass (timing.hpp) are rooms of
// their own beside it.
#pragma once

#include "exec/statements.hpp"

namespace collv::interp {

class Machine final : public Statements, public SliceMachine {
 public:
  using Statements::Statements;

  void run();

  // SliceMachine (partitioned runs; run() for a whole one).
  void start() override;
  std::vector<RemoteSend>& outbox() override { return outbox_; }
  void deliver(NodeId src, NodeId dst, std::uint16_t len, std::uint16_t line, std::uint32_t origin,
               Buffer&& payload, std::uint32_t& tid) override;
  StreamTiming& timing() override { return *stream_; }
  void set_horizon(std::uint32_t h) override;
  std::uint64_t held() const override { return held_.size(); }
  void run_receives() override;
  std::uint64_t unfinished() const override { return n_local_ - finished_; }
  std::vector<std::pair<NodeId, NodeId>> waiting() const override;
  SourceLoc blocked_at(NodeId v) const override { return prog_.code[blocked_pc_[v]].stmt->loc; }
  // Runs until every node finished or waits for a message (or the run fails).
  void run_local() override;
  // The run ended: a self-message never received is a runtime error (if nothing failed before).
  void check_self_messages() override;

 private:
  void report_deadlock();

  std::uint32_t horizon_ = 0;                           // set_horizon
  bool no_sends_ = false;                               // run_receives
  std::vector<std::pair<std::uint32_t, NodeId>> held_;  // (program point, node) at the horizon
  // Receivers woken by messages from other slices (deliver), a bit a node of the slice: they go
  // to their ready lists in node order when the slice runs next (wake_delivered), so those
  // batches need no sort (a round delivers in the senders' order).
  std::vector<std::uint64_t> delivered_;
  bool any_delivered_ = false;
  void wake_delivered();
  // Puts a batch (distinct nodes of this Machine) in node order: through a bit a node of the
  // slice when the batch is large (linear; std::sort took 6% of a partitioned process's time, its
  // batches mixing receivers woken by local sends and nodes released from the horizon), by
  // std::sort when it is small.
  void sort_batch(std::vector<NodeId>& batch);
  std::vector<std::uint64_t> sort_bits_;  // all zero between calls
};

// The end of a streamed run: the last transfers timed, the statistics and the cost as
// Trace::compute_stats gives them, and what the transfer checks cannot judge without the stored
// trace.
void finish_stream(Trace& tr, StreamTotals st, const RunOptions& opts);

}  // namespace collv::interp
