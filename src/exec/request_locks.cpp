// The buffers nonblocking requests hold (see request_locks.hpp).
#include "exec/request_locks.hpp"

#include <algorithm>

namespace collv::interp {

RequestLocks::RequestLocks(const Model& m, const Topology& t, const RunOptions& o, Trace& tr,
                           MemoryWatch& w, NodeId lo, NodeId hi)
    : Ports(m, t, o, tr, w, lo, hi) {
  if (has_nb_) init_nonblocking();
}

void RequestLocks::init_nonblocking() {
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

Lock* RequestLocks::find_lock(NbNode& n, int slot) {
  for (auto& l : n.locks)
    if (l.slot == slot) return &l;
  return nullptr;
}

Lock& RequestLocks::lock_of(NbNode& n, int slot) {
  if (Lock* l = find_lock(n, slot)) return *l;
  n.locks.emplace_back();
  n.locks.back().slot = slot;
  return n.locks.back();
}

void RequestLocks::unlock_empty(NbNode& n) {
  n.locks.erase(std::remove_if(n.locks.begin(), n.locks.end(),
                               [](const Lock& l) { return l.recv == 0 && l.sends.empty(); }),
                n.locks.end());
}

// The irecv of lock l whose buffer overlaps `part`, if any.
std::optional<Hit> RequestLocks::recv_hit(const Lock& l, const Part& part) {
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
std::optional<Hit> RequestLocks::send_hit(const Lock& l, const Part& part) {
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
Part RequestLocks::part_at(const Expr& e, NodeId v) {
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
void RequestLocks::parts_read(const Expr& e, int slot, NodeId v, std::vector<Part>& out) {
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
void RequestLocks::access_error(const Stmt& s, NodeId v, const Part& part, const Hit& hit,
                                bool write, bool recv) {
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
void RequestLocks::check_access(std::uint32_t pc, const NodeId* nodes, std::size_t cnt) {
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

// The parts of data variables an isend's message is made of, per node: `x` is all of x, `x[i]`
// and `x[i .. j]` their positions (evaluated now, as MPI fixes a send buffer's address when
// the isend is posted); any other expression, every variable it names, whole.
void RequestLocks::send_parts(const Expr& e, const NodeId* nodes, std::size_t cnt,
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
std::string RequestLocks::part_name(const Part& p) const {
  const std::string& name = m_.var_names[p.slot];
  if (p.hi == kWholeBuffer) return fmt::format("'{}'", name);
  if (p.lo == p.hi) return fmt::format("'{}[{}]'", name, p.lo);
  return fmt::format("'{}[{} .. {}]'", name, p.lo, p.hi);
}

// An irecv into `part` at node v: a runtime error if its buffer overlaps that of an
// outstanding irecv or isend of v (MPI: erroneous; which one writes last would decide the
// value). Disjoint positions of one variable are allowed, as MPICH posts them.
void RequestLocks::check_overlap(const Stmt& s, NodeId v, const Part& part) {
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

}  // namespace collv::interp
