// The parser's expressions (precedence climbing, loosest first) and the header's helper
// functions, `def NAME(A, B) = EXPR`, expanded where they are called (parser_detail.hpp has the
// Parser).
#include <algorithm>
#include <memory>
#include <set>
#include <string>

#include "lang/parser_detail.hpp"

namespace collv::parser_detail {

// Sets e's height from its operands and refuses a tree higher than kMaxExprHeight (a sum of
// thousands of terms builds such a tree without any parser recursion).
ExprPtr Parser::sized(ExprPtr e) {
  std::uint32_t h = 0;
  for (const auto& a : e->args) h = std::max(h, a->height);
  e->height = h + 1;
  if (e->height > kMaxExprHeight)
    throw ModelError(e->loc, "expression too deep: more than " + std::to_string(kMaxExprHeight) +
                                 " nested operations (split it over several assignments)");
  return e;
}

ExprPtr Parser::make_binary(Op op, const Token& at, ExprPtr a, ExprPtr b) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Binary;
  e->op = op;
  e->loc = loc(at);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return sized(std::move(e));
}

ExprPtr Parser::make_unary(Op op, const Token& at, ExprPtr a) {
  auto e = std::make_unique<Expr>();
  e->kind = ExprKind::Unary;
  e->op = op;
  e->loc = loc(at);
  e->args.push_back(std::move(a));
  return sized(std::move(e));
}

ExprPtr Parser::expr() {
  Nest guard(*this, peek());
  return or_expr();
}

ExprPtr Parser::or_expr() {
  auto a = and_expr();
  while (is_word("or")) {
    const Token& t = next();
    a = make_binary(Op::Or, t, std::move(a), and_expr());
  }
  return a;
}

ExprPtr Parser::and_expr() {
  auto a = not_expr();
  while (is_word("and")) {
    const Token& t = next();
    a = make_binary(Op::And, t, std::move(a), not_expr());
  }
  return a;
}

ExprPtr Parser::not_expr() {
  if (is_word("not")) {
    const Token& t = next();
    Nest guard(*this, t);
    return make_unary(Op::Not, t, not_expr());
  }
  return cmp_expr();
}

ExprPtr Parser::cmp_expr() {
  auto a = bitor_expr();
  for (;;) {
    static const std::pair<const char*, Op> ops[] = {{"=", Op::Eq},  {"<>", Op::Ne}, {"<=", Op::Le},
                                                     {">=", Op::Ge}, {"<", Op::Lt},  {">", Op::Gt}};
    bool found = false;
    for (auto& [p, op] : ops) {
      if (is_punct(p)) {
        const Token& t = next();
        a = make_binary(op, t, std::move(a), bitor_expr());
        found = true;
        break;
      }
    }
    if (!found) return a;
  }
}

ExprPtr Parser::bitor_expr() {
  auto a = bitand_expr();
  for (;;) {
    if (is_word("OR") || is_word("XOR")) {
      const Token& t = next();
      Op op = t.text == "OR" ? Op::BitOr : Op::BitXor;
      a = make_binary(op, t, std::move(a), bitand_expr());
    } else {
      return a;
    }
  }
}

ExprPtr Parser::bitand_expr() {
  auto a = add_expr();
  while (is_word("AND")) {
    const Token& t = next();
    a = make_binary(Op::BitAnd, t, std::move(a), add_expr());
  }
  return a;
}

ExprPtr Parser::add_expr() {
  auto a = mul_expr();
  for (;;) {
    if (is_punct("+") || is_punct("-") || is_punct("∪") || is_word("union")) {
      const Token& t = next();
      Op op = t.text == "+" ? Op::Add : t.text == "-" ? Op::Sub : Op::Union;
      a = make_binary(op, t, std::move(a), mul_expr());
    } else {
      return a;
    }
  }
}

ExprPtr Parser::mul_expr() {
  auto a = unary_expr();
  for (;;) {
    if (is_punct("*") || is_punct("/") || is_word("div") || is_word("mod")) {
      const Token& t = next();
      Op op = t.text == "*"     ? Op::Mul
              : t.text == "/"   ? Op::Div
              : t.text == "div" ? Op::IntDiv
                                : Op::Mod;
      a = make_binary(op, t, std::move(a), unary_expr());
    } else {
      return a;
    }
  }
}

ExprPtr Parser::unary_expr() {
  if (is_punct("-")) {
    const Token& t = next();
    Nest guard(*this, t);
    return make_unary(Op::Neg, t, unary_expr());
  }
  if (is_word("NOT")) {
    const Token& t = next();
    Nest guard(*this, t);
    return make_unary(Op::BitNot, t, unary_expr());
  }
  return pow_expr();
}

ExprPtr Parser::pow_expr() {
  auto a = postfix_expr();
  if (is_punct("^")) {
    const Token& t = next();
    Nest guard(*this, t);
    return make_binary(Op::Pow, t, std::move(a), unary_expr());
  }
  return a;
}

ExprPtr Parser::postfix_index(ExprPtr base) {
  while (is_punct("[")) {
    const Token& t = next();
    auto first = expr();
    auto e = std::make_unique<Expr>();
    e->loc = loc(t);
    e->args.push_back(std::move(base));
    e->args.push_back(std::move(first));
    if (accept("..")) {
      e->kind = ExprKind::Slice;
      e->args.push_back(expr());
    } else {
      e->kind = ExprKind::Index;
    }
    expect("]", "']' to close the index");
    base = sized(std::move(e));
  }
  return base;
}

