// The every-p prover's data terms: the model's integer, condition and data expressions as SMT-LIB2
// terms over a rank's state, and writes to buffers (see every_p_analyzer.hpp).
#include "smt/every_p_analyzer.hpp"
#include "smt/every_p_bits.hpp"

namespace collv::everyp {

std::string Analyzer::header_term(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Number:
      return num(e.value);
    case ExprKind::Name:
      if (e.name == "p" || e.name == "count") return e.name;
      if ((e.name == "root" || e.name == "source") && rooted_) return "root";
      refuse("the name '" + e.name + "' in a header formula is not in the fragment", e.loc);
    case ExprKind::Cond:
      return ite(header_term(*e.args[0]), header_term(*e.args[1]), header_term(*e.args[2]));
    case ExprKind::Call:
      // clog2 of x in 1 .. 2^32, where the query's clog2 is exact; elsewhere an unknown value
      // (the executor refuses x < 1), so no claim that needs it can be proved.
      if (e.name == "clog2" && e.args.size() == 1) {
        std::string x = header_term(*e.args[0]);
        // clog2(p): every query assumes 2 <= p < 2^31, so without the guard (as log2(p)): the same
        // value, in the form a `cases ... (clog2 p)` line writes its numeral in place of.
        if (x == "p") return "(clog2 p)";
        return fmt::format(
            "(ite (and (>= {} 1) (<= {} 4294967296)) (clog2 {}) (clog2_undefined {}))", x, x, x, x);
      }
      // ilog2 (log2 rounded down) of x in 1 .. 2^32 - 1; popcount of x in 0 .. 2^32 - 1, the sum
      // of its 32 bits (a div and a mod by numerals each); unknown values elsewhere.
      if (e.name == "ilog2" && e.args.size() == 1) return log2_int(header_term(*e.args[0]));
      if (e.name == "popcount" && e.args.size() == 1) {
        std::string x = header_term(*e.args[0]), bits = "0";
        for (int j = 31; j >= 0; --j)
          bits = add(fmt::format("(mod (div {} {}) 2)", x, 1LL << j), bits);
        return fmt::format("(ite (and (>= {} 0) (<= {} 4294967295)) {} (popcount_undefined {}))", x,
                           x, bits, x);
      }
      break;
    case ExprKind::Unary:
      if (e.op == Op::Neg) return sub("0", header_term(*e.args[0]));
      if (e.op == Op::Not) return fmt::format("(not {})", header_term(*e.args[0]));
      break;
    case ExprKind::Binary: {
      // popcount(X) = 1: X is a power of two (the same claim, without X's 32 bits, which Z3
      // took tens of seconds to sum for large p).
      if (e.op == Op::Eq && e.args[0]->kind == ExprKind::Call && e.args[0]->name == "popcount" &&
          e.args[0]->args.size() == 1 && e.args[1]->kind == ExprKind::Number &&
          e.args[1]->value == 1) {
        std::string x = header_term(*e.args[0]->args[0]);
        return fmt::format(
            "(ite (and (>= {} 0) (<= {} 4294967295)) (and (>= {} 1) (= (pow2 (- (clog2 (+ {} 1)) "
            "1)) {})) (= (popcount_undefined {}) 1))",
            x, x, x, x, x, x);
      }
      std::string a = header_term(*e.args[0]), b = header_term(*e.args[1]);
      switch (e.op) {
        case Op::Add:
          return add(a, b);
        case Op::Sub:
          return sub(a, b);
        case Op::Mul:
          return mul(a, b);
        case Op::Div:
          // Exact division, as the executor's header formulas (rationals): by a positive numeral
          // N where N divides the value, an unknown value elsewhere (no claim that needs a
          // fraction is proved).
          if (auto n = as_int(b); n && *n > 0)
            return fmt::format("(ite (= (mod {} {}) 0) (div {} {}) (hdiv_undefined {} {}))", a, b,
                               a, b, a, b);
          break;
        case Op::Eq:
          return op2("=", a, b);
        case Op::Ne:
          return fmt::format("(not (= {} {}))", a, b);
        case Op::Lt:
          return op2("<", a, b);
        case Op::Le:
          return op2("<=", a, b);
        case Op::Gt:
          return op2(">", a, b);
        case Op::Ge:
          return op2(">=", a, b);
        case Op::And:
          return op2("and", a, b);
        case Op::Or:
          return op2("or", a, b);
        default:
          break;
      }
      break;
    }
    default:
      break;
  }
  refuse("header formula '" + expr_to_string(e) + "' is outside the fragment", expr_start(e));
}

