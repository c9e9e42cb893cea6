// The Trace: a schedule as the executor (or, later, a solver) produced it. It is the common
// currency of collv: checkers judge Traces, renderers draw them, JSON stores them.
//
//   collv::Trace t = collv::run_model(model, topo, opts);
//   t.steps;                     // the largest step of any transfer
//   t.transfers[0].src;          // who sent the first recorded transfer
//   t.route(t.transfers[0]);     // the nodes it passed, endpoints included
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "exec/domain.hpp"
#include "lang/ast.hpp"
#include "topology/topology.hpp"
#include "util/memory.hpp"
#include "util/smallvec.hpp"

namespace collv {

using Buffer = SmallVec<Item, 2>;

// The machine's port model, a property of a run (docs/language.md, "When a transfer happens").
// Single: in every step a node sends at most one and receives at most one transfer (full duplex).
// All: in every step at most one transfer goes from a node to each destination.
enum class PortModel { Single, All };
const char* port_model_name(PortModel m);  // "single", "all"

struct Transfer {
  std::uint32_t step;
  NodeId src, dst;
  std::uint32_t payload_begin;  // into Trace::payload
  std::uint16_t payload_len;    // items carried
  std::uint16_t line;           // source line of the send statement
};

// Why the run stopped early, if it did.
struct RunFailure {
  enum class Kind { None, Deadlock, StepLimit, OpLimit, RuntimeError } kind = Kind::None;
  std::string message;                // one line, with file:line:col where there is one
  std::vector<NodeId> waiting_cycle;  // Deadlock: a -> b means a waits for b; closed if a cycle
  bool cycle_closed = false;          // false: the chain ends at a node that finished
  // Deadlock of the ports in a nonblocking model whose cycle passes through a data dependency
  // collv over-approximates (TimingOutcome::approximate): a schedule may exist (inconclusive).
  bool order_unexplored = false;
  std::vector<NodeId> waiting;  // Deadlock: every node left waiting
  // Deadlock of the ports (--port single): every value was computed and every message received,
  // but no order of the steps exists; the steps assigned are not a schedule.
  bool ports = false;
};

struct StepStats {
  std::uint32_t transfers = 0;
  std::uint32_t max_link_items = 0;  // L(s): largest number of items on one directed link
  std::uint32_t max_link_transfers = 0;
};

inline constexpr std::uint32_t kNoWordsClaim = 0xFFFFFFFFu;

struct Trace {
  std::string model_name, model_file;
  Collective collective = Collective::Allreduce;
  OperatorClass op_class = OperatorClass::Associative;
  bool nodup_claimed = true;  // the model's header claims NODUP
  // allgather/gather/alltoall outputs judged up to order (`layout any`), not by MPI's layout
  bool layout_any = false;
  std::uint32_t count = 1;  // the run's `count` (--count)
  Topology topology = Topology::parse("line:1");
  std::shared_ptr<Domain> domain;
  std::uint32_t root = 0;              // source of rooted collectives
  std::int64_t shift = 1;              // q of a shift
  PortModel port = PortModel::Single;  // the port model the steps were assigned under

  // A streamed run (RunOptions::stream) keeps no transfers: `transfers`, `payload`, `events` and
  // `unreceived` are empty, and steps, per_step and the cost come from the run itself. The
  // transfer checks read what the run established as it went (check_trace).
  bool streamed = false;
  std::uint64_t streamed_transfers = 0;
  // Streamed runs: why the transfer checks cannot be judged without the stored trace (transfers
  // never received, a cycle of port orders); empty if they can.
  std::string stream_incomplete;

  std::vector<Transfer> transfers;  // in the order they were issued
  // Barrier runs only: every send (transfer id << 1) and receive ((id << 1) | 1) in the order the
  // executor performed them, a causal order; the barrier postcondition replays it.
  std::vector<std::uint32_t> events;
  std::vector<Item> payload;
  // Transfers may share payload items (the executor records a payload equal to an earlier one
  // once: payload_begin then points into the earlier transfer's items). A reader that keeps a
  // table per carried item, one entry per transfer and position, indexes it by payload_slots().
  bool payload_shared = false;
  std::vector<Buffer> final_output;   // per processor: the `output` variable at the end
  std::vector<Buffer> initial_input;  // per processor: the `input` variable at the start
  // A slice of a partitioned run (verify/partition.hpp): final_output and initial_input hold
  // nodes slice_base .. slice_base + final_output.size() - 1 only, and slice_first_output node
  // 0's final output (final-buffers compares every node with it). Unset: every node.
  std::optional<NodeId> slice_base;
  Buffer slice_first_output;
  // Transfers that were sent but never received (indices into transfers, ascending). Their items
  // never reach the receiver; the `match` check reports them.
  std::vector<std::uint32_t> unreceived;
  RunFailure failure;

  std::uint32_t steps = 0;
  std::vector<StepStats> per_step;  // index s-1 for step s
  double cost_ts = 0, cost_tw = 0;  // coefficients of ts and tw*m

  std::optional<std::int64_t> claimed_steps;
  // The model's step claim when it is not a whole number at this size (claimed_steps is then
  // empty): check_steps fails it, "the model claims 4.4 steps".
  std::optional<double> claimed_steps_real;
  std::optional<double> claimed_ts, claimed_tw;
  // The claims are bounds (`steps at most`, `cost at most`): the run may take fewer steps, or
  // cost at most the claimed ts and tw coefficients.
  bool steps_at_most = false, cost_at_most = false;

