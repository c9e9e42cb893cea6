// smt_check_trace: the Trace's invariants as SMT queries (see prove.hpp and docs/smt.md).
#include "smt/prove.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "smt/solver.hpp"
#include "util/error.hpp"

namespace collv {

namespace {

using Terms = std::vector<std::uint32_t>;

bool order_free(Collective c) {
  return c == Collective::Allgather || c == Collective::Gather || c == Collective::Alltoall;
}

std::string sanitize(const std::string& s) {
  std::string o;
  for (char c : s)
    o += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return o;
}

// Builds the SMT-LIB2 text of one trace.
class Encoder {
 public:
  Encoder(const Trace& t, bool seq) : t_(t), d_(*t.domain), seq_(seq) {}

  const std::string& sort() const {
    static const std::string i = "Int", s = "(Seq Int)";
    return seq_ ? s : i;
  }

  // Terms of an item in operand order (both algebras: a sum's order does not matter to Z3, but
  // keeping it makes the encoding the trace's own combine structure).
  Terms terms(Item it) const { return d_.terms(it); }

  std::uint64_t item_size(Item it) const { return d_.terms(it).size() + 1; }

  std::string leaf(std::uint32_t c) const {
    return seq_ ? fmt::format("(seq.unit x{})", c) : fmt::format("x{}", c);
  }

  std::string expr_of_terms(const Terms& ts) const {
    if (ts.empty()) return seq_ ? "(as seq.empty (Seq Int))" : "0";
    if (ts.size() == 1) return leaf(ts[0]);
    std::string s = seq_ ? "(seq.++" : "(+";
    for (auto c : ts) {
      s += ' ';
      s += leaf(c);
    }
    s += ')';
    return s;
  }

  // Sharing: an item whose terms start with (or continue with) the terms of an item defined
  // earlier is written as the sum / concatenation of that item's name and the rest, greedily
  // with the longest match (define-fun is a macro: the meaning is the flat term). This mirrors
  // how the ordered domain built the item (a + b is the concatenation of a and b) and keeps the
  // text, and Z3's parsing, near-linear in the trace instead of quadratic.
  static constexpr std::uint64_t kBase = 0x9E3779B97F4A7C15ULL;
  static std::uint64_t key(std::uint64_t h, std::size_t len) {
    return h * 31 + len * 0x632BE59BD9B4E019ULL;
  }

  std::string item(Item it, std::string& out) {
    auto f = names_.find(it);
    if (f != names_.end()) return f->second;
    Terms ts = terms(it);
    std::string n = fmt::format("v{}", it);
    // Prefix hashes.
    std::vector<std::uint64_t> P(ts.size() + 1, 0), pw(ts.size() + 1, 1);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      P[i + 1] = P[i] * kBase + (ts[i] + 1);
      pw[i + 1] = pw[i] * kBase;
    }
    std::vector<std::string> parts;
    std::size_t pos = 0;
    while (pos < ts.size() && ts.size() >= 2) {
      bool found = false;
      for (std::size_t len : lengths_) {
        if (len < 2 || pos + len > ts.size() || (pos == 0 && len == ts.size())) continue;
        std::uint64_t h = P[pos + len] - P[pos] * pw[len];
        auto k = known_.find(key(h, len));
        if (k == known_.end()) continue;
        const Terms& kt = k->second.first;
        if (!std::equal(kt.begin(), kt.end(), ts.begin() + static_cast<long>(pos))) continue;
        parts.push_back(k->second.second);
        pos += len;
        found = true;
        break;
      }
      if (!found) parts.push_back(leaf(ts[pos++]));
    }
    std::string body;
    if (ts.size() < 2 || parts.size() == ts.size()) {
      body = expr_of_terms(ts);
    } else {
      body = seq_ ? "(seq.++" : "(+";
      for (auto& p : parts) body += " " + p;
      body += ")";
    }
    out += fmt::format("(define-fun {} () {} {})\n", n, sort(), body);
    names_.emplace(it, n);
    if (ts.size() >= 2) {
      known_.emplace(key(P[ts.size()], ts.size()), std::make_pair(ts, n));
      lengths_.insert(ts.size());
    }
    return n;
  }

  // Defines the given items (e.g. every payload item), shortest first, so later items can share.
  void learn(std::vector<Item> items, std::string& out) {
    std::sort(items.begin(), items.end());
    items.erase(std::unique(items.begin(), items.end()), items.end());
    std::vector<std::pair<std::size_t, Item>> v;
    for (Item it : items) v.push_back({d_.weight(it), it});
    std::sort(v.begin(), v.end());
    for (auto& [w, it] : v)
      if (w >= 2) item(it, out);
  }

