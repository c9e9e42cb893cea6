// Header formulas (requires, steps, cost, elements): exact evaluation (docs/language.md, "Header
// formulas"), the per-model memo of their values, and a cost's ts and tw coefficients.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <unordered_set>

#include "lang/check.hpp"

namespace collv {

namespace {

// A header formula's value: an exact rational, or (after log2 or sqrt of a number that is not a
// power of two or a square, or a power with a fractional exponent) an irrational number held as a
// double. `floor_` keeps the exact floor of an irrational log2 or sqrt, so floor, ceil and
// comparisons with whole numbers stay exact.
struct HVal {
  bool exact = true;
  Rational r;
  double approx = 0;
  std::optional<BigInt> floor_;
  double d() const { return exact ? r.to_double() : approx; }
  bool is_zero() const { return exact ? r.num.is_zero() : approx == 0; }
  static HVal of(Rational x) {
    HVal v;
    v.r = std::move(x);
    return v;
  }
  static HVal inexact(double x, std::optional<BigInt> fl = std::nullopt) {
    HVal v;
    v.exact = false;
    v.approx = x;
    v.floor_ = std::move(fl);
    return v;
  }
  static HVal truth(bool b) { return of(Rational(BigInt(b ? 1 : 0))); }
};

// A double's exact value (a double is a dyadic rational).
Rational exact_of_double(double x) {
  if (x == std::floor(x) && std::fabs(x) < 9.2e18)
    return Rational(BigInt(static_cast<std::int64_t>(x)));
  int ex = 0;
  double mant = std::frexp(x, &ex);  // x = mant * 2^ex, 0.5 <= |mant| < 1
  auto m = static_cast<std::int64_t>(std::ldexp(mant, 53));
  ex -= 53;
  if (ex >= 0) return Rational(BigInt(m).shl(static_cast<std::uint64_t>(ex)));
  return Rational::make(BigInt(m), BigInt(1).shl(static_cast<std::uint64_t>(-ex)));
}

// floor(log2(r)) for r > 0, exact.
BigInt floor_log2(const Rational& r) {
  auto k = static_cast<std::int64_t>(r.num.bits()) - static_cast<std::int64_t>(r.den.bits());
  // 2^k <= r  <=>  num >= den * 2^k
  bool ge = k >= 0 ? BigInt::cmp(r.num, r.den.shl(static_cast<std::uint64_t>(k))) >= 0
                   : BigInt::cmp(r.num.shl(static_cast<std::uint64_t>(-k)), r.den) >= 0;
  return BigInt(ge ? k : k - 1);
}
bool is_power_of_two(const Rational& r) {
  return r.num.sign() > 0 && r.num.is_power_of_two() && r.den.is_power_of_two();
}

class HeaderEval {
  static constexpr std::int64_t kMaxSumTerms = 1000000;
  // Numerators and denominators of header values stay below 2^kMaxBits: every value is then a
  // finite double, and every operation is cheap.
  static constexpr std::uint64_t kMaxBits = 1000;
  // Work units (an operation, plus the squared limb count of a large operand) per evaluation.
  static constexpr std::uint64_t kMaxWork = 100000000;

 public:
  using Env = std::map<std::string, HVal>;
  // The nodes of a cost formula that name ts or tw (for lin; null for any other formula).
  using Named = std::unordered_set<const Expr*>;
  HeaderEval(const Env& env, const std::string& what, const Topology* t, std::uint64_t& work,
             const Named* named = nullptr)
      : env_(env), what_(what), t_(t), work_(work), named_(named) {}

  // A cost formula as c + a*ts + b*tw, in one evaluation. The loader has checked that it uses ts
  // and tw linearly only (check.cpp, cost_names_ts_tw): as terms of sums and differences, as a
  // factor times a part without them, divided by one, in a branch of a conditional, or in the
  // terms of a sum. A part that names neither is evaluated as any header formula, once.
  struct Lin {
    HVal c, ts, tw;
  };
  Lin lin(const Expr& e) const {
    if (!named_ || !named_->count(&e)) return Lin{eval(e), HVal::truth(false), HVal::truth(false)};
    if (++work_ > kMaxWork) too_much_work(e);
    switch (e.kind) {
      case ExprKind::Name: {
        const bool ts = e.name == "ts";
        return Lin{HVal::truth(false), HVal::truth(ts), HVal::truth(!ts)};
      }
      case ExprKind::Unary:
        if (e.op == Op::Neg) {
          Lin a = lin(*e.args[0]);
          return Lin{negate(a.c), negate(a.ts), negate(a.tw)};
        }
        break;
      case ExprKind::Cond:
        return !eval(*e.args[0]).is_zero() ? lin(*e.args[1]) : lin(*e.args[2]);
      case ExprKind::Binary:
        return lin_binary(e);
      case ExprKind::Call:
        if (e.name == "sum") return lin_sum(e);
        break;
      default:
        break;
    }
    fail(e, "internal error: ts or tw used other than linearly (the loader lets no such cost in)");
  }

