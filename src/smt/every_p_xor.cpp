// The every-p prover's XOR partners (docs/smt.md, "Every p from the model", XOR partners):
//
// * `x XOR m` where m is a doubling mask's closed form `(pow2 E)` is the term (xor_pow2 x E):
//   x + 2^E where bit E of x is 0, x - 2^E where it is 1, bit E being (mod (div x 2^E) 2) -- the
//   executor's two's-complement XOR for every integer x; with a numeral operand 0..2^32 it is
//   every_p_bits' linear term; `x XOR (ite c m1 m2)` is (ite c (x XOR m1) (x XOR m2)). Any other
//   XOR is refused.
// * an `if` in a round loop's body whose branches are assignments only (Open MPI's `if my_id <
//   remote then ... else ... endif`) is read as both branches from the same state, merged into
//   if-then-else terms on the condition; the slices they read and fill are obligations under the
//   branch's condition.
// * `split LOOP N` in the proof: every query that names the while loop's ghost iteration (or its
//   exit index) is split into N queries, one with the iteration equal to each of 0..N-1, and one
//   with it outside 0..N-1. The cases cover every integer, so the N + 1 answers unsat are the
//   query's unsat; with the iteration a numeral, 2^k is a numeral and the div, mod and XOR by it
//   are linear (Z3 answers the unsplit form, nonlinear in 2^k, with a timeout).
#include <array>
#include <cctype>
#include <optional>

#include "smt/every_p_analyzer.hpp"
#include "smt/every_p_bits.hpp"

namespace collv::everyp {

std::string xor_defs() {
  return "(define-fun xor_pow2 ((x Int) (e Int)) Int (ite (= (pow2 e) 0) x (ite (= (mod (div x "
         "(pow2 e)) 2) 0) (+ x (pow2 e)) (- x (pow2 e)))))\n";
}

namespace {

// E when t is `(pow2 E)` (one balanced term); empty otherwise.
std::string pow2_exponent(const std::string& t) {
  const std::string head = "(pow2 ";
  if (t.rfind(head, 0) != 0 || t.back() != ')') return "";
  int depth = 0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '(') ++depth;
    if (t[i] == ')' && --depth == 0 && i + 1 != t.size()) return "";
  }
  return t.substr(head.size(), t.size() - head.size() - 1);
}

// The three operands of `(ite C A B)` (balanced terms), or nothing.
std::optional<std::array<std::string, 3>> ite_parts(const std::string& t) {
  if (t.size() < 2 || t.front() != '(' || t.back() != ')') return std::nullopt;
  std::vector<std::string> items;
  std::size_t at = 1, end = t.size() - 1;
  while (at < end) {
    if (t[at] == ' ') {
      ++at;
      continue;
    }
    std::size_t from = at;
    if (t[at] == '(') {
      int depth = 0;
      for (; at < end; ++at) {
        if (t[at] == '(') ++depth;
        if (t[at] == ')' && --depth == 0) break;
      }
      if (depth != 0) return std::nullopt;
      ++at;
    } else {
      while (at < end && t[at] != ' ' && t[at] != '(' && t[at] != ')') ++at;
      if (at < end && t[at] != ' ') return std::nullopt;
    }
    items.push_back(t.substr(from, at - from));
  }
  if (items.size() != 4 || items[0] != "ite") return std::nullopt;
  return std::array<std::string, 3>{items[1], items[2], items[3]};
}

bool names(const std::string& script, const std::string& id) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (std::size_t at = script.find(id); at != std::string::npos; at = script.find(id, at + 1)) {
    bool left = at == 0 || !word(script[at - 1]);
    bool right = at + id.size() >= script.size() || !word(script[at + id.size()]);
    if (left && right) return true;
  }
  return false;
}

}  // namespace

