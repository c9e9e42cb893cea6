// The timing pass (see timing.hpp and docs/language.md, "When a transfer happens").
#include "exec/timing.hpp"

#include <algorithm>
#include <functional>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "util/error.hpp"

namespace collv {

const char* port_model_name(PortModel m) { return m == PortModel::All ? "all" : "single"; }

std::uint32_t StepBound::on_send(NodeId u, NodeId v) {
  if (port_ == PortModel::Single) return ++sends_[u];
  return ++pair_sends_[(static_cast<std::uint64_t>(u) << 32) | v];
}

namespace {

// The longest-path pass under --port single: every port takes its transfers in the order rec
// gives.
TimingOutcome assign_steps_dag(Trace& tr, const TimingRecord& rec) {
  auto& xs = tr.transfers;
  const std::size_t n = xs.size();
  TimingOutcome out;
  if (n == 0) return out;
  constexpr std::uint32_t kBusy = kNoTransfer;  // on the search stack

  // prev_send[t]: the transfer the sender sent just before t.
  std::vector<std::uint32_t> prev_send(n, kNoTransfer);
  {
    std::vector<std::uint32_t> last(tr.topology.num_nodes(), kNoTransfer);
    for (std::uint32_t t = 0; t < n; ++t) {
      prev_send[t] = last[xs[t].src];
      last[xs[t].src] = t;
    }
  }

  for (auto& x : xs) x.step = 0;  // 0: not reached yet
  // Depth-first search with an explicit stack: stack[i+1] is a predecessor of stack[i], so the
  // stack is a path and a predecessor found on it closes a cycle.
  std::vector<std::uint32_t> stack;
  for (std::uint32_t root = 0; root < n; ++root) {
    if (xs[root].step != 0) continue;
    xs[root].step = kBusy;
    stack.push_back(root);
    while (!stack.empty()) {
      const std::uint32_t t = stack.back();
      // Predecessors: the sender's previous send, data, the receiver's previous receive.
      const std::uint32_t preds[3] = {prev_send[t], rec.dep[t], rec.prev_recv[t]};
      std::uint32_t latest = 0;
      bool descended = false;
      for (int k = 0; k < 3; ++k) {
        const std::uint32_t q = preds[k];
        if (q == kNoTransfer) continue;
        const std::uint32_t s = xs[q].step;
        if (s == 0) {
          xs[q].step = kBusy;
          stack.push_back(q);
          descended = true;
          break;
        }
        if (s == kBusy) {  // a cycle of port orders
          if (out.cycle.empty()) {
            auto pos = std::find(stack.begin(), stack.end(), q);
            out.cycle.assign(stack.rbegin(), std::make_reverse_iterator(pos));
          }
          continue;  // ignore the edge that closes it
        }
        latest = std::max(latest, s);
      }
      if (descended) continue;
      xs[t].step = latest + 1;
      stack.pop_back();
    }
  }
  return out;
}

// The schedule under --port all (docs/language.md, "Steps"): a list schedule in which every
// directed link takes one transfer per step (on a topology that states bandwidths: transfers of
// at most its bandwidth in items together, or one alone, as the congestion check counts) and a
// transfer holds every link of its route (Trace::link_path, as the congestion check counts it)
// in its one step. Two values per transfer t: its step S(t), and R(t), the latest step of the
// receives up to t in its receiver's program order (a node's receives from different neighbours
// may complete in any order, so a value is ready once all of them have happened):
//   S(t) >= 1 + max(S(a) for each earlier transfer a of t's sender that crosses a directed link
//          of t's route, R(dep t))   (its ready step)
//   R(t)  = max(S(t), R(prev_recv t))
// Every edge goes from an earlier event of the run to a later one (a send to a later send of the
// same node or to a send after the receive; a send to its receive; a receive to a later receive
// of the same node), so there is no cycle. The transfers are placed in order of (ready step, the
// sender's program order, sender id), each at the first step from its ready step where every
// link of its route has room. Where no two senders' transfers would share a link in a step this
// is the longest path (every transfer at its ready step); elsewhere it is one schedule, an upper
// bound on the fewest steps. For each (sender, directed link) only the sender's previous
// transfer on that link is an edge (the earlier ones follow by transitivity): the edges are at
// most the hops h, found by sorting them; the whole pass is O((n + h) log(n + h)).
TimingOutcome assign_steps_all(Trace& tr, const TimingRecord& rec) {
  auto& xs = tr.transfers;
  const auto n = static_cast<std::uint32_t>(xs.size());
  TimingOutcome out;
  if (n == 0) return out;
  constexpr std::uint32_t kNo = kNoTransfer;
  const bool chunks = tr.topology.declares_bandwidth();

  // Each transfer's links: lk[lb[t] .. lb[t+1]) (dense link ids, capacity cap[id]); the
  // sender's previous transfer on one of them: sp[sb[t] .. sb[t+1]).
  std::vector<std::uint32_t> lb(n + 1, 0), lk, sb(n + 1, 0), sp, cap;
  {
    struct Hop {
      NodeId src, a, b;
      std::uint32_t t;
    };
    std::vector<Hop> hops;
    hops.reserve(n);
    std::vector<NodeId> path;
    for (std::uint32_t t = 0; t < n; ++t) {
      const Transfer& x = xs[t];
      if (tr.topology.adjacent(x.src, x.dst)) {
        hops.push_back({x.src, x.src, x.dst, t});
        continue;
      }
      path = tr.link_path(x);
      if (path.size() < 2) path = {x.src, x.dst};  // a transfer to itself: the pair
      for (std::size_t h = 0; h + 1 < path.size(); ++h)
        hops.push_back({x.src, path[h], path[h + 1], t});
    }
    std::unordered_map<std::uint64_t, std::uint32_t> ids;
    for (const Hop& h : hops) {
      auto [it, fresh] =
          ids.try_emplace((std::uint64_t{h.a} << 32) | h.b, static_cast<std::uint32_t>(cap.size()));
      if (fresh) cap.push_back(chunks ? tr.topology.bandwidth(h.a, h.b) : 1);
      ++lb[h.t + 1];
    }
    for (std::uint32_t t = 0; t < n; ++t) lb[t + 1] += lb[t];
    lk.resize(hops.size());
    {
      std::vector<std::uint32_t> fill(lb.begin(), lb.end() - 1);
      for (const Hop& h : hops) lk[fill[h.t]++] = ids.at((std::uint64_t{h.a} << 32) | h.b);
    }
    std::sort(hops.begin(), hops.end(), [](const Hop& l, const Hop& r) {
      return std::tie(l.src, l.a, l.b, l.t) < std::tie(r.src, r.a, r.b, r.t);
    });
    std::vector<std::pair<std::uint32_t, std::uint32_t>> edges;  // (t, a predecessor)
    for (std::size_t i = 1; i < hops.size(); ++i) {
      const Hop& l = hops[i - 1];
      const Hop& r = hops[i];
      if (l.src == r.src && l.a == r.a && l.b == r.b && l.t != r.t) edges.push_back({r.t, l.t});
    }
    std::vector<Hop>().swap(hops);
    std::sort(edges.begin(), edges.end());
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    sp.reserve(edges.size());
    for (const auto& [t, a] : edges) {
      ++sb[t + 1];
      sp.push_back(a);
    }
    for (std::uint32_t t = 0; t < n; ++t) sb[t + 1] += sb[t];
  }
  // Successors: of S(t), the transfers listing t in sp (ss[sb2[t] .. sb2[t+1])) and R(t); of
  // R(t), the transfers whose data depends on t (ds[db[t] .. db[t+1])) and R(next_recv t).
  std::vector<std::uint32_t> sb2(n + 1, 0), ss(sp.size()), db(n + 1, 0), ds, next_recv(n, kNo);
  for (std::uint32_t t = 0; t < n; ++t)
    for (std::uint32_t i = sb[t]; i < sb[t + 1]; ++i) ++sb2[sp[i] + 1];
  for (std::uint32_t t = 0; t < n; ++t) sb2[t + 1] += sb2[t];
  {
    std::vector<std::uint32_t> fill(sb2.begin(), sb2.end() - 1);
    for (std::uint32_t t = 0; t < n; ++t)
      for (std::uint32_t i = sb[t]; i < sb[t + 1]; ++i) ss[fill[sp[i]]++] = t;
  }
  for (std::uint32_t t = 0; t < n; ++t)
    if (rec.dep[t] != kNo) ++db[rec.dep[t] + 1];
  for (std::uint32_t t = 0; t < n; ++t) db[t + 1] += db[t];
  ds.resize(db[n]);
  {
    std::vector<std::uint32_t> fill(db.begin(), db.end() - 1);
    for (std::uint32_t t = 0; t < n; ++t)
      if (rec.dep[t] != kNo) ds[fill[rec.dep[t]]++] = t;
  }
  for (std::uint32_t t = 0; t < n; ++t)
    if (rec.prev_recv[t] != kNo) next_recv[rec.prev_recv[t]] = t;

  // Waiting predecessors of S(t) and R(t), and the ready step S(t) has so far.
  std::vector<std::uint32_t> s_wait(n), r_wait(n), ready_at(n, 1), ready(n, 0), seq(n);
  {
    std::vector<std::uint32_t> sent(tr.topology.num_nodes(), 0);
    for (std::uint32_t t = 0; t < n; ++t) {
      seq[t] = sent[xs[t].src]++;
      s_wait[t] = (sb[t + 1] - sb[t]) + (rec.dep[t] != kNo);
      r_wait[t] = 1 + (rec.prev_recv[t] != kNo);
    }
  }
  // The links' loads: load[(link, step)] (transfers, or items under bandwidths); full[(link,
  // step)]: a later step to try (the link has no room at this one), path-compressed.
  std::unordered_map<std::uint64_t, std::uint32_t> load, full;
  auto key = [](std::uint32_t l, std::uint32_t s) { return (std::uint64_t{l} << 32) | s; };
  std::vector<std::uint32_t> walk;
  auto open_from = [&](std::uint32_t l, std::uint32_t s) {
    walk.clear();
    for (auto it = full.find(key(l, s)); it != full.end(); it = full.find(key(l, s))) {
      walk.push_back(s);
      s = it->second;
    }
    for (std::uint32_t w : walk) full[key(l, w)] = s;
    return s;
  };
  auto fits = [&](std::uint32_t l, std::uint32_t s, std::uint32_t len) {
    if (chunks && cap[l] == 0) return true;  // no link: the route check's to report
    auto it = load.find(key(l, s));
    return it == load.end() || (chunks && it->second + len <= cap[l]);
  };
  auto take = [&](std::uint32_t l, std::uint32_t s, std::uint32_t len) {
    if (chunks && cap[l] == 0) return;
    std::uint32_t& m = load[key(l, s)];
    m += chunks ? len : 1;
    if (!chunks || m >= cap[l]) full[key(l, s)] = s + 1;
  };

  using Key = std::tuple<std::uint32_t, std::uint32_t, NodeId, std::uint32_t>;
  std::priority_queue<Key, std::vector<Key>, std::greater<>> heap;
  std::vector<std::uint32_t> rdone;  // R nodes whose predecessors are all done
  auto s_one_less = [&](std::uint32_t t, std::uint32_t at) {
    ready_at[t] = std::max(ready_at[t], at + 1);
    if (--s_wait[t] == 0) heap.push({ready_at[t], seq[t], xs[t].src, t});
  };
  auto r_one_less = [&](std::uint32_t t) {
    if (--r_wait[t] == 0) rdone.push_back(t);
  };
  for (auto& x : xs) x.step = 0;
  for (std::uint32_t t = 0; t < n; ++t)
    if (s_wait[t] == 0) heap.push({1, seq[t], xs[t].src, t});
  std::uint32_t placed = 0;
  while (!heap.empty()) {
    const std::uint32_t t = std::get<3>(heap.top());
    heap.pop();
    const std::uint32_t len = xs[t].payload_len;
    std::uint32_t s = ready_at[t];
    for (bool moved = true; moved;) {
      moved = false;
      for (std::uint32_t i = lb[t]; i < lb[t + 1] && !moved; ++i) {
        const std::uint32_t o = open_from(lk[i], s);
        if (o != s || !fits(lk[i], s, len)) {
          s = o != s ? o : s + 1;
          moved = true;
        }
      }
    }
    for (std::uint32_t i = lb[t]; i < lb[t + 1]; ++i) take(lk[i], s, len);
    if (s > ready_at[t]) ++tr.link_waits;
    xs[t].step = s;
    ++placed;
    for (std::uint32_t i = sb2[t]; i < sb2[t + 1]; ++i) s_one_less(ss[i], s);
    r_one_less(t);
    while (!rdone.empty()) {
      const std::uint32_t q = rdone.back();
      rdone.pop_back();
      const std::uint32_t pr = rec.prev_recv[q];
      ready[q] = std::max(xs[q].step, pr == kNo ? 0 : ready[pr]);
      for (std::uint32_t i = db[q]; i < db[q + 1]; ++i) s_one_less(ds[i], ready[q]);
      if (next_recv[q] != kNo) r_one_less(next_recv[q]);
    }
  }
  COLLV_ASSERT(placed == n);  // no cycle (above)
  return out;
}

// A list schedule for nonblocking models under --port single (docs/language.md, "Completion
// order"): sets every transfer's step and returns true, or returns false if some transfers wait
// on a cycle (then, unless by_posting, *cycle gets one). Sends keep their order at each node. A
// node's receives are ordered only where its program orders them: X before Y when X is
// completed (its wait, or the blocking receive itself) before Y is posted; by_posting adds the
// posting order. Step by step, each receive port takes, among the transfers whose sender's side
// is ready (the sender's previous send done, the data they carry ready) and whose receives the
// program has released, the one ready earliest (then the one posted first). A value's data is
// ready when every receive its node completed no later than the newest one it depends on has
// happened (its dependency tag keeps only that one). Every transfer is settled once, through two
// heaps: O(n log n).
bool list_schedule(Trace& tr, const TimingRecord& rec, bool by_posting, TimingOutcome* cycle) {
  auto& xs = tr.transfers;
  const auto n = static_cast<std::uint32_t>(xs.size());
  const std::uint32_t nodes = tr.topology.num_nodes();
  constexpr std::uint32_t kNo = kNoTransfer;
  std::vector<std::uint32_t> prev_send(n, kNo), next_send(n, kNo);
  {
    std::vector<std::uint32_t> last(nodes, kNo);
    for (std::uint32_t t = 0; t < n; ++t) {
      prev_send[t] = last[xs[t].src];
      if (prev_send[t] != kNo) next_send[prev_send[t]] = t;
      last[xs[t].src] = t;
    }
  }
  auto received = [&](std::uint32_t t) { return rec.posted[t] != kNo; };
  // Each node's receives by (completed, posted): wl[wb[v] .. wb[v+1]); wpos[t] its index there.
  // And by posted: pl[..] in the same ranges, with need[i]: how many of the node's receives
  // (a prefix of its wl range) are completed before pl[i] is posted.
  std::vector<std::uint32_t> wb(nodes + 1, 0);
  for (std::uint32_t t = 0; t < n; ++t)
    if (received(t)) ++wb[xs[t].dst + 1];
  for (std::uint32_t v = 0; v < nodes; ++v) wb[v + 1] += wb[v];
  std::vector<std::uint32_t> wl(wb[nodes]), pl(wb[nodes]), need(wb[nodes]), wpos(n, kNo);
  {
    std::vector<std::uint32_t> fill(wb.begin(), wb.end() - 1);
    for (std::uint32_t t = 0; t < n; ++t)
      if (received(t)) wl[fill[xs[t].dst]++] = t;
  }
  for (std::uint32_t v = 0; v < nodes; ++v) {
    auto b = wl.begin() + wb[v], e = wl.begin() + wb[v + 1];
    std::copy(b, e, pl.begin() + wb[v]);
    std::sort(b, e, [&](std::uint32_t a, std::uint32_t c) {
      return std::pair(rec.completed[a], rec.posted[a]) <
             std::pair(rec.completed[c], rec.posted[c]);
    });
    std::sort(pl.begin() + wb[v], pl.begin() + wb[v + 1],
              [&](std::uint32_t a, std::uint32_t c) { return rec.posted[a] < rec.posted[c]; });
    std::uint32_t k = wb[v];
    for (std::uint32_t i = wb[v]; i < wb[v + 1]; ++i) {
      while (k < wb[v + 1] && rec.completed[wl[k]] < rec.posted[pl[i]]) ++k;
      need[i] = k - wb[v];
    }
    for (std::uint32_t i = wb[v]; i < wb[v + 1]; ++i) wpos[wl[i]] = i;
  }
  // The transfers whose data depends on each receive: dl[db[q] .. db[q+1]).
  std::vector<std::uint32_t> db(n + 1, 0);
  for (std::uint32_t t = 0; t < n; ++t)
    if (rec.dep[t] != kNo) ++db[rec.dep[t] + 1];
  for (std::uint32_t q = 0; q < n; ++q) db[q + 1] += db[q];
  std::vector<std::uint32_t> dl(db[n]);
  {
    std::vector<std::uint32_t> fill(db.begin(), db.end() - 1);
    for (std::uint32_t t = 0; t < n; ++t)
      if (rec.dep[t] != kNo) dl[fill[rec.dep[t]]++] = t;
  }

  std::vector<std::uint8_t> pending(n, 0), arrived(n, 0), released(n, 0);
  std::vector<std::uint32_t> rt(n, 0), ready(n, 0);  // ready[q]: receive q's data is usable
  std::vector<std::uint32_t> wdone(nodes), wmax(nodes, 0), rel(nodes);
  for (std::uint32_t v = 0; v < nodes; ++v) wdone[v] = rel[v] = wb[v];
  using Arrival = std::pair<std::uint32_t, std::uint32_t>;  // (ready step, transfer)
  std::priority_queue<Arrival, std::vector<Arrival>, std::greater<>> arrivals;
  using Key = std::pair<std::uint32_t, std::uint32_t>;  // (ready step, posted) at one port
  std::vector<std::vector<std::pair<Key, std::uint32_t>>> port(nodes);
  std::vector<NodeId> active;
  std::vector<std::uint8_t> is_active(nodes, 0);
  auto to_port = [&](std::uint32_t t) {
    const NodeId v = xs[t].dst;
    port[v].push_back({{rt[t], rec.posted[t]}, t});
    std::push_heap(port[v].begin(), port[v].end(), std::greater<>());
    if (!is_active[v]) {
      is_active[v] = 1;
      active.push_back(v);
    }
  };
  auto sender_ready = [&](std::uint32_t t) {
    std::uint32_t r = 0;
    if (prev_send[t] != kNo) r = xs[prev_send[t]].step;
    if (rec.dep[t] != kNo) r = std::max(r, ready[rec.dep[t]]);
    rt[t] = r + 1;
    arrivals.push({rt[t], t});
  };
  auto release = [&](NodeId v) {
    for (; rel[v] < wb[v + 1] && need[rel[v]] <= wdone[v] - wb[v]; ++rel[v]) {
      if (by_posting && rel[v] > wb[v] && xs[pl[rel[v] - 1]].step == 0) break;
      const std::uint32_t t = pl[rel[v]];
      released[t] = 1;
      if (arrived[t]) to_port(t);
    }
  };
  for (auto& x : xs) x.step = 0;
  for (std::uint32_t t = 0; t < n; ++t) {
    pending[t] = (prev_send[t] != kNo) + (rec.dep[t] != kNo);
    if (pending[t] == 0) sender_ready(t);
  }
  for (std::uint32_t v = 0; v < nodes; ++v) release(v);
  auto one_less = [&](std::uint32_t t) {
    if (--pending[t] == 0) sender_ready(t);
  };
  std::vector<std::uint32_t> settled;
  std::uint32_t s = 0;
  while (!arrivals.empty() || !active.empty()) {
    s = active.empty() ? arrivals.top().first : s + 1;
    settled.clear();
    while (!arrivals.empty() && arrivals.top().first <= s) {
      const std::uint32_t t = arrivals.top().second;
      arrivals.pop();
      if (!received(t)) {  // never received: no receive port
        xs[t].step = s;
        settled.push_back(t);
        continue;
      }
      arrived[t] = 1;
      if (released[t]) to_port(t);
    }
    std::size_t keep = 0;
    for (NodeId v : active) {
      auto& h = port[v];
      std::pop_heap(h.begin(), h.end(), std::greater<>());
      const std::uint32_t t = h.back().second;
      h.pop_back();
      xs[t].step = s;
      settled.push_back(t);
      if (h.empty())
        is_active[v] = 0;
      else
        active[keep++] = v;
    }
    active.resize(keep);
    // What the transfers of step s make possible takes step s + 1 or later.
    for (std::uint32_t t : settled) {
      if (next_send[t] != kNo) one_less(next_send[t]);
      if (!received(t)) continue;
      const NodeId v = xs[t].dst;
      for (; wdone[v] < wb[v + 1] && xs[wl[wdone[v]]].step != 0; ++wdone[v]) {
        const std::uint32_t q = wl[wdone[v]];
        wmax[v] = std::max(wmax[v], xs[q].step);
        ready[q] = wmax[v];
        for (std::uint32_t i = db[q]; i < db[q + 1]; ++i) one_less(dl[i]);
      }
      release(v);
    }
  }
  // Left over: each waits for another left over (its previous send, a receive its data needs, a
  // receive its port must take first), so following them closes a cycle.
  std::uint32_t first = kNo;
  for (std::uint32_t t = 0; t < n && first == kNo; ++t)
    if (xs[t].step == 0) first = t;
  if (first == kNo) return true;
  if (by_posting) return false;
  TimingOutcome& out = *cycle;
  // One predecessor left over; `approx`: a receive the data is counted to need, not its own.
  auto pred = [&](std::uint32_t t, bool& approx) {
    approx = false;
    if (prev_send[t] != kNo && xs[prev_send[t]].step == 0) return prev_send[t];
    // Not released: a receive its node completes before posting t's is left (the first one
    // not settled is among them).
    if (received(t) && !released[t]) return wl[wdone[xs[t].dst]];
    const std::uint32_t q = rec.dep[t];
    COLLV_ASSERT(q != kNo);
    const std::uint32_t u = xs[q].dst;
    const std::uint32_t w = wl[wdone[u]];  // the first receive of u not settled: at or before q
    approx = w != q;
    return w;
  };
  std::vector<std::uint32_t> path, at(n, kNo);
  std::vector<std::uint8_t> approx_to(n, 0);  // the edge from path[i] to path[i+1] is approximate
  std::uint32_t t = first;
  while (at[t] == kNo) {
    at[t] = static_cast<std::uint32_t>(path.size());
    path.push_back(t);
    bool approx = false;
    const std::uint32_t q = pred(t, approx);
    approx_to[path.size() - 1] = approx;
    t = q;
  }
  // path[at[t]] .. path.back() is the cycle, each transfer waiting for the next: reversed, each
  // must come before the next.
  for (std::uint32_t i = at[t]; i < path.size(); ++i) out.approximate |= approx_to[i] != 0;
  out.cycle.assign(path.rbegin(), path.rend() - at[t]);
  return false;
}

}  // namespace

TimingOutcome assign_steps(Trace& tr, const TimingRecord& rec, PortModel port) {
  const std::size_t n = tr.transfers.size();
  COLLV_ASSERT(rec.dep.size() == n && rec.prev_recv.size() == n);
  COLLV_ASSERT(rec.posted.empty() || (rec.posted.size() == n && rec.completed.size() == n));
  tr.port = port;
  tr.link_waits = 0;
  if (port == PortModel::All) return assign_steps_all(tr, rec);
  if (rec.posted.empty()) return assign_steps_dag(tr, rec);
  // A nonblocking model: two valid schedules, the receive ports in posting order and the list
  // schedule by readiness; the one with fewer steps is kept (posting order on a tie). Neither
  // fits only if the list schedule finds no order (a cycle).
  TimingOutcome out;
  auto last = [&] {
    std::uint32_t m = 0;
    for (const auto& x : tr.transfers) m = std::max(m, x.step);
    return m;
  };
  std::vector<std::uint32_t> posting;
  std::uint32_t posting_steps = 0;
  if (list_schedule(tr, rec, true, nullptr)) {
    posting.reserve(n);
    for (const auto& x : tr.transfers) posting.push_back(x.step);
    posting_steps = last();
  }
  if (!list_schedule(tr, rec, false, &out)) {
    // No schedule: steps as the longest-path pass gives them with each node's receives in the
    // order of their data, so that the trace can be drawn (they are not a schedule).
    (void)assign_steps_dag(tr, rec);
    return out;
  }
  if (!posting.empty() && posting_steps <= last())
    for (std::size_t t = 0; t < n; ++t) tr.transfers[t].step = posting[t];
  return out;
}

}  // namespace collv