ExprPtr Parser::primary() {
  const Token& t = peek();
  auto e = std::make_unique<Expr>();
  e->loc = loc(t);
  if (t.kind == Tok::Number) {
    e->kind = ExprKind::Number;
    e->value = next().value;
    return e;
  }
  if (is_punct("(")) {
    next();
    auto inner = expr();
    expect(")", "')' to close '('");
    return inner;
  }
  if (is_punct("[")) {
    next();
    expect("]", "']' (only the empty buffer '[]' can be written as a literal)");
    e->kind = ExprKind::EmptyBuf;
    return e;
  }
  if (is_word("if")) {
    // The conditional `if C then A else B` (header formulas; the checker refuses it in the
    // procedure). B extends as far as an expression can.
    next();
    e->kind = ExprKind::Cond;
    e->args.push_back(expr());
    expect_word("then", "'then' in the conditional 'if C then A else B'");
    e->args.push_back(expr());
    expect_word("else", "'else' in the conditional 'if C then A else B' (it needs both branches)");
    e->args.push_back(expr());
    return sized(std::move(e));
  }
  if (t.kind == Tok::Ident) {
    static const char* reserved[] = {"then",   "do",        "to",    "downto",  "endif",
                                     "endfor", "endwhile",  "else",  "endelse", "end",
                                     "begin",  "procedure", "along", "from"};
    for (auto* r : reserved)
      if (t.text == r) error(t, "expected an expression, found '" + t.text + "'");
    e->name = next().text;
    if (accept("(")) {
      e->kind = ExprKind::Call;
      if (!accept(")")) {
        do {
          e->args.push_back(expr());
        } while (accept(","));
        expect(")", "')' to close the argument list of '" + e->name + "'");
      }
      auto d = defs_.find(e->name);
      if (d != defs_.end()) return expand(*e, d->second);
      return sized(std::move(e));
    }
    e->kind = ExprKind::Name;
    return e;
  }
  error(t, "expected an expression, found " + describe(t));
}

void Parser::helper_def(const Token& key) {
  const Token& nt = peek();
  std::string name = ident("the helper's name after 'def'");
  static const std::set<std::string> builtin = {"floor", "ceil",     "ilog2", "clog2", "popcount",
                                                "log2",  "sqrt",     "min",   "max",   "abs",
                                                "len",   "neighbor", "if",    "break"};
  if (builtin.count(name))
    error(nt, "'" + name + "' is a built-in function; a helper needs another name");
  if (defs_.count(name)) error(nt, "helper '" + name + "' is defined twice");
  Helper h;
  expect("(", "'(' and the parameters after 'def " + name + "'");
  if (!accept(")")) {
    do {
      const Token& pt = peek();
      std::string prm = ident("a parameter name");
      if (std::find(h.params.begin(), h.params.end(), prm) != h.params.end())
        error(pt, "parameter '" + prm + "' appears twice");
      h.params.push_back(prm);
    } while (accept(","));
    expect(")", "')' to close the parameters of '" + name + "'");
  }
  expect("=", "'=' and the helper's formula after 'def " + name + "(...)'");
  h.body = expr();  // calls of earlier helpers are expanded here: no recursion is possible
  (void)key;
  defs_.emplace(name, std::move(h));
}

ExprPtr Parser::substitute(const Expr& e, const Helper& h, const Expr& call, std::size_t& nodes) {
  if (++nodes > kMaxHelperNodes)
    error_at(call.loc, "helper '" + call.name + "' expands to more than " +
                           std::to_string(kMaxHelperNodes) + " operators");
  if (e.kind == ExprKind::Name) {
    auto it = std::find(h.params.begin(), h.params.end(), e.name);
    if (it != h.params.end())
      return substitute(*call.args[static_cast<std::size_t>(it - h.params.begin())], Helper{}, call,
                        nodes);
  }
  auto c = std::make_unique<Expr>();
  c->kind = e.kind;
  c->loc = e.loc;
  c->op = e.op;
  c->value = e.value;
  c->name = e.name;
  for (const auto& a : e.args) c->args.push_back(substitute(*a, h, call, nodes));
  if (c->args.empty()) return c;
  std::uint32_t height = 0;
  for (const auto& a : c->args) height = std::max(height, a->height);
  c->height = height + 1;
  if (c->height > kMaxExprHeight)
    error_at(call.loc, "helper '" + call.name + "' expands to an expression nested more than " +
                           std::to_string(kMaxExprHeight) + " operators deep");
  return c;
}

ExprPtr Parser::expand(const Expr& call, const Helper& h) {
  if (call.args.size() != h.params.size())
    error_at(call.loc, "helper '" + call.name + "' takes " + std::to_string(h.params.size()) +
                           " argument" + (h.params.size() == 1 ? "" : "s") + ", given " +
                           std::to_string(call.args.size()));
  std::size_t nodes = 0;
  return substitute(*h.body, h, call, nodes);
}

}  // namespace collv::parser_detail