std::string Analyzer::xor_term(const Lin& a, const Lin& b, const Expr& e) {
  if (a.c != "0" || b.c != "0")
    refuse("XOR of a count-dependent value is outside the fragment", e.loc);
  // Two numerals fold; one numeral operand is every_p_bits' linear sum over its set bits.
  auto na = as_int(a.k), nb = as_int(b.k);
  if (na && nb) return num(*bitop_fold(Op::BitXor, *na, *nb));
  if (nb)
    if (auto t = bitop_numeral(Op::BitXor, a.k, *nb)) return *t;
  if (na)
    if (auto t = bitop_numeral(Op::BitXor, b.k, *na)) return *t;
  std::string eb = pow2_exponent(b.k);
  if (!eb.empty()) return fmt::format("(xor_pow2 {} {})", a.k, eb);
  std::string ea = pow2_exponent(a.k);
  if (!ea.empty()) return fmt::format("(xor_pow2 {} {})", b.k, ea);
  // x XOR (if c then m1 else m2) = if c then x XOR m1 else x XOR m2 (either operand).
  if (auto parts = ite_parts(b.k))
    return ite((*parts)[0], xor_term(a, Lin{"0", (*parts)[1]}, e),
               xor_term(a, Lin{"0", (*parts)[2]}, e));
  if (auto parts = ite_parts(a.k))
    return ite((*parts)[0], xor_term(Lin{"0", (*parts)[1]}, b, e),
               xor_term(Lin{"0", (*parts)[2]}, b, e));
  refuse(
      "XOR is in the fragment only with a power of two (a doubling mask's closed form (pow2 "
      "k), or a literal 2^j)",
      expr_start(e));
}

// log2(p) rounded down: every query assumes 2 <= p < 2^31, so it is clog2(p + 1) - 1, in 1 .. 30,
// where 2^ of it is exact: both without the guards of the general case (the same values, in a
// form Z3 matches with the proof's terms at once).
const std::string kLog2P = "(- (clog2 (+ p 1)) 1)";

std::string pow2_int(const std::string& e) {
  if (e == kLog2P) return fmt::format("(pow2 {})", e);
  return fmt::format("(ite (and (<= 0 {}) (<= {} 32)) (pow2 {}) (pow2_undefined {}))", e, e, e, e);
}

std::string log2_int(const std::string& x) {
  if (x == "p") return kLog2P;
  return fmt::format(
      "(ite (and (<= 1 {}) (<= {} 4294967295)) (- (clog2 (+ {} 1)) 1) (log2_undefined {}))", x, x,
      x, x);
}

std::string Analyzer::pow_term(const Lin& a, const Lin& b, const Expr& e) {
  // 2^E for 0 <= E <= 32 (the 32-bit range of ranks); elsewhere an unknown value (the executor
  // refuses E < 0), so no claim that needs it there is proved.
  if (a.c != "0" || b.c != "0" || a.k != "2")
    refuse("a power is in the fragment only as 2^E with E free of count", expr_start(e));
  return pow2_int(b.k);
}

std::string Analyzer::log2_term(const Lin& a, const Expr& e) {
  // log2(X) rounded down = clog2(X + 1) - 1 for 1 <= X < 2^32; elsewhere an unknown value (the
  // executor refuses X <= 0).
  if (a.c != "0") refuse("log2 of a count-dependent value is outside the fragment", e.loc);
  return log2_int(a.k);
}

bool Analyzer::assignments_only(const std::vector<StmtPtr>& body) {
  for (const auto& s : body) {
    if (s->kind == StmtKind::Assign) continue;
    if (s->kind == StmtKind::If && assignments_only(s->body) && assignments_only(s->else_body))
      continue;
    return false;
  }
  return true;
}

