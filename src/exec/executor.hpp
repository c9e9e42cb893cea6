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
// buffers"), with dom.elems() elements per input.
std::vector<Buffer> initial_inputs(Collective c, Domain& dom, std::uint32_t p, std::uint32_t root);

// Whether the model's `requires` holds on t with o's source and shift (true if it has none).
// nullopt: it cannot be evaluated on t (a name t does not define, arithmetic undefined there);
// run_model then throws the reason. Callers must not treat nullopt as "skip".
std::optional<bool> model_applies(const Model& m, const Topology& t, const RunOptions& o);

}  // namespace collv
