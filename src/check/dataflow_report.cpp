// The dataflow check's reports and the match check (dataflow_analyzer.hpp): a counterexample
// names what the node held and which contributions it lacks; the verdict's notes say what was
// not decided (budget, fingerprints).
#include <algorithm>

#include <fmt/format.h>

#include "check/dataflow_analyzer.hpp"

namespace collv::dataflow_detail {

std::string Analyzer::held_text() const {
  std::string s = "[";
  std::size_t shown = 0, n = held_.size();
  for (std::size_t i = 0; i < n && shown < kHeldShown; ++i, ++shown)
    s += (i ? ", " : "") + d_.describe(held_[i].item);
  if (n > shown) s += fmt::format(", ... ({} more)", n - shown);
  return s + "]";
}

// Why an item is not derivable, in the words of its contributions.
std::string Analyzer::why_not(Item it) {
  if (!d_.inspectable())
    return t_.from_file ? ": no sum of the values it holds, each used at most once, equals it" : "";
  std::vector<std::uint32_t> have;
  for (const auto& h : held_) {
    if (h.item == 0) continue;
    const auto ts = terms(h.item);
    have.insert(have.end(), ts.begin(), ts.end());
  }
  std::sort(have.begin(), have.end());
  have.erase(std::unique(have.begin(), have.end()), have.end());
  std::string missing;
  std::size_t count = 0;
  auto ts = d_.terms(it);
  std::sort(ts.begin(), ts.end());
  ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
  for (auto c : ts) {
    if (std::binary_search(have.begin(), have.end(), c)) continue;
    if (count++ < 4)
      missing += (missing.empty() ? "" : ", ") +
                 (d_.elems() == 1 ? fmt::format("x{}", c)
                                  : fmt::format("x{}.{}", c / d_.elems(), c % d_.elems()));
  }
  if (count > 4) missing += fmt::format(" and {} more", count - 4);
  if (count) return fmt::format(": it holds nothing that contains {}", missing);
  return d_.kind() == DomainKind::Exact
             ? ": every contribution is held, but no held items add up to it without counting "
               "one twice"
             : ": every contribution is held, but no held sequences, each used once, "
               "concatenate to it";
}

void Analyzer::report(CheckResult& r, Outcome oc, NodeId v, const Transfer* x, std::uint32_t xi,
                      std::uint32_t q) {
  if (oc == Outcome::Undecidable) {
    ++undecidable_;
    return;
  }
  if (oc == Outcome::OutOfBudget) {
    ++out_of_budget_;
    return;
  }
  r.verdict = Verdict::Fail;
  ++r.violation_count;
  // Nodes are replayed one by one; the violations kept are the earliest in schedule order
  // (step, then transfer; final buffers last).
  auto key = [&](const Counterexample& c) {
    return std::make_pair(c.step.value_or(UINT32_MAX),
                          c.transfers.empty() ? UINT32_MAX : c.transfers[0]);
  };
  std::pair<std::uint32_t, std::uint32_t> mine{x ? x->step : UINT32_MAX, x ? xi : UINT32_MAX};
  if (r.violations.size() >= o_.max_violations &&
      (r.violations.empty() || !(mine < key(r.violations.back()))))
    return;
  Counterexample c;
  c.invariant = r.name;
  Item it = x ? t_.payload[x->payload_begin + q] : t_.final_output[v][q];
  if (x) {
    c.step = x->step;
    c.nodes = {x->src, x->dst};
    c.transfers = {xi};
    c.buffers.push_back({v, "sent", d_.describe(it)});
    c.buffers.push_back({v, fmt::format("held before step {}", x->step), held_text()});
    std::string before =
        x->step <= 1 ? "its input"
                     : fmt::format("its input and what it received in steps 1..{}", x->step - 1);
    c.message = fmt::format(
        "step {}: transfer #{} ({} -> {}) carries {}, which {} cannot derive from what it holds "
        "before step {} ({} item(s): {}){}",
        x->step, xi, label(x->src), label(x->dst), d_.describe(it), label(v), x->step, held_.size(),
        before, why_not(it));
  } else {
    c.nodes = {v};
    c.buffers.push_back({v, "output", buffer_to_string(t_, t_.final_output[v])});
    c.buffers.push_back({v, "held at the end", held_text()});
    c.message = fmt::format(
        "node {} ends with {} in output[{}], which it cannot derive from what it holds at the "
        "end ({} item(s): its input and what it received){}",
        label(v), d_.describe(it), q, held_.size(), why_not(it));
  }
  auto at = std::upper_bound(r.violations.begin(), r.violations.end(), mine,
                             [&](const auto& k, const Counterexample& e) { return k < key(e); });
  r.violations.insert(at, std::move(c));
  if (r.violations.size() > o_.max_violations) r.violations.pop_back();
}

void Analyzer::finish(CheckResult& r) {
  std::vector<std::string> notes;
  if (out_of_budget_) {
    if (r.verdict == Verdict::Pass) r.verdict = Verdict::Unknown;
    notes.push_back(fmt::format(
        "{} item(s) could not be decided within the search budget (combinations of many held "
        "items)",
        out_of_budget_));
  }
  if (d_.kind() == DomainKind::Fingerprint && t_.from_file) {
    notes.push_back(
        "fingerprint domain: each item sent or kept is its node's held value or a sum of held "
        "values, each used once (equal 64-bit sums: probabilistic; overlapping parts are not "
        "seen: run the exact domain for that)");
  } else if (d_.kind() == DomainKind::Fingerprint) {
    if (undecidable_) {
      if (r.verdict == Verdict::Pass) r.verdict = Verdict::NotChecked;
      notes.push_back(fmt::format(
          "fingerprint domain: {} item(s) are not held as they are and a fingerprint cannot be "
          "decomposed into the held values it might combine; run the exact or ordered domain",
          undecidable_));
    } else {
      notes.push_back(
          "fingerprint domain: every item sent or kept is one its node holds (equal 64-bit "
          "fingerprints; probabilistic)");
    }
  }
  for (const auto& n : notes) r.note += (r.note.empty() ? "" : "; ") + n;
}

CheckResult Analyzer::check_match() {
  CheckResult r;
  r.name = "match";
  r.verdict = Verdict::Pass;
  const RunFailure& f = t_.failure;
  if (f.kind == RunFailure::Kind::RuntimeError) {
    r.verdict = Verdict::NotChecked;
    r.note = "the run stopped at a runtime error before its messages could all be received";
    return r;
  }
  if (f.kind == RunFailure::Kind::StepLimit || f.kind == RunFailure::Kind::OpLimit) {
    r.verdict = Verdict::Unknown;
    r.note = "the run stopped at a limit before its messages could all be received";
    return r;
  }
  auto add = [&](Counterexample c) {
    r.verdict = Verdict::Fail;
    c.invariant = r.name;
    ++r.violation_count;
    if (r.violations.size() < o_.max_violations) r.violations.push_back(std::move(c));
  };
  for (auto i : t_.unreceived) {
    if (i >= t_.transfers.size()) continue;
    const Transfer& x = t_.transfers[i];
    Counterexample c;
    c.step = x.step;
    c.nodes = {x.src, x.dst};
    c.transfers = {i};
    c.buffers.push_back({x.src, "sent", payload_to_string(t_, x)});
    c.message = fmt::format("step {}: transfer #{} sent by {} to {} ({}) is never received", x.step,
                            i, label(x.src), label(x.dst), payload_to_string(t_, x));
    add(std::move(c));
  }
  // A deadlock of the ports received every message: no receive waits.
  if (f.kind == RunFailure::Kind::Deadlock && !f.ports && !f.waiting.empty()) {
    // Receives that never happen: every waiting node waits for a message nobody sends.
    Counterexample c;
    c.nodes = f.waiting;
    std::string who;
    for (std::size_t k = 0; k < f.waiting.size() && k < 8; ++k)
      who += (k ? ", " : "") + label(f.waiting[k]);
    if (f.waiting.size() > 8) who += fmt::format(", ... ({} more)", f.waiting.size() - 8);
    c.message = fmt::format(
        "{} receive(s) never happen: node(s) {} wait for a message that is never sent (the "
        "deadlock check names the waiting chain)",
        f.waiting.size(), who);
    add(std::move(c));
  }
  return r;
}

}  // namespace collv::dataflow_detail
