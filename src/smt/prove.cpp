// smt_check_trace: the schedule's data flow and invariants as SMT queries (see prove.hpp and
// docs/smt.md). Every data term is built from the schedule's derivations (analyze_dataflow), never
// from collv's values: x<node>_<elem> are the inputs, m<k> the item at slot k (payload_slots: the
// k-th item sent) as its sender built it from what it held, o<v>_<i> node v's final item i as v
// built it; the collective's required output e<k> is built from the inputs by the collective's
// definition alone.
#include "smt/prove.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "smt/prove_flow.hpp"
#include "smt/solver.hpp"
#include "util/error.hpp"
#include "util/read_file.hpp"

namespace collv {

namespace {

using smt_flow::Flow;
using smt_flow::Word;

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s)
    o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return o;
}

long long parse_int_value(std::string v) {
  if (v.size() > 3 && v[0] == '(') v = "-" + v.substr(3, v.size() - 4);  // (- 1)
  return v.empty() ? 0 : std::stoll(v);
}

// Positions of a buffer's items in a canonical order of their words (sorted words for integer
// sums), so that two order-free buffers are paired item by item: equal up to order iff the paired
// items are equal. The pairing is only a witness: Z3 checks each pair.
std::vector<std::uint32_t> canonical_positions(const std::vector<Word>& ws, bool seq) {
  std::vector<std::pair<Word, std::uint32_t>> v;
  for (std::uint32_t i = 0; i < ws.size(); ++i) {
    Word w = ws[i];
    if (!seq) std::sort(w.begin(), w.end());
    v.push_back({w, i});
  }
  std::sort(v.begin(), v.end());
  std::vector<std::uint32_t> o;
  for (auto& [w, i] : v) o.push_back(i);
  return o;
}

std::vector<Word> sorted_multisets(std::vector<Word> ws, bool sort_items) {
  for (auto& w : ws) std::sort(w.begin(), w.end());
  if (sort_items) std::sort(ws.begin(), ws.end());
  return ws;
}
std::vector<Word> sorted_items(std::vector<Word> ws) {
  std::sort(ws.begin(), ws.end());
  return ws;
}

CheckResult base(const char* name) {
  CheckResult r;
  r.name = name;
  r.verdict = Verdict::Pass;
  return r;
}

struct Query {
  std::string name;  // check name
  std::string lit;   // assumption literal
  bool ground;       // schedule invariant with witness constants
};

const char* kDataChecks[] = {"nodup", "postcondition", "final-buffers"};

// Recent unsat answers by their exact query text: `collv verify` asks the same query of the exact
// and the ordered run of one schedule (the derivations come from the same ordered run), and the
// same text has the same answer. Only unsat is reused (a sat answer is re-asked for witnesses).
struct CachedUnsat {
  std::string text;
  smt::Result result;
};
std::vector<CachedUnsat>& unsat_cache() {
  static std::vector<CachedUnsat> c;
  return c;
}

}  // namespace

bool smt_decides(const std::string& check) {
  return check == "route" || check == "nodup" || check == "postcondition" ||
         check == "final-buffers";
}

std::string smt_not_decided_note(const std::string& check) {
  if (check == "single-port" || check == "congestion")
    return "decided by the executor: a count of the transfers per step, which a query would "
           "only re-evaluate (docs/smt.md)";
  return "decided by the executor, not by the SMT engine";
}

std::vector<CheckResult> smt_check_trace(const Trace& t, const SmtOptions& o) {
  if (!t.domain || !t.domain->inspectable())
    throw UsageError(
        "the SMT engine needs a trace from the ordered domain (run with --domain ordered)");
  Dataflow df = analyze_dataflow(t, CheckOptions{});
  return smt_check_trace(t, df, o);
}

