// What a run ends with: the postcondition (each node's output, or a barrier's causal order) and
// final-buffers (see checks.hpp).
#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "check/check_util.hpp"
#include "util/memory.hpp"

namespace collv {

// A barrier's postcondition: every node's exit depends causally on every node's entry. Replays
// the executed order of sends and receives (Trace::events) with one bit set per node: a send
// carries what its sender knows, a receive adds it to what the receiver knows; at the end every
// node must know of every node's entry. A message carries its sender's whole past, whatever its
// data (empty messages included).
CheckResult check_barrier(const Trace& t, const CheckOptions& o) {
  // A schedule file records no events: its steps give the order. A transfer of step s is sent
  // with what its sender knew before step s and received at step s (as the dataflow check reads
  // steps), so every send of a step comes before every receive of it; a transfer marked never
  // received is sent and not received.
  std::vector<std::uint32_t> from_steps;
  const std::vector<std::uint32_t>* events = &t.events;
  if (t.events.size() < t.transfers.size()) {
    if (!t.from_file || t.failure.kind != RunFailure::Kind::None) {
      CheckResult r = make("postcondition");
      r.verdict = Verdict::Unknown;
      r.note = t.from_file ? "the schedule stopped early: its causal order is incomplete"
                           : "the run recorded no order of sends and receives";
      return r;
    }
    std::vector<std::uint8_t> lost(t.transfers.size(), 0);
    for (auto i : t.unreceived)
      if (i < lost.size()) lost[i] = 1;
    auto order = t.ordered_transfers();
    from_steps.reserve(2 * order.size());
    for (std::size_t a = 0; a < order.size();) {
      std::size_t b = a;
      while (b < order.size() && t.transfers[order[b]].step == t.transfers[order[a]].step) ++b;
      for (std::size_t k = a; k < b; ++k) from_steps.push_back(order[k] << 1);
      for (std::size_t k = a; k < b; ++k)
        if (!lost[order[k]]) from_steps.push_back((order[k] << 1) | 1);
      a = b;
    }
    events = &from_steps;
  }
  CheckResult r = make("postcondition");
  std::size_t p = t.topology.num_processors();
  std::size_t words = (p + 63) / 64;
  require_memory(sat_mul(sat_mul(p + t.transfers.size(), words), 8), "the barrier check");
  std::vector<std::uint64_t> know(p * words, 0), sent(t.transfers.size() * words, 0);
  for (std::size_t v = 0; v < p; ++v) know[v * words + v / 64] |= 1ULL << (v % 64);
  for (std::uint32_t e : *events) {
    std::uint32_t tid = e >> 1;
    const Transfer& x = t.transfers[tid];
    if ((e & 1) == 0) {
      std::copy_n(&know[x.src * words], words, &sent[tid * words]);
    } else {
      for (std::size_t w = 0; w < words; ++w) know[x.dst * words + w] |= sent[tid * words + w];
    }
  }
  for (std::size_t v = 0; v < p; ++v) {
    std::vector<NodeId> missing;
    for (std::size_t u = 0; u < p; ++u)
      if (!(know[v * words + u / 64] >> (u % 64) & 1)) missing.push_back(static_cast<NodeId>(u));
    if (missing.empty()) continue;
    Counterexample c;
    set_list(c.nodes, {static_cast<NodeId>(v)});
    std::string list;
    for (std::size_t k = 0; k < missing.size() && k < 8; ++k)
      list += (k ? ", " : "") + t.topology.label(missing[k]);
    if (missing.size() > 8) list += fmt::format(" and {} more", missing.size() - 8);
    c.message = fmt::format(
        "node {} leaves the barrier without a chain of messages from {} ({} of {} nodes): its "
        "exit does not depend on their entry",
        t.topology.label(static_cast<NodeId>(v)), list, missing.size(), p);
    add_violation(r, o, std::move(c));
  }
  if (events == &from_steps)
    r.note =
        "causal order from the file's steps: a transfer carries what its sender knew before "
        "its step";
  return r;
}

static CheckResult check_outputs(const Trace& t, const CheckOptions& o);

namespace {
// buffer_to_string of the buffers one check names, each distinct buffer written once (the
// ring's nodes end with equal buffers; a check keeps a few counterexamples, so a few buffers).
class BufferTexts {
 public:
  explicit BufferTexts(const Trace& t) : t_(t) {}
  const std::string& operator()(const Buffer& b) {
    auto [it, fresh] = texts_.try_emplace(std::vector<Item>(b.begin(), b.end()));
    if (fresh) it->second = buffer_to_string(t_, b);
    return it->second;
  }

