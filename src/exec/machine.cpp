// The executor's scheduler (see machine.hpp).
#include "exec/machine.hpp"

#include <algorithm>

#include "util/deadline.hpp"

namespace collv::interp {

void Machine::run() {
  start();
  run_local();
  if (tr_.failure.kind == RunFailure::Kind::None && finished_ < n_local_) report_deadlock();
}

// SliceMachine (partitioned runs; run() for a whole one).
void Machine::start() {
  auto& all = ready_[0];
  all.resize(n_local_);
  for (NodeId v = lo_; v < hi_; ++v) all[v - lo_] = v;
  mark_ready(0);
}

std::vector<std::pair<NodeId, NodeId>> Machine::waiting() const {
  std::vector<std::pair<NodeId, NodeId>> w;
  for (NodeId v = lo_; v < hi_; ++v)
    if (waiting_on_[v] != kNone) w.emplace_back(v, waiting_on_[v]);
  return w;
}

// Runs until every node finished or waits for a message (or the run fails).
void Machine::run_local() {
  wake_delivered();
  std::uint64_t op_budget = sat_mul(opts_.max_ops_per_node, std::max<std::uint64_t>(n_local_, 1));
  std::vector<NodeId> batch;
  for (;;) {
    // The lowest program point with waiting nodes. A heap of the non-empty points keeps this
    // O(log n): scanning ready_ from 0 made a run quadratic in the program's length.
    if (pending_.empty()) break;
    std::uint32_t pc = pending_.top();
    pending_.pop();
    queued_[pc] = 0;
    if (ready_[pc].empty()) continue;
    batch.clear();
    batch.swap(ready_[pc]);
    // The list gets batch's old storage; a large one is given back rather than left at this
    // point: swapped from point to point, every list kept the capacity of the largest batch
    // (about 64 bytes a node at star:9, a dozen points of 4 bytes a node and their doubling).
    if (ready_[pc].capacity() > kKeepReady) std::vector<NodeId>().swap(ready_[pc]);
    if (pc == prog_.code.size()) {  // finished
      finished_ += batch.size();
      continue;
    }
    if ((horizon_ != 0 || no_sends_) && prog_.code[pc].op == IOp::Send) {  // hold at the horizon
      std::size_t keep = 0;
      for (NodeId v : batch) {
        if (!no_sends_ && bound_.sends(v) < horizon_)
          batch[keep++] = v;
        else
          held_.emplace_back(pc, v);
      }
      batch.resize(keep);
      if (batch.empty()) continue;
    }
    sort_batch(batch);
    ops_ += batch.size();
    if ((++dispatches_ & 0xFFF) == 0) watch_.check();
    if ((dispatches_ & 0xFF) == 0 && deadline_passed())  // --timeout: exit 3
      check_deadline(fmt::format("running {} on {}", m_.header.name, topo_.spec()));
    if (ops_ > op_budget) {
      fail(RunFailure::Kind::OpLimit,
           fmt::format("the run exceeded {} operations per node on average (a loop that never "
                       "ends?); raise --max-ops to allow more",
                       opts_.max_ops_per_node));
      return;
    }
    for (std::size_t off = 0; off < batch.size(); off += kChunk) {
      std::size_t cnt = std::min(kChunk, batch.size() - off);
      try {
        exec(pc, batch.data() + off, cnt);
      } catch (const ModelRuntimeError& e) {
        fail(RunFailure::Kind::RuntimeError,
             fmt::format("{}: runtime error at node {} ({}): {}", e.loc.str(), e.node,
                         topo_.label(e.node), e.msg));
        return;
      }
      if (tr_.failure.kind != RunFailure::Kind::None) return;
    }
  }
}

void Machine::sort_batch(std::vector<NodeId>& batch) {
  if (std::is_sorted(batch.begin(), batch.end())) return;
  if (batch.size() < n_local_ / 64) {
    std::sort(batch.begin(), batch.end());
    return;
  }
  if (sort_bits_.empty()) sort_bits_.assign((std::size_t{n_local_} + 63) / 64, 0);
  for (NodeId v : batch) {
    const std::size_t i = v - lo_;
    sort_bits_[i / 64] |= std::uint64_t{1} << (i % 64);
  }
  std::size_t at = 0;
  for (std::size_t w = 0; w < sort_bits_.size(); ++w) {
    for (std::uint64_t bits = sort_bits_[w]; bits != 0; bits &= bits - 1)
      batch[at++] =
          static_cast<NodeId>(lo_ + w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
    sort_bits_[w] = 0;
  }
  COLLV_ASSERT(at == batch.size());  // the nodes were distinct
}

void Machine::report_deadlock() {
  std::vector<NodeId> waiting;
  for (NodeId v = lo_; v < hi_; ++v)
    if (waiting_on_[v] != kNone) waiting.push_back(v);
  COLLV_ASSERT(!waiting.empty());
  // Before the move: the order in which arguments are evaluated is unspecified (clang moved
  // `waiting` first and read front() of an empty vector; the fuzz_run harness found it).
  const auto at = blocked_at(waiting.front());
  tr_.failure = deadlock_failure(
      topo_, std::move(waiting), [&](NodeId v) { return waiting_on_[v]; }, at);
}

// The run ended: a self-message never received is a runtime error (if nothing failed before).
void Machine::check_self_messages() {
  if (has_nb_) check_requests();
  if (tr_.failure.kind == RunFailure::Kind::None)
    if (auto self = unreceived_self()) {
      tr_.failure.kind = RunFailure::Kind::RuntimeError;
      tr_.failure.message = fmt::format(
          "{}: runtime error at node {} ({}): a message the node sent to itself is never "
          "received (a send to oneself needs its matching receive)",
          self->second.str(), self->first, topo_.label(self->first));
    }
}

}  // namespace collv::interp
