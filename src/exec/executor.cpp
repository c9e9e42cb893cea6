// The batched executor (see executor.hpp). The procedure is compiled to a flat list of
// instructions; each processor has a program point; all processors at the same point run its
// instruction together, chunk by chunk, with every variable stored as one column per slot.
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

#include "exec/requests.hpp"
#include "exec/timing.hpp"
#include "lang/check.hpp"
#include "util/deadline.hpp"
#include "util/memory.hpp"

namespace collv {

using namespace interp;  // the executor's rooms (exec/machine.hpp)

namespace {

// Runs the nodes lo .. hi-1 (every node, or a slice of a partitioned run: SliceMachine).
class Machine : public Requests, public SliceMachine {
 public:
  using Requests::Requests;

  // Messages still queued when the run ends: sent, never received (ascending transfer ids).
  void run() {
    start();
    run_local();
    if (tr_.failure.kind == RunFailure::Kind::None && finished_ < n_local_) report_deadlock();
  }

  // SliceMachine (partitioned runs; run() for a whole one).
  void start() override {
    auto& all = ready_[0];
    all.resize(n_local_);
    for (NodeId v = lo_; v < hi_; ++v) all[v - lo_] = v;
    mark_ready(0);
  }
  std::vector<RemoteSend>& outbox() override { return outbox_; }
  void deliver(NodeId src, NodeId dst, std::uint16_t len, std::uint16_t line, std::uint32_t origin,
               Buffer&& payload, std::uint32_t& tid) override {
    stream_->make_room();
    tid = stream_->on_arrive(src, dst, len, line, origin, std::move(payload));
    inbox_.push(dst, tid);
    wake(src, dst);
  }
  StreamTiming& timing() override { return *stream_; }
  void set_horizon(std::uint32_t h) override {
    COLLV_ASSERT(h == 0 || opts_.port == PortModel::Single);
    horizon_ = h;
    for (auto [pc, v] : held_) {
      ready_[pc].push_back(v);
      mark_ready(pc);
    }
    held_.clear();
  }
  std::uint64_t held() const override { return held_.size(); }
  void run_receives() override {
    no_sends_ = true;
    run_local();
    no_sends_ = false;
  }
  std::uint64_t unfinished() const override { return n_local_ - finished_; }
  std::vector<std::pair<NodeId, NodeId>> waiting() const override {
    std::vector<std::pair<NodeId, NodeId>> w;
    for (NodeId v = lo_; v < hi_; ++v)
      if (waiting_on_[v] != kNone) w.emplace_back(v, waiting_on_[v]);
    return w;
  }
  SourceLoc blocked_at(NodeId v) const override { return prog_.code[blocked_pc_[v]].stmt->loc; }