  // A canonical order of a buffer's items for order-free comparisons: by multiset (int) or by
  // sequence (seq) of terms. Two buffers are equal up to order iff their sorted lists are equal.
  std::vector<Item> canonical(const Buffer& b) const {
    std::vector<std::pair<Terms, Item>> v;
    for (Item it : b) {
      Terms ts = terms(it);
      if (!seq_) std::sort(ts.begin(), ts.end());
      v.push_back({ts, it});
    }
    std::sort(v.begin(), v.end());
    std::vector<Item> o;
    for (auto& [k, it] : v) o.push_back(it);
    return o;
  }

  // "(or (not (= a b)) ...)" over two buffers of items, or "true" when the lengths differ.
  std::string differs(const Buffer& a, const Buffer& b, bool free, std::string& defs) {
    if (a.size() != b.size()) return "true";
    std::vector<Item> x(a.begin(), a.end()), y(b.begin(), b.end());
    if (free) {
      x = canonical(a);
      y = canonical(b);
    }
    if (x.empty()) return "false";
    std::string s = x.size() > 1 ? "(or" : "";
    for (std::size_t k = 0; k < x.size(); ++k) {
      std::string ax = item(x[k], defs), by = item(y[k], defs);
      s += fmt::format("{}(not (= {} {}))", x.size() > 1 ? " " : "", ax, by);
    }
    if (x.size() > 1) s += ')';
    return s;
  }

  std::uint64_t buffer_size(const Buffer& b) const {
    std::uint64_t n = 2;
    for (Item it : b) n += item_size(it);
    return n;
  }

  // The value of an item under integer inputs: a sum (int) or the sequence of input values.
  std::vector<long long> value(Item it, const std::vector<long long>& x) const {
    std::vector<long long> v;
    long long s = 0;
    for (auto c : terms(it)) {
      if (seq_)
        v.push_back(x.at(c));
      else
        s += x.at(c);
    }
    if (!seq_) v.push_back(s);
    return v;
  }
  std::string value_text(const Buffer& b, const std::vector<long long>& x) const {
    std::string s = "[";
    for (std::size_t k = 0; k < b.size(); ++k) {
      auto v = value(b[k], x);
      if (k) s += ", ";
      if (seq_) {
        s += "<";
        for (std::size_t i = 0; i < v.size(); ++i) {
          if (i) s += ' ';
          s += std::to_string(v[i]);
        }
        s += ">";
      } else {
        s += std::to_string(v[0]);
      }
    }
    return s + "]";
  }
  bool equal_values(const Buffer& a, const Buffer& b, bool free,
                    const std::vector<long long>& x) const {
    if (a.size() != b.size()) return false;
    std::vector<std::vector<long long>> va, vb;
    for (Item it : a) va.push_back(value(it, x));
    for (Item it : b) vb.push_back(value(it, x));
    if (free) {
      std::sort(va.begin(), va.end());
      std::sort(vb.begin(), vb.end());
    }
    return va == vb;
  }

 private:
  const Trace& t_;
  const Domain& d_;
  bool seq_;
  std::unordered_map<Item, std::string> names_;
  std::unordered_map<std::uint64_t, std::pair<Terms, std::string>> known_;
  std::set<std::size_t, std::greater<>> lengths_;
};

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

}  // namespace

