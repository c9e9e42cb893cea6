// The exhaustive executor: runs a model on every processor of a topology and records the Trace.
// It computes values only; the steps are assigned afterwards by the timing pass
// (exec/timing.hpp) under RunOptions::port (docs/language.md, "When a transfer happens").
//
//   collv::RunOptions o;  o.domain = collv::DomainKind::Ordered;
//   collv::Trace t = collv::run_model(model, collv::Topology::parse("hypercube:3"), o);
//   if (t.failure.kind != collv::RunFailure::Kind::None) { /* deadlock, limit, runtime error */ }
//
// All processors run each statement together (a batch per program point), so a statement is
// dispatched once for thousands of nodes; nodes that take different branches or wait on a
// receive are regrouped by program point, lowest first, so diverged groups meet again.
#pragma once

#include <cstdint>
#include <functional>

#include "exec/trace.hpp"
#include "lang/ast.hpp"
#include "topology/topology.hpp"

namespace collv {

inline constexpr NodeId kAllNodes = 0xFFFFFFFFu;  // "every node" / "no node"

struct RunOptions {
  DomainKind domain = DomainKind::Exact;
  std::uint32_t root = 0;  // source/root of rooted collectives
  std::int64_t shift = 1;  // q of a circular shift
  // `count`: elements per input (broadcast, reduce, allreduce, scan, allgather, gather, shift)
  // or per block (reduce-scatter, scatter, alltoall: p blocks), unless `elements` says otherwise.
  std::uint32_t count = 1;
  std::uint64_t seed = 1;  // fingerprint weights
  // The machine's port model: how the timing pass (exec/timing.hpp) assigns steps.
  PortModel port = PortModel::Single;
  std::uint32_t max_steps = 100000;
  std::uint64_t max_ops_per_node = 1000000;
  std::uint64_t max_memory = 8ULL << 30;
  // Streamed run (exec/timing.hpp, StreamTiming): the transfers are timed while the run goes on
  // and not kept; the Trace has the steps, per-step statistics, cost, buffers and failure only
  // (Trace::streamed). Single-port only, on topologies without bandwidths, every transfer between
  // neighbours, no barrier: run_model throws StreamRefused otherwise (On), or before the run
  // starts keeps the trace (Auto). Auto streams when the stored trace would take more than a
  // quarter of max_memory.
  enum class Stream {
    Off,
    On,
    Auto
  } stream = Stream::Off;  // bytes; estimated up front and watched while running
  // Called now and then on long runs (about every 64K transfers) with the transfers recorded so
  // far and the largest step reached; the CLI shows it as a progress line. May be empty.
  std::function<void(std::uint64_t transfers, std::uint32_t step)> progress;
  // Called for every `+` of two items, at the node that makes it, in the node's program order,
  // with the left and right operands (`collv mpi --model` compares them with what a library
  // combines). May be empty.
  std::function<void(NodeId node, Item left, Item right)> on_combine;
};

// Throws ModelError (names the topology lacks; a header formula that cannot be evaluated on t, at
// its position), UsageError (bad root; requires not met, naming the conjunct that fails) or
// LimitError (too large). Deadlocks, step limits and runtime errors of the model are not thrown:
// they are reported in Trace::failure with the partial trace.
Trace run_model(const Model& m, const Topology& t, const RunOptions& opts);

// A streamed run cannot follow this model (what() says why); the stored run can.
class StreamRefused : public LimitError {
 public:
  using LimitError::LimitError;
};

// Every processor's input buffer as the collective defines it (docs/language.md, "Initial
// buffers"), with dom.elems() elements per input; those of nodes lo .. hi-1 only if given;
// `count` gives the v-collectives' per-rank counts.
std::vector<Buffer> initial_inputs(Collective c, Domain& dom, std::uint32_t p, std::uint32_t root,
                                   NodeId lo = 0, NodeId hi = kAllNodes, std::uint32_t count = 0);

// ---- Partitioned runs (verify/partition.hpp drives them; docs/partitioned.md) ----

class StreamTiming;

// A send from this process's node to another process's (its payload travels with it).
struct RemoteSend {
  std::uint32_t tid;  // the transfer's id in this process's StreamTiming
  NodeId src, dst;
  std::uint16_t len, line;
  Buffer payload;
};

// The executor on one slice of the nodes, between exchanges with the other processes.
class SliceMachine {
 public:
  virtual ~SliceMachine() = default;
  virtual void start() = 0;  // every node of the slice at the program's start
  // Until each node finished, waits for a message or is held at the horizon, or a failure.
  virtual void run_local() = 0;
  // The same, but every node that reaches a send is held there (until set_horizon): the nodes
  // receive what was just delivered, and send nothing.
  virtual void run_receives() = 0;
  // Paces the slices (0: no horizon): a node whose next send would be its h+1-th waits at that
  // send (is held) until the horizon is raised. Without it a slice's nodes run many steps ahead of
  // the nodes they send to in other slices, and every transfer issued meanwhile waits in the
  // timing window for the laggards' receives (docs/partitioned.md, "Memory").
  virtual void set_horizon(std::uint32_t h) = 0;
  virtual std::uint64_t held() const = 0;         // nodes held at the horizon
  virtual std::vector<RemoteSend>& outbox() = 0;  // sends to other processes, to be exchanged
  // A message from another process's node src arrives for dst (`origin`: its id there); tid is
  // set to its id here.
  virtual void deliver(NodeId src, NodeId dst, std::uint16_t len, std::uint16_t line,
                       std::uint32_t origin, Buffer&& payload, std::uint32_t& tid) = 0;
  virtual StreamTiming& timing() = 0;
  virtual std::uint64_t unfinished() const = 0;  // nodes of the slice that did not finish
  // (node, the node it waits to receive from), for every node of the slice left waiting.
  virtual std::vector<std::pair<NodeId, NodeId>> waiting() const = 0;
  virtual SourceLoc blocked_at(NodeId v) const = 0;  // the receive a waiting node is at
  // The run ended: a message a node of the slice sent itself and never received is a runtime
  // error (unless the run failed before).
  virtual void check_self_messages() = 0;
};

// The run's totals of a streamed run, over every process of a partitioned one.
struct StreamTotals {
  std::uint64_t issued = 0, unreceived = 0, unresolved = 0;
  std::uint32_t steps = 0;
  std::vector<StepStats> per_step;
};

// What drives the rounds of a partitioned run: the slice of this process, and the rounds
// themselves (exchanges, global termination, a failure or deadlock made the same on every
// process); returns the run's totals.
class SliceDriver {
 public:
  virtual ~SliceDriver() = default;
  virtual NodeId lo(std::uint32_t p) const = 0;
  virtual NodeId hi(std::uint32_t p) const = 0;
  virtual StreamTotals drive(SliceMachine& m, Trace& tr) = 0;
};

// run_model on the slice `d` gives this process, driven by d. Streamed runs only: throws
// StreamRefused naming what the partitioned run does not follow (a run that would keep its
// trace). The Trace has the run's global facts from d and the initial and final buffers of the
// slice's nodes (Trace::slice_base).
Trace run_model_sliced(const Model& m, const Topology& t, const RunOptions& opts, SliceDriver& d);
// A partitioned run over `part` (verify/partitioned.cpp): every process calls it together.
class Partition;
Trace run_model_partitioned(const Model& m, const Topology& t, const RunOptions& opts,
                            Partition& part);

// The failure of a run whose nodes `waiting` (ascending) wait for ever: waits_for(v) is the node v
// waits to receive from (kNoNode if v is not waiting), `at` the receive the first one is at.
RunFailure deadlock_failure(const Topology& t, std::vector<NodeId> waiting,
                            const std::function<NodeId(NodeId)>& waits_for, const SourceLoc& at);

// Whether the model's `requires` holds on t with o's source and shift (true if it has none).
// nullopt: it cannot be evaluated on t (a name t does not define, arithmetic undefined there);
// run_model then throws the reason. Callers must not treat nullopt as "skip".
std::optional<bool> model_applies(const Model& m, const Topology& t, const RunOptions& o);

}  // namespace collv
