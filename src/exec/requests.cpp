// Nonblocking requests (see requests.hpp).
#include "exec/requests.hpp"

#include <algorithm>

namespace collv::interp {

std::uint32_t Requests::new_handle(const Stmt& s, NodeId v) {
  NbNode& n = nb_[v];
  if (n.reqs.size() >= kMaxRequests || n.next == std::numeric_limits<std::uint32_t>::max())
    throw LimitError(fmt::format(
        "{}: node {} would have more than {} outstanding requests (or issue more than 2^32); "
        "collv keeps at most that many per node (a limit of collv, not a fault of the model)",
        s.loc.str(), topo_.label(v), kMaxRequests));
  // A request and its entries (map nodes, port entry) are about 250 bytes: charged, so that
  // many outstanding requests on many nodes meet --max-memory, as buffers do.
  watch_.charge(256);
  return ++n.next;
}

// `as R`: the handles into R (an integer variable or an integer array's element).
void Requests::store_handles(const Expr& tgt, const NodeId* nodes, std::size_t cnt,
                             const std::vector<std::int64_t>& h) {
  if (tgt.kind == ExprKind::Name) {
    for (std::size_t i = 0; i < cnt; ++i) ints_[tgt.slot].set(nodes[i], h[i]);
    return;
  }
  std::vector<std::int64_t> at(cnt);
  eval_int(*tgt.args[1], nodes, cnt, at.data(), 1);
  for (std::size_t i = 0; i < cnt; ++i) array_element(tgt, *tgt.args[0], nodes[i], at[i]) = h[i];
}

void Requests::post_irecv(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Stmt& s = *prog_.code[pc].stmt;
  const Expr& tgt = *s.target;
  std::vector<std::int64_t> peer(cnt), lo(cnt), hi(cnt), handles(cnt);
  eval_int(*s.peer, nodes, cnt, peer.data(), 1);
  const bool whole = tgt.kind == ExprKind::Name;
  if (!whole && tgt.args[0]->kind != ExprKind::Name)
    rt_error(tgt, nodes[0], "only one level of indexing can be received into");
  const int slot = whole ? tgt.slot : tgt.args[0]->slot;
  if (!whole) {
    eval_int(*tgt.args[1], nodes, cnt, lo.data(), 1);
    if (tgt.kind == ExprKind::Slice)
      eval_int(*tgt.args[2], nodes, cnt, hi.data(), 1);
    else
      hi = lo;
  }
  for (std::size_t i = 0; i < cnt; ++i) {
    const NodeId v = nodes[i];
    const NodeId src = peer_of(s, v, peer[i]);
    if (!whole) check_positions(tgt, v, lo[i], hi[i], "receive into");
    const std::uint32_t h = new_handle(s, v);
    NbNode& n = nb_[v];
    const Part part{slot, whole ? 0 : lo[i], whole ? kWholeBuffer : hi[i]};
    check_overlap(s, v, part);
    Lock& l = lock_of(n, slot);
    Request r;
    r.stmt = &s;
    r.peer = src;
    r.recv = true;
    r.whole = whole;
    r.slot = slot;
    r.lo = lo[i];
    r.hi = hi[i];
    if (src != v) {
      r.port = static_cast<std::uint32_t>(n.port.size());
      n.port.push_back(PortEntry{kNoTransfer, tick(v), 0});
    }
    ++l.recv;
    if (part.lo <= part.hi) l.recvs.emplace(part.lo, Held{part.hi, h});
    n.unmatched[src].push_back(h);
    n.reqs.emplace(h, std::move(r));
    handles[i] = h;
  }
  store_handles(*s.request, nodes, cnt, handles);
  auto& r = ready_[pc + 1];
  r.insert(r.end(), nodes, nodes + cnt);
  mark_ready(pc + 1);
}

// Before the send itself (the IOp::Send code): the requests and their handles.
void Requests::post_isend(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Stmt& s = *prog_.code[pc].stmt;
  std::vector<std::int64_t> handles(cnt);
  std::vector<std::vector<Part>> parts(cnt);
  send_parts(*s.value, nodes, cnt, parts);
  for (std::size_t i = 0; i < cnt; ++i) {
    const NodeId v = nodes[i];
    const std::uint32_t h = new_handle(s, v);
    NbNode& n = nb_[v];
    Request r;
    r.stmt = &s;
    for (const Part& pt : parts[i]) {
      if (pt.hi < pt.lo) continue;
      Lock& l = lock_of(n, pt.slot);
      l.sends.emplace(pt.lo, Held{pt.hi, h});
      l.send_span = std::max(l.send_span, pt.hi - pt.lo);
    }
    r.send_parts = std::move(parts[i]);
    n.reqs.emplace(h, std::move(r));
    handles[i] = h;
  }
  store_handles(*s.request, nodes, cnt, handles);
}

// Matches node v's irecvs from src, oldest first, up to the one with handle `upto` (all of
// them for kNone). False if a message is not there yet (the node waits for src).
bool Requests::match_pending(NodeId v, NodeId src, std::uint32_t upto) {
  NbNode& n = nb_[v];
  auto it = n.unmatched.find(src);
  if (it == n.unmatched.end()) return true;
  auto& q = it->second;
  while (!q.empty()) {
    const std::uint32_t h = q.front();
    Request& r = n.reqs.at(h);
    if (src == v) {
      if (self_box_.empty() || self_box_[v].empty()) return false;
      r.self_val = std::move(self_box_[v].front().value);
      r.self_dep = self_box_[v].front().dep;
      self_box_[v].pop_front();
    } else {
      const std::uint32_t k = inbox_.find(v, [&](std::uint32_t t) { return src_of(t) == src; });
      if (k == inbox_.size(v)) return false;
      r.tid = inbox_.take(v, k);
      n.port[r.port].tid = r.tid;
      if (m_.header.collective == Collective::Barrier) tr_.events.push_back((r.tid << 1) | 1);
    }
    r.matched = true;
    q.pop_front();
    if (h == upto) break;
  }
  if (q.empty()) n.unmatched.erase(it);
  return true;
}

// Completes a matched request at the node's program point `at` (its wait): an irecv's data
// goes into its buffer (and its dependency: receives are numbered in the order they complete,
// so a dependency tag's newest receive is the last one whose data the node could have used).
void Requests::complete(NodeId v, std::uint32_t h, std::uint32_t at) {
  NbNode& n = nb_[v];
  auto node = n.reqs.extract(h);
  Request& r = node.mapped();
  if (!r.recv) {
    for (const Part& pt : r.send_parts) {
      if (pt.hi < pt.lo) continue;
      Lock& l = lock_of(n, pt.slot);
      auto [b, e] = l.sends.equal_range(pt.lo);
      for (; b != e; ++b)
        if (b->second.handle == h) {
          l.sends.erase(b);
          break;
        }
      if (l.sends.empty()) l.send_span = 0;
    }
    unlock_empty(n);
    return;
  }
  Lock& l = lock_of(n, r.slot);
  --l.recv;
  if (r.whole || r.lo <= r.hi) l.recvs.erase(r.whole ? 0 : r.lo);  // (as check_overlap put it)
  unlock_empty(n);
  Buffer val;
  DepTag dep;
  if (r.peer == v) {
    val = std::move(r.self_val);
    dep = r.self_dep;
  } else {
    const Transfer& t = tr_.transfers[r.tid];
    val.assign(tr_.payload.data() + t.payload_begin, t.payload_len);
    ops_ += t.payload_len;  // work: the message's items delivered (--max-ops)
    if (recv_count_[v] == kMaxDepSeq)
      throw LimitError(fmt::format(
          "node {} receives more than {} messages; collv's timing counts at most that many per "
          "node",
          topo_.label(v), kMaxDepSeq));
    dep = dep_tag(++recv_count_[v], r.tid);
    n.port[r.port].completed = at;
  }
  DepTag& tag = deps_.row(v)[dep_col_[r.slot]];
  if (r.whole) {
    data_[r.slot].set(v, std::move(val));
    tag = dep;
    return;
  }
  const Expr& tgt = *r.stmt->target;
  if (val.size() > static_cast<std::uint64_t>(r.hi - r.lo + 1))
    rt_error(tgt, v,
             fmt::format("a message of {} items is received into {} positions (MPI's "
                         "truncation error: a receive may be larger than its message, never "
                         "smaller)",
                         val.size(), r.hi - r.lo + 1));
  tag = std::max(tag, dep);
  if (val.size() == 0) return;
  const std::int64_t b = r.lo + static_cast<std::int64_t>(val.size()) - 1;
  Buffer& dst = data_[r.slot].edit(v);
  if (static_cast<std::int64_t>(dst.size()) <= b) {
    charge_items(static_cast<std::uint64_t>(b + 1 - dst.size()));
    dst.resize(static_cast<std::uint32_t>(b + 1), 0);
  }
  for (std::int64_t k = r.lo; k <= b; ++k)
    dst[static_cast<std::uint32_t>(k)] = val[static_cast<std::uint32_t>(k - r.lo)];
  data_[r.slot].settle(v);
}

// `wait R`, `waitall R1, ...`, `waitall`: a node goes on once every listed request is
// matched; until then it waits for the source of the first one that is not (in the list's
// order; for a bare `waitall`, posting order). The list is read, checked and kept when the node
// reaches the wait; each wake-up goes on from the first request not yet matched, so a wait is
// linear in its requests however often the node is woken (reading and searching the whole
// list again at every wake-up made 3,000 requests from 3,000 peers quadratic, and a search for
// a request listed twice cubic).
void Requests::run_wait(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Stmt& s = *prog_.code[pc].stmt;
  std::vector<NodeId> fresh;  // the nodes that reach the wait now (not woken in it)
  for (std::size_t i = 0; i < cnt; ++i)
    if (nb_[nodes[i]].wait_pc != pc) fresh.push_back(nodes[i]);
  std::vector<std::vector<std::int64_t>> hs(s.requests.size());
  for (std::size_t k = 0; k < s.requests.size() && !fresh.empty(); ++k) {
    hs[k].resize(fresh.size());
    eval_int(*s.requests[k], fresh.data(), fresh.size(), hs[k].data(), 1);
  }
  std::vector<NodeId> done;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dup;
  std::size_t f = 0;  // the next node of `fresh`
  for (std::size_t i = 0; i < cnt; ++i) {
    const NodeId v = nodes[i];
    NbNode& n = nb_[v];
    if (n.wait_pc != pc) {
      const std::size_t j = f++;
      std::vector<std::uint32_t>& list = n.wait_list;
      list.clear();
      n.wait_pos = 0;
      if (s.requests.empty()) {  // `waitall`: every outstanding request, in posting order
        for (const auto& kv : n.reqs) list.push_back(kv.first);
      } else {
        for (std::size_t k = 0; k < s.requests.size(); ++k) {
          const std::int64_t h = hs[k][j];
          if (h <= 0 || h > std::numeric_limits<std::uint32_t>::max() ||
              !n.reqs.count(static_cast<std::uint32_t>(h)))
            rt_error(*s.requests[k], v,
                     fmt::format("{} is not an outstanding request at this node (never posted, "
                                 "or already completed by a wait)",
                                 h));
          list.push_back(static_cast<std::uint32_t>(h));
        }
        // A request listed twice: sorted (handle, place) pairs put its places side by side.
        dup.clear();
        for (std::uint32_t k = 0; k < list.size(); ++k) dup.emplace_back(list[k], k);
        std::sort(dup.begin(), dup.end());
        std::uint32_t first = kNone;  // the first place that repeats an earlier one
        for (std::size_t k = 1; k < dup.size(); ++k)
          if (dup[k].first == dup[k - 1].first) first = std::min(first, dup[k].second);
        if (first != kNone)
          rt_error(*s.requests[first], v, fmt::format("request {} is listed twice", list[first]));
      }
      n.wait_pc = pc;
    }
    std::vector<std::uint32_t>& list = n.wait_list;
    bool all = true;
    for (; n.wait_pos < list.size(); ++n.wait_pos) {
      Request& r = n.reqs.at(list[n.wait_pos]);
      if (r.recv && !r.matched && !match_pending(v, r.peer, list[n.wait_pos])) {
        waiting_on_[v] = r.peer;
        blocked_pc_[v] = pc;
        all = false;
        break;
      }
    }
    if (!all) continue;
    // Completed at one program point, numbered in posting order whatever the list's order.
    std::sort(list.begin(), list.end());
    const std::uint32_t at = tick(v);
    for (std::uint32_t h : list) complete(v, h, at);
    n.wait_pc = kNone;
    if (list.capacity() > 1024) std::vector<std::uint32_t>().swap(list);
    done.push_back(v);
  }
  if (done.empty()) return;
  auto& r = ready_[pc + 1];
  r.insert(r.end(), done.begin(), done.end());
  mark_ready(pc + 1);
}

// The run ended: every request must have been completed. The timing pass gets each
// receive's program points, and each node's receives chained in the order they completed
// (then posted): the order of their dependency tags.
void Requests::check_requests() {
  const std::size_t n = tr_.transfers.size();
  timing_.posted.assign(n, kNoTransfer);
  timing_.completed.assign(n, kNoTransfer);
  std::vector<PortEntry> done;
  for (NodeId v = lo_; v < hi_; ++v) {
    done.clear();
    for (const PortEntry& e : nb_[v].port)
      if (e.tid != kNoTransfer && e.completed != 0) done.push_back(e);
    std::sort(done.begin(), done.end(), [](const PortEntry& a, const PortEntry& b) {
      return std::pair(a.completed, a.posted) < std::pair(b.completed, b.posted);
    });
    std::uint32_t prev = kNoTransfer;
    for (const PortEntry& e : done) {
      timing_.posted[e.tid] = e.posted;
      timing_.completed[e.tid] = e.completed;
      timing_.prev_recv[e.tid] = prev;
      prev = e.tid;
    }
  }
  if (tr_.failure.kind != RunFailure::Kind::None) return;
  for (NodeId v = lo_; v < hi_; ++v) {
    if (nb_[v].reqs.empty()) continue;
    const Request& r = nb_[v].reqs.begin()->second;
    tr_.failure.kind = RunFailure::Kind::RuntimeError;
    tr_.failure.message = fmt::format(
        "{}: runtime error at node {} ({}): the {} posted here is never completed (MPI "
        "requires a wait or waitall for every request)",
        r.stmt->loc.str(), v, topo_.label(v), r.recv ? "irecv" : "isend");
    return;
  }
}

}  // namespace collv::interp