void Analyzer::branch_assign(const Stmt& s, State& st, const AssignFn& assign,
                             std::vector<std::pair<std::string, std::string>>& reads,
                             std::vector<std::pair<std::string, SourceLoc>>& fits) {
  const std::string c = bool_expr(*s.cond, st);
  auto run = [&](const std::vector<StmtPtr>& body, State& x, const std::string& guard) {
    std::size_t r0 = reads.size(), f0 = fits.size();
    for (const auto& t : body) assign(*t, x);
    for (std::size_t i = r0; i < reads.size(); ++i)
      reads[i].first = fmt::format("(=> {} {})", guard, reads[i].first);
    for (std::size_t i = f0; i < fits.size(); ++i)
      fits[i].first = fmt::format("(=> {} {})", guard, fits[i].first);
  };
  State yes = st, no = st;
  run(s.body, yes, c);
  run(s.else_body, no, fmt::format("(not {})", c));
  // A variable with a value on both branches gets ite(c, then, else); one that has a value on
  // one branch only has none after the if (a later read is refused).
  State out = st;
  out.ints.clear();
  out.data.clear();
  for (const auto& [v, l] : yes.ints) {
    auto f = no.ints.find(v);
    if (f == no.ints.end()) continue;
    out.ints[v] = Lin{l.c == f->second.c ? l.c : ite(c, l.c, f->second.c),
                      l.k == f->second.k ? l.k : ite(c, l.k, f->second.k)};
  }
  for (const auto& [v, d] : yes.data) {
    auto f = no.data.find(v);
    if (f == no.data.end()) continue;
    out.data[v] = Buf{d.len == f->second.len ? d.len : ite(c, d.len, f->second.len),
                      d.blk == f->second.blk ? d.blk : ite(c, d.blk, f->second.blk)};
  }
  st = out;
}

void Analyzer::note_split(const std::string& lname, int id, const SourceLoc& loc) {
  const EveryPInvariant* sp = invariant(lname, "#split", "split");
  if (!sp) return;
  // `split LOOP N [TERM]`: the cases are on TERM's value (a term in the iteration k, p, count and
  // root; k itself when not given), e.g. a halving mask's exponent, which counts down.
  std::string cases = sp->term, on;
  if (auto blank = cases.find(' '); blank != std::string::npos) {
    on = cases.substr(blank + 1);
    cases = cases.substr(0, blank);
    std::string why = check_user_term(on, {"k", "p", "count", "root"});
    if (!why.empty())
      refuse(fmt::format("{}:{}: split {}: the term: {}", pf_.path, sp->line, lname, why), loc);
  }
  auto n = as_int(cases);
  if (!n || *n < 1 || *n > 64)
    refuse(fmt::format("{}:{}: split {} needs a number of cases from 1 to 64", pf_.path, sp->line,
                       lname),
           loc);
  splits_.push_back(
      SplitLoop{fmt::format("i_L{}", id), fmt::format("x_L{}", id), static_cast<int>(*n), on});
}

void Analyzer::split_obligations() {
  if (splits_.empty()) return;
  std::vector<EveryPObligation> out;
  for (auto& ob : out_.obligations) {
    const SplitLoop* sp = nullptr;
    std::string c;
    for (const auto& s : splits_) {
      c = names(ob.script, s.iter) ? s.iter : names(ob.script, s.exit) ? s.exit : "";
      if (!c.empty()) {
        sp = &s;
        break;
      }
    }
    if (!sp) {
      out.push_back(std::move(ob));
      continue;
    }
    // A case term (- E k) counts down (a halving mask's exponent): in case K the constant is
    // E - K, and the query is written with E - K in its place (the declaration kept, and the
    // case asserted as its value), so Z3 sees the mask and its window as numerals: asserting the
    // case alone left 2^(E - k) symbolic (its check-sat-assuming keeps the equation unsolved),
    // and the halving's consecution took over 100 s where the substituted query takes 5 s.
    const std::string cst = c;
    std::string down;
    if (sp->on.size() > 8 && sp->on.rfind("(- ", 0) == 0 &&
        sp->on.compare(sp->on.size() - 3, 3, " k)") == 0) {
      down = sp->on.substr(3, sp->on.size() - 6);
      if (!check_user_term(down, {"p", "count", "root"}).empty()) down.clear();
    }
    if (!sp->on.empty()) {
      c = rename(sp->on, {{"k", c}});
      // the case term's pow2 and clog2, in a query that did not use them yet
      const std::string decl = "(declare-const p Int)";
      if (ob.script.find("(define-fun pow2 ") == std::string::npos &&
          ob.script.find(decl) != std::string::npos)
        ob.script.insert(ob.script.find(decl), pow2_defs());
    }
    for (int k = 0; k <= sp->n; ++k) {
      EveryPObligation o = ob;
      bool rest = k == sp->n;
      if (!rest && !down.empty()) {
        const std::string val = fmt::format("(- {} {})", down, k);
        o.script = rename(o.script, {{cst, val}});
        const std::string decl = fmt::format("(declare-const {} Int)", val);
        if (auto at = o.script.find(decl); at != std::string::npos)
          o.script.replace(at, decl.size(), fmt::format("(declare-const {} Int)", cst));
        o.script += fmt::format("(assert (= {} {}))\n", cst, val);
      }
      o.name += rest ? "-krest" : fmt::format("-k{}", k);
      if (!rest) o.split_case = k;
      o.description += rest ? fmt::format(" (case {} outside 0..{})", c, sp->n - 1)
                            : fmt::format(" (case {} = {})", c, k);
      o.script += rest ? fmt::format("(assert (or (< {} 0) (> {} {})))\n", c, c, sp->n - 1)
                       : fmt::format("(assert (= {} {}))\n", c, k);
      out.push_back(std::move(o));
    }
  }
  out_.obligations = std::move(out);
}

