// The dataflow and match checks (see dataflow.hpp).
//
// Nodes are processed one at a time: what node v may send at step s depends only on its input and
// the transfers it received before step s, so v's incoming transfers (in step order) are merged
// with its outgoing ones, and only one node's holdings are alive at a time. Each item is first
// looked up among the held items (a copy); only items that are not held are decomposed:
//   exact:    an exact cover of the item's multiset of contributions by pairwise disjoint held
//             items (a combination counts no contribution twice; a held item that already counts
//             one twice may still be copied), each held occurrence used at most once
//             (backtracking over the smallest uncovered contribution, budgeted);
//   ordered:  the item's sequence as a concatenation of held sequences (word-break DP; a
//             budgeted search when a contribution repeats, so no occurrence is used twice);
//   fingerprint: a run's items: membership only (a combination cannot be decomposed; not
//             checked). A schedule file's items (Trace::from_file): a sum of held values, each
//             held occurrence used at most once (meet in the middle over the node's held values,
//             budgeted): equal 64-bit sums, so probabilistic, and blind to overlapping parts.
#include "check/dataflow.hpp"

#include <algorithm>
#include <optional>

#include "check/dataflow_analyzer.hpp"
#include "check/dataflow_held.hpp"
#include "check/dataflow_sets.hpp"
#include "exec/domain_sets.hpp"

namespace collv {

namespace dataflow_detail {

Dataflow Analyzer::run() {
  Dataflow df;
  df.dataflow.name = "dataflow";
  df.dataflow.verdict = Verdict::Pass;
  // Recorded derivations are kept per slot (payload_slots): transfers that share payload
  // items are sent by different nodes, each with a derivation of its own.
  std::vector<std::uint32_t> slot;
  if (record_) {
    std::uint64_t slots = 0;
    slot = payload_slots(t_, &slots);
    df.slot = slot;
    df.payload.resize(slots);
    df.final_output.resize(t_.final_output.size());
    for (std::size_t v = 0; v < t_.final_output.size(); ++v)
      df.final_output[v].resize(t_.final_output[v].size());
  }
  auto p = static_cast<std::uint32_t>(t_.topology.num_processors());
  std::vector<std::uint8_t> lost(t_.transfers.size(), 0);
  for (auto i : t_.unreceived)
    if (i < lost.size()) lost[i] = 1;
  // Incoming (received) and outgoing transfers per node, each in step order: one pass counts
  // both sides, one fills both (an executor's trace is already in step order and is read as
  // it is; another is put in step order by a counting sort first).
  const bool in_step_order =
      std::is_sorted(t_.transfers.begin(), t_.transfers.end(),
                     [](const Transfer& a, const Transfer& b) { return a.step < b.step; });
  std::vector<std::uint32_t> order;
  if (!in_step_order) {
    order.resize(t_.transfers.size());
    std::uint32_t maxs = 0;
    for (const auto& x : t_.transfers) maxs = std::max(maxs, x.step);
    std::vector<std::uint32_t> start(maxs + 2, 0);
    for (const auto& x : t_.transfers) ++start[x.step + 1];
    for (std::size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
    for (std::uint32_t i = 0; i < t_.transfers.size(); ++i)
      order[start[t_.transfers[i].step]++] = i;
  }
  const auto n = static_cast<std::uint32_t>(t_.transfers.size());
  auto nth = [&](std::uint32_t k) { return in_step_order ? k : order[k]; };
  std::vector<std::uint32_t> in_first(p + 1, 0), out_first(p + 1, 0);
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = nth(k);
    const Transfer& x = t_.transfers[i];
    if (x.dst < p && !lost[i]) ++in_first[x.dst + 1];
    if (x.src < p) ++out_first[x.src + 1];
  }
  for (std::uint32_t v = 0; v < p; ++v) {
    in_first[v + 1] += in_first[v];
    out_first[v + 1] += out_first[v];
  }
  std::vector<std::uint32_t> in_list(in_first[p]), out_list(out_first[p]);
  {
    std::vector<std::uint32_t> in_fill(in_first.begin(), in_first.end() - 1),
        out_fill(out_first.begin(), out_first.end() - 1);
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t i = nth(k);
      const Transfer& x = t_.transfers[i];
      if (x.dst < p && !lost[i]) in_list[in_fill[x.dst]++] = i;
      if (x.src < p) out_list[out_fill[x.src]++] = i;
    }
  }