std::string Analyzer::divisor(const Lin& d, const Expr& e) {
  auto v = as_int(d.k);
  if (d.c == "0" && (d.k == "p" || (v && *v > 0))) return d.k;
  refuse("division or mod by '" + expr_to_string(e) +
             "': only by p or a positive literal is in the fragment",
         expr_start(e));
}

Lin Analyzer::int_expr(const Expr& e, const State& st) {
  switch (e.kind) {
    case ExprKind::Number:
      return Lin{"0", num(e.value)};
    case ExprKind::Name: {
      if (e.name == "my_id") return Lin{"0", "r"};
      if (e.name == "p") return Lin{"0", "p"};
      if (e.name == "count") return chunked() ? Lin{"0", "count"} : Lin{"1", "0"};
      if (e.name == "root" || e.name == "source") return Lin{"0", rooted_ ? "root" : "0"};
      if (st.dead.count(e.name))
        refuse("the loop counter '" + e.name + "' is read after its loop", e.loc);
      auto f = st.ints.find(e.name);
      if (f != st.ints.end()) return f->second;
      refuse("'" + e.name +
                 "' is not an integer variable with a value here (or a name outside "
                 "the fragment)",
             e.loc);
    }
    case ExprKind::Cond: {
      std::string c = bool_expr(*e.args[0], st);
      Lin a = int_expr(*e.args[1], st), b = int_expr(*e.args[2], st);
      return Lin{ite(c, a.c, b.c), ite(c, a.k, b.k)};
    }
    case ExprKind::Unary:
      if (e.op == Op::Neg) {
        Lin a = int_expr(*e.args[0], st);
        return Lin{sub("0", a.c), sub("0", a.k)};
      }
      if (e.op == Op::BitNot) {
        // NOT of a numeral (an unrolled mask) folds: -x - 1, two's complement.
        Lin a = int_expr(*e.args[0], st);
        if (auto x = as_int(render(a)); x && *x >= -kBitsMaxNumeral - 1 && *x <= kBitsMaxNumeral)
          return Lin{"0", num(-*x - 1)};
      }
      break;
    case ExprKind::Call:
      // len(v): v's length in elements, its blocks times count.
      // (Not in a rooted program: there integers must not depend on data, so that both readings
      // of the program give the same paths and sources, every_p_rooted.cpp.)
      if (e.name == "len" && rooted_)
        refuse("len(...) in a rooted program is outside the fragment", e.loc);
      if (e.name == "len" && e.args.size() == 1 && e.args[0]->kind == ExprKind::Name)
        return Lin{data_var(e.args[0]->name, st, e.loc).len, "0"};
      if (e.name == "log2" && e.args.size() == 1)
        return Lin{"0", log2_term(int_expr(*e.args[0], st), e)};
      if ((e.name == "min" || e.name == "max") && e.args.size() == 2) {
        Lin a = int_expr(*e.args[0], st), b = int_expr(*e.args[1], st);
        std::string c = op2(e.name == "min" ? "<=" : ">=", render(a), render(b));
        return Lin{ite(c, a.c, b.c), ite(c, a.k, b.k)};
      }
      break;
    case ExprKind::Binary: {
      Lin a = int_expr(*e.args[0], st), b = int_expr(*e.args[1], st);
      switch (e.op) {
        case Op::Add:
          return Lin{add(a.c, b.c), add(a.k, b.k)};
        case Op::Sub:
          return Lin{sub(a.c, b.c), sub(a.k, b.k)};
        case Op::Mul:
          if (a.c == "0") return Lin{mul(a.k, b.c), mul(a.k, b.k)};
          if (b.c == "0") return Lin{mul(a.c, b.k), mul(a.k, b.k)};
          refuse("a product of two count-dependent values is outside the fragment", e.loc);
        case Op::IntDiv:
        case Op::Div:
        case Op::Mod: {
          std::string d = divisor(b, *e.args[1]);
          if (a.c != "0")
            refuse("div/mod of a count-dependent value is outside the fragment", e.loc);
          // Two numerals fold (an unrolled mask: `mask div 2`), as SMT-LIB's div and mod: the
          // quotient rounds down, the remainder is in 0 .. d - 1.
          auto x = as_int(a.k), y = as_int(d);
          if (x && y && *y > 0) {
            long long q = *x / *y - ((*x % *y) < 0 ? 1 : 0);
            return Lin{"0", num(e.op == Op::Mod ? *x - q * *y : q)};
          }
          if (e.op == Op::Mod && d == "p" && tree_mod_) {
            // A binomial tree's mod p, by cases where one subtraction or addition of p brings the
            // value into 0 .. p - 1 (the ranks' sums and differences), mod p elsewhere: exact for
            // every p > 0, and linear on the cases that occur (Z3 reads a mod by the symbolic p as
            // nonlinear, and the tree's many distinct ones made its channel queries time out).
            // One let name for all (an inner binding shadows an outer one, and a binding's value
            // is read outside it), so the same value is the same term on every path.
            return Lin{"0", mod_p_cases(a.k)};
          }
          return Lin{"0", op2(e.op == Op::Mod ? "mod" : "div", a.k, d)};
        }
        case Op::BitXor: {
          // every_p_xor.cpp; a numeral operand's bits are tested too (a tree's bit lemmas).
          auto x = as_int(a.k), y = as_int(b.k);
          if (a.c == "0" && b.c == "0" && (x.has_value() != y.has_value()))
            bit_xs_.insert(x ? b.k : a.k);
          return Lin{"0", xor_term(a, b, e)};
        }
        case Op::Pow:
          return Lin{"0", pow_term(a, b, e)};
        case Op::BitAnd:
        case Op::BitOr: {
          // A bit operation with a numeral operand (an unrolled loop's mask), as linear integer
          // arithmetic (every_p_bits.hpp); two numerals fold.
          if (a.c != "0" || b.c != "0")
            refuse("a bit operation on a count-dependent value is outside the fragment", e.loc);
          auto x = as_int(a.k), y = as_int(b.k);
          if (x && y) return Lin{"0", num(*bitop_fold(e.op, *x, *y))};
          std::optional<std::string> t;
          if (y && (t = bitop_numeral(e.op, a.k, *y))) bit_xs_.insert(a.k);
          if (!t && x && (t = bitop_numeral(e.op, b.k, *x))) bit_xs_.insert(b.k);
          // AND with NOT c (a negative numeral -c - 1, 0 <= c <= 2^32): v - (v AND c), exact in
          // two's complement (MPICH's reduce: `rel AND NOT mask`).
          for (auto [v, n] : {std::pair{a.k, y}, std::pair{b.k, x}}) {
            if (t || !n || *n >= 0 || e.op != Op::BitAnd) continue;
            if (auto c = bitop_numeral(Op::BitAnd, v, -*n - 1)) {
              t = sub(v, *c);
              bit_xs_.insert(v);
            }
          }
          if (t) return Lin{"0", *t};
          refuse("the bit operation '" + expr_to_string(e) +
                     "' has no numeral operand in 0 .. 2^32: outside the fragment (a mask is a "
                     "numeral only in a loop the prover unrolls, a binomial tree's)",
                 e.loc);
        }
        default:
          break;
      }
      break;
    }
    default:
      break;
  }
  refuse("the expression '" + expr_to_string(e) + "' is outside the fragment", expr_start(e));
}