  // Runs until every node finished or waits for a message (or the run fails).
  void run_local() override {
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
      if (!std::is_sorted(batch.begin(), batch.end())) std::sort(batch.begin(), batch.end());
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

 private:
  void report_deadlock() {
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

  void exec(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
    const Instr& in = prog_.code[pc];
    const Stmt& s = *in.stmt;
    auto advance_all = [&](std::uint32_t to) {
      auto& r = ready_[to];
      r.insert(r.end(), nodes, nodes + cnt);
      mark_ready(to);
    };
    if (has_nb_ && (!acc_[pc].reads.empty() || acc_[pc].write >= 0)) check_access(pc, nodes, cnt);
    switch (in.op) {
      case IOp::Assign: {
        const Expr& tgt = *s.target;
        int slot = tgt.kind == ExprKind::Name ? tgt.slot : -1;
        if (slot >= 0 && m_.var_types[slot] == Type::Int) {
          auto& v = iscratch(0);
          eval_int(*s.value, nodes, cnt, v.data(), 1);
          for (std::size_t i = 0; i < cnt; ++i) ints_[slot].set(nodes[i], v[i]);
        } else if (tgt.kind == ExprKind::Index && tgt.args[0]->slot >= 0 &&
                   m_.var_types[static_cast<std::size_t>(tgt.args[0]->slot)] == Type::IntArray) {
          const int as = tgt.args[0]->slot;
          auto& v = iscratch(0);
          eval_int(*s.value, nodes, cnt, v.data(), 1);
          std::vector<std::int64_t> at(cnt);
          eval_int(*tgt.args[1], nodes, cnt, at.data(), 1);
          for (std::size_t i = 0; i < cnt; ++i) {
            auto& arr = arrays_[as][nodes[i]];
            if (at[i] < 0 || at[i] >= static_cast<std::int64_t>(arr.size()))
              rt_error(tgt, nodes[i],
                       arr.empty() && !array_declared(as, nodes[i])
                           ? fmt::format("'{}' is used before its 'array' statement ran",
                                         tgt.args[0]->name)
                           : fmt::format("index {} is out of range for '{}' of {} elements", at[i],
                                         tgt.args[0]->name, arr.size()));
            arr[static_cast<std::size_t>(at[i])] = v[i];
          }
        } else if (slot >= 0 && s.value->kind == ExprKind::Binary && s.value->op == Op::Union &&
                   s.value->args[0]->kind == ExprKind::Name && s.value->args[0]->slot == slot) {
          // `x := x ∪ y` appends y in place: its work is y's items, not a copy of x (a result
          // that grows by a block a step was quadratic in its length).
          const Expr& y = *s.value->args[1];
          auto& v = dscratch(0);
          eval_data(y, nodes, cnt, v.data(), 1);
          auto& col = data_[slot];
          std::uint64_t items = 0;
          for (std::size_t i = 0; i < cnt; ++i) {
            std::uint64_t n = std::uint64_t{col.size_at(nodes[i])} + v[i].size();
            check_buffer_size(*s.value, nodes[i], n);
            items += v[i].size();
          }
          charge_items(items);
          ops_ += items;
          for (std::size_t i = 0; i < cnt; ++i) {
            if (v[i].empty()) continue;
            Buffer& dst = col.edit(nodes[i]);
            for (Item it : v[i]) dst.push_back(it);
            col.settle(nodes[i]);
          }
          track_assign(pc, tgt, nodes, cnt);
        } else {
          auto& v = dscratch(0);
          eval_data(*s.value, nodes, cnt, v.data(), 1);
          store(tgt, nodes, cnt, v.data(), 1);
          track_assign(pc, tgt, nodes, cnt);
        }
        advance_all(pc + 1);
        return;
      }
      case IOp::ArrayInit: {
        auto& n = iscratch(0);
        eval_int(*s.value, nodes, cnt, n.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i) {
          if (n[i] < 0 || n[i] > kMaxArrayElements)
            rt_error(*s.value, nodes[i],
                     fmt::format("array '{}' of {} elements (at most {})", s.var, n[i],
                                 kMaxArrayElements));
          auto& arr = arrays_[s.var_slot][nodes[i]];
          // Work, not statements: an array of n elements costs n operations (a loop that makes
          // a fresh array of 2^20 elements for ever meets --max-ops, not only the memory limit).
          ops_ += static_cast<std::uint64_t>(n[i]);
          if (n[i] > 2 * static_cast<std::int64_t>(kChunk))
            watch_.charge(static_cast<std::uint64_t>(n[i]) * sizeof(std::int64_t));
          arr.assign(static_cast<std::size_t>(n[i]), 0);
          array_ran_[s.var_slot][nodes[i]] = 1;
        }
        advance_all(pc + 1);
        return;
      }
      case IOp::JumpIfFalse: {
        auto& c = iscratch(0);
        eval_int(*in.cond, nodes, cnt, c.data(), 1);
        std::size_t taken = 0;
        for (std::size_t i = 0; i < cnt; ++i) taken += c[i] != 0;
        if (taken == cnt || taken == 0) {  // the whole chunk goes one way: one copy
          advance_all(taken ? pc + 1 : in.target);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) ready_[c[i] ? pc + 1 : in.target].push_back(nodes[i]);
        mark_ready(pc + 1);
        mark_ready(in.target);
        return;
      }
      case IOp::Jump:
        advance_all(in.target);
        return;
      case IOp::ForInit: {
        auto& a = iscratch(0);
        eval_int(*s.value, nodes, cnt, a.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i) ints_[s.var_slot].set(nodes[i], a[i]);
        eval_int(*s.limit, nodes, cnt, a.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i) ints_[in.limit_slot].set(nodes[i], a[i]);
        advance_all(pc + 1);
        return;
      }
      case IOp::ForTest: {
        const auto& var = ints_[s.var_slot];
        const auto& lim = ints_[in.limit_slot];
        std::size_t go_on = 0;
        for (std::size_t i = 0; i < cnt; ++i) {
          NodeId v = nodes[i];
          go_on += s.downto ? var.get(v) >= lim.get(v) : var.get(v) <= lim.get(v);
        }
        if (go_on == cnt || go_on == 0) {  // the whole chunk goes one way: one copy
          advance_all(go_on ? pc + 1 : in.target);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          NodeId v = nodes[i];
          bool go = s.downto ? var.get(v) >= lim.get(v) : var.get(v) <= lim.get(v);
          ready_[go ? pc + 1 : in.target].push_back(v);
        }
        mark_ready(pc + 1);
        mark_ready(in.target);
        return;
      }
      case IOp::ForNext: {
        // A counter at INT64_MAX (`to`) or INT64_MIN (`downto`) has no next value: the loop ends
        // there (the variable keeps it) instead of wrapping round and running again.
        auto& var = ints_[s.var_slot];
        const std::uint32_t exit_pc = prog_.code[in.target].target;
        const std::int64_t last = s.downto ? std::numeric_limits<std::int64_t>::min()
                                           : std::numeric_limits<std::int64_t>::max();
        bool any_exit = false;
        std::size_t at_last = 0;
        for (std::size_t i = 0; i < cnt; ++i) at_last += var.get(nodes[i]) == last;
        if (at_last == 0) {  // the usual case: every counter moves on
          const std::int64_t d = s.downto ? -1 : 1;
          for (std::size_t i = 0; i < cnt; ++i) var.set(nodes[i], var.get(nodes[i]) + d);
          advance_all(in.target);
          return;
        }
        for (std::size_t i = 0; i < cnt; ++i) {
          NodeId v = nodes[i];
          if (var.get(v) == last) {
            ready_[exit_pc].push_back(v);
            any_exit = true;
          } else {
            var.set(v, var.get(v) + (s.downto ? -1 : 1));
            ready_[in.target].push_back(v);
          }
        }
        if (any_exit) mark_ready(exit_pc);
        mark_ready(in.target);
        return;
      }
      case IOp::Irecv:
        post_irecv(pc, nodes, cnt);
        return;
      case IOp::Wait:
        run_wait(pc, nodes, cnt);
        return;
      case IOp::Isend:
        post_isend(pc, nodes, cnt);
        [[fallthrough]];  // the transfer itself is a send's (sends are buffered)
      case IOp::Send: {
        auto& val = dscratch(0);
        eval_data(*s.value, nodes, cnt, val.data(), 1);
        auto& peer = iscratch(0);
        eval_int(*s.peer, nodes, cnt, peer.data(), 1);
        // The destinations first, so that the loop below can prefetch each one's mailbox ahead
        // of its use (at star:10 and beyond they are cache misses). A node whose peer is an
        // error stops the loop there, as it did when peers were found one send at a time.
        auto& dsts = iscratch(1);
        std::size_t good = 0;
        try {
          for (; good < cnt; ++good) dsts[good] = peer_of(s, nodes[good], peer[good]);
        } catch (const ModelRuntimeError&) {
        }
        constexpr std::size_t kAhead = 8;
        for (std::size_t i = 0; i < good; ++i) {
          if (i + kAhead < good) {
            const auto ahead = static_cast<NodeId>(dsts[i + kAhead]);
            __builtin_prefetch(inbox_.front_addr(ahead), 1);
            __builtin_prefetch(&waiting_on_[ahead], 0);
          }
          NodeId v = nodes[i];
          const auto dst = static_cast<NodeId>(dsts[i]);
          if (dst == v) {  // a self-message: queued at the node, no transfer, no step
            self_send(s, pc, v, std::move(val[i]));
            continue;
          }
          std::uint32_t step = bound_.on_send(v, dst);  // a lower bound; timing.cpp assigns it
          max_step_ = std::max(max_step_, step);
          if (step > opts_.max_steps) {
            fail(RunFailure::Kind::StepLimit,
                 fmt::format("{}: node {} would send at step {} or later, past the step limit {} "
                             "(raise --max-steps to allow more)",
                             s.loc.str(), topo_.label(v), step, opts_.max_steps));
            return;
          }
          if (val[i].size() > 0xFFFF)  // a limit of collv's Trace, not an error of the model
            throw LimitError(fmt::format(
                "{}: node {} sends a message of {} items; collv records at most 65535 items per "
                "message (a limit of collv, not a fault of the model)",
                s.loc.str(), topo_.label(v), val[i].size()));
          std::uint32_t tid;
          if (stream_) {
            // A peer reached along a link is a neighbour by construction: no test (at star:11
            // each one unranks two permutations).
            if (!s.along_link && !topo_.adjacent(v, dst))
              throw StreamRefused(fmt::format(
                  "{}: node {} sends to {}, which is not its neighbour; the link loads of routed "
                  "transfers need the stored trace (a streamed run follows neighbour transfers "
                  "only)",
                  s.loc.str(), topo_.label(v), topo_.label(dst)));
            stream_->make_room();
            if (dst < lo_ || dst >= hi_) {  // another process's node (partitioned runs)
              const auto len = static_cast<std::uint16_t>(val[i].size());
              const auto line = static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF));
              tid = stream_->on_send_remote(v, dst, deps_of(pc, v));
              outbox_.push_back({tid, v, dst, len, line, std::move(val[i])});
              continue;
            }
            tid = stream_->on_send(v, dst, static_cast<std::uint16_t>(val[i].size()),
                                   static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF)),
                                   deps_of(pc, v), std::move(val[i]));
            inbox_.push(dst, tid);
            wake(v, dst);
            continue;
          }
          if (tr_.payload.size() + val[i].size() > std::numeric_limits<std::uint32_t>::max() ||
              tr_.transfers.size() >= std::numeric_limits<std::uint32_t>::max() - 1)
            throw LimitError("the run records more than 2^32 transfers or items; it is too large");
          tid = static_cast<std::uint32_t>(tr_.transfers.size());
          charge_growth(tr_.payload, val[i].size());
          charge_growth(tr_.transfers, 1);
          tr_.transfers.push_back(
              Transfer{step, v, dst, static_cast<std::uint32_t>(tr_.payload.size()),
                       static_cast<std::uint16_t>(val[i].size()),
                       static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF))});
          tr_.payload.insert(tr_.payload.end(), val[i].begin(), val[i].end());
          timing_.on_send(dep_transfer(deps_of(pc, v)));
          if (m_.header.collective == Collective::Barrier) tr_.events.push_back(tid << 1);
          inbox_.push(dst, tid);
          wake(v, dst);
        }
        if (good < cnt) (void)peer_of(s, nodes[good], peer[good]);  // throws its error
        const std::uint64_t issued = stream_ ? stream_->issued() : tr_.transfers.size();
        if ((issued & 0xFFFF) < cnt) {
          check_memory();
          if (opts_.progress) opts_.progress(issued, max_step_);
        }
        advance_all(pc + 1);
        return;
      }
      case IOp::Recv: {
        auto& peer = iscratch(0);
        eval_int(*s.peer, nodes, cnt, peer.data(), 1);
        // Nodes whose message is there receive now; the others wait at this instruction.
        std::vector<NodeId> got;
        std::vector<std::uint32_t> tids;
        std::vector<NodeId> self_got;
        got.reserve(cnt);
        tids.reserve(cnt);
        constexpr std::size_t kAhead = 8;
        for (std::size_t i = 0; i < cnt; ++i) {
          if (i + kAhead < cnt) {  // the message a node ahead will look at first: a cache miss
            const NodeId ahead = nodes[i + kAhead];
            if (!inbox_.empty(ahead)) {
              if (stream_)
                stream_->prefetch(inbox_.front(ahead));
              else
                __builtin_prefetch(&tr_.transfers[inbox_.front(ahead)], 0);
            }
          }
          NodeId v = nodes[i];
          NodeId src = peer_of(s, v, peer[i]);
          if (src == v) {  // a self-message: the oldest one the node sent itself
            if (has_nb_ && !match_pending(v, v, kNone)) {
              waiting_on_[v] = v;
              blocked_pc_[v] = pc;
              continue;
            }
            if (self_box_.empty() || self_box_[v].empty()) {
              waiting_on_[v] = v;  // no earlier send to itself: it waits for ever
              blocked_pc_[v] = pc;
              continue;
            }
            self_got.push_back(v);
            continue;
          }
          // MPI's non-overtaking rule: irecvs posted earlier from src take the first messages.
          if (has_nb_ && !match_pending(v, src, kNone)) {
            waiting_on_[v] = src;
            blocked_pc_[v] = pc;
            continue;
          }
          const std::uint32_t k = inbox_.find(v, [&](std::uint32_t t) { return src_of(t) == src; });
          if (k == inbox_.size(v)) {
            waiting_on_[v] = src;
            blocked_pc_[v] = pc;
            continue;
          }
          std::uint32_t tid = inbox_.take(v, k);
          if (stream_) {
            got.push_back(v);
            tids.push_back(tid);
            continue;
          }
          if (has_nb_) {  // the receive port is ordered when the run ends (check_requests)
            const std::uint32_t at = tick(v);
            nb_[v].port.push_back(PortEntry{tid, at, at});
          } else {
            timing_.prev_recv[tid] = last_recv_[v];
            last_recv_[v] = tid;
          }
          if (m_.header.collective == Collective::Barrier) tr_.events.push_back((tid << 1) | 1);
          got.push_back(v);
          tids.push_back(tid);
        }
        if (!self_got.empty()) self_receive(s, pc, self_got);
        if (got.empty()) return;
        auto& val = dscratch(0);
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (stream_) {
            val[i] = stream_->on_receive(tids[i], got[i]);
            continue;
          }
          const Transfer& t = tr_.transfers[tids[i]];
          val[i].assign(tr_.payload.data() + t.payload_begin, t.payload_len);
          ops_ += t.payload_len;  // work: the message's items delivered (--max-ops)
        }
        store(*s.target, got.data(), got.size(), val.data(), 1, true);
        track_receive(*s.target, got.data(), got.size(), tids.data());
        if (stream_) stream_->resolve(false);
        auto& r = ready_[pc + 1];
        r.insert(r.end(), got.begin(), got.end());
        mark_ready(pc + 1);
        return;
      }
    }
  }

 public:
  // The run ended: a self-message never received is a runtime error (if nothing failed before).
  void check_self_messages() override {
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

  std::uint32_t horizon_ = 0;                           // set_horizon
  bool no_sends_ = false;                               // run_receives
  std::vector<std::pair<std::uint32_t, NodeId>> held_;  // (program point, node) at the horizon
};

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