  // Without derivations to record, a node whose buffers share their sets element by element
  // is replayed once per set (dataflow_sets.hpp); the others, item by item below.
  // A run in the fingerprint domain is judged by membership alone (dataflow_held.hpp).
  std::optional<SetFlow> sets;
  std::optional<HeldFlow> members;
  if (!record_) {
    sets.emplace(t_);
    members.emplace(t_);
  }
  for (NodeId v = 0; v < p; ++v) {
    const std::span<const std::uint32_t> in_v{in_list.data() + in_first[v],
                                              in_list.data() + in_first[v + 1]};
    const std::span<const std::uint32_t> out_v{out_list.data() + out_first[v],
                                               out_list.data() + out_first[v + 1]};
    if (members && members->usable()) {
      undecidable_ += members->replay(v, in_v, out_v);
      continue;
    }
    if (sets && sets->usable() && sets->replay(v, in_v, out_v)) continue;
    begin_node(v);
    std::uint32_t j = in_first[v];
    auto take_until = [&](std::uint32_t step) {  // receive every transfer of a step < `step`
      while (j < in_first[v + 1] && t_.transfers[in_list[j]].step < step) {
        const Transfer& x = t_.transfers[in_list[j]];
        for (std::uint32_t k = 0; k < x.payload_len; ++k)
          add_held(t_.payload[x.payload_begin + k],
                   {HeldRef::Kind::Received, record_ ? slot[in_list[j]] + k : 0});
        ++j;
      }
    };
    for (std::uint32_t k = out_first[v]; k < out_first[v + 1]; ++k) {
      std::uint32_t xi = out_list[k];
      const Transfer& x = t_.transfers[xi];
      take_until(x.step);
      for (std::uint32_t q = 0; q < x.payload_len; ++q) {
        Derivation* out = record_ ? &df.payload[slot[xi] + q] : nullptr;
        Outcome r = derive(t_.payload[x.payload_begin + q], out);
        if (r != Outcome::Derived) report(df.dataflow, r, v, &x, xi, q);
      }
    }
    take_until(UINT32_MAX);
    if (v < t_.final_output.size()) {
      for (std::uint32_t q = 0; q < t_.final_output[v].size(); ++q) {
        Derivation* out = record_ ? &df.final_output[v][q] : nullptr;
        Outcome r = derive(t_.final_output[v][q], out);
        if (r != Outcome::Derived) report(df.dataflow, r, v, nullptr, 0, q);
      }
    }
  }
  finish(df.dataflow);
  df.match = check_match();
  return df;
}

void Analyzer::begin_node(NodeId v) {
  node_ = v;
  held_.clear();
  indexed_ = 0;
  by_first_.clear();
  views_.clear();
  ++gen_;
  occupied_ = 0;
  if (v < t_.initial_input.size())
    for (std::uint32_t k = 0; k < t_.initial_input[v].size(); ++k)
      add_held(t_.initial_input[v][k], {HeldRef::Kind::Input, k});
}

void Analyzer::grow() {
  std::size_t n = std::max<std::size_t>(1024, slots_.size() * 2);
  while (n < (held_.size() + 1) * 2) n *= 2;
  slots_.assign(n, Slot{});  // every generation stamp 0: below gen_ (which starts at 1)
  occupied_ = 0;
  for (std::uint32_t i = 0; i < held_.size(); ++i)
    if (held_[i].item != 0 && held_[i].item >= dense_.size()) insert_slot(held_[i].item, i);
}

// Index the held items not yet indexed by their first contribution (smallest for exact, first
// in order for ordered). Lists are kept largest item first.
void Analyzer::index_held() {
  for (; indexed_ < held_.size(); ++indexed_) {
    Item it = held_[indexed_].item;
    if (it == 0) continue;
    const auto ts = d_.terms_into(it, first_scratch_);  // only its first term is kept
    if (ts.empty()) continue;
    auto& lst = by_first_[ts.front()];
    lst.push_back(indexed_);
    for (std::size_t k = lst.size() - 1; k > 0; --k) {
      if (d_.weight(held_[lst[k - 1]].item) >= d_.weight(held_[lst[k]].item)) break;
      std::swap(lst[k - 1], lst[k]);
    }
  }
}

Outcome Analyzer::derive(Item it, Derivation* out) {
  if (views_.bytes() > kViewBytes) views_.clear();
  if (it == 0) {
    if (out) out->found = true;
    return Outcome::Derived;
  }
  if (const std::uint32_t s = find_slot(it); s != kAbsent) {
    if (s == kDerived) return Outcome::Derived;  // only without a derivation to record
    if (out) {
      out->parts = {held_[s].ref};
      out->found = true;
    }
    return Outcome::Derived;
  }
  if (!d_.inspectable()) {
    if (!t_.from_file) return Outcome::Undecidable;
    parts_.clear();
    Outcome r = held_sum(it);
    if (r == Outcome::Derived && out) {
      out->parts.clear();
      for (auto i : parts_) out->parts.push_back(held_[i].ref);
      out->found = true;
    }
    return r;
  }
  parts_.clear();
  if (made_of_held(it)) {
    if (out) {
      out->parts.clear();
      for (auto i : parts_) out->parts.push_back(held_[i].ref);
      out->found = true;
    }
    return Outcome::Derived;
  }
  index_held();
  parts_.clear();
  item_budget_ = o_.dataflow_item_budget;
  Outcome r = d_.kind() == DomainKind::Exact ? cover_exact(it) : cover_ordered(it);
  if (r == Outcome::Derived && out) {
    out->parts.clear();
    for (auto i : parts_) out->parts.push_back(held_[i].ref);
    out->found = true;
  }
  return r;
}

// The fast way, for items a run made: follow how the domain combined the item (operands())
// down to items the node holds. Sound because an item that counts no contribution twice is the
// disjoint union of the leaves it was combined from (ordered: the walk meets the parts left to
// right, so the item is their concatenation, each held occurrence used once); incomplete (the
// node may have combined it another way, and schedule files carry no combines), so the search
// below stays the judge. Without derivations to record, an item whose recorded operands are
// not both held is first looked up among the domain's other combines of it (other_operands):
// one whose operands the node both holds is taken instead (the ring's full sum is made at
// every node from its own pair, and the domain records the first node's); sound for the same
// reason. Derivations recorded for the SMT engine keep the first combine.
bool Analyzer::made_of_held(Item target) {
  if (!dup_free(target)) return false;
  stack_.assign(1, target);
  expanded_.clear();
  other_budget_ = kMaxOtherOperands;
  std::size_t visits = 0;
  bool ok = true;
  while (ok && !stack_.empty()) {
    Item x = stack_.back();
    stack_.pop_back();
    if (x == 0) continue;
    if (++visits > kMaxDagVisits) {
      ok = false;
    } else if (const std::uint32_t s = find_slot(x); s != kAbsent) {
      if (s != kDerived) parts_.push_back(s);  // a derived item is made of held ones
    } else if (x < ops_.size() && (ops_[x].first | ops_[x].second) != 0) {
      if (!record_) expanded_.push_back(x);  // operands() without a call: the domain's table
      push_operands(x, ops_[x]);
    } else if (auto ops = x < ops_.size() ? std::nullopt : d_.operands(x)) {
      if (!record_) expanded_.push_back(x);
      push_operands(x, *ops);
    } else {
      ok = false;  // a leaf or a file's item the node does not hold: the search decides
    }
  }
  if (ok) {
    // Every item the walk went through is made of held items too (and counts nothing twice).
    for (Item x : expanded_) add_derived(x);
    return true;
  }
  parts_.clear();
  return false;
}

// Pushes x's operands for the walk: `ops`, or (no derivation recorded) another combine of x
// whose operands are both held or derived when `ops`' are not.
void Analyzer::push_operands(Item x, std::pair<Item, Item> ops) {
  if (others_ && other_budget_ > 0 &&
      !(held_or_derived(ops.first) && held_or_derived(ops.second)) &&
      other_operands(d_, x, other_ops_, other_budget_) > 0) {
    other_budget_ -= other_ops_.size();
    for (const auto& o : other_ops_) {
      if (held_or_derived(o.first) && held_or_derived(o.second)) {
        ops = o;
        break;
      }
    }
  }
  stack_.push_back(ops.second);
  stack_.push_back(ops.first);
}

}  // namespace dataflow_detail

using dataflow_detail::Analyzer;

Dataflow analyze_dataflow(const Trace& t, const CheckOptions& o) {
  return Analyzer(t, o, true).run();
}

std::pair<CheckResult, CheckResult> check_dataflow_and_match(const Trace& t,
                                                             const CheckOptions& o) {
  Dataflow df = Analyzer(t, o, false).run();
  return {std::move(df.dataflow), std::move(df.match)};
}

CheckResult check_match(const Trace& t, const CheckOptions& o) {
  return Analyzer(t, o, false).check_match();
}

}  // namespace collv
