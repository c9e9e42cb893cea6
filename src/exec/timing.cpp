// The timing pass (see timing.hpp and docs/language.md, "When a transfer happens").
#include "exec/timing.hpp"

#include <algorithm>
#include <unordered_map>

namespace collv {

const char* port_model_name(PortModel m) { return m == PortModel::All ? "all" : "single"; }

std::uint32_t StepBound::on_send(NodeId u, NodeId v) {
  if (port_ == PortModel::Single) return ++sends_[u];
  return ++pair_sends_[(static_cast<std::uint64_t>(u) << 32) | v];
}

TimingOutcome assign_steps(Trace& tr, const TimingRecord& rec, PortModel port) {
  auto& xs = tr.transfers;
  const std::size_t n = xs.size();
  COLLV_ASSERT(rec.dep.size() == n && rec.prev_recv.size() == n);
  tr.port = port;
  TimingOutcome out;
  if (n == 0) return out;
  constexpr std::uint32_t kBusy = kNoTransfer;  // on the search stack

  // prev_send[t]: the transfer whose port order comes just before t on the sending side: the
  // sender's previous send (single), or its previous send to the same destination (all).
  std::vector<std::uint32_t> prev_send(n, kNoTransfer);
  if (port == PortModel::Single) {
    std::vector<std::uint32_t> last(tr.topology.num_nodes(), kNoTransfer);
    for (std::uint32_t t = 0; t < n; ++t) {
      prev_send[t] = last[xs[t].src];
      last[xs[t].src] = t;
    }
  } else {
    std::unordered_map<std::uint64_t, std::uint32_t> last;
    for (std::uint32_t t = 0; t < n; ++t) {
      auto [it, fresh] =
          last.try_emplace((static_cast<std::uint64_t>(xs[t].src) << 32) | xs[t].dst, t);
      if (!fresh) {
        prev_send[t] = it->second;
        it->second = t;
      }
    }
  }
  // All-port: a node's receives need not come in program order, so the data a value depends on
  // is ready at ready[q] = the latest step of the receives up to q in its node's program order.
  std::vector<std::uint32_t> ready;
  if (port == PortModel::All) ready.assign(n, 0);

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
      // Predecessors: [0] port order at the sender, [1] data, [2] the receiver's previous
      // receive (single: a step constraint; all: only needed to compute ready[t]).
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
        if (s == kBusy) {  // a cycle of port orders: only possible under single-port
          if (out.cycle.empty()) {
            auto pos = std::find(stack.begin(), stack.end(), q);
            out.cycle.assign(stack.rbegin(), std::make_reverse_iterator(pos));
          }
          continue;  // ignore the edge that closes it
        }
        if (port == PortModel::All) {
          if (k == 0) latest = std::max(latest, s);
          if (k == 1) latest = std::max(latest, ready[q]);
        } else {
          latest = std::max(latest, s);
        }
      }
      if (descended) continue;
      xs[t].step = latest + 1;
      if (port == PortModel::All) {
        const std::uint32_t pr = rec.prev_recv[t];
        std::uint32_t before = pr == kNoTransfer || xs[pr].step == kBusy ? 0 : ready[pr];
        ready[t] = std::max(before, xs[t].step);
      }
      stack.pop_back();
    }
  }
  return out;
}

}  // namespace collv