  // Read from a schedule file (trace_from_json): its payloads and final buffers are claims, and
  // the dataflow check decides fingerprint items by searching sums of held values (a run's own
  // values are made of what the node holds by construction).
  bool from_file = false;
  // A schedule file's reading (src/import), which both engines judge by. file_expected: the
  // output the file's runtime defines for each processor (its layout, in place, chunks per rank,
  // the collective the file names; nullopt: not judged), which expected_outputs() returns in
  // place of the collective's MPI definition; null for models and collv's own JSON.
  // file_not_checked: the checks the format leaves not checked, each with the reason
  // (not_checked_by_format in import.hpp), so that the SMT engine says so too.
  std::shared_ptr<const std::vector<std::optional<Buffer>>> file_expected;
  std::vector<std::pair<std::string, std::string>> file_not_checked;
  // Message size (docs/trace-format.md): the claim that no transfer carries more than this many
  // words (an item is one word: a reduction value, an element), and per transfer (indexed like
  // transfers; empty when no transfer claims one) the words it claims to carry, kNoWordsClaim
  // where it claims nothing. The cost check judges both against the payloads.
  std::optional<std::uint64_t> words_per_message;
  std::vector<std::uint32_t> claimed_words;
  // The step count and cost a schedule file recorded (`steps`, `cost`): claims about its
  // transfers, judged by the steps and cost checks.
  std::optional<std::int64_t> recorded_steps;
  std::optional<double> recorded_ts, recorded_tw;
  // Other statistics the file recorded (`transfer_count`, `per_step`) where they disagree with
  // its transfers, each with its JSON path: the steps check reports them.
  std::vector<std::string> recorded_disagree;
  // `final` entries that name a node a second time, each with its JSON path: the postcondition
  // check fails on them (the node's output is its first entry's).
  std::vector<std::string> final_twice;

  // --port all runs (exec/timing.cpp): transfers the schedule placed after their ready step
  // because another sender's transfer held a link of their route in that step. Then the schedule
  // is one of several, its step count an upper bound, and a steps or cost claim it exceeds is
  // unknown rather than failed (docs/language.md, "Steps").
  std::uint32_t link_waits = 0;
  // The model's `port single` line: its steps and cost claims are single-port formulas, not
  // checked under --port all.
  bool claims_single_port = false;
  std::vector<NodeId> route(const Transfer& t) const { return topology.route(t.src, t.dst); }
  // The nodes whose directed links a transfer crosses, as the congestion check and the timing
  // pass (--port all) count them: src, dst for neighbours, else its route (docs/topologies.md).
  std::vector<NodeId> link_path(const Transfer& t) const {
    return topology.adjacent(t.src, t.dst) ? std::vector<NodeId>{t.src, t.dst} : route(t);
  }
  // Transfer indices sorted by (step, src, dst, issue order): the order people read schedules in.
  std::vector<std::uint32_t> ordered_transfers() const;
  // Recomputes steps, per_step and the cost coefficients from the transfers.
  void compute_stats();
};

// The Trace as JSON (docs/trace-format.md). Transfers are listed only if there are at most
// `max_transfers` of them (0 = no limit).
nlohmann::json trace_to_json(const Trace& t, std::size_t max_transfers = 0);
// The inverse of trace_to_json: a schedule written by `collv run --json`, `collv synth --json`,
// or by another tool in the same format (docs/trace-format.md), read back so that the checkers
// and the renderer can judge and draw it. The file must list its transfers. Throws UsageError
// naming `source` and the offending key for malformed input.
// Before allocating, the reader checks what the file needs (inputs and expected outputs of the
// collective, steps, items) against `max_memory` and throws LimitError with the numbers.
Trace trace_from_json(const nlohmann::json& j, const std::string& source,
                      std::uint64_t max_memory = memory_limit());
Trace read_trace_file(const std::string& path, std::uint64_t max_memory = memory_limit());

// Bytes that judging a collective needs whatever the schedule: the inputs, the final and the
// expected outputs, and in the exact and ordered domains the interned values they hold (for
// reductions in the ordered domain, one sequence of p terms per node). A conservative estimate
// used before anything is allocated; UINT64_MAX if it overflows.
std::uint64_t collective_bytes(Collective c, DomainKind k, std::uint64_t p, std::uint64_t elems);
// How many slots a checker's table indexed by item id gets: the domain's bound on ids
// (Domain::num_items), at most a few per item occurrence in the trace (ids are a set's number
// and an element, so most ids below the bound may be no item the trace holds).
std::uint64_t item_table_slots(const Trace& t);
// Bytes per step (up to the largest step) that the statistics and the checks hold.
inline constexpr std::uint64_t kBytesPerStep = 64;

// Per transfer, the first of its own positions ("slots") for tables kept per carried item: its
// payload_begin where no transfers share payload items, else the sum of the payload_len of the
// transfers before it. `total` gets the number of slots. Throws LimitError past 2^32 slots.
std::vector<std::uint32_t> payload_slots(const Trace& t, std::uint64_t* total = nullptr);
// The items the transfers carry, shared ones counted per transfer (sum of payload_len).
std::uint64_t payload_items(const Trace& t);

std::string buffer_to_string(const Trace& t, const Buffer& b);
// The items transfer x carries, as buffer_to_string prints them.
std::string payload_to_string(const Trace& t, const Transfer& x);
// The schedule as people read it: "step s" lines, then "  src -> dst [via ...]  [items]".
void print_schedule(const Trace& t, std::ostream& out);

}  // namespace collv