void Analyzer::case_obligations() {
  for (const auto& cs : pf_.cases) {
    const std::string where = fmt::format("{}:{}: cases {}", pf_.path, cs.line, cs.obligation);
    std::string why = check_user_term(cs.term, {"p", "count", "root"});
    if (!why.empty()) refuse(fmt::format("{}: the term: {}", where, why), m_.header.loc);
    auto named = [&](const std::string& n) { return names_obligation(n, cs.obligation); };
    std::vector<EveryPObligation> out;
    bool any = false;
    for (auto& ob : out_.obligations) {
      if (!named(ob.name)) {
        out.push_back(std::move(ob));
        continue;
      }
      any = true;
      // the term's pow2 and clog2, in a query that did not use them yet
      const std::string decl = "(declare-const p Int)";
      if (ob.script.find("(define-fun pow2 ") == std::string::npos &&
          ob.script.find(decl) != std::string::npos)
        ob.script.insert(ob.script.find(decl), pow2_defs());
      // The values LO .. HI and the rest: the cases' disjunction is true, so the obligation holds
      // iff every case's query is unsat.
      for (long long v = cs.lo; v <= cs.hi + 1; ++v) {
        EveryPObligation o = ob;
        const bool rest = v == cs.hi + 1;
        // In a case the term's value is a numeral: written in its place (a parenthesized term
        // is a whole subterm where it occurs), with the case still asserted, so the query is the
        // obligation's under the case. A product of clog2(p) with itself (a `steps` claim) is
        // then linear; Z3 did not find that from the asserted equation alone.
        if (!rest && cs.term.size() > 2 && cs.term.front() == '(') {
          const std::string val = v < 0 ? fmt::format("(- {})", -v) : std::to_string(v);
          for (auto at = o.script.find(cs.term); at != std::string::npos;
               at = o.script.find(cs.term, at + val.size()))
            o.script.replace(at, cs.term.size(), val);
        }
        o.name += rest ? "-crest" : fmt::format("-c{}", v);
        o.description += rest ? fmt::format(" (case {} outside {}..{})", cs.term, cs.lo, cs.hi)
                              : fmt::format(" (case {} = {})", cs.term, v);
        o.script += rest ? fmt::format("(assert (or (< {} {}) (> {} {})))\n", cs.term, cs.lo,
                                       cs.term, cs.hi)
                         : fmt::format("(assert (= {} {}))\n", cs.term, v);
        out.push_back(std::move(o));
      }
    }
    if (!any)
      refuse(
          fmt::format("{}: no obligation has that name (collv prove --every-p lists them)", where),
          m_.header.loc);
    out_.obligations = std::move(out);
  }
}

}  // namespace collv::everyp