std::vector<CheckResult> smt_check_trace(const Trace& t, const Dataflow& df, const SmtOptions& o) {
  if (!t.domain || !t.domain->inspectable())
    throw UsageError(
        "the SMT engine needs a trace from the ordered domain (run with --domain ordered)");
  bool seq = o.algebra == SmtAlgebra::Associative ||
             (o.algebra == SmtAlgebra::Auto && t.op_class == OperatorClass::Associative);
  if (seq && t.domain->kind() != DomainKind::Ordered)
    throw UsageError(
        "the SMT engine proves associative operators from an ordered-domain trace "
        "(operand order); this trace is from the " +
        std::string(domain_name(t.domain->kind())) + " domain");
  // Integer sums on an ordered trace: operand order is also compared (as the executor's ordered
  // domain does), and a difference in order only is reported as an order-only failure.
  bool check_order = !seq && o.report_order && t.domain->kind() == DomainKind::Ordered;

  const Topology& topo = t.topology;
  const Domain& d = *t.domain;
  auto p = static_cast<NodeId>(topo.num_processors());
  std::uint32_t universe = d.p() * d.elems();
  Flow flow(t, df);
  bool derived = flow.problem().empty();
  if (derived) flow.compute_words();
  smt::Solver budget(smt::Limits{o.timeout_ms, o.max_terms});  // the size cap, for all queries

  // ---- size, counted before anything is built ----
  auto want = expected_outputs(t);
  std::uint64_t size = universe + 8 + 2 * flow.size();
  {
    std::set<Item> seen;
    for (NodeId v = 0; v < p; ++v) {
      if (derived && v < flow.final_words().size())
        for (auto& w : flow.final_words()[v]) size += w.size() + 2;  // flattened by Z3
      if (want[v])
        for (Item it : *want[v])
          if (seen.insert(it).second) size += d.weight(it) + 2;
    }
    size += 28 * t.transfers.size();  // transfer facts, route, nodup
    for (const Transfer& x : t.transfers)
      if (!topo.adjacent(x.src, x.dst)) size += 16 * t.route(x).size();
    size += 2 * topo.num_links();
  }
  // nodup's bit vectors have a bit per contribution, and Z3 keeps the constant u<c> = 2^c as a
  // numeral of c bits: universe^2 / 16 bytes in all, which outgrows the term count (scatter on
  // hypercube:9, universe 2^18: 4.3 GB of its 5.4 GB peak; counted by terms alone, 0.3 GB).
  std::uint64_t bit_vectors = t.nodup_claimed && derived ? sat_mul(universe, universe) / 16 : 0;
  std::vector<CheckResult> results;
  // A schedule file's format leaves these open (Trace::file_not_checked): so does this engine.
  auto left_open = [&](const std::string& name) -> const std::string* {
    for (const auto& [n, why] : t.file_not_checked)
      if (n == name) return &why;
    return nullptr;
  };
  if (!budget.reserve(size, bit_vectors)) {
    for (const char* n : kCheckNames) {
      CheckResult r;
      r.name = n;
      bool decided = smt_decides(n) && !left_open(n);
      r.verdict = decided ? Verdict::Unknown : Verdict::NotChecked;
      r.note = decided ? budget.refusal() : left_open(n) ? *left_open(n) : smt_not_decided_note(n);
      results.push_back(std::move(r));
    }
    return results;
  }

  // ---- declarations ----
  // Common declarations, then one script section per invariant: each query is checked (and
  // written) as the declarations plus its own section, so a certificate holds only its invariant.
  std::map<std::string, std::string> sections;
  std::string decl;
  decl += fmt::format(
      "; collv SMT encoding of {} on {} ({} algebra: {})\n"
      "; x<node>_<elem>: the inputs; m<k>: the k-th item sent, a constant with one fact per "
      "item\n"
      "; (what its sender built it from: inputs and items m<j> it received earlier);\n"
      "; o<v>_<i>: node v's final item i, built the same way; e<k>: what the collective "
      "requires,\n"
      "; built from the inputs by its definition.\n",
      t.model_name, topo.spec(), seq ? "associative" : "commutative",
      seq ? "sequences of units, the free monoid" : "integer sums");
  for (std::uint32_t c = 0; c < universe; ++c)
    decl += fmt::format("(declare-const {} Int)\n", flow.xname(c));
  decl +=
      "(declare-const w_step Int)\n(declare-const w_a Int)\n(declare-const w_b "
      "Int)\n(declare-const w_c Int)\n";
  // single-port and congestion are per-step counts of the transfer list, which the executor
  // decides: as a query they only compared collv's counts ((> (+ 1 1) 1)), and counting inside
  // the query took minutes per query on star:5 (docs/smt.md).
  std::vector<Query> queries = {{"route", "a_route", true},
                                {"nodup", "a_nodup", true},
                                {"postcondition", "a_postcondition", false},
                                {"final-buffers", "a_final_buffers", false}};
  for (auto& q : queries) sections[q.name] = fmt::format("(declare-const {} Bool)\n", q.lit);

  // Transfers by step.
  std::vector<std::vector<std::uint32_t>> steps(t.steps + 1);
  for (auto i : flow.order())
    if (t.transfers[i].step <= t.steps) steps[t.transfers[i].step].push_back(i);

  // route: adj is the topology's link relation (asserted for every link); a violation is a hop of
  // a route that is not asserted to be a link.
  {
    std::string& s = sections["route"];
    s += "(declare-fun adj (Int Int) Bool)\n";
    for (NodeId v = 0; v < topo.num_nodes(); ++v)
      for (const Link& l : topo.links(v)) s += fmt::format("(assert (adj {} {}))\n", v, l.to);
    std::string body;
    for (auto i : t.ordered_transfers()) {
      const Transfer& x = t.transfers[i];
      std::vector<NodeId> path =
          topo.adjacent(x.src, x.dst) ? std::vector<NodeId>{x.src, x.dst} : t.route(x);
      for (std::size_t h = 0; h + 1 < path.size(); ++h)
        body +=
            fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b {}) (= w_c {}) (not (adj {} {})))",
                        x.step, x.src, x.dst, i, path[h], path[h + 1]);
    }
    s += fmt::format("(assert (=> a_route (or false{})))\n", body);
  }
  // nodup, asked of the derivation terms in the multiplicity semiring {0, 1, 2+}, for all
  // contributions at once: a<j> ("which contributions m<j> counts at least once") and d<j> ("at
  // least twice") are bit vectors with one bit per input x<node>_<elem> (u<c>), built from m<j>'s
  // derivation exactly as the term is: a sum counts a contribution twice iff a part does or two
  // parts count it. Violations:
  // (1) an item sent or kept that counts a contribution twice: d<j> is not zero;
  // (2) a transfer whose destination already held one of its contributions (its input, or an item
  //     received in an earlier step): a<j> meets h<v>_<s>, h built step by step.
  bool nodup_checked = t.nodup_claimed;
  if (nodup_checked && derived) {
    std::string& s = sections["nodup"];
    std::string bv = fmt::format("(_ BitVec {})", std::max<std::uint32_t>(universe, 1));
    std::string zero = fmt::format("(_ bv0 {})", std::max<std::uint32_t>(universe, 1));
    for (std::uint32_t c = 0; c < universe; ++c)
      s += fmt::format("(define-fun u{} () {} (bvshl (_ bv1 {}) (_ bv{} {})))\n", c, bv, universe,
                       c, universe);
    auto meets = [&](const std::string& x, const std::string& y) {
      return fmt::format("(not (= (bvand {} {}) {}))", x, y, zero);
    };
    // Once (a) and twice (d) of a list of parts given as (a, d) pairs, with prefix helpers.
    std::size_t helper = 0;
    auto once_twice = [&](const std::vector<std::pair<std::string, std::string>>& ps) {
      if (ps.empty()) return std::make_pair(zero, zero);
      if (ps.size() == 1) return ps[0];
      std::string a = "(bvor", dd = "(bvor";
      std::string prefix = ps[0].first;
      for (std::size_t i = 0; i < ps.size(); ++i) {
        a += " " + ps[i].first;
        dd += " " + ps[i].second;
        if (i > 0) {
          dd += fmt::format(" (bvand {} {})", prefix, ps[i].first);
          if (i + 1 < ps.size()) {
            std::string n = fmt::format("pre{}", helper++);
            s += fmt::format("(define-fun {} () {} (bvor {} {}))\n", n, bv, prefix, ps[i].first);
            prefix = n;
          }
        }
      }
      return std::make_pair(a + ")", dd + ")");
    };
    auto input_pair = [&](NodeId v, std::uint32_t idx) {
      std::vector<std::pair<std::string, std::string>> ps;
      for (auto c : flow.input_word(v, idx)) ps.push_back({fmt::format("u{}", c), zero});
      return once_twice(ps);
    };
    auto received_pair = [&](std::uint32_t j) {
      const auto& r = flow.root(j);
      return r.input ? input_pair(r.node, r.index)
                     : std::make_pair(fmt::format("a{}", r.index), fmt::format("d{}", r.index));
    };
    auto derivation_pair = [&](NodeId v, const Derivation& dv) {
      std::vector<std::pair<std::string, std::string>> ps;
      for (auto& h : dv.parts)
        ps.push_back(h.kind == HeldRef::Kind::Input ? input_pair(v, h.index)
                                                    : received_pair(h.index));
      return once_twice(ps);
    };
    for (auto i : flow.order()) {
      const Transfer& x = t.transfers[i];
      for (std::uint32_t k = 0; k < x.payload_len; ++k) {
        auto j = flow.slot(i) + k;
        if (flow.is_copy(j)) continue;  // a copy counts what the value it copies counts
        auto [a, dd] = derivation_pair(x.src, df.payload[j]);
        s += fmt::format("(define-fun a{} () {} {})\n(define-fun d{} () {} {})\n", j, bv, a, j, bv,
                         dd);
      }
    }
    std::string body;
    // held[v]: the contributions v holds before the current step.
    std::vector<std::string> held(p);
    for (NodeId v = 0; v < p && v < t.initial_input.size(); ++v) {
      std::string atoms;
      for (std::uint32_t k = 0; k < t.initial_input[v].size(); ++k)
        atoms += " " + input_pair(v, k).first;
      if (!atoms.empty()) {
        s += fmt::format("(define-fun h{}_0 () {} (bvor {}{}))\n", v, bv, zero, atoms);
        held[v] = fmt::format("h{}_0", v);
      }
    }
    // held[v] grows item by item: what v received earlier in the same step counts too (an item
    // twice in one message, or in two messages of one step), as the executor's nodup says.
    for (std::uint32_t st = 1; st <= t.steps; ++st) {
      std::map<NodeId, std::uint32_t> got;  // items each node received so far in this step
      for (auto i : steps[st]) {
        const Transfer& x = t.transfers[i];
        for (std::uint32_t k = 0; k < x.payload_len; ++k) {
          auto j = flow.slot(i) + k;
          auto [aj, dj] = received_pair(j);
          // A copy's multiplicities are those of the value it copies (checked where it was made).
          if (!flow.is_copy(j))
            body +=
                fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b {}) (= w_c {}) (not (= {} {})))",
                            st, x.src, x.dst, i, dj, zero);
          if (x.dst >= p) continue;
          if (!held[x.dst].empty())
            body += fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b {}) (= w_c {}) {})", st,
                                x.dst, x.src, i, meets(aj, held[x.dst]));
          std::string h = fmt::format("h{}_{}_{}", x.dst, st, got[x.dst]++);
          s += fmt::format("(define-fun {} () {} (bvor {} {}))\n", h, bv,
                           held[x.dst].empty() ? zero : held[x.dst], aj);
          held[x.dst] = h;
        }
      }
    }
    for (NodeId v = 0; v < t.final_output.size(); ++v)
      for (std::uint32_t i = 0; i < t.final_output[v].size(); ++i) {
        auto [a, dd] = derivation_pair(v, df.final_output[v][i]);
        if (dd == zero) continue;  // one input element: nothing can be counted twice
        body += fmt::format(" (and (= w_step 0) (= w_a {}) (= w_b {}) (= w_c -1) (not (= {} {})))",
                            v, v, dd, zero);
      }
    s += fmt::format("(assert (=> a_nodup (or false{})))\n", body);
  }

  // postcondition: every final term (built by the schedule) against the required term (built from
  // the inputs by the collective's definition).
  bool free = output_order_free(t);
  const auto& fw = flow.final_words();
  std::map<Item, std::string> expected_name;
  std::map<std::string, Word> expected_word;  // e<k> -> its contributions
  std::vector<std::vector<std::string>> want_names(p);
  if (derived) {
    std::string& s = sections["postcondition"];
    s += flow.definitions(seq, true);
    std::string defs, body;
    for (NodeId v = 0; v < p; ++v) {
      if (!want[v]) continue;
      for (Item it : *want[v]) {
        auto f = expected_name.find(it);
        if (f == expected_name.end()) {
          std::string n = fmt::format("e{}", expected_name.size());
          Word w = d.terms(it);
          defs += fmt::format("(define-fun {} () {} {})\n", n, seq ? "(Seq Int)" : "Int",
                              flow.word_term(w, seq));
          f = expected_name.emplace(it, n).first;
          expected_word.emplace(n, std::move(w));
        }
        want_names[v].push_back(f->second);
      }
    }
    s += defs;
    for (NodeId v = 0; v < p && v < t.final_output.size(); ++v) {
      if (!want[v]) continue;
      if (fw[v].size() != want[v]->size()) {
        body += fmt::format(" (and (= w_a {}) true)", v);  // a length mismatch is a violation
        continue;
      }
      std::vector<std::uint32_t> a(fw[v].size()), b(fw[v].size());
      for (std::uint32_t i = 0; i < a.size(); ++i) a[i] = b[i] = i;
      if (free) {
        a = canonical_positions(fw[v], seq);
        std::vector<Word> ew;
        for (auto& n : want_names[v]) ew.push_back(expected_word[n]);
        b = canonical_positions(ew, seq);
      }
      for (std::uint32_t i = 0; i < a.size(); ++i) {
        // The same term on both sides (a node keeping its own input, which no transfer touches):
        // (not (= t t)) is false in every theory, so the disjunct is left out, and no
        // certificate compares a term with itself.
        if (flow.final_term(v, a[i], seq) ==
            flow.word_term(expected_word[want_names[v][b[i]]], seq))
          continue;
        body +=
            fmt::format(" (and (= w_a {}) (not (= o{}_{} {})))", v, v, a[i], want_names[v][b[i]]);
      }
    }
    s += fmt::format("(assert (=> a_postcondition (or false{})))\n", body);
  }
  bool final_checked =
      t.collective == Collective::Allreduce || t.collective == Collective::Allgather;
  bool fb_free = t.collective == Collective::Allgather && t.layout_any;
  if (final_checked && derived) {
    std::string& s = sections["final-buffers"];
    s += flow.definitions(seq, true);
    std::string body;
    for (NodeId v = 1; v < fw.size(); ++v) {
      if (fw[v].size() != fw[0].size()) {
        body += fmt::format(" (and (= w_a {}) true)", v);
        continue;
      }
      std::vector<std::uint32_t> a(fw[v].size()), b(fw[v].size());
      for (std::uint32_t i = 0; i < a.size(); ++i) a[i] = b[i] = i;
      if (fb_free) {
        a = canonical_positions(fw[v], seq);
        b = canonical_positions(fw[0], seq);
      }
      for (std::uint32_t i = 0; i < a.size(); ++i)
        if (flow.final_term(v, a[i], seq) != flow.final_term(0, b[i], seq))  // as above
          body += fmt::format(" (and (= w_a {}) (not (= o{}_{} o0_{})))", v, v, a[i], b[i]);
    }
    s += fmt::format("(assert (=> a_final_buffers (or false{})))\n", body);
  }

  // Whether every processor has the same requirement (all-reduce, all-gather): then a proved
  // postcondition implies final-buffers.
  bool same_requirement = p > 0 && want[0].has_value();
  for (NodeId v = 1; v < p && same_requirement; ++v)
    same_requirement = want[v].has_value() && *want[v] == *want[0];

  // Operand order (check_order): node v's final words against the required words.
  auto words_of = [&](NodeId v) -> std::vector<Word> {
    std::vector<Word> r;
    for (auto& n : want_names[v]) r.push_back(expected_word[n]);
    return r;
  };
  auto order_differs = [&](const std::vector<Word>& a, const std::vector<Word>& b, bool fr) {
    return fr ? sorted_items(a) != sorted_items(b) : a != b;
  };

  // ---- the checks, one assumption literal each ----
  std::vector<std::string> xs;
  for (std::uint32_t c = 0; c < universe; ++c) xs.push_back(flow.xname(c));
  if (!o.emit_dir.empty()) make_dir_checked(o.emit_dir, "--emit-smt2");
  auto label = [&](NodeId v) { return topo.label(v); };
  std::string alg = seq ? "associative (sequences)" : "commutative (integer sums)";
  std::vector<long long> xv(universe, 0);
  auto eval = [&](const std::vector<Word>& ws) {
    std::string s = "[";
    for (std::size_t k = 0; k < ws.size(); ++k) {
      if (k) s += ", ";
      if (seq) {
        s += "<";
        for (std::size_t i = 0; i < ws[k].size(); ++i) {
          if (i) s += ' ';  // not `(i ? " " : "") + ...`: GCC 12 warned (-Wrestrict)
          s += std::to_string(xv[ws[k][i]]);
        }
        s += ">";
      } else {
        long long sum = 0;
        for (auto c : ws[k]) sum += xv[c];
        s += std::to_string(sum);
      }
    }
    return s + "]";
  };
  auto values_equal = [&](const std::vector<Word>& a, const std::vector<Word>& b, bool fr) {
    if (a.size() != b.size()) return false;
    std::vector<std::vector<long long>> va, vb;
    auto val = [&](const Word& w) {
      std::vector<long long> r;
      long long s = 0;
      for (auto c : w) seq ? r.push_back(xv[c]) : void(s += xv[c]);
      if (!seq) r.push_back(s);
      return r;
    };
    for (auto& w : a) va.push_back(val(w));
    for (auto& w : b) vb.push_back(val(w));
    if (fr) {
      std::sort(va.begin(), va.end());
      std::sort(vb.begin(), vb.end());
    }
    return va == vb;
  };

  bool post_unsat = false;
  for (const char* name : kCheckNames) {
    auto q = std::find_if(queries.begin(), queries.end(),
                          [&](const Query& q) { return q.name == name; });
    CheckResult r = base(name);
    if (q == queries.end() || left_open(name)) {
      r.verdict = Verdict::NotChecked;
      r.note = q == queries.end() ? smt_not_decided_note(name) : *left_open(name);
      results.push_back(std::move(r));
      continue;
    }
    if (q->name == "nodup" && !nodup_checked) {
      r.verdict = Verdict::NotChecked;
      r.note = "the model does not claim NODUP (header: nodup no)";
      results.push_back(std::move(r));
      continue;
    }
    if (q->name == "final-buffers" && !final_checked) {
      r.verdict = Verdict::NotChecked;
      r.note = "only all-reduce and all-to-all broadcast end with equal buffers";
      results.push_back(std::move(r));
      continue;
    }
    bool data = std::find_if(std::begin(kDataChecks), std::end(kDataChecks),
                             [&](const char* n) { return q->name == n; }) != std::end(kDataChecks);
    if (data && !derived) {
      // No derivation, no terms: nothing is proved (the dataflow check reports why).
      r.verdict = Verdict::Unknown;
      r.note = "not proved: the schedule's data flow has no derivation (" + flow.problem() +
               "); see the dataflow check";
      results.push_back(std::move(r));
      continue;
    }
    if (q->name == "final-buffers" && o.emit_dir.empty() && same_requirement && post_unsat) {
      // Every processor's output was just proved equal to the same required value for all inputs,
      // so all outputs are equal: no second query is needed (with --emit-smt2 it is run anyway,
      // to write its certificate).
      r.note = "implied by the proved postcondition (every processor must end with the same value)";
      if (check_order) {
        std::size_t bad = 0;
        for (NodeId v = 1; v < fw.size(); ++v)
          if (order_differs(fw[v], fw[0], fb_free)) {
            if (bad++ < o.max_violations) {
              Counterexample ce;
              ce.invariant = q->name;
              ce.nodes = {0, v};
              ce.message =
                  fmt::format("node {} and node {} end with the same sum in another operand order",
                              label(v), label(0));
              r.violations.push_back(std::move(ce));
            }
          }
        if (bad) {
          r.verdict = Verdict::Fail;
          r.order_only = true;
          r.violation_count = bad;
          r.note = "the buffers differ in operand order only: equal for commutative operators; " +
                   r.note;
        }
      }
      results.push_back(std::move(r));
      continue;
    }
    std::vector<std::string> wanted = data && !q->ground ? xs : std::vector<std::string>{};
    if (q->ground) wanted.insert(wanted.end(), {"w_step", "w_a", "w_b", "w_c"});
    smt::Solver& solver = budget;  // one context for all queries of the trace
    solver.reset_script();
    solver.add(decl);
    solver.add(sections[q->name]);
    sections[q->name].clear();
    sections[q->name].shrink_to_fit();
    std::string key = solver.script_text() + q->lit;
    auto& cache = unsat_cache();
    auto hit = std::find_if(cache.begin(), cache.end(),
                            [&](const CachedUnsat& c) { return c.text == key; });
    bool reused = hit != cache.end() && o.emit_dir.empty();
    smt::Result res = reused ? hit->result : solver.check({q->lit}, wanted);
    if (!reused && res.answer == smt::Answer::Unsat) {
      if (cache.size() >= 8) cache.erase(cache.begin());
      cache.push_back({std::move(key), res});
    }
    std::string emitted;
    if (!o.emit_dir.empty()) {
      emitted =
          (std::filesystem::path(o.emit_dir) /
           fmt::format("{}-{}-{}.smt2", sanitize(t.model_name), sanitize(topo.spec()), q->name))
              .string();
      solver.emit_smt2(
          emitted, res.answer, {q->lit},
          fmt::format("collv verify --engine smt: invariant '{}' of {} on {} ({}).\n"
                      "unsat = the invariant holds for all inputs; sat = a counterexample.",
                      q->name, t.model_name, topo.spec(), alg));
    }
    if (res.answer == smt::Answer::Unsat) {
      r.verdict = Verdict::Pass;
      if (q->name == "postcondition") post_unsat = true;
      r.note = fmt::format(
          "Z3: unsat in {:.3f} s{} (core: {}){}", res.seconds,
          reused ? " (the same query as an earlier run: answer reused)" : "",
          res.core.empty() ? "-" : res.core[0],
          q->ground && !data
              ? "; ground formula: the schedule does not depend on data"
              : "; terms built from the schedule's derivations" +
                    (data && q->name != "nodup"
                         ? "; holds for every " + std::string(seq ? "associative" : "commutative") +
                               " operator"
                         : std::string()));
      if (check_order && (q->name == "postcondition" || q->name == "final-buffers")) {
        bool post = q->name == "postcondition";
        std::size_t bad = 0;
        for (NodeId v = post ? 0 : 1; v < p && v < fw.size(); ++v) {
          if (post && !want[v]) continue;
          bool differs =
              post ? order_differs(fw[v], words_of(v), free) : order_differs(fw[v], fw[0], fb_free);
          if (!differs) continue;
          if (bad++ >= o.max_violations) continue;
          Counterexample ce;
          ce.invariant = q->name;
          ce.nodes = post ? std::vector<NodeId>{v} : std::vector<NodeId>{0, v};
          ce.buffers.push_back({v, "output", buffer_to_string(t, t.final_output[v])});
          if (post) ce.buffers.push_back({v, "expected", buffer_to_string(t, *want[v])});
          ce.message =
              post ? fmt::format(
                         "node {} ends with the required contributions in another operand order "
                         "(the schedule's derivation; Z3 proved the integer sums equal)",
                         label(v))
                   : fmt::format(
                         "node {} and node {} end with the same sum in another operand order",
                         label(v), label(0));
          r.violations.push_back(std::move(ce));
        }
        if (bad) {
          r.verdict = Verdict::Fail;
          r.order_only = true;
          r.violation_count = bad;
          r.note =
              "every difference is operand order only: right for commutative operators; " + r.note;
        }
      }
    } else if (res.answer == smt::Answer::Unknown) {
      r.verdict = Verdict::Unknown;
      r.note = "Z3: inconclusive: " + res.reason;
    } else if (q->ground) {
      // Enumerate witnesses: block each one found and ask again.
      r.verdict = Verdict::Fail;
      for (std::size_t k = 0; k < std::max<std::size_t>(1, o.max_violations); ++k) {
        if (k > 0) {
          res = solver.check({q->lit}, wanted);
          if (res.answer != smt::Answer::Sat) break;
        }
        auto parse = [&](const char* n) { return parse_int_value(res.values.at(n)); };
        long long st = parse("w_step"), a = parse("w_a"), b = parse("w_b"), c = parse("w_c");
        Counterexample ce;
        ce.invariant = q->name;
        if (st > 0) ce.step = static_cast<std::uint32_t>(st);
        if (q->name == "route") {
          ce.nodes = {static_cast<NodeId>(a), static_cast<NodeId>(b)};
          ce.transfers = {static_cast<std::uint32_t>(c)};
          ce.message = fmt::format(
              "step {}: {} -> {} crosses a pair that is not a link of {} (Z3 witness)", st,
              label(static_cast<NodeId>(a)), label(static_cast<NodeId>(b)), topo.spec());
          solver.add(fmt::format("(assert (=> {} (not (= w_c {}))))", q->lit, c));
        } else {  // nodup: the one-hot input names the contribution
          // The contribution, from the derivation's words (what the bit vectors hold).
          std::string contrib = "?";
          if (c >= 0 && st > 0) {
            const Transfer& x = t.transfers[static_cast<std::size_t>(c)];
            for (std::uint32_t k = 0; k < x.payload_len && contrib == "?"; ++k) {
              Word w = flow.payload_word(flow.slot(static_cast<std::uint32_t>(c)) + k);
              std::sort(w.begin(), w.end());
              for (std::size_t i = 1; i < w.size() && contrib == "?"; ++i)
                if (w[i] == w[i - 1]) contrib = flow.xname(w[i]);
            }
            // Received again: a contribution of an item that the destination also has from its
            // input or another item it received up to this step.
            for (std::uint32_t k = 0; k < x.payload_len && contrib == "?"; ++k) {
              std::set<std::uint32_t> other;
              for (std::uint32_t e = 0;
                   x.dst < t.initial_input.size() && e < t.initial_input[x.dst].size(); ++e)
                for (auto u : flow.input_word(x.dst, e)) other.insert(u);
              const std::uint32_t xk = flow.slot(static_cast<std::uint32_t>(c)) + k;
              for (std::uint32_t yi = 0; yi < t.transfers.size(); ++yi) {
                const Transfer& y = t.transfers[yi];
                if (y.dst == x.dst && y.step <= x.step)
                  for (std::uint32_t kk = 0; kk < y.payload_len; ++kk)
                    if (flow.slot(yi) + kk != xk)
                      for (auto u : flow.payload_word(flow.slot(yi) + kk)) other.insert(u);
              }
              for (auto u : flow.payload_word(xk))
                if (other.count(u) && contrib == "?") contrib = flow.xname(u);
            }
          }
          ce.nodes = {static_cast<NodeId>(a), static_cast<NodeId>(b)};
          if (c >= 0) ce.transfers = {static_cast<std::uint32_t>(c)};
          if (st == 0)
            ce.message = fmt::format(
                "node {} ends with an item that counts contribution {} twice (Z3 witness)",
                label(static_cast<NodeId>(a)), contrib);
          else if (a == static_cast<long long>(t.transfers[static_cast<std::size_t>(c)].src))
            ce.message = fmt::format(
                "step {}: {} -> {} carries an item that counts contribution {} twice (Z3 witness)",
                st, label(static_cast<NodeId>(a)), label(static_cast<NodeId>(b)), contrib);
          else
            ce.message = fmt::format(
                "step {}: {} -> {} sends contribution {}, which {} already holds (Z3 witness)", st,
                label(static_cast<NodeId>(b)), label(static_cast<NodeId>(a)), contrib,
                label(static_cast<NodeId>(a)));
          solver.add(fmt::format(
              "(assert (=> {} (not (and (= w_step {}) (= w_a {}) (= w_b {}) (= w_c {})))))", q->lit,
              st, a, b, c));
        }
        r.violations.push_back(std::move(ce));
      }
      r.violation_count = r.violations.size();
      r.note = fmt::format("Z3: sat; {} witness(es) enumerated (at most {})", r.violations.size(),
                           o.max_violations);
    } else {
      // A model of the inputs: evaluate the schedule's terms under it.
      r.verdict = Verdict::Fail;
      for (std::uint32_t c = 0; c < universe; ++c) xv[c] = parse_int_value(res.values[xs[c]]);
      std::string inputs;
      for (std::uint32_t c = 0; c < universe && c < 16; ++c)
        inputs += fmt::format("{}{}={}", c ? " " : "", xs[c], xv[c]);
      if (universe > 16) inputs += " ...";
      bool post = q->name == "postcondition";
      bool all_order_only = true;
      for (NodeId v = (post ? 0 : 1); v < p && v < fw.size(); ++v) {
        if (post && !want[v]) continue;
        std::vector<Word> ref = post ? words_of(v) : fw[0];
        bool fr = post ? free : fb_free;
        if (values_equal(fw[v], ref, fr)) continue;
        ++r.violation_count;
        // Order only: the same multisets of contributions.
        all_order_only =
            all_order_only && seq && sorted_multisets(fw[v], fr) == sorted_multisets(ref, fr);
        if (r.violations.size() >= o.max_violations) continue;
        Counterexample ce;
        ce.invariant = q->name;
        ce.nodes = post ? std::vector<NodeId>{v} : std::vector<NodeId>{0, v};
        ce.buffers.push_back({v, "output", buffer_to_string(t, t.final_output[v])});
        ce.buffers.push_back({post ? v : 0, post ? "expected" : "output",
                              buffer_to_string(t, post ? *want[v] : t.final_output[0])});
        ce.buffers.push_back({v, "value", eval(fw[v])});
        ce.buffers.push_back({post ? v : 0, post ? "expected value" : "value", eval(ref)});
        for (std::uint32_t c = 0; c < universe && c < 64; ++c)
          ce.buffers.push_back({c / d.elems(), "input", fmt::format("{} = {}", xs[c], xv[c])});
        ce.message =
            post ? fmt::format("for inputs {}: node {} ends with {} but {} requires {}", inputs,
                               label(v), eval(fw[v]), collective_name(t.collective), eval(ref))
                 : fmt::format("for inputs {}: node {} ends with {} but node {} with {}", inputs,
                               label(v), eval(fw[v]), label(0), eval(ref));
        r.violations.push_back(std::move(ce));
      }
      if (r.violation_count == 0) ++r.violation_count;  // a length mismatch
      if (post && all_order_only && !r.violations.empty()) {
        r.order_only = true;
        r.note = "every difference is operand order only: right for commutative operators; ";
      }
      r.note += fmt::format("Z3: sat in {:.3f} s, a model of the inputs violates it ({} algebra)",
                            res.seconds, alg);
    }
    if (!emitted.empty()) r.note += "; query written to " + emitted;
    results.push_back(std::move(r));
  }
  if (t.collective == Collective::Barrier)  // its postcondition is causal order, not data
    for (auto& r : results)
      if (r.name == "postcondition") {
        r = CheckResult{};
        r.name = "postcondition";
        r.verdict = Verdict::NotChecked;
        r.note =
            "a barrier's postcondition is causal order, which the executor decides; the "
            "SMT engine encodes data only";
      }
  // A schedule file that lists a node twice in `final` claims two ends for it: postcondition
  // fails as in the executor (Trace::final_twice, check_postcondition), whatever the query says.
  for (auto& r : results)
    if (r.name == "postcondition" && !t.final_twice.empty()) {
      for (const std::string& m : t.final_twice) {
        Counterexample c;
        c.invariant = r.name;
        c.message = m;
        r.violations.push_back(std::move(c));
        ++r.violation_count;
      }
      r.verdict = Verdict::Fail;
    }
  // A run stopped at a deadlock or a runtime error: what follows from it is not-checked, with the
  // reason, as the executor says (its final buffers are not the algorithm's).
  mark_stopped_run(results, t);
  return results;
}

}  // namespace collv