// The end of a streamed run: the last transfers timed, the statistics and the cost as
// Trace::compute_stats gives them, and what the transfer checks cannot judge without the stored
// trace.
void finish_stream(Trace& tr, StreamTotals st, const RunOptions& opts) {
  tr.streamed = true;
  tr.port = opts.port;
  tr.streamed_transfers = st.issued;
  tr.steps = st.steps;
  tr.per_step = std::move(st.per_step);
  tr.cost_ts = tr.steps;
  tr.cost_tw = 0;
  for (const auto& s : tr.per_step) tr.cost_tw += s.max_link_items;
  std::vector<std::string> why;
  if (st.unreceived > 0)
    why.push_back(fmt::format("{} transfer(s) are never received", st.unreceived));
  if (st.unresolved > 0)
    why.push_back(fmt::format(
        "{} transfer(s) wait on a cycle of port orders (no single-port schedule exists)",
        st.unresolved));
  if (!why.empty()) {
    tr.stream_incomplete = why[0] + (why.size() > 1 ? "; " + why[1] : "");
    if (tr.failure.kind == RunFailure::Kind::None && st.unresolved > 0) {
      tr.failure.kind = RunFailure::Kind::Deadlock;
      tr.failure.ports = true;
      tr.failure.message = fmt::format(
          "{}: deadlock of the ports (--port single): no schedule takes every node's sends and "
          "receives in program order ({}; the stored run names the cycle)",
          tr.model_file, tr.stream_incomplete);
    }
  }
  if (tr.failure.kind == RunFailure::Kind::None && tr.steps > opts.max_steps) {
    tr.failure.kind = RunFailure::Kind::StepLimit;
    tr.failure.message = fmt::format(
        "{}: the schedule takes {} steps, past the step limit {} (raise --max-steps to allow "
        "more)",
        tr.model_file, tr.steps, opts.max_steps);
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
    double msize = m.header.elements ? 1.0 : static_cast<double>(opts.count);
    auto e1 = env, e2 = env;
    e1["ts"] = 1, e1["tw"] = 0, e1["m"] = msize;
    e2["ts"] = 0, e2["tw"] = 1, e2["m"] = msize;
    std::string what = "'cost' on " + t.spec();
    tr.cost_at_most = m.header.cost_at_most;
    tr.claimed_ts = header_value(m.header, *m.header.cost, e1, what, &t).approx;
    tr.claimed_tw = header_value(m.header, *m.header.cost, e2, what, &t).approx;
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
    std::uint64_t per_transfer =
        sizeof(Transfer) + sizeof(Item) + 16;  // + timing records (exec/timing.hpp)
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

Trace run_model(const Model& m, const Topology& t, const RunOptions& opts) {
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

}  // namespace collv
