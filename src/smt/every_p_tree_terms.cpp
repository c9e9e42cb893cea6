// The every-p prover's binomial trees: the proof's terms (`order`, `round`, `message`, `receive
// NAME VAR`) and their values at a send or a receive of an unrolled path (docs/smt.md, "Every p
// from the model", binomial trees; the readers are every_p_tree.cpp and every_p_tree_search.cpp).
#include "smt/every_p_bits.hpp"
#include "smt/every_p_tree.hpp"

namespace collv::everyp {

TreeTerms Analyzer::tree_terms(const Path& path, const SourceLoc& loc) {
  if (!pass1_ && (!rsends_.empty() || !rrecvs_.empty()))
    refuse("a binomial tree on one path and other communication on another is outside the fragment",
           loc);
  auto need = [&](const char* var, const char* part, const char* example) {
    const EveryPInvariant* inv = invariant("tree", var, part);
    if (!inv)
      refuse(fmt::format("a binomial tree needs '{}' in the proof (e.g. '{}')", example, example),
             loc);
    return inv;
  };
  const EveryPInvariant* ord = need("#order", "order", "order (mod (- r root) p)");
  const EveryPInvariant* rnd = need("#round", "round", "round (- (clog2 p) 1 (clog2 mask))");
  const EveryPInvariant* mlen = need("#message", "length", "message length 1");
  const EveryPInvariant* mblk = need("#message", "block", "message block (it root 0)");
  TreeTerms tt;
  std::set<std::string>& names = tt.names;
  {
    std::set<std::string> a;
    assigned(m_.body, a);  // the program's variables (a path may not assign all of them)
    for (const auto& [n, v] : path.st.ints) a.insert(n);
    for (const auto& n : a)
      if (n != "r" && n != "b" && n != "p" && n != "q" && n != "t") names.insert(n);
  }
  auto checked = [&](const EveryPInvariant* inv, std::set<std::string> vars) {
    std::string why = check_user_term(inv->term, vars);
    if (!why.empty())
      throw Refused{fmt::format("{}:{}: {} term: {}", pf_.path, inv->line, inv->part, why),
                    SourceLoc{pf_.path, inv->line, 1}};
    return inv->term;
  };
  tt.order = mod_p_by_cases(checked(ord, {"r", "p", "count", "root"}));
  std::set<std::string> rvars = names;
  rvars.insert({"p", "count", "root"});
  rvars.insert("r");
  tt.round_t = checked(rnd, rvars);
  tt.round_r = mentions(tt.round_t, "r");
  if (tt.round_r) tt.round_x = round_bit_value(tt.round_t);
  // The message may depend on the receiver r and on the program's integer variables that are
  // numerals at the receive and at the send (the unrolled mask): a send and a receive match only
  // where those numerals agree, so the term the sender is held to is the one the receiver gets.
  std::set<std::string> mvars = names;
  mvars.insert({"p", "count", "root", "r"});
  tt.msg_t.len = mod_p_by_cases(checked(mlen, mvars));
  mvars.insert("b");
  tt.msg_t.blk = mod_p_by_cases(checked(mblk, mvars));
  for (const auto& n : names)
    if (mentions(tt.msg_t.len, n) || mentions(tt.msg_t.blk, n)) tt.msg_names.insert(n);
  tt.key_names = tt.msg_names;
  if (tt.round_r)
    for (const auto& n : names)
      if (mentions(tt.round_t, n)) tt.key_names.insert(n);
  // `receive NAME VAR`: at a receive the terms read NAME as the program's VAR (Open MPI's parent
  // sends with mask = 2^k where the receiver's search loop left hb = 2^k). A send and a receive
  // still match only where the values the terms read are equal numerals, so the receiver assumes
  // what its sender is held to.
  for (const auto& inv : pf_.invariants)
    if (inv.loop == "tree" && inv.var == "#receive") {
      if (!names.count(inv.part) || !names.count(inv.term))
        throw Refused{fmt::format("{}:{}: receive {} {}: both must be integer variables of the "
                                  "program's tree",
                                  pf_.path, inv.line, inv.part, inv.term),
                      SourceLoc{pf_.path, inv.line, 1}};
      tt.at_recv[inv.part] = inv.term;
    }
  return tt;
}

namespace {
// The state the proof's terms read at an event: at a receive, NAME holds VAR's value.
State term_state(const TreeTerms& tt, const State& st, bool recv) {
  if (!recv || tt.at_recv.empty()) return st;
  State s = st;
  for (const auto& [name, var] : tt.at_recv) {
    auto f = st.ints.find(var);
    if (f == st.ints.end() || st.dead.count(var))
      s.ints.erase(name);
    else
      s.ints[name] = f->second;
  }
  return s;
}
}  // namespace

// The numerals the message term reads at an event with state st.
std::string Analyzer::tree_key(const TreeTerms& tt, const State& st0, const SourceLoc& loc,
                               bool recv) {
  const State st = term_state(tt, st0, recv);
  std::string key;
  for (const auto& n : tt.key_names) {
    auto f = st.ints.find(n);
    auto v = f == st.ints.end() ? std::nullopt : as_int(render(f->second));
    if (!v)
      refuse("the message term (or a round term over the sender) reads '" + n +
                 "', which is not a numeral here (it must be a "
                 "variable of the unrolled loops)",
             loc);
    key += fmt::format("{}={};", n, *v);
  }
  return key;
}

// The message at an event with state st, for the receiver rr.
Buf Analyzer::tree_msg(const TreeTerms& tt, const State& st0, const std::string& rr,
                       const SourceLoc& loc, bool recv) {
  tree_key(tt, st0, loc, recv);
  const State st = term_state(tt, st0, recv);
  std::map<std::string, std::string> ren{{"r", rr}};
  for (const auto& n : tt.msg_names) ren[n] = render(st.ints.at(n));
  return Buf{rename(tt.msg_t.len, ren), rename(tt.msg_t.blk, ren)};
}

std::string Analyzer::tree_round(const TreeTerms& tt, const State& st0, const SourceLoc& loc,
                                 bool recv, const std::string& src) {
  const State st = term_state(tt, st0, recv);
  std::map<std::string, std::string> ren;
  for (const auto& n : tt.names) {
    auto f = st.ints.find(n);
    if (f != st.ints.end()) ren[n] = "(+ 0 " + render(f->second) + ")";
  }
  std::string t = rename(tt.round_t, ren);
  for (const auto& n : tt.names)
    if (mentions(t, n)) refuse("the round term reads '" + n + "', which has no value here", loc);
  if (tt.round_r) {
    // Over the message's sender: its names are numerals (the key), so at a receive the term at
    // the source S is what S's send of equal key states (rename(send's, r -> S)).
    tree_key(tt, st0, loc, recv);
    return recv ? rename(t, {{"r", "(+ 0 " + src + ")"}}) : t;
  }
  if (mentions(t, "r"))
    refuse(
        "the round term depends on the rank here (it must be a function of the numerals "
        "of the unrolled loops and p)",
        loc);
  return t;
}

// The bits lemma's instances (every_p_bits.hpp) for the values whose bits the program tests, at
// the ranks a query names, for bits 0 .. maxj: proved once for every integer (`bits-lemma`).
std::string Analyzer::tree_lem(bool prefix, const std::vector<std::string>& ranks, int maxj) {
  std::string out = "true";
  if (prefix) return out;  // the prefix form has no bit tests
  for (const auto& x : bit_xs_)
    for (const auto& R : ranks)
      out = fmt::format("(and {} {})", out, bit_lemmas(rename(x, {{"r", R}}), maxj));
  return out;
}

std::string round_bit_value(const std::string& t) {
  // Every "(mod " followed by one balanced term and " 2)".
  for (std::size_t at = t.find("(mod "); at != std::string::npos; at = t.find("(mod ", at + 1)) {
    std::size_t b = at + 5, e = b;
    if (b >= t.size()) break;
    if (t[b] == '(') {
      int depth = 0;
      for (; e < t.size(); ++e) {
        if (t[e] == '(') ++depth;
        if (t[e] == ')' && --depth == 0) break;
      }
      ++e;
    } else {
      while (e < t.size() && t[e] != ' ' && t[e] != ')') ++e;
    }
    if (e > t.size() || t.compare(e, 3, " 2)") != 0) continue;
    const std::string v = t.substr(b, e - b);
    if (v.rfind("(div ", 0) == 0 || !mentions(v, "r")) continue;
    return v;
  }
  return "";
}

}  // namespace collv::everyp