  HVal eval(const Expr& e) const {
    if (++work_ > kMaxWork) too_much_work(e);
    switch (e.kind) {
      case ExprKind::Number:
        return HVal::of(Rational(BigInt(e.value)));
      case ExprKind::Name: {
        auto it = env_.find(e.name);
        if (it != env_.end()) return it->second;
        undefined_name(e);
      }
      case ExprKind::Unary:
        return unary(e);
      case ExprKind::Cond:
        return !eval(*e.args[0]).is_zero() ? eval(*e.args[1]) : eval(*e.args[2]);
      case ExprKind::Binary:
        return binary(e);
      case ExprKind::Call:
        return call(e);
      default:
        fail(e, "a buffer in a header formula");
    }
  }

 private:
  [[noreturn]] void fail(const Expr& e, const std::string& msg) const {
    throw ModelError(e.loc, what_ + ": " + msg);
  }
  [[gnu::noinline]] HVal unary(const Expr& e) const {  // out of line: see combine
    HVal a = eval(*e.args[0]);
    if (e.op == Op::Neg) return negate(std::move(a));
    if (e.op == Op::Not) return HVal::truth(a.is_zero());
    return from_i64(e, ~whole(e, a, "NOT"));
  }
  // eval's error paths, out of line to keep its recursive frame small (see combine).
  [[noreturn, gnu::noinline]] void too_much_work(const Expr& e) const {
    fail(e, "the formula needs more than " + std::to_string(kMaxWork) +
                " operations to evaluate (a sum of too many large terms?)");
  }
  [[noreturn, gnu::noinline]] void undefined_name(const Expr& e) const {
    std::string why = t_ ? undefined_on(e.name, *t_) : "";
    fail(e, "'" + e.name + "' is not defined " +
                (t_ ? "on " + t_->spec() + (why.empty() ? "" : ": " + why) : "here"));
  }
  static std::string num(const HVal& x) {
    if (x.exact && x.r.is_integer() && x.r.bits() <= 64) return x.r.str();
    char buf[48];
    double v = x.d();
    if (x.exact && std::fabs(v) >= 1e15)
      std::snprintf(buf, sizeof buf, "about %s2^%.0f", v < 0 ? "-" : "",
                    std::floor(x.r.num.log2_abs() - x.r.den.log2_abs()));
    else
      std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
  }
  HVal from_i64(const Expr&, std::int64_t v) const { return HVal::of(Rational(BigInt(v))); }
  // x as a 64-bit integer, for the bitwise operators and popcount.
  std::int64_t whole(const Expr& e, const HVal& x, const char* op) const {
    if (x.exact) {
      auto v = x.r.is_integer() ? x.r.num.to_i64() : std::nullopt;
      if (!v)
        fail(e, std::string("'") + op + "' needs whole numbers" +
                    (x.r.is_integer() ? " from -2^63 to 2^63 - 1" : "") + ", not " + num(x));
      return *v;
    }
    if (x.approx != std::floor(x.approx) || std::fabs(x.approx) >= 9.2e18)
      fail(e, std::string("'") + op + "' needs whole numbers, not " + num(x));
    return static_cast<std::int64_t>(x.approx);
  }
  // An exact result, refused past the size bound (as an overflow at the operation).
  HVal bounded(const Expr& e, Rational r, const std::string& how) const {
    work_ += r.num.limbs() * r.num.limbs() + r.den.limbs() * r.den.limbs();
    if (r.bits() > kMaxBits)
      fail(e,
           how + " is too large for a header formula (beyond 2^" + std::to_string(kMaxBits) + ")");
    return HVal::of(std::move(r));
  }
  HVal real(const Expr& e, double r, const std::string& how) const {
    if (std::isnan(r)) fail(e, how + " is undefined");
    if (std::isinf(r) || std::fabs(r) >= std::ldexp(1.0, static_cast<int>(kMaxBits)))
      fail(e,
           how + " is too large for a header formula (beyond 2^" + std::to_string(kMaxBits) + ")");
    return HVal::inexact(r);
  }
  // -1, 0, 1 as a < b, a = b, a > b; exact where both are exact, or one is an irrational whose
  // floor is known and the other a whole number.
  static int compare(const HVal& a, const HVal& b) {
    if (a.exact && b.exact) return Rational::cmp(a.r, b.r);
    if (!a.exact && a.floor_ && b.exact && b.r.is_integer())
      return BigInt::cmp(*a.floor_, b.r.num) >= 0 ? 1 : -1;  // floor < a < floor + 1
    if (!b.exact && b.floor_ && a.exact && a.r.is_integer())
      return BigInt::cmp(*b.floor_, a.r.num) >= 0 ? -1 : 1;
    double x = a.d(), y = b.d();
    return x < y ? -1 : x > y ? 1 : 0;
  }

