// The batched executor (see executor.hpp): run_model checks what a run needs (requires, the
// header's claims, the memory estimate), makes a Machine (exec/machine.hpp, the executor's rooms)
// on the nodes to run, runs it and times its transfers (exec/timing.hpp). The procedure is
// compiled to a flat list of instructions; each processor has a program point; all processors at
// the same point run its instruction together, chunk by chunk, with every variable stored as one
// column per slot.
#include "exec/executor.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>

#include <fmt/format.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "exec/machine.hpp"
#include "exec/timing.hpp"
#include "lang/check.hpp"
#include "util/deadline.hpp"
#include "util/memory.hpp"

namespace collv {

using namespace interp;  // the executor's rooms (exec/machine.hpp)

namespace {

// Elements per input: p for the collectives whose inputs are indexed by destination, else the
// header's `elements` (1 by default).
std::uint32_t elems_per_node(const Model& m, const Topology& t,
                             const std::map<std::string, double>& env, std::uint32_t count) {
  Collective c = m.header.collective;
  auto p = static_cast<std::uint64_t>(t.num_processors());
  if (c == Collective::ReduceScatter || c == Collective::Scatter || c == Collective::Alltoall) {
    if (p * count > 65535 && count > 1)
      throw LimitError(
          fmt::format("{} blocks of --count {} elements on {} are {} elements per "
                      "input, more than the 65,535 collv supports",
                      p, count, t.spec(), p * count));
    return static_cast<std::uint32_t>(p * count);
  }
  if (collective_is_v(c)) {
    // Elements per input (the domain's contributions per node): the largest input.
    std::uint64_t most = 0, total = 0;
    for (std::uint64_t j = 0; j < p; ++j) total += static_cast<std::uint64_t>(v_count(count, j));
    for (std::uint64_t i = 0; i < p; ++i) {
      std::uint64_t e = 0;
      if (c == Collective::Alltoallv)
        for (std::uint64_t j = 0; j < p; ++j)
          e += static_cast<std::uint64_t>(v_pair_count(count, i, j));
      else if (c == Collective::Allgatherv || c == Collective::Gatherv)
        e = static_cast<std::uint64_t>(v_count(count, i));
      else
        e = total;  // scatterv's root, reduce-scatterv's every rank
      most = std::max(most, e);
      if (c == Collective::Scatterv || c == Collective::ReduceScatterv) break;
    }
    if (most > 65535)
      throw LimitError(fmt::format(
          "a {} of --count {} on {} has inputs of {} elements, more than the 65,535 collv "
          "supports",
          collective_name(c), count, t.spec(), most));
    return static_cast<std::uint32_t>(most);
  }
  if (!m.header.elements) return count;
  double e =
      header_value(m.header, *m.header.elements, env, "'elements' on " + t.spec(), &t).approx;
  if (!(e >= 1 && e <= 65535) || e != std::floor(e))
    throw ModelError(m.header.elements->loc,
                     fmt::format("'elements' must be a whole number from 1 to 65535; on {} it "
                                 "is {}",
                                 t.spec(), e));
  return static_cast<std::uint32_t>(e);
}

// The operands of a `requires`'s top-level `and`s, in order.
void conjuncts(const Expr& e, std::vector<const Expr*>& out) {
  if (e.kind == ExprKind::Binary && e.op == Op::And) {
    conjuncts(*e.args[0], out);
    conjuncts(*e.args[1], out);
  } else {
    out.push_back(&e);
  }
}

// "source = 1, p = 8": the values of the names e uses.
std::string values_of_names(const Expr& e, const std::map<std::string, double>& env) {
  std::vector<std::string> names;
  std::vector<const Expr*> stack{&e};
  while (!stack.empty()) {
    const Expr* x = stack.back();
    stack.pop_back();
    if (x->kind == ExprKind::Name && std::find(names.begin(), names.end(), x->name) == names.end())
      names.push_back(x->name);
    for (auto it = x->args.rbegin(); it != x->args.rend(); ++it) stack.push_back(it->get());
  }
  std::string out;
  for (const auto& n : names) {
    auto it = env.find(n);
    if (it != env.end()) out += fmt::format("{}{} = {}", out.empty() ? "" : ", ", n, it->second);
  }
  return out;
}

// Assigns the steps (exec/timing.hpp) and reports what the machine model adds to the run: a
// cycle of port orders (no schedule exists) or a schedule longer than the step limit.
void apply_timing(Trace& tr, const TimingRecord& rec, const RunOptions& opts) {
  TimingOutcome o = assign_steps(tr, rec, opts.port);
  if (tr.failure.kind != RunFailure::Kind::None) return;
  if (!o.cycle.empty()) {
    RunFailure& f = tr.failure;
    f.kind = RunFailure::Kind::Deadlock;
    f.ports = true;
    std::string chain;
    for (auto t : o.cycle) {
      const Transfer& x = tr.transfers[t];
      chain += fmt::format("{}{} -> {} (line {})", chain.empty() ? "" : ", then ",
                           tr.topology.label(x.src), tr.topology.label(x.dst), x.line);
      // The nodes whose ports are involved, in the order the cycle meets them.
      for (NodeId v : {x.src, x.dst})
        if (std::find(f.waiting_cycle.begin(), f.waiting_cycle.end(), v) == f.waiting_cycle.end())
          f.waiting_cycle.push_back(v);
    }
    f.cycle_closed = true;
    f.waiting = f.waiting_cycle;
    std::sort(f.waiting.begin(), f.waiting.end());
    f.waiting.erase(std::unique(f.waiting.begin(), f.waiting.end()), f.waiting.end());
    if (rec.posted.empty())
      f.message = fmt::format(
          "{}: deadlock of the ports (--port single): no schedule takes every node's sends and "
          "receives in program order; each of these transfers must come before the next, and "
          "the last before the first: {} (a receiver takes them in an order their senders cannot "
          "send them in; --port all has no such order)",
          tr.model_file, chain);
    else  // a nonblocking model: receives outstanding at once may complete in any order
      f.message = fmt::format(
          "{}: deadlock of the ports (--port single): no schedule takes every node's sends in "
          "program order and its receives in any order its waits allow; each of these transfers "
          "must come before the next, and the last before the first: {} (--port all has no such "
          "order)",
          tr.model_file, chain);
    // Through a data dependency collv over-approximates, the data may not need the receive
    // that closes the cycle: a schedule may exist, so the run is not judged.
    if (o.approximate) {
      f.order_unexplored = true;
      f.message +=
          "; the cycle passes through the data of a receive completed no later than the one a "
          "sent value depends on, which collv counts as needed (one dependency per variable): "
          "the value may not need it, so MPI may complete this run (inconclusive, not a "
          "deadlock found)";
    }
    return;
  }
  std::uint32_t steps = 0;
  for (const auto& x : tr.transfers) steps = std::max(steps, x.step);
  if (steps > opts.max_steps) {
    tr.failure.kind = RunFailure::Kind::StepLimit;
    tr.failure.message = fmt::format(
        "{}: the schedule takes {} steps, past the step limit {} (raise --max-steps to allow "
        "more)",
        tr.model_file, steps, opts.max_steps);
  }
}

std::map<std::string, double> header_env(const Topology& t, const RunOptions& o) {
  std::map<std::string, double> env;
  for (const auto& [k, v] : topology_env(t)) env[k] = static_cast<double>(v);
  env["q"] = static_cast<double>(o.shift);
  env["count"] = static_cast<double>(o.count);
  env["source"] = env["root"] = o.root;
  return env;
}

}  // namespace

RunFailure deadlock_failure(const Topology& t, std::vector<NodeId> waiting,
                            const std::function<NodeId(NodeId)>& waits_for, const SourceLoc& at) {
  RunFailure f;
  f.kind = RunFailure::Kind::Deadlock;
  f.waiting = std::move(waiting);
  // Follow "waits for" edges from the first waiting node until a node repeats (a cycle) or the
  // chain reaches a node that is not waiting (it finished without sending).
  std::unordered_map<NodeId, std::size_t> seen_at;
  std::vector<NodeId> chain;
  NodeId v = f.waiting.front();
  while (v != kNone && !seen_at.count(v)) {
    seen_at[v] = chain.size();
    chain.push_back(v);
    v = waits_for(v);
  }
  if (v != kNone) {
    f.waiting_cycle.assign(chain.begin() + static_cast<std::ptrdiff_t>(seen_at[v]), chain.end());
    f.cycle_closed = true;
  } else {
    f.waiting_cycle = chain;
    f.cycle_closed = false;
  }
  // When the chain is not closed its last node is the one that finished.
  std::string desc;
  for (std::size_t i = 0; i < f.waiting_cycle.size(); ++i)
    desc += (i ? " -> " : "") + t.label(f.waiting_cycle[i]);
  desc += f.cycle_closed ? " -> " + t.label(f.waiting_cycle.front()) : " (finished)";
  f.message = fmt::format("{}: deadlock: {} of {} nodes wait for ever; waiting chain: {}", at.str(),
                          f.waiting.size(), t.num_processors(), desc);
  return f;
}

std::vector<Buffer> initial_inputs(Collective c, Domain& dom, std::uint32_t p, std::uint32_t root,
                                   NodeId lo, NodeId hi, std::uint32_t count) {
  hi = std::min(hi, p);
  std::vector<Buffer> in(hi - lo);
  std::uint32_t e = dom.elems();
  for (NodeId v = lo; v < hi; ++v) {
    // The v-collectives: rank v's own elements x[v][0 ..], as many as its counts say.
    std::int64_t own = -1;
    switch (c) {
      case Collective::Allgatherv:
      case Collective::Gatherv:
        own = v_count(count, v);
        break;
      case Collective::Scatterv:
        own = v == root ? e : 0;
        break;
      case Collective::ReduceScatterv:
        own = e;
        break;
      case Collective::Alltoallv:
        own = 0;
        for (std::uint32_t j = 0; j < p; ++j) own += v_pair_count(count, v, j);
        break;
      default:
        break;
    }
    if (own >= 0) {
      for (std::int64_t j = 0; j < own; ++j)
        in[v - lo].push_back(dom.leaf(v, static_cast<std::uint32_t>(j)));
      continue;
    }
    switch (c) {
      case Collective::Broadcast:
        if (v == root)
          for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
        break;
      case Collective::Scatter:
        if (v == root)
          for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
        break;
      case Collective::ReduceScatter:
      case Collective::Alltoall:
        for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
        break;
      case Collective::Barrier:  // no data
        break;
      default:
        for (std::uint32_t j = 0; j < e; ++j) in[v - lo].push_back(dom.leaf(v, j));
    }
  }
  return in;
}

std::optional<bool> model_applies(const Model& m, const Topology& t, const RunOptions& o) {
  if (!m.header.requires_) return true;
  try {
    return header_value(m.header, *m.header.requires_, header_env(t, o), "'requires'", &t).approx !=
           0;
  } catch (const ModelError&) {
    return std::nullopt;  // run_model reports why
  }
}

// The run; on a slice of the nodes driven by `drv` if given (a partitioned run).
Trace run_model_once(const Model& m, const Topology& t, const RunOptions& opts,
                     SliceDriver* drv = nullptr) {
  if (t.num_processors() == 0) throw UsageError("the topology has no processors");
  check_names_on(m, t);
  auto p = static_cast<std::uint32_t>(t.num_processors());
  if (collective_is_rooted(m.header.collective) && opts.root >= p)
    throw UsageError(
        fmt::format("--source {} is not a processor of {} (0 .. {})", opts.root, t.spec(), p - 1));
  auto env = header_env(t, opts);
  if (m.header.requires_) {
    // A name the topology does not define, or arithmetic undefined here, is a ModelError at its
    // position; a false condition is refused naming the conjunct that fails.
    std::string what = "'requires' on " + t.spec();
    if (header_value(m.header, *m.header.requires_, env, what, &t).approx == 0) {
      std::vector<const Expr*> parts;
      conjuncts(*m.header.requires_, parts);
      const Expr* failing = m.header.requires_.get();
      for (const Expr* c : parts)
        if (header_value(m.header, *c, env, what, &t).approx == 0) {
          failing = c;
          break;
        }
      std::string vals = values_of_names(*failing, env);
      throw UsageError(fmt::format("{}: model '{}' requires {}, which does not hold on {}{}",
                                   expr_start(*failing).str(), m.header.name,
                                   expr_to_string(*failing), t.spec(),
                                   vals.empty() ? "" : " (" + vals + ")"));
    }
  }
  Trace tr;
  tr.model_name = m.header.name;
  tr.model_file = m.file;
  tr.collective = m.header.collective;
  tr.op_class = m.header.op_class;
  tr.nodup_claimed = m.header.nodup;
  tr.layout_any = m.header.layout_any;
  tr.count = opts.count;
  tr.topology = t;
  tr.root = opts.root;
  tr.shift = opts.shift;
  std::uint32_t elems = elems_per_node(m, t, env, opts.count);

  // Claimed step count and cost, evaluated on this topology. A formula that cannot be evaluated
  // here throws ModelError (never a silently unchecked claim). A step claim that is not a whole
  // number is kept as it is, and check_steps fails it: it is never rounded.
  tr.claims_single_port = m.header.claims_single_port;
  if (m.header.steps) {
    // Evaluated exactly: `steps 2^70 mod 3` is 1 (double arithmetic gave 0).
    HeaderNumber s = header_value(m.header, *m.header.steps, env, "'steps' on " + t.spec(), &t);
    tr.steps_at_most = m.header.steps_at_most;
    std::optional<std::int64_t> whole =
        s.exact && s.value.is_integer() ? s.value.num.to_i64() : std::nullopt;
    if (!whole && tr.steps_at_most && s.exact && s.value.is_integer() && s.value.num.sign() > 0)
      whole = std::numeric_limits<std::int64_t>::max();  // a bound beyond 2^63 holds for any run
    if (whole)
      tr.claimed_steps = *whole;
    else
      tr.claimed_steps_real = s.approx;  // not a whole number, or beyond 2^63: it cannot hold
  }
  if (m.header.cost) {
    // m is the sources' message size in items: the run's count (per block for the blocked
    // collectives), or 1 when the model sets `elements` itself (its formula then counts items).
    auto ce = env;
    ce["m"] = m.header.elements ? 1.0 : static_cast<double>(opts.count);
    tr.cost_at_most = m.header.cost_at_most;
    CostClaim c = header_cost(m.header, *m.header.cost, ce, "'cost' on " + t.spec(), &t);
    tr.claimed_ts = c.ts.approx;
    tr.claimed_tw = c.tw.approx;
  }

  // Up-front memory estimate: variable columns; the trace if the claimed step count holds
  // (single-port: at most p transfers per step), and for reductions in the exact and ordered
  // domains a new interned value per transfer; the inputs, outputs and expected outputs of the
  // collective (collective_bytes). The run is watched as well (MemoryWatch), so an estimate that
  // is too low still stops near the limit.
  Collective coll = m.header.collective;
  bool reduction = coll == Collective::Reduce || coll == Collective::Allreduce ||
                   coll == Collective::Scan || coll == Collective::Exscan ||
                   coll == Collective::ReduceScatter || coll == Collective::ReduceScatterv;
  // Per node: a data variable's buffer (DataCol: 9 bytes while it holds one item; a longer one
  // 24 more in the side table, 8 bytes an item beyond two) and timing tag (8); an integer and its
  // assigned flag (IntCol: 5 bytes while its values fit in 32 bits, 9 once widened); an array's
  // vector (24, its elements are charged as they are made); about 56 bytes of the executor's own
  // (wait state, mailbox, ready lists, counters). Measured (2026-11-26): 302 bytes a node for
  // allreduce_star on star:10, streamed, with the link table (about 40 of them); this estimate
  // gives 318.
  std::uint64_t per_node = 56;
  for (std::size_t i = 0; i < m.var_names.size(); ++i) {
    Type ty = i < m.var_types.size() ? m.var_types[i] : Type::Int;
    per_node += ty == Type::Data
                    ? 17 + (elems > 1 ? 24 : 0) + (elems > 2 ? 8 * std::uint64_t{elems} : 0)
                : ty == Type::IntArray ? 32
                                       : 5;
  }
  if (uses_nonblocking(m.body)) per_node += 256;  // the request table, without its requests
  std::uint64_t est = sat_mul(p, per_node);
  std::uint64_t stored = 0;  // the trace, if it is kept
  if (tr.claimed_steps && *tr.claimed_steps > 0) {
    // The payload: where every send sends a whole data variable, a message carries a buffer
    // (elems items: MPICH's recursive doubling at p = count = 4,096 stores 1.6 GB of it); where
    // some send a slice (Open MPI's ring), one item a message is counted, a lower bound (the
    // run's MemoryWatch stops it near the limit if it is too low).
    std::uint64_t whole = 0, other = 0;
    count_sends(m.body, whole, other);
    const std::uint64_t items = whole > 0 && other == 0 ? elems : 1;
    std::uint64_t per_transfer = sat_add(sizeof(Transfer) + 16,  // + timing records (timing.hpp)
                                         sat_mul(items, sizeof(Item)));
    if (reduction && opts.domain != DomainKind::Fingerprint) per_transfer += 96;
    // A run never takes more than --max-steps steps, whatever the claim (`at most 2^70`).
    auto steps =
        std::min<std::uint64_t>(static_cast<std::uint64_t>(*tr.claimed_steps), opts.max_steps);
    stored = sat_mul(sat_mul(p, steps), per_transfer);
  }
  std::string unstreamable;
  if (opts.port != PortModel::Single)
    unstreamable = "a streamed run times single-port runs only (--port all keeps the trace)";
  else if (t.declares_bandwidth())
    unstreamable = fmt::format(
        "{} declares link bandwidths; judging chunks against them needs the stored trace",
        t.spec());
  else if (uses_nonblocking(m.body))
    unstreamable =
        "the receive ports of irecvs are ordered when the run ends; a nonblocking model needs "
        "the stored trace";
  else if (m.header.collective == Collective::Barrier)
    unstreamable =
        "the barrier's postcondition replays every send and receive; it needs the "
        "stored trace";
  bool stream = opts.stream == RunOptions::Stream::On ||
                (opts.stream == RunOptions::Stream::Auto && unstreamable.empty() &&
                 stored > opts.max_memory / 4);
  if (stream && !unstreamable.empty()) throw StreamRefused(unstreamable);
  // A partitioned run is a streamed one: its nodes and their transfers are spread over the
  // processes (docs/partitioned.md). The estimate is of this process's slice.
  const NodeId lo = drv ? drv->lo(p) : 0, hi = drv ? drv->hi(p) : p;
  if (drv && !stream)
    throw StreamRefused(
        !unstreamable.empty()
            ? "partitioned verify follows streamed runs only, and " + unstreamable
            : fmt::format("partitioned verify follows streamed runs only, and this run would keep "
                          "its trace (--stream {}{}); use --stream on",
                          opts.stream == RunOptions::Stream::Off ? "off" : "auto",
                          opts.stream == RunOptions::Stream::Auto
                              ? ": it fits in a quarter of --max-memory"
                              : ""));
  if (drv) {
    p = hi - lo;
    est = sat_mul(p, per_node);
  }
  // Streamed: the window of waiting transfers, about one per processor and a quarter of slack
  // (48 bytes each), and two timing references per node.
  est = sat_add(est, stream ? sat_mul(p, 60 + 16) : stored);
  est = sat_add(est, collective_bytes(coll, opts.domain, p, elems));
  if (est > opts.max_memory)
    throw LimitError(fmt::format(
        "running {} on {} ({} processors{}, {} domain{}) needs about {}, more than the memory "
        "limit of {}; use a smaller topology{}, or raise --max-memory",
        m.header.name, t.spec(), p,
        tr.claimed_steps ? fmt::format(", {} claimed steps", *tr.claimed_steps) : "",
        domain_name(opts.domain), stream ? ", streamed" : "", mib_text(est),
        mib_text(opts.max_memory),
        opts.domain != DomainKind::Fingerprint ? ", the fingerprint domain"
        : !stream && unstreamable.empty()      ? ", --stream on"
                                               : ""));
  // Single-port: at most p transfers per step. Reserving both arrays avoids copying gigabytes
  // as they grow on large runs (star:10 records 163 million transfers).
  if (!stream && tr.claimed_steps && *tr.claimed_steps > 0 && *tr.claimed_steps < (1LL << 30)) {
    auto n = static_cast<std::size_t>(p) * static_cast<std::size_t>(*tr.claimed_steps);
    tr.transfers.reserve(n);
    if (elems == 1) tr.payload.reserve(n);
  }

  p = static_cast<std::uint32_t>(t.num_processors());
  tr.domain = make_domain(opts.domain, p, elems, opts.seed);
  MemoryWatch watch(fmt::format("running {} on {}", m.header.name, t.spec()), opts.max_memory);
  tr.domain->set_watch(&watch);
  struct Unwatch {  // the Trace outlives the watch
    Domain* d;
    ~Unwatch() { d->set_watch(nullptr); }
  } unwatch{tr.domain.get()};
  Machine mach(m, t, opts, tr, watch, lo, hi);
  mach.dom_ = tr.domain.get();
  if (stream) mach.start_stream();
  mach.reserve_timing(tr.transfers.capacity());
  int in_slot = -1, out_slot = -1;
  for (std::size_t i = 0; i < m.var_names.size(); ++i) {
    if (m.var_names[i] == m.header.input) in_slot = static_cast<int>(i);
    if (m.var_names[i] == m.header.output) out_slot = static_cast<int>(i);
  }
  COLLV_ASSERT(in_slot >= 0 && out_slot >= 0);
  tr.initial_input =
      initial_inputs(m.header.collective, *tr.domain, p, opts.root, lo, hi, opts.count);
  mach.set_input(in_slot, tr.initial_input);
  if (drv) {
    tr.slice_base = lo;
    StreamTotals totals = drv->drive(mach, tr);
    tr.final_output = mach.take_column(out_slot);
    finish_stream(tr, std::move(totals), opts);
    return tr;
  }
  mach.run();
  mach.check_self_messages();
  tr.final_output = mach.take_column(out_slot);
  if (mach.stream_) {
    StreamTiming& st = *mach.stream_;
    st.finish();
    finish_stream(tr, {st.issued(), st.unreceived(), st.unresolved(), st.steps(), st.per_step()},
                  opts);
    return tr;
  }
  apply_timing(tr, mach.timing_record(), opts);
  tr.unreceived = mach.unreceived();
  tr.compute_stats();
  return tr;
}

Trace run_model_sliced(const Model& m, const Topology& t, const RunOptions& opts, SliceDriver& d) {
  return run_model_once(m, t, opts, &d);
}

namespace {

Trace run_model_mode(const Model& m, const Topology& t, const RunOptions& opts) {
  if (opts.stream != RunOptions::Stream::Auto) return run_model_once(m, t, opts);
  // Auto: a streamed run that cannot follow the model, or whose transfer checks need the stored
  // trace, is run again with the trace kept when that fits in memory.
  RunOptions stored = opts;
  stored.stream = RunOptions::Stream::Off;
  Trace tr;
  try {
    tr = run_model_once(m, t, opts);
  } catch (const StreamRefused&) {
    return run_model_once(m, t, stored);
  }
  if (!tr.streamed || tr.stream_incomplete.empty()) return tr;
  try {
    return run_model_once(m, t, stored);
  } catch (const LimitError&) {
    return tr;  // too large to keep: the streamed verdicts, with the transfer checks unknown
  }
}

}  // namespace

Trace run_model(const Model& m, const Topology& t, const RunOptions& opts) {
  Trace tr = run_model_mode(m, t, opts);
  // The run's node buffers are freed by now: a run of a million items or more gives their pages
  // back before the checks build their tables (MPICH's recursive doubling at p = count = 4,096:
  // 256 MiB of freed 32 KiB buffers stayed resident through the checks). glibc only.
#ifdef __GLIBC__
  if (static_cast<std::uint64_t>(t.num_processors()) * std::max<std::uint32_t>(opts.count, 1) >=
      (1u << 20))
    malloc_trim(0);
#endif
  return tr;
}

}  // namespace collv