std::vector<CheckResult> smt_check_trace(const Trace& t, const SmtOptions& o) {
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

  const Topology& topo = t.topology;
  const Domain& d = *t.domain;
  auto p = static_cast<NodeId>(topo.num_processors());
  std::uint32_t universe = d.p() * d.elems();
  Encoder enc(t, seq);
  smt::Solver budget(smt::Limits{o.timeout_ms, o.max_terms});  // the size cap, for all queries

  // ---- size, counted before anything is built ----
  auto want = expected_outputs(t);
  std::uint64_t size = universe + 8;
  {
    std::set<Item> seen;
    auto count_buf = [&](const Buffer& b) {
      size += 2 + b.size();
      for (Item it : b)
        if (seen.insert(it).second) size += enc.item_size(it);
    };
    for (NodeId v = 0; v < p; ++v) {
      if (v < t.final_output.size()) count_buf(t.final_output[v]);
      if (want[v]) count_buf(*want[v]);
    }
    size += 16 * t.transfers.size();  // single-port, congestion, route, nodup atoms
    for (const Transfer& x : t.transfers)
      if (!topo.adjacent(x.src, x.dst)) size += 16 * t.route(x).size();
    std::set<Item> pseen;
    for (Item it : t.payload)
      if (pseen.insert(it).second) size += enc.item_size(it);
    size += 2 * topo.num_links();
  }
  std::vector<CheckResult> results;
  if (!budget.reserve(size)) {
    for (const char* n : kCheckNames) {
      CheckResult r;
      r.name = n;
      bool decided =
          std::string(n) != "steps" && std::string(n) != "cost" && std::string(n) != "deadlock";
      r.verdict = decided ? Verdict::Unknown : Verdict::NotChecked;
      r.note = decided ? budget.refusal() : "decided by the executor, not by the SMT engine";
      results.push_back(std::move(r));
    }
    return results;
  }

  // ---- declarations ----
  // Common declarations, then one script section per invariant: each query is checked (and
  // written) as the declarations plus its own section, so a certificate holds only its invariant.
  std::map<std::string, std::string> sections;
  std::string decl;
  decl += fmt::format("; collv SMT encoding of {} on {} ({} algebra: {})\n", t.model_name,
                      topo.spec(), seq ? "associative" : "commutative",
                      seq ? "sequences of units, the free monoid" : "integer sums");
  for (std::uint32_t c = 0; c < universe; ++c) decl += fmt::format("(declare-const x{} Int)\n", c);
  decl +=
      "(declare-const w_step Int)\n(declare-const w_a Int)\n(declare-const w_b "
      "Int)\n(declare-const w_c Int)\n";
  std::vector<Query> queries = {
      {"single-port", "a_single_port", true},      {"route", "a_route", true},
      {"congestion", "a_congestion", true},        {"nodup", "a_nodup", true},
      {"postcondition", "a_postcondition", false}, {"final-buffers", "a_final_buffers", false}};
  for (auto& q : queries) sections[q.name] = fmt::format("(declare-const {} Bool)\n", q.lit);

  // Transfers by step.
  std::vector<std::vector<std::uint32_t>> steps(t.steps + 1);
  for (auto i : t.ordered_transfers()) steps[t.transfers[i].step].push_back(i);

  auto ones = [](std::size_t n) {
    if (n == 1) return std::string("1");
    std::string r = "(+";
    for (std::size_t k = 0; k < n; ++k) r += " 1";
    return r + ")";
  };

  // single-port: the witness (w_step, w_a) names a step and a node that sends or receives twice.
  {
    std::string body;
    for (std::uint32_t st = 1; st <= t.steps; ++st) {
      std::map<NodeId, std::size_t> sends, recvs;
      for (auto i : steps[st]) {
        ++sends[t.transfers[i].src];
        ++recvs[t.transfers[i].dst];
      }
      for (auto& [v, n] : sends)
        body += fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b 0) (> {} 1))", st, v, ones(n));
      for (auto& [v, n] : recvs)
        body += fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b 1) (> {} 1))", st, v, ones(n));
    }
    sections["single-port"] += fmt::format("(assert (=> a_single_port (or false{})))\n", body);
  }
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
  // congestion: a directed link crossed by more than one transfer in one step.
  {
    std::string body;
    for (std::uint32_t st = 1; st <= t.steps; ++st) {
      std::map<std::pair<NodeId, NodeId>, std::size_t> load;
      for (auto i : steps[st]) {
        const Transfer& x = t.transfers[i];
        auto path = topo.adjacent(x.src, x.dst) ? std::vector<NodeId>{x.src, x.dst} : t.route(x);
        for (std::size_t h = 0; h + 1 < path.size(); ++h) ++load[{path[h], path[h + 1]}];
      }
      for (auto& [k, n] : load)
        body += fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b {}) (> {} 1))", st, k.first,
                            k.second, ones(n));
    }
    sections["congestion"] += fmt::format("(assert (=> a_congestion (or false{})))\n", body);
  }
  // nodup: (1) an item that holds a contribution twice: (< c1 c2 ...) over its sorted ids fails;
  // (2) a transfer whose destination has held one of its contributions since an earlier step:
  //     held(v, c) is the first step v held c (0: its input), a ground table.
  bool nodup_checked = t.nodup_claimed;
  if (nodup_checked) {
    std::string body;
    std::set<Item> done;
    auto distinct_atom = [&](Item it) {
      // The item's contribution ids, sorted: strictly increasing iff no contribution repeats.
      auto ts = d.terms(it);
      if (ts.size() < 2) return std::string();
      std::sort(ts.begin(), ts.end());
      std::string a = "(<";
      for (auto c : ts) a += fmt::format(" {}", c);
      return a + ")";
    };
    for (std::uint32_t st = 1; st <= t.steps; ++st)
      for (auto i : steps[st]) {
        const Transfer& x = t.transfers[i];
        for (std::uint32_t k = 0; k < x.payload_len; ++k) {
          Item it = t.payload[x.payload_begin + k];
          if (!done.insert(it).second) continue;
          auto a = distinct_atom(it);
          if (!a.empty())
            body += fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b {}) (= w_c {}) (not {}))",
                                st, x.src, x.dst, i, a);
        }
      }
    for (NodeId v = 0; v < t.final_output.size(); ++v)
      for (Item it : t.final_output[v]) {
        auto a = distinct_atom(it);
        if (!a.empty())
          body +=
              fmt::format(" (and (= w_step 0) (= w_a {}) (= w_b {}) (= w_c -1) (not {}))", v, v, a);
      }
    // (2)
    std::vector<std::vector<std::uint32_t>> when(t.topology.num_processors());
    auto held_at = [&](NodeId v) -> std::vector<std::uint32_t>& {
      auto& w = when[v];
      if (w.empty()) {
        w.assign(universe, UINT32_MAX);
        for (Item it : t.initial_input[v])
          for (auto c : d.terms(it)) w[c] = 0;
      }
      return w;
    };
    std::vector<std::pair<NodeId, std::uint32_t>> learned;
    for (std::uint32_t st = 1; st <= t.steps; ++st) {
      learned.clear();
      for (auto i : steps[st]) {
        const Transfer& x = t.transfers[i];
        auto& w = held_at(x.dst);
        std::uint32_t first = UINT32_MAX;
        for (std::uint32_t k = 0; k < x.payload_len; ++k)
          for (auto c : d.terms(t.payload[x.payload_begin + k])) {
            first = std::min(first, w[c]);
            learned.push_back({x.dst, c});
          }
        if (first != UINT32_MAX)
          body += fmt::format(" (and (= w_step {}) (= w_a {}) (= w_b {}) (= w_c {}) (< {} {}))", st,
                              x.dst, x.src, i, first, st);
      }
      for (auto [v, c] : learned) {
        auto& w = held_at(v);
        if (w[c] == UINT32_MAX) w[c] = st;
      }
    }
    sections["nodup"] += fmt::format("(assert (=> a_nodup (or false{})))\n", body);
  }

  // postcondition and final-buffers: symbolic inputs.
  bool free = order_free(t.collective);
  std::vector<Item> payload_items(t.payload.begin(), t.payload.end());
  // Sharing (Encoder::item) makes certificates ~10x smaller but costs Z3 ~10% more time when
  // flattening the sums, so it is used only when the queries are written out.
  bool share = !o.emit_dir.empty();
  {
    std::string defs, body;
    if (!free && share) enc.learn(payload_items, defs);
    for (NodeId v = 0; v < p && v < t.final_output.size(); ++v) {
      if (!want[v]) continue;
      body += " " + enc.differs(t.final_output[v], *want[v], free, defs);
    }
    sections["postcondition"] += defs;
    sections["postcondition"] += fmt::format("(assert (=> a_postcondition (or false{})))\n", body);
  }
  bool final_checked =
      t.collective == Collective::Allreduce || t.collective == Collective::Allgather;
  if (final_checked) {
    Encoder enc_fb(t, seq);
    std::string defs, body;
    if (t.collective == Collective::Allreduce && share) enc_fb.learn(payload_items, defs);
    bool fb_free = t.collective == Collective::Allgather;
    for (NodeId v = 1; v < t.final_output.size(); ++v)
      body += " " + enc_fb.differs(t.final_output[v], t.final_output[0], fb_free, defs);
    auto& fb = sections["final-buffers"];
    fb += defs;
    fb += fmt::format("(assert (=> a_final_buffers (or false{})))\n", body);
  }

  // Whether every processor has the same requirement (all-reduce, all-gather): then a proved
  // postcondition implies final-buffers.
  bool same_requirement = p > 0 && want[0].has_value();
  for (NodeId v = 1; v < p && same_requirement; ++v)
    same_requirement = want[v].has_value() && *want[v] == *want[0];

  // ---- the checks, one assumption literal each ----
  std::vector<std::string> xs;
  for (std::uint32_t c = 0; c < universe; ++c) xs.push_back(fmt::format("x{}", c));
  if (!o.emit_dir.empty()) std::filesystem::create_directories(o.emit_dir);
  auto label = [&](NodeId v) { return topo.label(v); };
  std::string alg = seq ? "associative (sequences)" : "commutative (integer sums)";

  for (const char* name : kCheckNames) {
    auto q = std::find_if(queries.begin(), queries.end(),
                          [&](const Query& q) { return q.name == name; });
    CheckResult r = base(name);
    if (q == queries.end()) {
      r.verdict = Verdict::NotChecked;
      r.note = "decided by the executor, not by the SMT engine";
      results.push_back(std::move(r));
      continue;
    }
    if (q->name == "single-port" && t.port == PortModel::All) {
      r.verdict = Verdict::NotChecked;
      r.note = "the run uses --port all: congestion judges each directed link";
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
    if (q->name == "final-buffers" && o.emit_dir.empty() && same_requirement && !results.empty() &&
        results.back().name == "postcondition" && results.back().verdict == Verdict::Pass) {
      // Every processor's output was just proved equal to the same required value for all inputs,
      // so all outputs are equal: no second query is needed (with --emit-smt2 it is run anyway,
      // to write its certificate).
      r.verdict = Verdict::Pass;
      r.note = "implied by the proved postcondition (every processor must end with the same value)";
      results.push_back(std::move(r));
      continue;
    }
    std::vector<std::string> wanted =
        q->ground ? std::vector<std::string>{"w_step", "w_a", "w_b", "w_c"} : xs;
    smt::Solver& solver = budget;  // one context for all queries of the trace
    solver.reset_script();
    solver.add(decl);
    solver.add(sections[q->name]);
    sections[q->name].clear();
    sections[q->name].shrink_to_fit();
    smt::Result res = solver.check({q->lit}, wanted);
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
      r.note = fmt::format(
          "Z3: unsat in {:.3f} s (core: {}){}", res.seconds, res.core.empty() ? "-" : res.core[0],
          q->ground ? "; ground formula: the schedule does not depend on data"
                    : "; holds for every " + std::string(seq ? "associative" : "commutative") +
                          " operator");
    } else if (res.answer == smt::Answer::Unknown) {
      r.verdict = Verdict::Unknown;
      r.note = "Z3: inconclusive: " + res.reason;
    } else if (q->ground) {
      // Enumerate witnesses: block each one found and ask again.
      r.verdict = Verdict::Fail;
      std::string block;
      for (std::size_t k = 0; k < std::max<std::size_t>(1, o.max_violations); ++k) {
        if (k > 0) {
          res = solver.check({q->lit}, wanted);
          if (res.answer != smt::Answer::Sat) break;
        }
        auto parse = [&](const char* n) {
          std::string v = res.values.at(n);
          if (v.size() > 3 && v[0] == '(') v = "-" + v.substr(3, v.size() - 4);  // (- 1)
          return std::stoll(v);
        };
        long long st = parse("w_step"), a = parse("w_a"), b = parse("w_b"), c = parse("w_c");
        Counterexample ce;
        ce.invariant = q->name;
        if (st > 0) ce.step = static_cast<std::uint32_t>(st);
        if (q->name == "single-port") {
          ce.nodes = {static_cast<NodeId>(a)};
          ce.message = fmt::format("step {}: node {} {} more than one transfer (Z3 witness)", st,
                                   label(static_cast<NodeId>(a)), b == 0 ? "sends" : "receives");
          solver.add(fmt::format("(assert (=> {} (not (and (= w_step {}) (= w_a {}) (= w_b {})))))",
                                 q->lit, st, a, b));
        } else if (q->name == "route") {
          ce.nodes = {static_cast<NodeId>(a), static_cast<NodeId>(b)};
          ce.transfers = {static_cast<std::uint32_t>(c)};
          ce.message = fmt::format(
              "step {}: {} -> {} crosses a pair that is not a link of {} (Z3 witness)", st,
              label(static_cast<NodeId>(a)), label(static_cast<NodeId>(b)), topo.spec());
          solver.add(fmt::format("(assert (=> {} (not (= w_c {}))))", q->lit, c));
        } else if (q->name == "congestion") {
          ce.nodes = {static_cast<NodeId>(a), static_cast<NodeId>(b)};
          ce.message =
              fmt::format("step {}: link {} -> {} carries more than one transfer (Z3 witness)", st,
                          label(static_cast<NodeId>(a)), label(static_cast<NodeId>(b)));
          solver.add(fmt::format("(assert (=> {} (not (and (= w_step {}) (= w_a {}) (= w_b {})))))",
                                 q->lit, st, a, b));
        } else {  // nodup
          ce.nodes = {static_cast<NodeId>(a), static_cast<NodeId>(b)};
          if (c >= 0) ce.transfers = {static_cast<std::uint32_t>(c)};
          if (st == 0)
            ce.message = fmt::format(
                "node {} ends with an item that counts a contribution twice (Z3 witness)",
                label(static_cast<NodeId>(a)));
          else
            ce.message = fmt::format(
                "step {}: {} -> {}: a contribution counted twice or sent to a node that "
                "already holds it (Z3 witness)",
                st, label(static_cast<NodeId>(b)), label(static_cast<NodeId>(a)));
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
      // A model of the inputs: evaluate every output under it.
      r.verdict = Verdict::Fail;
      std::vector<long long> x(universe, 0);
      for (std::uint32_t c = 0; c < universe; ++c) {
        std::string v = res.values[fmt::format("x{}", c)];
        if (v.size() > 3 && v[0] == '(') v = "-" + v.substr(3, v.size() - 4);
        x[c] = v.empty() ? 0 : std::stoll(v);
      }
      std::string inputs;
      for (std::uint32_t c = 0; c < universe && c < 16; ++c)
        inputs += fmt::format("{}x{}={}", c ? " " : "", c, x[c]);
      if (universe > 16) inputs += " ...";
      bool post = q->name == "postcondition";
      bool all_order_only = true;
      for (NodeId v = (post ? 0 : 1); v < p && v < t.final_output.size(); ++v) {
        const Buffer& got = t.final_output[v];
        const Buffer* ref = post ? (want[v] ? &*want[v] : nullptr) : &t.final_output[0];
        if (!ref) continue;
        bool fr = post ? free : t.collective == Collective::Allgather;
        if (enc.equal_values(got, *ref, fr, x)) continue;
        ++r.violation_count;
        // Order only: same multisets of contributions.
        auto ms = [&](const Buffer& b) {
          std::vector<Terms> out;
          for (Item it : b) {
            auto ts = d.terms(it);
            std::sort(ts.begin(), ts.end());
            out.push_back(ts);
          }
          if (fr) std::sort(out.begin(), out.end());
          return out;
        };
        all_order_only = all_order_only && seq && ms(got) == ms(*ref);
        if (r.violations.size() >= o.max_violations) continue;
        Counterexample ce;
        ce.invariant = q->name;
        ce.nodes = post ? std::vector<NodeId>{v} : std::vector<NodeId>{0, v};
        ce.buffers.push_back({v, "output", buffer_to_string(t, got)});
        ce.buffers.push_back(
            {post ? v : 0, post ? "expected" : "output", buffer_to_string(t, *ref)});
        ce.buffers.push_back({v, "value", enc.value_text(got, x)});
        ce.buffers.push_back(
            {post ? v : 0, post ? "expected value" : "value", enc.value_text(*ref, x)});
        for (std::uint32_t c = 0; c < universe && c < 64; ++c)
          ce.buffers.push_back({c / d.elems(), "input", fmt::format("x{} = {}", c, x[c])});
        ce.message =
            post ? fmt::format("for inputs {}: node {} ends with {} = {} but {} requires {} = {}",
                               inputs, label(v), buffer_to_string(t, got), enc.value_text(got, x),
                               collective_name(t.collective), buffer_to_string(t, *ref),
                               enc.value_text(*ref, x))
                 : fmt::format("for inputs {}: node {} ends with {} but node {} with {}", inputs,
                               label(v), enc.value_text(got, x), label(0), enc.value_text(*ref, x));
        r.violations.push_back(std::move(ce));
      }
      if (post && all_order_only && r.violation_count > 0) {
        r.order_only = true;
        r.note = "every difference is operand order only: right for commutative operators; ";
      }
      r.note += fmt::format("Z3: sat in {:.3f} s, a model of the inputs violates it ({} algebra)",
                            res.seconds, alg);
    }
    if (!emitted.empty()) r.note += "; query written to " + emitted;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace collv