  HVal pow(const Expr& e, const HVal& x, const HVal& y) const {
    std::string how = num(x) + " ^ " + num(y);
    if (x.is_zero() && compare(y, HVal::truth(false)) < 0)
      fail(e, "0 ^ " + num(y) + " is undefined");
    if (x.exact && y.exact && y.r.is_integer()) {
      const Rational& b = x.r;
      bool unit = b.den == BigInt(1) && (b.num == BigInt(1) || b.num == BigInt(-1));
      if (y.r.num.is_zero()) return HVal::truth(true);
      if (b.num.is_zero()) return x;
      if (unit) return b.num == BigInt(1) || !y.r.num.is_odd() ? HVal::truth(true) : x;
      auto k = y.r.num.abs().to_i64();
      std::uint64_t size = std::max(b.num.bits(), b.den.bits());  // >= 2 unless |b| is 1
      if (!k || static_cast<std::uint64_t>(*k) > (kMaxBits + 1) / (size - 1))
        fail(e, how + " is too large for a header formula (beyond 2^" + std::to_string(kMaxBits) +
                    ")");
      BigInt n(1), d(1), bn = b.num, bd = b.den;
      for (auto u = static_cast<std::uint64_t>(*k);;) {
        if (u & 1) n = n * bn, d = d * bd;
        u >>= 1;
        if (!u) break;
        bn = bn * bn;
        bd = bd * bd;
      }
      Rational r = y.r.num.negative() ? Rational::make(d, n) : Rational::make(n, d);
      return bounded(e, std::move(r), how);
    }
    if (x.d() < 0) fail(e, how + " is undefined (a negative number to a fractional power)");
    return real(e, std::pow(x.d(), y.d()), how);
  }

  HVal binary(const Expr& e) const {
    // `and` and `or` look at their right operand only when it decides: `p >= 2 and log2(p - 1)`
    // is false on p = 1 rather than undefined.
    if (e.op == Op::And)
      return HVal::truth(!eval(*e.args[0]).is_zero() && !eval(*e.args[1]).is_zero());
    if (e.op == Op::Or)
      return HVal::truth(!eval(*e.args[0]).is_zero() || !eval(*e.args[1]).is_zero());
    HVal x = eval(*e.args[0]), y = eval(*e.args[1]);
    return combine(e, x, y);
  }