 private:
  const Trace& t_;
  std::map<std::vector<Item>, std::string> texts_;
};
}  // namespace

// The collective's postcondition; a schedule file that lists a node twice in `final` claims two
// ends for it and fails too (Trace::final_twice).
CheckResult check_postcondition(const Trace& t, const CheckOptions& o) {
  CheckResult r = t.collective == Collective::Barrier ? check_barrier(t, o) : check_outputs(t, o);
  for (const std::string& m : t.final_twice) {
    Counterexample c;
    c.message = m;
    add_violation(r, o, std::move(c));
  }
  return r;
}

// Each node's output against what the collective requires of it.
static CheckResult check_outputs(const Trace& t, const CheckOptions& o) {
  CheckResult r = make("postcondition");
  const Domain& d = *t.domain;
  // A slice of a partitioned run judges its own nodes (Trace::slice_base).
  const NodeId lo = t.slice_base.value_or(0);
  const auto hi =
      static_cast<NodeId>(t.slice_base ? lo + t.final_output.size() : t.topology.num_processors());
  auto want = expected_output_refs(t, lo, hi);
  bool free_order = output_order_free(t);
  bool all_order_only = true;
  // In MPI's layout, whether two items hold the same contributions (ordered domain), each pair
  // decided once: the ring's 1,024 nodes end with the same 1,024 items, each of 1,024 terms.
  std::unordered_map<std::pair<Item, Item>, bool, ItemPairHash> same_memo;
  std::vector<std::uint32_t> ta, tb;
  auto same_terms = [&](Item a, Item b) {
    if (a == b) return true;
    auto [at, fresh] = same_memo.try_emplace({a, b}, false);
    if (fresh) {
      // A view of the domain's own storage (count 1) is copied before sorting.
      if (const auto sa = d.terms_into(a, ta); sa.data() != ta.data())
        ta.assign(sa.begin(), sa.end());
      if (const auto sb = d.terms_into(b, tb); sb.data() != tb.data())
        tb.assign(sb.begin(), sb.end());
      std::sort(ta.begin(), ta.end());
      std::sort(tb.begin(), tb.end());
      at->second = ta == tb;
    }
    return at->second;
  };
  // Each buffer's text once: a kept violation names its node's output and the expected buffer
  // twice each, and the expected buffer is one for every node of an all-reduce (the ring's in
  // the ordered domain at p = count = 1,024: 1,024 items of 1,024 terms, 8 MB of text).
  BufferTexts texts(t);
  auto same_multisets = [&](const Buffer& a, const Buffer& b) {
    if (free_order) return term_multisets(d, a, true) == term_multisets(d, b, true);
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (!same_terms(a[i], b[i])) return false;
    return true;
  };
  for (NodeId v = lo; v < hi; ++v) {
    if (!want[v - lo]) continue;
    const Buffer& got = t.final_output[v - lo];
    const Buffer* want_v = &*want[v - lo];
    bool ok = free_order ? sorted_items(got) == sorted_items(*want_v) : got == *want_v;
    if (ok) continue;
    bool order_only = d.kind() == DomainKind::Ordered && same_multisets(got, *want_v);
    all_order_only = all_order_only && order_only;
    if (r.violations.size() >= o.max_violations) {  // counted, not kept: its text is not built
      add_violation(r, o, Counterexample{});        // (ring p = 1,024 ordered: 2 x 10^9 terms)
      continue;
    }
    Counterexample c;
    set_list(c.nodes, {v});
    const std::string& got_text = texts(got);
    const std::string& want_text = texts(*want_v);
    c.buffers.push_back({v, "output", got_text});
    c.buffers.push_back({v, "expected", want_text});
    // In MPI's layout, name the first position that differs when every item is there.
    std::string where;
    if (!free_order && got.size() == want_v->size() && !order_only &&
        sorted_items(got) == sorted_items(*want_v)) {
      std::size_t i = 0;
      while (got[i] == (*want_v)[i]) ++i;
      Buffer a, b;
      a.push_back(got[i]);
      b.push_back((*want_v)[i]);
      where = fmt::format(
          " (every item is there, out of place: position {} holds {}, MPI's layout "
          "puts {} there)",
          i, buffer_to_string(t, a), buffer_to_string(t, b));
    }
    c.message = fmt::format("node {} ends with {} but {} requires {}{}{}", t.topology.label(v),
                            got_text, collective_name(t.collective), want_text,
                            order_only ? " (the same contributions in another order)" : "", where);
    add_violation(r, o, std::move(c));
  }
  if (r.verdict == Verdict::Fail && all_order_only) {
    r.order_only = true;
    r.note = "every difference is operand order only: right for commutative operators";
  }
  if (d.kind() == DomainKind::Fingerprint && r.verdict == Verdict::Pass)
    r.note = "fingerprint domain: equal sums of random 64-bit weights (probabilistic)";
  return r;
}

CheckResult check_final_buffers(const Trace& t, const CheckOptions& o) {
  if (t.collective != Collective::Allreduce && t.collective != Collective::Allgather)
    return not_checked("final-buffers",
                       "only all-reduce and all-to-all broadcast end with equal buffers");
  CheckResult r = make("final-buffers");
  bool free_order = t.collective == Collective::Allgather && t.layout_any;
  auto key = [&](const Buffer& b) {
    return free_order ? sorted_items(b) : std::vector<Item>(b.begin(), b.end());
  };
  if (t.final_output.empty()) return r;
  // A slice of a partitioned run judges its own nodes against node 0's output.
  const NodeId lo = t.slice_base.value_or(0);
  const Buffer& first = t.slice_base ? t.slice_first_output : t.final_output[0];
  auto ref = key(first);
  bool all_order_only = true;
  const Domain& d = *t.domain;
  std::optional<std::vector<std::vector<std::uint32_t>>> ref_terms;  // listed at a difference
  BufferTexts texts(t);
  for (NodeId v = std::max<NodeId>(lo, 1); v < lo + t.final_output.size(); ++v) {
    const Buffer& out = t.final_output[v - lo];
    if (key(out) == ref) continue;
    if (!ref_terms && d.kind() == DomainKind::Ordered)
      ref_terms = term_multisets(d, first, free_order);
    all_order_only = all_order_only && d.kind() == DomainKind::Ordered &&
                     term_multisets(d, out, free_order) == *ref_terms;
    if (r.violations.size() >= o.max_violations) {  // counted, not kept: its text is not built
      add_violation(r, o, Counterexample{});
      continue;
    }
    Counterexample c;
    set_list(c.nodes, {0, v});
    const std::string& first_text = texts(first);
    const std::string& out_text = texts(out);
    c.buffers.push_back({0, "output", first_text});
    c.buffers.push_back({v, "output", out_text});
    c.message = fmt::format("node {} ends with {} but node {} with {}", t.topology.label(v),
                            out_text, t.topology.label(0), first_text);
    add_violation(r, o, std::move(c));
  }
  if (r.verdict == Verdict::Fail && all_order_only) {
    r.order_only = true;
    r.note = "the buffers differ in operand order only: equal for commutative operators";
  }
  return r;
}

}  // namespace collv
