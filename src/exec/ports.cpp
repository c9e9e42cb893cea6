// Delivery and ports (see ports.hpp).
#include "exec/ports.hpp"

#include <algorithm>

namespace collv::interp {

// Messages still queued when the run ends: sent, never received (ascending transfer ids).
std::vector<std::uint32_t> Ports::unreceived() const {
  std::vector<std::uint32_t> out;
  inbox_.append_all(out);
  std::sort(out.begin(), out.end());
  return out;
}

// Self-messages (docs/language.md, "Self-messages"): a send to oneself queues the value with
// the dependency of the data it carries; the matching receive takes the oldest one (FIFO, as
// between two nodes). Neither is a transfer: no link, no port, no step.
void Ports::self_send(const Stmt& s, std::uint32_t pc, NodeId v, Buffer val) {
  if (self_box_.empty()) self_box_.resize(n_local_, lo_);
  charge_items(val.size());
  self_box_[v].push_back(SelfMessage{std::move(val), deps_of(pc, v), s.loc});
}

void Ports::self_receive(const Stmt& s, std::uint32_t pc, const std::vector<NodeId>& nodes) {
  std::vector<Buffer> vals(nodes.size());
  std::vector<DepTag> deps(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    auto& box = self_box_[nodes[i]];
    vals[i] = std::move(box.front().value);
    deps[i] = box.front().dep;
    box.pop_front();
  }
  store(*s.target, nodes.data(), nodes.size(), vals.data(), 1, true);
  // The target depends on what the sent value depended on (a whole target: only that).
  bool whole = s.target->kind == ExprKind::Name;
  const int j = dep_col_[whole ? s.target->slot : s.target->args[0]->slot];
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    DepTag& t = deps_.row(nodes[i])[j];
    t = whole ? deps[i] : std::max(t, deps[i]);
  }
  auto& r = ready_[pc + 1];
  r.insert(r.end(), nodes.begin(), nodes.end());
  mark_ready(pc + 1);
}

// A self-message still queued when the run ends (sent, never received): its send's position.
std::optional<std::pair<NodeId, SourceLoc>> Ports::unreceived_self() const {
  for (NodeId v = lo_; v < lo_ + self_box_.size(); ++v)
    if (!self_box_[v].empty()) return std::make_pair(v, self_box_[v].front().loc);
  return std::nullopt;
}

void Ports::track_assign(std::uint32_t pc, const Expr& target, const NodeId* nodes,
                         std::size_t cnt) {
  bool whole = target.kind == ExprKind::Name;
  const int j = dep_col_[whole ? target.slot : target.args[0]->slot];
  for (std::size_t i = 0; i < cnt; ++i) {
    DepTag d = deps_of(pc, nodes[i]);
    DepTag& t = deps_.row(nodes[i])[j];
    t = whole ? d : std::max(t, d);
  }
}

void Ports::track_receive(const Expr& target, const NodeId* nodes, std::size_t cnt,
                          const std::uint32_t* tids) {
  const int j = dep_col_[target.kind == ExprKind::Name ? target.slot : target.args[0]->slot];
  for (std::size_t i = 0; i < cnt; ++i) {
    if (recv_count_[nodes[i]] == kMaxDepSeq)
      throw LimitError(
          fmt::format("node {} receives more than {} messages; collv's timing "
                      "counts at most that many per node",
                      topo_.label(nodes[i]), kMaxDepSeq));
    deps_.row(nodes[i])[j] = dep_tag(++recv_count_[nodes[i]], tids[i]);
  }
}

}  // namespace collv::interp