  // Out of line so that the recursion through eval and binary keeps small frames: a 999-term sum
  // is a chain 999 deep, and this body's temporaries (under AddressSanitizer each has a slot of
  // its own) would otherwise sit in every frame of the chain.
  [[gnu::noinline]] HVal combine(const Expr& e, const HVal& x, const HVal& y) const {
    bool ex = x.exact && y.exact;
    switch (e.op) {
      case Op::Add:
        return ex ? bounded(e, x.r + y.r, num(x) + " + " + num(y))
                  : real(e, x.d() + y.d(), num(x) + " + " + num(y));
      case Op::Sub:
        return ex ? bounded(e, x.r - y.r, num(x) + " - " + num(y))
                  : real(e, x.d() - y.d(), num(x) + " - " + num(y));
      case Op::Mul:
        return ex ? bounded(e, x.r * y.r, num(x) + " * " + num(y))
                  : real(e, x.d() * y.d(), num(x) + " * " + num(y));
      case Op::Div:
        if (y.is_zero()) fail(e, "division by zero (" + num(x) + " / 0)");
        return ex ? bounded(e, x.r / y.r, num(x) + " / " + num(y))
                  : real(e, x.d() / y.d(), num(x) + " / " + num(y));
      case Op::IntDiv:
        if (y.is_zero()) fail(e, "division by zero (" + num(x) + " div 0)");
        return ex ? bounded(e, Rational((x.r / y.r).floor()), num(x) + " div " + num(y))
                  : real(e, std::floor(x.d() / y.d()), num(x) + " div " + num(y));
      case Op::Mod:
        if (y.is_zero()) fail(e, "'" + num(x) + " mod 0'");
        return ex ? bounded(e, x.r - y.r * Rational((x.r / y.r).floor()), num(x) + " mod " + num(y))
                  : real(e, x.d() - y.d() * std::floor(x.d() / y.d()), num(x) + " mod " + num(y));
      case Op::Pow:
        return pow(e, x, y);
      case Op::Eq:
        return HVal::truth(compare(x, y) == 0);
      case Op::Ne:
        return HVal::truth(compare(x, y) != 0);
      case Op::Lt:
        return HVal::truth(compare(x, y) < 0);
      case Op::Le:
        return HVal::truth(compare(x, y) <= 0);
      case Op::Gt:
        return HVal::truth(compare(x, y) > 0);
      case Op::Ge:
        return HVal::truth(compare(x, y) >= 0);
      case Op::BitXor:
        return from_i64(e, whole(e, x, "XOR") ^ whole(e, y, "XOR"));
      case Op::BitAnd:
        return from_i64(e, whole(e, x, "AND") & whole(e, y, "AND"));
      case Op::BitOr:
        return from_i64(e, whole(e, x, "OR") | whole(e, y, "OR"));
      default:
        fail(e, std::string("'") + op_spelling(e.op) + "' is not defined on numbers");
    }
  }

  [[gnu::noinline]] HVal call(const Expr& e) const {  // out of line: see combine
    if (e.name == "sum") {
      auto [a, b] = sum_range(e);
      Env inner = env_;
      HVal total = HVal::truth(false);
      for (std::int64_t i = a; i <= b; ++i) {
        inner[e.args[0]->name] = HVal::of(Rational(BigInt(i)));
        total = add_term(e, total, HeaderEval(inner, what_, t_, work_).eval(*e.args[3]));
        if (i == b) break;  // b may be INT64_MAX
      }
      return total;
    }
    std::vector<HVal> v;
    for (const auto& a : e.args) v.push_back(eval(*a));
    const std::string& f = e.name;
    auto positive = [&] {
      if (compare(v[0], HVal::truth(false)) <= 0) fail(e, f + "(" + num(v[0]) + ") is undefined");
    };
    if (f == "min") return compare(v[0], v[1]) <= 0 ? v[0] : v[1];
    if (f == "max") return compare(v[0], v[1]) >= 0 ? v[0] : v[1];
    if (f == "floor" || f == "ceil") {
      const HVal& x = v[0];
      if (x.exact) return HVal::of(Rational(f == "floor" ? x.r.floor() : x.r.ceil()));
      if (x.floor_)  // an irrational: floor < x < floor + 1
        return HVal::of(Rational(f == "floor" ? *x.floor_ : *x.floor_ + BigInt(1)));
      return real(e, f == "floor" ? std::floor(x.approx) : std::ceil(x.approx), f);
    }
    if (f == "sqrt") {
      const HVal& x = v[0];
      if (compare(x, HVal::truth(false)) < 0) fail(e, "sqrt(" + num(x) + ") is undefined");
      if (!x.exact) return real(e, std::sqrt(x.approx), "sqrt(" + num(x) + ")");
      BigInt rn = BigInt::isqrt(x.r.num), rd = BigInt::isqrt(x.r.den);
      work_ += 64 * (x.r.num.limbs() + x.r.den.limbs()) * (x.r.num.limbs() + x.r.den.limbs());
      if (rn * rn == x.r.num && rd * rd == x.r.den) return HVal::of(Rational::make(rn, rd));
      return HVal::inexact(std::sqrt(x.r.to_double()), BigInt::isqrt(x.r.floor()));
    }
    if (f == "log2" || f == "ilog2" || f == "clog2") {
      positive();
      const HVal& x = v[0];
      if (!x.exact) {
        double l = std::log2(x.approx);
        return real(e, f == "log2" ? l : f == "ilog2" ? std::floor(l) : std::ceil(l), f);
      }
      BigInt fl = floor_log2(x.r);
      bool pow2 = is_power_of_two(x.r);
      if (f == "ilog2" || (f == "log2" && pow2)) return HVal::of(Rational(fl));
      if (f == "clog2") return HVal::of(Rational(pow2 ? fl : fl + BigInt(1)));
      return HVal::inexact(x.r.num.log2_abs() - x.r.den.log2_abs(), fl);
    }
    if (f == "popcount") {
      std::int64_t x = whole(e, v[0], "popcount");
      if (x < 0) fail(e, "popcount(" + num(v[0]) + ") is undefined (a negative number)");
      return from_i64(e, __builtin_popcountll(static_cast<std::uint64_t>(x)));
    }
    fail(e, "unknown function '" + f + "'");
  }