std::string Analyzer::bool_expr(const Expr& e, const State& st) {
  if (e.kind == ExprKind::Unary && e.op == Op::Not)
    return fmt::format("(not {})", bool_expr(*e.args[0], st));
  if (e.kind == ExprKind::Binary) {
    if (e.op == Op::And || e.op == Op::Or)
      return op2(e.op == Op::And ? "and" : "or", bool_expr(*e.args[0], st),
                 bool_expr(*e.args[1], st));
    static const std::map<Op, const char*> cmp = {{Op::Eq, "="},  {Op::Lt, "<"},
                                                  {Op::Le, "<="}, {Op::Gt, ">"},
                                                  {Op::Ge, ">="}, {Op::Ne, "distinct"}};
    auto f = cmp.find(e.op);
    if (f != cmp.end()) {
      std::string a = render(int_expr(*e.args[0], st)), b = render(int_expr(*e.args[1], st));
      // Two numerals fold (an unrolled loop's `mask > 0`).
      auto x = as_int(a), y = as_int(b);
      if (x && y) {
        bool v = e.op == Op::Eq   ? *x == *y
                 : e.op == Op::Lt ? *x < *y
                 : e.op == Op::Le ? *x <= *y
                 : e.op == Op::Gt ? *x > *y
                 : e.op == Op::Ge ? *x >= *y
                                  : *x != *y;
        return v ? "true" : "false";
      }
      return op2(f->second, a, b);
    }
  }
  refuse("the condition '" + expr_to_string(e) + "' is outside the fragment", expr_start(e));
}

