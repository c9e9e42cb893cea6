// Verification partitioned over processes (`mpirun -np K collv-mpi verify ...`,
// docs/partitioned.md): each process holds a slice of the processors, runs the executor on it and
// exchanges the transfers between slices in rounds; the per-node checks run where the buffers
// live and rank 0 combines the verdicts. This header is what the executor and the checks need of
// the other processes; the MPI implementation is src/cli/partition_mpi.cpp (collv-mpi only), so
// collv_lib never sees MPI.
//
//   collv::Trace t = collv::run_model_partitioned(model, topo, opts, part);   // exec/executor.hpp
//   std::vector<collv::CheckResult> r = collv::check_partitioned(t, part);    // same at rank 0
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "check/checks.hpp"
#include "topology/topology.hpp"
#include "verify/agreement.hpp"

namespace collv {

class Partition {
 public:
  virtual ~Partition() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // What alltoall received, in one buffer: process r's part is from(r).
  struct Received {
    std::string data;
    std::vector<std::size_t> at;  // size() + 1 offsets
    std::string_view from(int r) const {
      return std::string_view(data).substr(at[r], at[r + 1] - at[r]);
    }
  };
  // Collective operations: every process calls them together, in the same order.
  // One round's exchange: `send` holds, in rank order, counts[r] bytes for process r (packed in
  // place by the caller, in a buffer()); it is emptied, its memory given back, once sent. `sums`
  // (as long on every process) comes back summed element-wise over the processes, learnt with the
  // counts in the same operation. When sums[0] is then nonzero (a process failed), or no process
  // sends a byte, nothing else moves and nothing is received. Returns what each process sent to
  // this one.
  virtual Received exchange(std::string& send, const std::vector<std::size_t>& counts,
                            std::vector<std::uint64_t>& sums) = 0;
  // Every process's `mine`, in rank order.
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // Element-wise sum (or max) over the processes, in place.
  virtual void allreduce(std::vector<std::uint64_t>& v, bool max) = 0;

  // The exchange buffers, kept from one exchange to the next up to kKeepBytes each (a buffer
  // mapped afresh costs the kernel a page fault per 4 KiB written; a larger one is given back,
  // so the largest round's buffers do not stay for the rest of the run): an empty string,
  // with the capacity of one given back earlier when there is one.
  static constexpr std::size_t kKeepBytes = std::size_t{16} << 20;
  std::string buffer() {
    if (spare_.empty()) return {};
    std::string s = std::move(spare_.back());
    spare_.pop_back();
    return s;
  }
  // A buffer done with (a send buffer once sent, a receive buffer once read).
  void give_back(std::string&& s) {
    if (s.capacity() > kKeepBytes || s.capacity() == 0 || spare_.size() >= 2) {
      std::string().swap(s);
      return;
    }
    s.clear();
    spare_.push_back(std::move(s));
  }

  // The slice of process r among p processors: nodes lo(r) .. lo(r+1)-1, contiguous node ids,
  // sizes differing by at most one.
  NodeId slice_lo(std::uint64_t p, int r) const {
    return static_cast<NodeId>(p * static_cast<std::uint64_t>(r) /
                               static_cast<std::uint64_t>(size()));
  }
  int owner(NodeId v, std::uint64_t p) const {
    auto k = static_cast<std::uint64_t>(size());
    return static_cast<int>(((std::uint64_t{v} + 1) * k + p - 1) / p - 1);
  }

  // Statistics of this process (COLLV_PARTITION_STATS=1 prints them): bytes it sent to other
  // processes in exchanges, the exchanges (`rounds`, those that moved bytes among them), and
  // the collective operations it took part in.
  std::uint64_t bytes_sent = 0, rounds = 0, moved_rounds = 0, collectives = 0;
  std::uint64_t window_bytes = 0;  // the largest timing window (StreamTiming::bytes) of a run
  std::uint64_t remote_span = 0;   // the most senders' sides waiting at once (StreamTiming)
  // The processes compared their last status (partition_leave, or a disagreement found by
  // partition_checkpoint or partition_agree_arguments): no collective operation may follow.
  bool settled = false;

 private:
  std::vector<std::string> spare_;  // at most two (buffer, give_back)
};

// Thrown on the processes still at the start of a run when another has left (its command
// finished, or it failed alone: a file it could not read): every process ends with `what()` and
// code(). Not a UsageError: a verify sweep must not take it for one run's error and go on.
class PartitionLeft : public std::runtime_error {
 public:
  PartitionLeft(const std::string& what, int code) : std::runtime_error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

// Every process calls these together (verify/agreement.hpp says what they compare).
// The command lines (without the program's name): the error every process reports when two
// differ (then `settled`), nullopt when they agree.
std::optional<std::string> partition_agree_arguments(Partition& part,
                                                     const std::vector<std::string>& args);
// At the start of each run (`run` names it): throws PartitionLeft (and sets `settled`) when a
// process is not there because it left, or is about to start another run.
void partition_checkpoint(Partition& part, const std::string& run);
// When a process leaves (its command returned `mine.code`, or failed with `mine.error`): what the
// processes disagree on, nullopt when they all reached the same end. Sets `settled`; a no-op
// returning nullopt when it was set already.
std::optional<Disagreement> partition_leave(Partition& part, const RankStatus& mine);

// The checks of a partitioned run (every process calls it together with its slice Trace from
// run_model_partitioned): each process judges the per-node checks (postcondition, final-buffers)
// on its own nodes, the others on the run's global facts; rank 0 returns the combined results,
// equal to check_trace on the whole run. Other ranks return their own (partial) results.
std::vector<CheckResult> check_partitioned(const Trace& t, Partition& part);
// postcondition and final-buffers alone, combined the same way (`layout any`'s strict re-judging).
std::pair<CheckResult, CheckResult> node_checks_partitioned(const Trace& t, Partition& part);

}  // namespace collv