  static HVal negate(HVal a) {
    if (!a.exact) return HVal::inexact(-a.approx);
    a.r.num = -a.r.num;
    return a;
  }
  [[gnu::noinline]] Lin lin_binary(const Expr& e) const {
    const Expr &x = *e.args[0], &y = *e.args[1];
    const bool in_x = named_->count(&x) != 0, in_y = named_->count(&y) != 0;
    switch (e.op) {
      case Op::Add:
      case Op::Sub: {
        Lin a = lin(x), b = lin(y);
        return Lin{combine(e, a.c, b.c), combine(e, a.ts, b.ts), combine(e, a.tw, b.tw)};
      }
      case Op::Mul:
        if (in_x && in_y) break;
        if (in_x) {
          Lin a = lin(x);
          HVal k = eval(y);
          return Lin{combine(e, a.c, k), combine(e, a.ts, k), combine(e, a.tw, k)};
        } else {
          HVal k = eval(x);
          Lin b = lin(y);
          return Lin{combine(e, k, b.c), combine(e, k, b.ts), combine(e, k, b.tw)};
        }
      case Op::Div:
        if (in_y) break;
        {
          Lin a = lin(x);
          HVal k = eval(y);
          return Lin{combine(e, a.c, k), combine(e, a.ts, k), combine(e, a.tw, k)};
        }
      default:
        break;
    }
    fail(e, "internal error: ts or tw used other than linearly (the loader lets no such cost in)");
  }
  // sum(i, a, b, f): its range, refused past kMaxSumTerms terms.
  std::pair<std::int64_t, std::int64_t> sum_range(const Expr& e) const {
    HVal lo = eval(*e.args[1]), hi = eval(*e.args[2]);
    std::int64_t a = whole(e, lo, "sum"), b = whole(e, hi, "sum");
    if (b >= a && static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a) >=
                      static_cast<std::uint64_t>(kMaxSumTerms))
      fail(e, "sum over " + std::to_string(a) + " .. " + std::to_string(b) + ": more than " +
                  std::to_string(kMaxSumTerms) + " terms");
    return {a, b};
  }
  HVal add_term(const Expr& e, const HVal& total, const HVal& term) const {
    return total.exact && term.exact ? bounded(e, total.r + term.r, "the sum")
                                     : real(e, total.d() + term.d(), "the sum");
  }
  [[gnu::noinline]] Lin lin_sum(const Expr& e) const {
    auto [a, b] = sum_range(e);
    Env inner = env_;
    Lin total{HVal::truth(false), HVal::truth(false), HVal::truth(false)};
    for (std::int64_t i = a; i <= b; ++i) {
      inner[e.args[0]->name] = HVal::of(Rational(BigInt(i)));
      Lin term = HeaderEval(inner, what_, t_, work_, named_).lin(*e.args[3]);
      total = Lin{add_term(e, total.c, term.c), add_term(e, total.ts, term.ts),
                  add_term(e, total.tw, term.tw)};
      if (i == b) break;  // b may be INT64_MAX
    }
    return total;
  }

