// The every-p prover's `abstract pof2 OBLIGATION` (docs/smt.md, recursive halving): in the named
// obligations, 2^ilog2 p and clog2(p + 1), which the proofs and the reader write as (pow2 (-
// (clog2 (+ p 1)) 1)) and (clog2 (+ p 1)), become two constants pof2! and lg! (names no model
// variable can have), and the query assumes facts about them instead of their definitions (an
// if-then-else over the 31 ranges of p, which Z3 searches together with the div/mod of the
// virtual ranks): 2 <= lg! <= 31, pof2! <= p < 2 pof2!, and for j = K and K + 1 in a split's case
// K (the round's mask and window; j = 1..30 in a query without a case) lg! - 1 >= j iff 2^j <=
// pof2!, and 2^j divides pof2! where lg! - 1 >= j. The query `lemma-pof2` proves the facts (all
// j = 1..30) for the exact terms at every 2 <= p < 2^31.
//
// Why it is sound: a model of the original query gives one of the abstracted query by setting the
// two constants to the exact terms' values there, where the facts hold by the lemma; so when the
// lemma and the abstracted query are unsat, the original query is. Both are certificates.
#include "smt/every_p_analyzer.hpp"

namespace collv {

namespace {
const std::string kLg = "(clog2 (+ p 1))";
const std::string kPof2 = "(pow2 (- (clog2 (+ p 1)) 1))";

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size())
    s.replace(at, from.size(), to);
  return s;
}
}  // namespace

std::string pof2_facts(const std::string& P, const std::string& C,
                       const std::vector<int>& divides) {
  std::string f = fmt::format("(<= 2 {}) (<= {} 31) (<= {} p) (< p (* 2 {}))", C, C, P, P);
  for (int j : divides)
    if (j >= 1 && j <= 30)
      f += fmt::format(" (= (<= {} (- {} 1)) (<= {} {})) (=> (<= {} (- {} 1)) (= (mod {} {}) 0))",
                       j, C, 1LL << j, P, j, C, P, 1LL << j);
  return "(and " + f + ")";
}

std::string pof2_lemma_script(const std::string& facts) {
  return "; lemma-pof2\n; the facts `abstract pof2` assumes hold for 2^ilog2 p and clog2(p + 1)\n" +
         everyp::pow2_defs() +
         "(declare-const p Int)\n(declare-const count Int)\n(declare-const root Int)\n"
         "(declare-const r Int)\n(declare-const a Bool)\n"
         "(assert (and (>= p 2) (< p 2147483648)))\n" +
         fmt::format("(assert (=> a (not {})))\n", facts);
}

namespace everyp {

void Analyzer::abstract_obligations() {
  if (pf_.abstracts.empty()) return;
  for (const auto& ab : pf_.abstracts) {
    bool any = false;
    for (auto& ob : out_.obligations) {
      if (!names_obligation(ob.name, ab.obligation)) continue;
      any = true;
      const std::string decl = "(declare-const p Int)";
      const auto at = ob.script.find(decl);
      if (at == std::string::npos || ob.script.find(kLg) == std::string::npos) continue;
      std::string s = replace_all(replace_all(ob.script, kPof2, "pof2!"), kLg, "lg!");
      s.insert(s.find(decl), "(declare-const pof2! Int)\n(declare-const lg! Int)\n");
      std::vector<int> js = {ob.split_case, ob.split_case + 1};
      if (ob.split_case < 0)
        for (int j = 1; j <= 30; ++j) js.push_back(j);
      ob.script = s + fmt::format("(assert {})\n", pof2_facts("pof2!", "lg!", js));
      ob.description += " (2^ilog2 p and clog2(p + 1) abstracted: lemma-pof2)";
    }
    if (!any)
      refuse(fmt::format("{}:{}: abstract pof2 {}: no obligation has that name (collv prove "
                         "--every-p lists them)",
                         pf_.path, ab.line, ab.obligation),
             m_.header.loc);
  }
  std::vector<int> all;
  for (int j = 1; j <= 30; ++j) all.push_back(j);
  EveryPObligation lemma;
  lemma.name = "lemma-pof2";
  lemma.description =
      "the facts `abstract pof2` assumes hold for 2^ilog2 p and clog2(p + 1) at every 2 <= p < "
      "2^31";
  lemma.loc = m_.header.loc;
  lemma.script = pof2_lemma_script(pof2_facts(kPof2, kLg, all));
  out_.obligations.push_back(std::move(lemma));
}

}  // namespace everyp
}  // namespace collv
