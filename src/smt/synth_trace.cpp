// Schedule synthesis: the schedule of a sat model as a Trace, which the checkers then judge
// (synth_detail.hpp).
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "smt/synth_detail.hpp"

namespace collv::synth_detail {

// The schedule of a sat model as a Trace.
Trace make_trace(const Topology& topo, const Graph& g, Kind k, unsigned T, NodeId root,
                 const std::map<std::string, std::string>& val) {
  auto is_true = [&](const std::string& n) {
    auto f = val.find(n);
    return f != val.end() && f->second == "true";
  };
  Trace tr;
  tr.model_name = fmt::format("synth-{}", kind_name(k));
  tr.model_file = "(synthesized by collv synth)";
  tr.topology = topo;
  tr.root = root;
  tr.collective = k == Kind::Broadcast ? Collective::Broadcast
                  : k == Kind::Gossip  ? Collective::Allgather
                                       : Collective::Allreduce;
  tr.op_class = OperatorClass::Commutative;
  tr.nodup_claimed = k != Kind::Allreduce;
  tr.layout_any = true;  // gossip asks who knows what, not where it lies in a buffer
  tr.domain = std::shared_ptr<Domain>(make_domain(DomainKind::Exact, g.p, 1, 1).release());
  Domain& d = *tr.domain;
  tr.initial_input.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v)
    if (k != Kind::Broadcast || v == root) tr.initial_input[v].push_back(d.leaf(v, 0));
  auto add = [&](unsigned t, NodeId u, NodeId v, const std::vector<Item>& items) {
    Transfer x{};
    x.step = t;
    x.src = u;
    x.dst = v;
    x.payload_begin = static_cast<std::uint32_t>(tr.payload.size());
    x.payload_len = static_cast<std::uint16_t>(items.size());
    tr.payload.insert(tr.payload.end(), items.begin(), items.end());
    tr.transfers.push_back(x);
  };
  if (k == Kind::Allreduce) {
    // Received sets per (node, step, sender), to rebuild the result selection.
    std::map<std::tuple<NodeId, unsigned, NodeId>, Item> got;
    for (unsigned t = 1; t <= T; ++t)
      for (NodeId u = 0; u < g.p; ++u)
        for (NodeId v : g.nbr[u]) {
          if (!is_true(mvar(u, v, t))) continue;
          Item it = 0;
          for (NodeId c = 0; c < g.p; ++c)
            if (is_true(fmt::format("s{}_{}_{}_{}", u, v, c, t))) it = d.combine(it, d.leaf(c, 0));
          got[{v, t, u}] = it;
          add(t, u, v, {it});
        }
    tr.final_output.resize(g.p);
    for (NodeId v = 0; v < g.p; ++v) {
      Item acc = 0;
      std::size_t j = 0;
      if (is_true(fmt::format("f{}_{}", v, j))) acc = d.combine(acc, d.leaf(v, 0));
      for (unsigned tau = 1; tau <= T; ++tau)
        for (NodeId w : g.nbr[v]) {
          ++j;
          if (!is_true(fmt::format("f{}_{}", v, j))) continue;
          auto f = got.find({v, tau, w});
          if (f != got.end()) acc = d.combine(acc, f->second);
        }
      tr.final_output[v].push_back(acc);
    }
  } else {
    std::vector<std::set<NodeId>> held(g.p);
    for (NodeId v = 0; v < g.p; ++v)
      if (k != Kind::Broadcast || v == root) held[v].insert(v);
    for (unsigned t = 1; t <= T; ++t) {
      auto prev = held;
      for (NodeId u = 0; u < g.p; ++u)
        for (NodeId v : g.nbr[u]) {
          if (!is_true(mvar(u, v, t))) continue;
          std::vector<Item> items;
          for (NodeId c : prev[u])
            if (!prev[v].count(c)) {
              items.push_back(d.leaf(c, 0));
              held[v].insert(c);
            }
          if (!items.empty()) add(t, u, v, items);
        }
    }
    tr.final_output.resize(g.p);
    for (NodeId v = 0; v < g.p; ++v)
      for (NodeId c : held[v]) tr.final_output[v].push_back(d.leaf(c, 0));
  }
  tr.compute_stats();
  return tr;
}

// The schedule of a sat symmetric model as a Trace: node v does what node 0 does, seen from v.
Trace make_trace_symmetric(const Topology& topo, const Graph& g, const Cayley& c, Kind k,
                           unsigned T, const std::map<std::string, std::string>& val) {
  auto is_true = [&](const std::string& n) {
    auto f = val.find(n);
    return f != val.end() && f->second == "true";
  };
  std::vector<int> link(T + 1, -1);
  for (unsigned t = 1; t <= T; ++t)
    for (int kk : c.links)
      if (is_true(lvar(t, kk))) link[t] = kk;
  if (k == Kind::Gossip) {
    std::map<std::string, std::string> m;
    for (unsigned t = 1; t <= T; ++t) {
      if (link[t] < 0) continue;
      for (NodeId u = 0; u < g.p; ++u)
        if (auto v = topo.neighbor(u, link[t])) m[mvar(u, *v, t)] = "true";
    }
    return make_trace(topo, g, k, T, 0, m);
  }
  Trace tr;
  tr.model_name = "synth-allreduce-uniform";
  tr.model_file = "(synthesized by collv synth --uniform)";
  tr.topology = topo;
  tr.collective = Collective::Allreduce;
  tr.op_class = OperatorClass::Commutative;
  tr.nodup_claimed = false;
  tr.domain = std::shared_ptr<Domain>(make_domain(DomainKind::Exact, g.p, 1, 1).release());
  Domain& d = *tr.domain;
  tr.initial_input.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v) tr.initial_input[v].push_back(d.leaf(v, 0));
  auto set_item = [&](NodeId v, const std::vector<NodeId>& rel) {
    Item it = 0;
    for (NodeId q : rel) it = d.combine(it, d.leaf(c.compose(v, q), 0));
    return it;
  };
  std::vector<std::vector<NodeId>> M(T + 1), R(T + 1);
  for (unsigned t = 1; t <= T; ++t)
    for (NodeId q = 0; q < g.p; ++q) {
      if (is_true(fmt::format("M{}_{}", t, q))) M[t].push_back(q);
      if (is_true(fmt::format("r{}_{}", t, q))) R[t].push_back(q);
    }
  for (unsigned t = 1; t <= T; ++t) {
    if (link[t] < 0) continue;
    for (NodeId v = 0; v < g.p; ++v) {
      auto w = topo.neighbor(v, link[t]);
      if (!w) continue;
      Transfer x{};
      x.step = t;
      x.src = v;
      x.dst = *w;
      x.payload_begin = static_cast<std::uint32_t>(tr.payload.size());
      x.payload_len = 1;
      tr.payload.push_back(set_item(v, M[t]));
      tr.transfers.push_back(x);
    }
  }
  tr.final_output.resize(g.p);
  for (NodeId v = 0; v < g.p; ++v) {
    Item acc = 0;
    if (is_true("f0")) acc = d.combine(acc, d.leaf(v, 0));
    for (unsigned j = 1; j <= T; ++j)
      if (is_true(fmt::format("f{}", j))) acc = d.combine(acc, set_item(v, R[j]));
    tr.final_output[v].push_back(acc);
  }
  tr.compute_stats();
  return tr;
}

}  // namespace collv::synth_detail