std::pair<std::string, std::string> Analyzer::blocks(const Expr& lo, const Expr& hi,
                                                     const State& st, const SourceLoc& loc) {
  if (chunked()) return chunk_slice(lo, hi, st, loc);
  Lin a = int_expr(lo, st), b = int_expr(hi, st);
  auto ak = as_int(a.k), bk = as_int(b.k);
  if (!ak || *ak != 0 || !bk || *bk != -1)
    refuse(
        "the slice is not in whole blocks of count elements (A * count .. B * count - 1): "
        "outside the fragment",
        loc);
  return {a.c, sub(b.c, "1")};
}

Buf Analyzer::data_expr(const Expr& e, const State& st,
                        std::vector<std::pair<std::string, std::string>>* reads) {
  if (e.kind == ExprKind::EmptyBuf) return Buf{"0", "none"};
  if (e.kind == ExprKind::Name) return data_var(e.name, st, e.loc);
  if (e.kind == ExprKind::Slice && e.args[0]->kind == ExprKind::Name) {
    const Buf& v = data_var(e.args[0]->name, st, e.loc);
    auto [A, B] = blocks(*e.args[1], *e.args[2], st, e.loc);
    if (chunked()) reads->emplace_back(take_chunk_goal(), chunk_what(e.loc));
    reads->emplace_back(
        fmt::format("(and (>= {} 0) (<= {} (+ {} 1)) (=> (<= {} {}) (< {} {})))", A, A, B, A, B, B,
                    v.len),
        fmt::format("the slice of {} at {} lies inside the buffer", e.args[0]->name, e.loc.str()));
    return Buf{add(sub(B, A), "1"), at_block(v.blk, add(A, "b"))};
  }
  if (e.kind == ExprKind::Binary && e.op == Op::Union) {
    // a ∪ b: a's blocks, then b's.
    Buf x = data_expr(*e.args[0], st, reads), y = data_expr(*e.args[1], st, reads);
    return Buf{add(x.len, y.len),
               fmt::format("(ite (< b {}) {} {})", x.len, x.blk, at_block(y.blk, sub("b", x.len)))};
  }
  if (e.kind == ExprKind::Binary && e.op == Op::Add) {
    // a + b, block by block: two sums of the same block over adjacent ranges of ranks (the
    // left one first; either way round under `operator commutative`), each contribution once.
    Buf x = data_expr(*e.args[0], st, reads), y = data_expr(*e.args[1], st, reads);
    if (sets()) return set_combine(x, y, e, reads);
    std::string A = x.blk, B = y.blk;
    std::string adj1 = fmt::format("(= (mod (+ (slo {}) (sn {})) p) (slo {}))", A, A, B);
    std::string adj2 = fmt::format("(= (mod (+ (slo {}) (sn {})) p) (slo {}))", B, B, A);
    bool comm = m_.header.op_class == OperatorClass::Commutative;
    reads->emplace_back(
        fmt::format("(and (= {} {}) (=> (and (<= 0 b) (< b {})) (and ((_ is sm) {}) ((_ is sm) "
                    "{}) (= (sb {}) (sb {})) (>= (sn {}) 1) (>= (sn {}) 1) (<= (+ (sn {}) (sn "
                    "{})) p) {})))",
                    x.len, y.len, x.len, A, B, A, B, A, B, A, B,
                    comm ? fmt::format("(or {} {})", adj1, adj2) : adj1),
        fmt::format("combine: the + at {} adds, block by block, disjoint contributions to the "
                    "same block{}",
                    e.loc.str(), comm ? "" : " in rank order"));
    return Buf{x.len, fmt::format("(ite {} (sm (sb {}) (slo {}) (+ (sn {}) (sn {}))) (sm (sb "
                                  "{}) (slo {}) (+ (sn {}) (sn {}))))",
                                  adj1, A, A, A, B, A, B, A, B)};
  }
  refuse("the data expression '" + expr_to_string(e) +
             "' is outside the fragment (whole buffers, block slices and +)",
         expr_start(e));
}

