// Statement execution (see statements.hpp).
#include "exec/statements.hpp"

#include <algorithm>

namespace collv::interp {

// A for loop's test (program point pc) for nodes that reach it: on to the body or past the loop.
// ForInit and ForNext run it themselves rather than sending the nodes through the test's own
// dispatch (the test reads two integers and cannot fail); they count its operation (--max-ops).
void Statements::for_test(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Instr& in = prog_.code[pc];
  const Stmt& s = *in.stmt;
  const auto& var = ints_[s.var_slot];
  const auto& lim = ints_[in.limit_slot];
  std::size_t go_on = 0;
  for (std::size_t i = 0; i < cnt; ++i) {
    NodeId v = nodes[i];
    go_on += s.downto ? var.get(v) >= lim.get(v) : var.get(v) <= lim.get(v);
  }
  if (go_on == cnt || go_on == 0) {  // the whole chunk goes one way: one copy
    auto& r = ready_[go_on ? pc + 1 : in.target];
    r.insert(r.end(), nodes, nodes + cnt);
    mark_ready(go_on ? pc + 1 : in.target);
    return;
  }
  for (std::size_t i = 0; i < cnt; ++i) {
    NodeId v = nodes[i];
    bool go = s.downto ? var.get(v) >= lim.get(v) : var.get(v) <= lim.get(v);
    ready_[go ? pc + 1 : in.target].push_back(v);
  }
  mark_ready(pc + 1);
  mark_ready(in.target);
}

// `x := y + z` of data variables whose buffers hold one item each at every node of the chunk (the
// fingerprint domain at count 1, the usual case of a large run): the items combined column to
// column, without scratch buffers. Anything else (an empty or longer buffer at some node of the
// chunk, where the general path may also find buffers of different lengths; `collv mpi
// --model`'s on_combine) returns false, having changed nothing, for the general path.
bool Statements::combine_in_place(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Stmt& s = *prog_.code[pc].stmt;
  const Expr& t = *s.target;
  const Expr& e = *s.value;
  if (t.kind != ExprKind::Name || e.kind != ExprKind::Binary || e.op != Op::Add || opts_.on_combine)
    return false;
  const Expr& a = *e.args[0];
  const Expr& b = *e.args[1];
  auto data = [&](const Expr& x) {
    return x.kind == ExprKind::Name && x.slot >= 0 &&
           m_.var_types[static_cast<std::size_t>(x.slot)] == Type::Data;
  };
  if (!data(t) || !data(a) || !data(b)) return false;
  const DataCol& ca = data_[a.slot];
  const DataCol& cb = data_[b.slot];
  for (std::size_t i = 0; i < cnt; ++i)
    if (!ca.one_item(nodes[i]) || !cb.one_item(nodes[i]))
      return combine_into_operand(pc, nodes, cnt);
  DataCol& ct = data_[t.slot];
  for (std::size_t i = 0; i < cnt; ++i)
    ct.set_item(nodes[i], dom_->combine(ca.item(nodes[i]), cb.item(nodes[i])));
  ops_ += 3 * cnt;  // as the general path counts: two items read, one combined (--max-ops)
  track_assign(pc, t, nodes, cnt);
  return true;
}

// `x := x + y` or `x := y + x` (x, y data variables) where x and y hold the same number of
// items, two or more, at every node of the chunk (recursive doubling's `buf := tmp + buf` at
// count > 1): x's items combined with y's in place, in operand order, item by item as the
// general path combines them, without copying x and y into scratch buffers and x back. Anything
// else returns false, having changed nothing (the general path reports different lengths).
// Called by combine_in_place, which has checked the statement's shape.
bool Statements::combine_into_operand(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Stmt& s = *prog_.code[pc].stmt;
  const Expr& t = *s.target;
  const Expr& a = *s.value->args[0];
  const Expr& b = *s.value->args[1];
  if (t.slot != a.slot && t.slot != b.slot) return false;
  const bool left = t.slot == a.slot;  // x is the left operand
  DataCol& ct = data_[t.slot];
  const DataCol& other = data_[left ? b.slot : a.slot];
  std::uint64_t items = 0;
  for (std::size_t i = 0; i < cnt; ++i) {
    const std::uint32_t n = ct.size_at(nodes[i]);
    if (n < 2 || other.size_at(nodes[i]) != n) return false;
    items += n;
  }
  for (std::size_t i = 0; i < cnt; ++i) {
    Buffer& x = ct.edit(nodes[i]);          // held in the side table already (two items or more)
    const Item* y = other.items(nodes[i]);  // x's own items for `x := x + x`
    dom_->combine_into(x.data(), y, x.size(), left);
    ct.settle(nodes[i]);
  }
  ops_ += 3 * items;  // as the general path counts: both operands read, each item combined
  track_assign(pc, t, nodes, cnt);
  return true;
}

std::uint32_t Statements::record_payload(const Item* data, std::size_t n) {
  const auto at = static_cast<std::uint32_t>(tr_.payload.size());
  auto append = [&] {
    charge_growth(tr_.payload, n);
    tr_.payload.insert(tr_.payload.end(), data, data + n);
    return at;
  };
  if (n < kShareItems) return append();
  std::uint64_t h = n;
  for (const Item* it = data; it != data + n; ++it)
    h = (h ^ *it) * 0x9E3779B97F4A7C15ULL + (h >> 29);
  auto [slot, fresh] = payload_at_.try_emplace(h, at);
  if (!fresh) {
    const Item* old = tr_.payload.data() + slot->second;
    if (slot->second + n <= tr_.payload.size() && std::equal(data, data + n, old)) {
      tr_.payload_shared = true;
      return slot->second;
    }
    slot->second = at;  // a collision: the newer payload is the one remembered
  }
  return append();
}

void Statements::exec(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
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
        auto& v = iscratch(0);
        eval_int(*s.value, nodes, cnt, v.data(), 1);
        std::vector<std::int64_t> at(cnt);
        eval_int(*tgt.args[1], nodes, cnt, at.data(), 1);
        for (std::size_t i = 0; i < cnt; ++i)
          array_element(tgt, *tgt.args[0], nodes[i], at[i]) = v[i];
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
      } else if (!combine_in_place(pc, nodes, cnt)) {
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
      ops_ += cnt;  // the test's dispatch, run here (for_test)
      for_test(pc + 1, nodes, cnt);
      return;
    }
    case IOp::ForTest:
      for_test(pc, nodes, cnt);
      return;
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
        ops_ += cnt;  // the test's dispatch, run here (for_test)
        for_test(in.target, nodes, cnt);
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
      // A send of a data variable reads its items in place (the fingerprint domain at count 1,
      // a recursive-doubling buffer at count 4,096); anything else is evaluated into scratch
      // buffers.
      auto& val = dscratch(0);
      const DataCol* direct = nullptr;
      if (in.op == IOp::Send && s.value->kind == ExprKind::Name && s.value->slot >= 0 &&
          m_.var_types[static_cast<std::size_t>(s.value->slot)] == Type::Data) {
        direct = &data_[s.value->slot];
        std::uint64_t n = 0;
        for (std::size_t i = 0; i < cnt; ++i) n += direct->size_at(nodes[i]);
        ops_ += n;  // work: each item sent (as eval_data counts a copy; nothing is copied here)
      } else {
        eval_data(*s.value, nodes, cnt, val.data(), 1);
      }
      // Node i's payload (its items and their number).
      auto items = [&](std::size_t i) { return direct ? direct->items(nodes[i]) : val[i].data(); };
      auto len = [&](std::size_t i) { return direct ? direct->size_at(nodes[i]) : val[i].size(); };
      auto value = [&](std::size_t i) {  // what the send keeps (not a stream's transfer)
        if (direct) val[i].assign(direct->items(nodes[i]), direct->size_at(nodes[i]));
        return std::move(val[i]);
      };
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
      // Sends along the links of a topology whose links lead back along their own numbers carry
      // the link number, so that the receive need not ask the Topology for its neighbour again.
      const bool tag_links = stream_ && s.along_link && topo_.links_symmetric();
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
          self_send(s, pc, v, value(i));
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
        if (len(i) > 0xFFFF)  // a limit of collv's Trace, not an error of the model
          throw LimitError(fmt::format(
              "{}: node {} sends a message of {} items; collv records at most 65535 items per "
              "message (a limit of collv, not a fault of the model)",
              s.loc.str(), topo_.label(v), len(i)));
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
            const auto n = static_cast<std::uint16_t>(len(i));
            const auto line = static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF));
            tid = stream_->on_send_remote(v, dst, deps_of(pc, v));
            outbox_.push_back({tid, v, dst, n, line, value(i)});
            continue;
          }
          const bool tag = tag_links && peer[i] >= 0 && peer[i] < StreamTiming::kMaxLinkTag;
          tid = stream_->on_send(v, dst, static_cast<std::uint16_t>(len(i)),
                                 static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF)),
                                 deps_of(pc, v), items(i),
                                 tag ? static_cast<std::uint8_t>(peer[i] + 1) : 0);
          inbox_.push(dst, tid);
          wake(v, dst);
          continue;
        }
        if (tr_.payload.size() + len(i) > std::numeric_limits<std::uint32_t>::max() ||
            tr_.transfers.size() >= std::numeric_limits<std::uint32_t>::max() - 1)
          throw LimitError("the run records more than 2^32 transfers or items; it is too large");
        tid = static_cast<std::uint32_t>(tr_.transfers.size());
        charge_growth(tr_.transfers, 1);
        tr_.transfers.push_back(Transfer{step, v, dst, record_payload(items(i), len(i)),
                                         static_cast<std::uint16_t>(len(i)),
                                         static_cast<std::uint16_t>(std::min(s.loc.line, 0xFFFF))});
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
      if (got_.size() < cnt) {
        got_.resize(cnt);
        tids_.resize(cnt);
      }
      NodeId* got = got_.data();
      std::uint32_t* tids = tids_.data();
      std::size_t n_got = 0;
      std::vector<NodeId> self_got;
      // A message sent along link k of a topology whose links lead back along their own numbers
      // comes from the neighbour along link k: when the oldest queued message has the tag, its
      // source answers the receive along link k without a neighbour lookup.
      const bool tag_links = stream_ && !has_nb_ && s.along_link && topo_.links_symmetric();
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
        NodeId src;
        if (tag_links && !inbox_.empty(v) && peer[i] >= 0 && peer[i] < StreamTiming::kMaxLinkTag &&
            stream_->link_tag(inbox_.front(v)) == static_cast<std::uint8_t>(peer[i] + 1))
          src = stream_->src(inbox_.front(v));
        else
          src = peer_of(s, v, peer[i]);
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
          got[n_got] = v;
          tids[n_got++] = tid;
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
        got[n_got] = v;
        tids[n_got++] = tid;
      }
      if (!self_got.empty()) self_receive(s, pc, self_got);
      if (n_got == 0) return;
      const Expr& tgt = *s.target;
      if (stream_ && tgt.kind == ExprKind::Name && tgt.slot >= 0 &&
          m_.var_types[static_cast<std::size_t>(tgt.slot)] == Type::Data) {
        // A whole data variable received, streamed: a one-item message goes from the window
        // straight into the column (no scratch buffer); storing a whole variable cannot fail.
        DataCol& col = data_[tgt.slot];
        for (std::size_t i = 0; i < n_got; ++i) {
          Item x;
          if (stream_->on_receive_one(tids[i], got[i], x)) {
            col.set_item(got[i], x);
            ++ops_;  // work: the message's item delivered (--max-ops)
            continue;
          }
          Buffer b = stream_->on_receive(tids[i], got[i]);
          ops_ += b.size();
          col.set(got[i], std::move(b));
        }
      } else {
        auto& val = dscratch(0);
        for (std::size_t i = 0; i < n_got; ++i) {
          if (stream_) {
            val[i] = stream_->on_receive(tids[i], got[i]);
            ops_ += val[i].size();  // work: the message's items delivered (--max-ops)
            continue;
          }
          const Transfer& t = tr_.transfers[tids[i]];
          val[i].assign(tr_.payload.data() + t.payload_begin, t.payload_len);
          ops_ += t.payload_len;  // work: the message's items delivered (--max-ops)
        }
        store(tgt, got, n_got, val.data(), 1, true);
      }
      track_receive(tgt, got, n_got, tids);
      if (stream_) stream_->resolve(false);
      auto& r = ready_[pc + 1];
      r.insert(r.end(), got, got + n_got);
      mark_ready(pc + 1);
      return;
    }
  }
}

}  // namespace collv::interp
