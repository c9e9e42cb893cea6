// The link checks: single-port, route and congestion (see checks.hpp), in one pass over the
// transfers.
#include <algorithm>
#include <map>
#include <span>
#include <tuple>

#include <fmt/format.h>

#include "check/check_util.hpp"

namespace collv {

namespace {

// single-port's counterexamples of a step in which a node sends or receives more than once: each
// such node's transfers, listed in the old, sorted way (the rare step with a violation).
void single_port_step(const Trace& t, const CheckOptions& o, CheckResult& r, std::uint32_t s,
                      std::span<const std::uint32_t> step, const std::vector<std::uint32_t>& sends,
                      const std::vector<std::uint32_t>& recvs) {
  std::map<NodeId, std::vector<std::uint32_t>> by_src, by_dst;
  for (auto i : step) {
    if (sends[t.transfers[i].src] > 1) by_src[t.transfers[i].src].push_back(i);
    if (recvs[t.transfers[i].dst] > 1) by_dst[t.transfers[i].dst].push_back(i);
  }
  for (auto* side : {&by_src, &by_dst}) {
    bool is_send = side == &by_src;
    for (auto& [v, xs] : *side) {
      Counterexample c;
      c.step = s;
      set_list(c.nodes, {v});
      c.transfers = xs;
      std::string list;
      for (auto i : xs) list += (list.empty() ? "" : "; ") + xfer_text(t, t.transfers[i]);
      c.message = fmt::format("step {}: node {} {} {} transfers ({})", s, t.topology.label(v),
                              is_send ? "sends" : "receives", xs.size(), list);
      add_violation(r, o, std::move(c));
    }
  }
}

// congestion's counterexample of a step that overloads a link: every loaded link of the step, the
// most overloaded first, built from a map of the step's hops (the rare step with a violation).
void congestion_step(const Trace& t, const CheckOptions& o, CheckResult& r, std::uint32_t s,
                     std::span<const std::uint32_t> step, bool chunks) {
  std::map<std::pair<NodeId, NodeId>, std::pair<std::vector<std::uint32_t>, std::uint32_t>> load;
  for (auto i : step) {
    const Transfer& x = t.transfers[i];
    auto path = t.link_path(x);
    for (std::size_t h = 0; h + 1 < path.size(); ++h) {
      auto& e = load[{path[h], path[h + 1]}];
      e.first.push_back(i);
      e.second += x.payload_len;
    }
  }
  auto capacity = [&](NodeId a, NodeId b) {
    return chunks ? t.topology.bandwidth(a, b) : std::uint32_t{1};
  };
  auto measure = [&](const std::pair<std::vector<std::uint32_t>, std::uint32_t>& v) {
    return chunks ? v.second : static_cast<std::uint32_t>(v.first.size());
  };
  // A pair with no link at all is the route check's to report, not a load on a link.
  if (chunks)
    std::erase_if(load,
                  [&](const auto& e) { return capacity(e.first.first, e.first.second) == 0; });
  bool over = false;
  for (auto& [k, v] : load) over = over || measure(v) > capacity(k.first, k.second);
  if (!over) return;
  Counterexample c;
  c.step = s;
  std::vector<std::uint32_t> xs;
  for (auto& [k, v] : load) {
    c.loads.push_back({k.first, k.second, static_cast<std::uint32_t>(v.first.size()), v.second});
    if (measure(v) > capacity(k.first, k.second))
      xs.insert(xs.end(), v.first.begin(), v.first.end());
  }
  // The most overloaded link first.
  auto excess = [&](const LinkLoad& a) {
    return static_cast<std::int64_t>(chunks ? a.items : a.transfers) -
           static_cast<std::int64_t>(capacity(a.from, a.to));
  };
  std::sort(c.loads.begin(), c.loads.end(), [&](const LinkLoad& a, const LinkLoad& b) {
    if (excess(a) != excess(b)) return excess(a) > excess(b);
    if (a.transfers != b.transfers) return a.transfers > b.transfers;
    return std::tie(a.from, a.to) < std::tie(b.from, b.to);
  });
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  c.transfers = xs;
  for (auto i : xs) {
    c.nodes.push_back(t.transfers[i].src);
    c.nodes.push_back(t.transfers[i].dst);
  }
  std::sort(c.nodes.begin(), c.nodes.end());
  c.nodes.erase(std::unique(c.nodes.begin(), c.nodes.end()), c.nodes.end());
  const LinkLoad& top = c.loads.front();
  if (chunks) {
    c.message = fmt::format(
        "step {}: link {} -> {} carries {} chunks in {} transfers; its bandwidth in {} is {} "
        "chunks per step",
        s, t.topology.label(top.from), t.topology.label(top.to), top.items, top.transfers,
        t.topology.spec(), capacity(top.from, top.to));
  } else {
    std::uint32_t max_load = 0;
    for (auto& l : c.loads) max_load = std::max(max_load, l.transfers);
    c.message = fmt::format(
        "step {}: link {} -> {} carries {} transfers ({} items); largest load "
        "per link in this step: {}",
        s, t.topology.label(top.from), t.topology.label(top.to), top.transfers, top.items,
        max_load);
  }
  add_violation(r, o, std::move(c));
}

}  // namespace

// single-port, route and congestion in one pass over the transfers in (step, sender, receiver)
// order: each transfer's adjacency is asked once for route and congestion, and a routed
// transfer's path found once. Each result is what its check alone finds (a null one is not
// computed): route judges every transfer (step 0 too), single-port and congestion steps 1 on.
void link_checks(const Trace& t, const CheckOptions& o, const StepIndex& steps, CheckResult* sp,
                 CheckResult* route, CheckResult* cong) {
  if (sp && t.port == PortModel::All) {
    *sp = not_checked("single-port",
                      "the run uses --port all: a node may use all its links in a step; "
                      "congestion judges each directed link");
    sp = nullptr;
  }
  if (sp) *sp = make("single-port");
  if (route) *route = make("route");
  if (cong) *cong = make("congestion");
  // Generated families: one transfer per directed link per step (the sources' unit). Listed
  // topologies (dgx1, nvswitch:N, files) state a bandwidth in chunks per step for each directed
  // link: the chunks (items) crossing it in a step must not exceed it.
  const bool chunks = cong && t.topology.declares_bandwidth() && !o.congestion_in_transfers;
  // single-port: counts per node, reset through the list of nodes a step touched (linear in the
  // transfers).
  const std::size_t n = sp ? t.topology.num_nodes() : 0;
  std::vector<std::uint32_t> sends(n, 0), recvs(n, 0);
  std::vector<NodeId> touched;
  // congestion: the load of each directed link from a list of (link, items) hops, sorted by link
  // only when it is not in link order already; no allocation per link.
  std::uint32_t worst = 0;  // largest load (transfers, or chunks over bandwidth) seen
  std::vector<std::pair<std::uint64_t, std::uint32_t>> hops;
  std::vector<NodeId> path;
  for (std::uint32_t s = 0; s <= t.steps; ++s) {
    const bool timed = s >= 1;  // steps 1.. are the schedule's; route judges step 0 too
    const bool port = sp && timed, load = cong && timed;
    bool over = false;
    hops.clear();
    for (auto i : steps[s]) {
      const Transfer& x = t.transfers[i];
      if (port) {
        if (sends[x.src]++ == 0 && recvs[x.src] == 0) touched.push_back(x.src);
        if (recvs[x.dst]++ == 0 && sends[x.dst] == 0) touched.push_back(x.dst);
        over = over || sends[x.src] > 1 || recvs[x.dst] > 1;
      }
      const bool self = x.src == x.dst;
      if (route && self) {  // no link joins a node to itself (every reader refuses it too)
        Counterexample c;
        c.step = x.step;
        set_list(c.nodes, {x.src});
        set_list(c.transfers, {i});
        c.message = fmt::format("step {}: {} sends to itself", x.step, t.topology.label(x.src));
        add_violation(*route, o, std::move(c));
      }
      const bool judge_route = route && !self;
      if (!judge_route && !load) continue;
      if (t.topology.adjacent(x.src, x.dst)) {
        if (load) hops.push_back({(std::uint64_t{x.src} << 32) | x.dst, x.payload_len});
        continue;
      }
      path = t.route(x);  // what link_path gives a transfer that is not along a link
      if (judge_route) {
        for (std::size_t h = 0; h + 1 < path.size(); ++h) {
          if (t.topology.adjacent(path[h], path[h + 1])) continue;
          Counterexample c;
          c.step = x.step;
          set_list(c.nodes, {x.src, x.dst});
          set_list(c.transfers, {i});
          c.message = fmt::format("step {}: {} -> {} crosses {} -> {}, which is not a link of {}",
                                  x.step, t.topology.label(x.src), t.topology.label(x.dst),
                                  t.topology.label(path[h]), t.topology.label(path[h + 1]),
                                  t.topology.spec());
          add_violation(*route, o, std::move(c));
          break;
        }
      }
      if (load)
        for (std::size_t h = 0; h + 1 < path.size(); ++h)
          hops.push_back({(std::uint64_t{path[h]} << 32) | path[h + 1], x.payload_len});
    }
    if (port) {
      if (over) single_port_step(t, o, *sp, s, steps[s], sends, recvs);
      for (NodeId v : touched) sends[v] = recvs[v] = 0;
      touched.clear();
    }
    if (!load) continue;
    // Only equal links need to be together: an executor's step is already in (sender,
    // receiver) order and is not sorted again.
    auto by_link = [](const auto& a, const auto& b) { return a.first < b.first; };
    if (!std::is_sorted(hops.begin(), hops.end(), by_link))
      std::sort(hops.begin(), hops.end(), by_link);
    bool over_link = false;
    for (std::size_t k = 0; k < hops.size();) {
      std::size_t e = k;
      std::uint32_t items = 0;
      while (e < hops.size() && hops[e].first == hops[k].first) items += hops[e++].second;
      const auto a = static_cast<NodeId>(hops[k].first >> 32);
      const auto b = static_cast<NodeId>(hops[k].first & 0xFFFFFFFFu);
      const std::uint32_t cap = chunks ? t.topology.bandwidth(a, b) : 1;
      const std::uint32_t m = chunks ? items : static_cast<std::uint32_t>(e - k);
      k = e;
      if (chunks && cap == 0) continue;  // no link: the route check's to report
      worst = std::max(worst, m);
      over_link = over_link || m > cap;
    }
    // Only a step that overloads a link is gone over again, to build its counterexample.
    if (over_link) congestion_step(t, o, *cong, s, steps[s], chunks);
  }
  if (cong)
    cong->note = chunks ? fmt::format(
                              "largest number of chunks on one directed link in one step: {} "
                              "(bandwidths of {})",
                              worst, t.topology.spec())
                        : fmt::format("largest load on one directed link in one step: {}", worst);
}

CheckResult check_single_port(const Trace& t, const CheckOptions& o) {
  CheckResult r;
  link_checks(t, o, by_step(t), &r, nullptr, nullptr);
  return r;
}

CheckResult check_route(const Trace& t, const CheckOptions& o) {
  CheckResult r;
  link_checks(t, o, by_step(t), nullptr, &r, nullptr);
  return r;
}

CheckResult check_congestion(const Trace& t, const CheckOptions& o) {
  CheckResult r;
  link_checks(t, o, by_step(t), nullptr, nullptr, &r);
  return r;
}

}  // namespace collv