  const Env& env_;
  const std::string& what_;
  const Topology* t_;
  std::uint64_t& work_;
  const Named* named_;
};

HeaderNumber number_of(HVal v) {
  HeaderNumber r;
  r.exact = v.exact;
  r.approx = v.d();
  if (v.exact) r.value = std::move(v.r);
  return r;
}

HeaderEval::Env exact_env_of(const std::map<std::string, double>& env) {
  HeaderEval::Env exact_env;
  for (const auto& [k, x] : env) exact_env[k] = HVal::of(exact_of_double(x));
  return exact_env;
}

HeaderNumber eval_header(const Expr& e, const std::map<std::string, double>& env,
                         const std::string& what, const Topology* t) {
  std::uint64_t work = 0;
  return number_of(HeaderEval(exact_env_of(env), what, t, work).eval(e));
}

// The nodes of e that name ts or tw, in one walk (post-order: a node after its operands).
HeaderEval::Named names_ts_tw(const Expr& e) {
  HeaderEval::Named named;
  std::vector<std::pair<const Expr*, bool>> todo{{&e, false}};
  while (!todo.empty()) {
    auto [x, visited] = todo.back();
    todo.pop_back();
    if (!visited) {
      todo.emplace_back(x, true);
      for (const auto& a : x->args) todo.emplace_back(a.get(), false);
      continue;
    }
    bool in = x->kind == ExprKind::Name && (x->name == "ts" || x->name == "tw");
    for (const auto& a : x->args) in = in || named.count(a.get());
    if (in) named.insert(x);
  }
  return named;
}

CostClaim eval_cost(const Expr& e, const std::map<std::string, double>& env,
                    const std::string& what, const Topology* t) {
  HeaderEval::Named named = names_ts_tw(e);
  std::uint64_t work = 0;
  HeaderEval::Env exact_env = exact_env_of(env);
  exact_env.erase("ts");
  exact_env.erase("tw");
  HeaderEval ev(exact_env, what, t, work, &named);
  HeaderEval::Lin v = ev.lin(e);
  // The formula's values at ts = 1, tw = 0 and at ts = 0, tw = 1 (a part without them counts in
  // both, as it always did): c + a and c + b.
  auto plus = [&](const HVal& c, const HVal& k) {
    return c.exact && k.exact ? HVal::of(c.r + k.r) : HVal::inexact(c.d() + k.d());
  };
  return CostClaim{number_of(plus(v.c, v.ts)), number_of(plus(v.c, v.tw))};
}

// A formula's memo key: its node, `what` (its errors name it) and the values of the names it
// reads, exactly (a formula without `source` is the same for every source). A walk over the
// formula's text, not its terms: cheap next to evaluating it.
std::string memo_key(const Expr& e, const std::map<std::string, double>& env,
                     const std::string& what) {
  std::vector<const std::string*> used;
  std::vector<const Expr*> todo{&e};
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (x->kind == ExprKind::Name) used.push_back(&x->name);
    for (const auto& a : x->args) todo.push_back(a.get());
  }
  std::sort(used.begin(), used.end(), [](auto* a, auto* b) { return *a < *b; });
  used.erase(std::unique(used.begin(), used.end(), [](auto* a, auto* b) { return *a == *b; }),
             used.end());
  const Expr* node = &e;  // the node's address, not its bytes
  std::string key(reinterpret_cast<const char*>(&node), sizeof node);
  key += what;
  for (const std::string* name : used) {
    key += '\0';
    key += *name;
    auto it = env.find(*name);
    if (it == env.end()) continue;  // not defined here: an error, never kept
    key += '=';
    key.append(reinterpret_cast<const char*>(&it->second), sizeof it->second);
  }
  return key;
}

}  // namespace

HeaderNumber header_value(const ModelHeader& h, const Expr& e,
                          const std::map<std::string, double>& env, const std::string& what,
                          const Topology* t) {
  if (!h.memo) return eval_header(e, env, what, t);
  std::string key = memo_key(e, env, what);
  {
    std::lock_guard<std::mutex> lock(h.memo->mu);
    auto it = h.memo->values.find(key);
    if (it != h.memo->values.end()) return it->second;
  }
  HeaderNumber v = eval_header(e, env, what, t);
  std::lock_guard<std::mutex> lock(h.memo->mu);
  ++h.memo->evaluations;
  h.memo->values.emplace(std::move(key), v);
  return v;
}

CostClaim header_cost(const ModelHeader& h, const Expr& e, const std::map<std::string, double>& env,
                      const std::string& what, const Topology* t) {
  if (!h.memo) return eval_cost(e, env, what, t);
  std::string key = memo_key(e, env, what);
  {
    std::lock_guard<std::mutex> lock(h.memo->mu);
    auto it = h.memo->costs.find(key);
    if (it != h.memo->costs.end()) return it->second;
  }
  CostClaim v = eval_cost(e, env, what, t);
  std::lock_guard<std::mutex> lock(h.memo->mu);
  ++h.memo->evaluations;
  h.memo->costs.emplace(std::move(key), v);
  return v;
}

double eval_header_expr(const Expr& e, const std::map<std::string, double>& env,
                        const std::string& what, const Topology* t) {
  return eval_header(e, env, what, t).approx;
}

HeaderNumber eval_header_exact(const Expr& e, const std::map<std::string, double>& env,
                               const std::string& what, const Topology* t) {
  return eval_header(e, env, what, t);
}

}  // namespace collv
