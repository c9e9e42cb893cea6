// Nonblocking requests (see requests.hpp).
#include "exec/requests.hpp"

#include <algorithm>

namespace collv::interp {

Requests::Requests(const Model& m, const Topology& t, const RunOptions& o, Trace& tr,
                   MemoryWatch& w, NodeId lo, NodeId hi)
    : Ports(m, t, o, tr, w, lo, hi) {
  if (has_nb_) init_nonblocking();
}

void Requests::init_nonblocking() {
  nb_.resize(n_local_, lo_);
  acc_.resize(prog_.code.size());
  auto data_slot = [&](const Expr& e) {
    return e.slot >= 0 && e.slot < static_cast<int>(m_.var_types.size()) &&
                   m_.var_types[e.slot] == Type::Data
               ? e.slot
               : -1;
  };
  for (std::size_t pc = 0; pc < prog_.code.size(); ++pc) {
    const Instr& in = prog_.code[pc];
    const Stmt& s = *in.stmt;
    Access& a = acc_[pc];
    auto read = [&](const Expr* e) {
      if (!e) return;
      data_slots_read(*e, m_, a.reads);
      a.roots.push_back(e);
    };
    auto target = [&](bool writes) {
      const Expr& t = *s.target;
      if (t.kind == ExprKind::Name) {
        if (writes) a.write = data_slot(t);
      } else {
        for (std::size_t k = 1; k < t.args.size(); ++k) read(t.args[k].get());
        if (writes && t.args[0]->kind == ExprKind::Name) a.write = data_slot(*t.args[0]);
      }
      if (a.write >= 0) a.target = &t;
    };
    switch (in.op) {
      case IOp::Assign:
        read(s.value.get());
        target(true);
        break;
      case IOp::Send:
      case IOp::Isend:
        read(s.value.get());
        read(s.peer.get());
        break;
      case IOp::Recv:
      case IOp::Irecv:
        read(s.peer.get());
        target(in.op == IOp::Recv);
        break;
      case IOp::JumpIfFalse:
        read(in.cond);
        break;
      case IOp::ForInit:
        read(s.value.get());
        read(s.limit.get());
        break;
      case IOp::ArrayInit:
        read(s.value.get());
        break;
      case IOp::Wait:
        for (const auto& r : s.requests) read(r.get());
        break;
      default:
        break;
    }
  }
}

Lock* Requests::find_lock(NbNode& n, int slot) {
  for (auto& l : n.locks)
    if (l.slot == slot) return &l;
  return nullptr;
}

Lock& Requests::lock_of(NbNode& n, int slot) {
  if (Lock* l = find_lock(n, slot)) return *l;
  n.locks.emplace_back();
  n.locks.back().slot = slot;
  return n.locks.back();
}

void Requests::unlock_empty(NbNode& n) {
  n.locks.erase(std::remove_if(n.locks.begin(), n.locks.end(),
                               [](const Lock& l) { return l.recv == 0 && l.sends.empty(); }),
                n.locks.end());
}

// The irecv of lock l whose buffer overlaps `part`, if any.
std::optional<Hit> Requests::recv_hit(const Lock& l, const Part& part) {
  if (part.hi < part.lo || l.recvs.empty()) return std::nullopt;
  // The irecvs' buffers are disjoint: the last one starting at or before part.hi is the only
  // candidate.
  auto it = l.recvs.upper_bound(part.hi);
  if (it == l.recvs.begin()) return std::nullopt;
  --it;
  if (it->second.hi < part.lo) return std::nullopt;
  return Hit{it->first, it->second.hi, it->second.handle};
}

// An isend of lock l whose buffer overlaps `part`, if any.
std::optional<Hit> Requests::send_hit(const Lock& l, const Part& part) {
  if (part.hi < part.lo || l.sends.empty()) return std::nullopt;
  // An isend's part overlapping part starts at or after part.lo - send_span.
  auto it = part.lo > l.send_span ? l.sends.lower_bound(part.lo - l.send_span) : l.sends.begin();
  for (; it != l.sends.end() && it->first <= part.hi; ++it)
    if (it->second.hi >= part.lo) return Hit{it->first, it->second.hi, it->second.handle};
  return std::nullopt;
}

// The positions of data variable `slot` that `x[i]` or `x[i .. j]` (x that variable) names at
// node v, evaluated now; all of it for `x` itself. Positions out of range are the statement's
// own error (an empty part here overlaps nothing).
Part Requests::part_at(const Expr& e, NodeId v) {
  if (e.kind == ExprKind::Name) return Part{e.slot, 0, kWholeBuffer};
  std::int64_t lo = 0, hi = 0;
  eval_int(*e.args[1], &v, 1, &lo, 1);
  if (e.kind == ExprKind::Slice)
    eval_int(*e.args[2], &v, 1, &hi, 1);
  else
    hi = lo;
  if (lo < 0) return Part{e.args[0]->slot, 0, -1};
  return Part{e.args[0]->slot, lo, hi};
}

// The parts of data variable `slot` that expression e reads at node v: the positions of each
// `x[i]` and `x[i .. j]`, all of x wherever else x is named (`x`, `len(x)`).
void Requests::parts_read(const Expr& e, int slot, NodeId v, std::vector<Part>& out) {
  if (e.kind == ExprKind::Name) {
    if (e.slot == slot) out.push_back(Part{slot, 0, kWholeBuffer});
    return;
  }
  std::size_t k = 0;
  if ((e.kind == ExprKind::Index || e.kind == ExprKind::Slice) &&
      e.args[0]->kind == ExprKind::Name && e.args[0]->slot == slot) {
    out.push_back(part_at(e, v));
    k = 1;  // the positions' expressions may name the variable too (`x[len(x) - 1]`)
  }
  for (; k < e.args.size(); ++k) parts_read(*e.args[k], slot, v, out);
}

// Positions held by an outstanding request are read or written: a runtime error naming both.
// "it" when the access is to the whole variable (then a held part of it is enough).
void Requests::access_error(const Stmt& s, NodeId v, const Part& part, const Hit& hit, bool write,
                            bool recv) {
  const Request& r = nb_[v].reqs.at(hit.handle);
  const Part held{part.slot, hit.lo, hit.hi};
  const bool whole = part.hi == kWholeBuffer;
  const std::string what = whole ? "it" : part_name(held);
  std::string tail;
  if (whole && held.hi != kWholeBuffer)
    tail = fmt::format("; it {} {}, and {} all of '{}' {} those positions",
                       recv ? "receives into" : "sends", part_name(held),
                       write ? "assigning" : "reading", m_.var_names[part.slot],
                       write ? "writes" : "reads");
  const std::string posted = r.stmt->loc.str();
  if (!recv)
    rt_error(s, v,
             fmt::format("{} is written before the isend of {} (posted at {}) is completed: MPI "
                         "forbids changing a send buffer before its wait{}",
                         part_name(part), what, posted, tail));
  if (write)
    rt_error(s, v,
             fmt::format("{} is written before the irecv into {} (posted at {}) is completed: "
                         "wait for it first{}",
                         part_name(part), what, posted, tail));
  rt_error(s, v,
           fmt::format("{} is read before the irecv into {} (posted at {}) is completed: data an "
                       "irecv brings may be used only after its wait{}",
                       part_name(part), what, posted, tail));
}

// Reads of positions an outstanding irecv targets, and writes of positions an outstanding irecv
// targets or an outstanding isend sends, are runtime errors; other positions of the same
// variables may be read and written (MPI allows it: in-place pairwise exchanges send one part
// of a buffer while receiving into another).
void Requests::check_access(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Access& a = acc_[pc];
  const Stmt& s = *prog_.code[pc].stmt;
  std::vector<Part> parts;
  for (std::size_t i = 0; i < cnt; ++i) {
    const NodeId v = nodes[i];
    NbNode& n = nb_[v];
    if (n.locks.empty()) continue;
    for (int r : a.reads) {
      const Lock* l = find_lock(n, r);
      if (!l || l->recvs.empty()) continue;
      parts.clear();
      for (const Expr* e : a.roots) parts_read(*e, r, v, parts);
      for (const Part& pt : parts)
        if (auto hit = recv_hit(*l, pt)) access_error(s, v, pt, *hit, false, true);
    }
    if (a.write < 0) continue;
    if (const Lock* l = find_lock(n, a.write)) {
      const Part pt = part_at(*a.target, v);
      if (auto hit = recv_hit(*l, pt)) access_error(s, v, pt, *hit, true, true);
      if (auto hit = send_hit(*l, pt)) access_error(s, v, pt, *hit, true, false);
    }
  }
}

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
  const int as = tgt.args[0]->slot;
  std::vector<std::int64_t> at(cnt);
  eval_int(*tgt.args[1], nodes, cnt, at.data(), 1);
  for (std::size_t i = 0; i < cnt; ++i) {
    auto& arr = arrays_[as][nodes[i]];
    if (at[i] < 0 || at[i] >= static_cast<std::int64_t>(arr.size()))
      rt_error(tgt, nodes[i],
               arr.empty() && !array_declared(as, nodes[i])
                   ? fmt::format("'{}' is used before its 'array' statement ran", tgt.args[0]->name)
                   : fmt::format("index {} is out of range for '{}' of {} elements", at[i],
                                 tgt.args[0]->name, arr.size()));
    arr[static_cast<std::size_t>(at[i])] = h[i];
  }
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

// The parts of data variables an isend's message is made of, per node: `x` is all of x, `x[i]`
// and `x[i .. j]` their positions (evaluated now, as MPI fixes a send buffer's address when
// the isend is posted); any other expression, every variable it names, whole.
void Requests::send_parts(const Expr& e, const NodeId* nodes, std::size_t cnt,
                          std::vector<std::vector<Part>>& out) {
  auto is_data = [&](const Expr& x) {
    return x.kind == ExprKind::Name && x.slot >= 0 &&
           x.slot < static_cast<int>(m_.var_types.size()) && m_.var_types[x.slot] == Type::Data;
  };
  if (is_data(e)) {
    for (std::size_t i = 0; i < cnt; ++i) out[i].push_back(Part{e.slot, 0, kWholeBuffer});
    return;
  }
  if ((e.kind == ExprKind::Index || e.kind == ExprKind::Slice) && is_data(*e.args[0])) {
    std::vector<std::int64_t> lo(cnt), hi(cnt);
    eval_int(*e.args[1], nodes, cnt, lo.data(), 1);
    if (e.kind == ExprKind::Slice)
      eval_int(*e.args[2], nodes, cnt, hi.data(), 1);
    else
      hi = lo;
    for (std::size_t i = 0; i < cnt; ++i) out[i].push_back(Part{e.args[0]->slot, lo[i], hi[i]});
    return;
  }
  for (const auto& a : e.args) send_parts(*a, nodes, cnt, out);
}

// "'x'", "'x[3]'", "'x[3 .. 5]'".
std::string Requests::part_name(const Part& p) const {
  const std::string& name = m_.var_names[p.slot];
  if (p.hi == kWholeBuffer) return fmt::format("'{}'", name);
  if (p.lo == p.hi) return fmt::format("'{}[{}]'", name, p.lo);
  return fmt::format("'{}[{} .. {}]'", name, p.lo, p.hi);
}

// An irecv into `part` at node v: a runtime error if its buffer overlaps that of an
// outstanding irecv or isend of v (MPI: erroneous; which one writes last would decide the
// value). Disjoint positions of one variable are allowed, as MPICH posts them.
void Requests::check_overlap(const Stmt& s, NodeId v, const Part& part) {
  if (part.hi < part.lo) return;  // an empty buffer (count 0) overlaps nothing
  Lock* l = find_lock(nb_[v], part.slot);
  if (!l) return;
  bool recv = true;
  std::optional<Hit> hit = recv_hit(*l, part);
  if (!hit) {
    hit = send_hit(*l, part);
    recv = false;
  }
  if (!hit) return;
  const Request& earlier = nb_[v].reqs.at(hit->handle);
  rt_error(s, v,
           fmt::format("the buffer of this irecv, {}, overlaps the buffer of the {} posted at {} "
                       "({}), which is still outstanding: {}",
                       part_name(part), recv ? "irecv" : "isend", earlier.stmt->loc.str(),
                       part_name(Part{part.slot, hit->lo, hit->hi}),
                       recv ? "MPI forbids two pending receives into overlapping buffers (the "
                              "one completed last would decide the values); irecvs into one "
                              "variable at once need disjoint positions"
                            : "MPI forbids receiving into a send buffer before the send's wait"));
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
// matched; until then it waits for the source of the first one that is not.
void Requests::run_wait(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
  const Stmt& s = *prog_.code[pc].stmt;
  std::vector<std::vector<std::int64_t>> hs(s.requests.size(), std::vector<std::int64_t>(cnt));
  for (std::size_t k = 0; k < s.requests.size(); ++k)
    eval_int(*s.requests[k], nodes, cnt, hs[k].data(), 1);
  std::vector<NodeId> done;
  std::vector<std::uint32_t> list;
  for (std::size_t i = 0; i < cnt; ++i) {
    const NodeId v = nodes[i];
    NbNode& n = nb_[v];
    list.clear();
    if (s.requests.empty()) {
      // `waitall`: every outstanding request. Each source's irecvs are matched in posting order
      // as far as its messages go (amortized constant time per request: going through the
      // whole list at every wake-up made 10,000 irecvs quadratic); the node waits for the
      // source of the oldest request still unmatched, as the loop below would.
      std::uint32_t oldest = kNone;
      NodeId oldest_src = 0;
      for (auto it = n.unmatched.begin(); it != n.unmatched.end();) {
        const auto next = std::next(it);
        const NodeId src = it->first;
        if (!match_pending(v, src, kNone) && it->second.front() < oldest) {
          oldest = it->second.front();
          oldest_src = src;
        }
        it = next;  // match_pending erased `it` if it matched them all
      }
      if (oldest != kNone) {
        waiting_on_[v] = oldest_src;
        blocked_pc_[v] = pc;
        continue;
      }
      for (const auto& kv : n.reqs) list.push_back(kv.first);
    } else {
      for (std::size_t k = 0; k < s.requests.size(); ++k) {
        const std::int64_t h = hs[k][i];
        if (h <= 0 || h > std::numeric_limits<std::uint32_t>::max() ||
            !n.reqs.count(static_cast<std::uint32_t>(h)))
          rt_error(*s.requests[k], v,
                   fmt::format("{} is not an outstanding request at this node (never posted, "
                               "or already completed by a wait)",
                               h));
        if (std::find(list.begin(), list.end(), static_cast<std::uint32_t>(h)) != list.end())
          rt_error(*s.requests[k], v, fmt::format("request {} is listed twice", h));
        list.push_back(static_cast<std::uint32_t>(h));
      }
    }
    bool all = true;
    for (std::uint32_t h : list) {
      Request& r = n.reqs.at(h);
      if (r.recv && !r.matched && !match_pending(v, r.peer, h)) {
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
