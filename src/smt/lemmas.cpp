// The star paper's lemmas as SMT queries (see lemmas.hpp).
#include "smt/lemmas.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/read_file.hpp"
#include "util/text.hpp"

namespace collv {

LemmaQuery claim_query(int n, bool false_variant) {
  LemmaQuery q;
  if (n != 0 && n < 3) throw UsageError("the Theorem 2 claim needs n >= 3 (links 2..n-1)");
  if (n > 64)
    throw UsageError("the Theorem 2 claim is encoded for n <= 64 (use n = 0 for symbolic n)");
  q.name = n == 0 ? std::string("theorem2-claim-symbolic-n") : fmt::format("theorem2-claim-n{}", n);
  if (false_variant) q.name += "-false-variant";
  q.description = fmt::format(
      "Theorem 2 claim{}, {}: no processor p1 of S^i_(n-1) is the neighbour along links 2..n-1 of "
      "two "
      "distinct processors p2, p3 holding the same Sigma_j at the start of step 4{}",
      false_variant ? " (deliberately false variant: 'same last symbol')" : "",
      n == 0 ? "symbolic n >= 3" : fmt::format("n = {}", n),
      false_variant
          ? ""
          : " (p holds Sigma_j, received along link n from S^j_(n-1), iff its first symbol is j)");
  std::string& s = q.script;
  s += "; " + q.description + "\n";
  s += "(declare-const a Bool)\n(declare-const x Int)\n(declare-const y Int)\n(declare-const j "
       "Int)\n";
  if (n == 0) {
    // p1 is an injective array on 1..n with values in 1..n.
    s += "(declare-const n Int)\n(declare-const p1 (Array Int Int))\n(assert (>= n 3))\n";
    s += "(assert (forall ((i Int) (k Int)) (! (=> (and (<= 1 i) (<= i n) (<= 1 k) (<= k n) (not "
         "(= i k)))"
         " (not (= (select p1 i) (select p1 k)))) :pattern ((select p1 i) (select p1 k)))))\n";
    s += "(assert (forall ((i Int)) (! (=> (and (<= 1 i) (<= i n)) (and (<= 1 (select p1 i)) (<= "
         "(select p1 i) n)))"
         " :pattern ((select p1 i)))))\n";
    // p2 = p1 with positions 1 and x swapped; p3 likewise with y.
    s += "(define-fun p2 () (Array Int Int) (store (store p1 1 (select p1 x)) x (select p1 1)))\n";
    s += "(define-fun p3 () (Array Int Int) (store (store p1 1 (select p1 y)) y (select p1 1)))\n";
    std::string same =
        false_variant ? "(= (select p2 n) (select p3 n))"
                      : "(and (= (select p2 1) j) (= (select p3 1) j) (not (= j (select p1 n))))";
    s += fmt::format(
        "(assert (=> a (and (<= 2 x) (< x n) (<= 2 y) (< y n) (not (= x y))\n"
        "  {}\n  (exists ((k Int)) (and (<= 1 k) (<= k n) (not (= (select p2 k) (select p3 "
        "k))))))))\n",
        same);
    q.size = 64;
    return q;
  }
  for (int k = 1; k <= n; ++k)
    s +=
        fmt::format("(declare-const s{} Int)\n(assert (and (<= 1 s{}) (<= s{} {})))\n", k, k, k, n);
  s += "(assert (distinct";
  for (int k = 1; k <= n; ++k) s += fmt::format(" s{}", k);
  s += "))\n";
  // sym(k) = p1's symbol in position k.
  std::string sym = fmt::format("s{}", n);
  for (int k = n - 1; k >= 1; --k) sym = fmt::format("(ite (= k {}) s{} {})", k, k, sym);
  s += fmt::format("(define-fun sym ((k Int)) Int {})\n", sym);
  // p2 (swap positions 1 and x of p1) and p3 (1 and y), position by position.
  for (int k = 1; k <= n; ++k) {
    if (k == 1) {
      s += "(define-fun p2_1 () Int (sym x))\n(define-fun p3_1 () Int (sym y))\n";
    } else {
      s += fmt::format("(define-fun p2_{} () Int (ite (= x {}) s1 s{}))\n", k, k, k);
      s += fmt::format("(define-fun p3_{} () Int (ite (= y {}) s1 s{}))\n", k, k, k);
    }
  }
  std::string differ = "(or";
  for (int k = 1; k <= n; ++k) differ += fmt::format(" (not (= p2_{} p3_{}))", k, k);
  differ += ")";
  std::string same = false_variant ? fmt::format("(= p2_{} p3_{})", n, n)
                                   : fmt::format("(and (= p2_1 j) (= p3_1 j) (not (= j s{})))", n);
  s += fmt::format(
      "(assert (=> a (and (<= 2 x) (<= x {}) (<= 2 y) (<= y {}) (not (= x y))\n  {}\n  {})))\n",
      n - 1, n - 1, same, differ);
  q.size = static_cast<std::uint64_t>(n) * n * 8 + 64;
  q.logic = "QF_LIA";
  return q;
}

LemmaQuery recurrence_query(const std::string& part, bool false_variant) {
  LemmaQuery q;
  std::string inc = false_variant ? "n" : "(- n 1)";
  q.size = 64;
  q.logic = "QF_NIA";
  if (part == "base") {
    q.name = "consistency-recurrence-base";
    q.description =
        "consistency check (arithmetic): the closed form gives T(2) = 1, the recurrence's base "
        "(written 2T(n) = n(n-1))";
    q.script = "; " + q.description +
               "\n(declare-const a Bool)\n(assert (=> a (not (= (* 2 1) (* 2 (- 2 1))))))\n";
  } else if (part == "step") {
    q.name = false_variant ? "theorem3-recurrence-step-false-variant" : "theorem3-recurrence-step";
    q.description = fmt::format(
        "Theorem 3: for symbolic n >= 3, if 2T(n-1) = (n-1)(n-2) and T(n) = T(n-1) + {} then 2T(n) "
        "= n(n-1) "
        "(inductive step{})",
        false_variant ? "n" : "n - 1",
        false_variant ? "; deliberately false variant of the recurrence" : "");
    q.script = "; " + q.description +
               "\n(declare-const a Bool)\n(declare-const n Int)\n(declare-const tp "
               "Int)\n(declare-const tn Int)\n"
               "(assert (>= n 3))\n(assert (= (* 2 tp) (* (- n 1) (- n 2))))\n" +
               fmt::format("(assert (= tn (+ tp {})))\n", inc) +
               "(assert (=> a (not (= (* 2 tn) (* n (- n 1))))))\n";
  } else {
    throw UsageError("recurrence part must be 'base' or 'step', not '" + part + "'");
  }
  if (false_variant && part == "step") q.expected = smt::Answer::Sat;
  return q;
}

smt::Result solve_lemma(const LemmaQuery& q, const smt::Limits& limits, const std::string& emit_dir,
                        std::string* written) {
  smt::Solver s(limits, q.logic);
  if (!s.reserve(q.size)) {
    smt::Result r;
    r.reason = s.refusal();
    return r;
  }
  s.add(q.script);
  smt::Result r = s.check({"a"});
  if (!emit_dir.empty()) {
    make_dir_checked(emit_dir, "--emit-smt2");
    std::string path = (std::filesystem::path(emit_dir) / (q.name + ".smt2")).string();
    s.emit_smt2(path, r.answer, {"a"},
                q.description + "\nunsat = the statement holds (proof by negation)");
    if (written) *written = path;
  }
  return r;
}

namespace {

// The keys of a proof file, and for those with a fixed set of values, the values.
const std::map<std::string, std::vector<std::string>>& proof_keys() {
  static const std::map<std::string, std::vector<std::string>> keys = {
      {"kind", {"model", "induction", "steps", "claim", "recurrence", "synth", "smt2"}},
      {"expect", {"pass", "fail", "sat", "unsat", "proved", "disproved"}},
      {"variant", {"true", "false"}},
      {"part", {"base", "step"}},
      {"port", {"single", "all"}},
      {"uniform", {"yes", "no"}},
      {"executor", {"yes", "no"}},
      {"algebra", {"commutative", "associative"}},
      {"model", {}},
      {"topology", {}},
      {"n", {}},
      {"collective", {}},
      {"steps", {}},
      {"file", {}},
      {"timeout", {}},
      {"check-up-to", {}},
  };
  return keys;
}

std::string one_of(const std::vector<std::string>& vs) {
  std::string s;
  for (std::size_t i = 0; i < vs.size(); ++i)
    s += (i == 0 ? "" : i + 1 == vs.size() ? " or " : ", ") + vs[i];
  return s;
}

}  // namespace

ProofObligation parse_proof_file(const std::string& path) {
  // Proof files are a few lines; a larger file (or one that never ends) is refused unread.
  std::istringstream f(read_file_bounded(path, std::uint64_t{1} << 20, "a proof file"));
  ProofObligation o;
  o.path = path;
  std::map<std::string, int> line_of;
  std::string line;
  int no = 0;
  DeadlineTick tick;
  while (std::getline(f, line)) {
    ++no;
    tick([&] { return fmt::format("reading {} (at line {})", path, no); });
    auto h = line.find('#');
    if (h != std::string::npos) line = line.substr(0, h);
    std::istringstream is(line);
    std::string key, value, rest;
    if (!(is >> key)) continue;
    std::getline(is, rest);
    auto b = rest.find_first_not_of(" \t");
    auto e = rest.find_last_not_of(" \t\r");
    value = b == std::string::npos ? "" : rest.substr(b, e - b + 1);
    const auto& keys = proof_keys();
    auto k = keys.find(key);
    if (k == keys.end()) {
      std::vector<std::string> names;
      for (const auto& [n, v] : keys) names.push_back(n);
      throw UsageError(fmt::format("{}:{}: unknown key '{}' (keys: {})", path, no,
                                   printable(key, 40), one_of(names)));
    }
    if (value.empty()) throw UsageError(fmt::format("{}:{}: '{}' needs a value", path, no, key));
    if (auto d = line_of.find(key); d != line_of.end())
      throw UsageError(
          fmt::format("{}:{}: '{}' is given twice (first on line {})", path, no, key, d->second));
    const auto& allowed = k->second;
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), value) == allowed.end())
      throw UsageError(fmt::format("{}:{}: '{}' must be {}, not '{}'", path, no, key,
                                   one_of(allowed), printable(value, 40)));
    line_of[key] = no;
    o.fields[key] = value;
  }
  if (o.get("kind").empty())
    throw UsageError(path + ": missing 'kind' (model, claim, recurrence, synth, smt2)");
  return o;
}

}  // namespace collv