std::string Analyzer::write(const Expr& target, const Buf& val, State& st) {
  if (target.kind == ExprKind::Name) {
    st.data[target.name] = val;
    return "true";
  }
  if (target.kind == ExprKind::Slice && target.args[0]->kind == ExprKind::Name) {
    const std::string& name = target.args[0]->name;
    Buf old = st.data.count(name) ? st.data[name] : Buf{"0", "none"};
    auto [A, B] = blocks(*target.args[1], *target.args[2], st, target.loc);
    Buf nb;
    // Writing past the end extends the buffer with identity items; an empty write changes
    // nothing (docs/language.md, "Statements").
    nb.len =
        ite(op2("<=", A, B), ite(op2(">", add(B, "1"), old.len), add(B, "1"), old.len), old.len);
    nb.blk = fmt::format("(ite (and (<= {} b) (<= b {})) {} (ite (< b {}) {} none))", A, B,
                         at_block(val.blk, sub("b", A)), old.len, old.blk);
    st.data[name] = nb;
    std::string fits = fmt::format("(and (>= {} 0) (= {} (+ (- {} {}) 1)))", A, val.len, B, A);
    if (chunked())
      fits = fmt::format("(and {} {} {})", fits, take_chunk_goal(),
                         chunk_home(at_block(val.blk, "0"), A));
    return fits;
  }
  refuse("the target '" + expr_to_string(target) + "' is outside the fragment", target.loc);
}
// The proof's term with every (mod X p) written by cases, as the program's are (mod_p_cases):
// the same value for p > 0, and Z3 then reads it linearly where one addition or subtraction of p
// brings X into range (with the nonlinear mod, the scatter's root-path message queries took 2 s
// at k = 3 and 22 s at k = 8).
std::string mod_p_by_cases(const std::string& t) {
  std::string out;
  std::size_t i = 0;
  auto atom_end = [&](std::size_t j) {  // the end of the term starting at j
    if (t[j] != '(') {
      while (j < t.size() && t[j] != ' ' && t[j] != ')' && t[j] != '(') ++j;
      return j;
    }
    int depth = 0;
    for (; j < t.size(); ++j) {
      if (t[j] == '(') ++depth;
      if (t[j] == ')' && --depth == 0) return j + 1;
    }
    return j;
  };
  while (i < t.size()) {
    if (t.compare(i, 5, "(mod ") == 0) {
      const std::size_t x0 = i + 5, x1 = atom_end(x0);
      if (t.compare(x1, 3, " p)") == 0) {
        out += mod_p_cases(mod_p_by_cases(t.substr(x0, x1 - x0)));
        i = x1 + 3;
        continue;
      }
    }
    out += t[i++];
  }
  return out;
}

}  // namespace collv::everyp
