// Name resolution and type inference for models.
#include "lang/check.hpp"

#include <cmath>
#include <functional>
#include <set>
#include <unordered_map>

namespace collv {

namespace {

const std::set<std::string>& env_names() {
  static const std::set<std::string> s = {"my_id", "p", "d", "n",    "rows",  "cols", "source",
                                          "root",  "q", "m", "left", "right", "up",   "down"};
  return s;
}
// The book's pseudo-code computes its own neighbours (`left := (my_id - 1) mod p`): these
// built-in names may be assigned, and the variable then hides the built-in.
bool shadowable(const std::string& n) {
  return n == "left" || n == "right" || n == "up" || n == "down";
}
const std::set<std::string>& functions() {
  static const std::set<std::string> s = {"neighbor", "log2", "sqrt", "min", "max", "len"};
  return s;
}

class Checker {
 public:
  explicit Checker(Model& m) : m_(m) {}

  void run() {
    auto add_data = [&](const std::string& n) {
      if (env_names().count(n))
        throw ModelError(m_.header.loc, "'" + n + "' is a built-in name and cannot be a variable");
      data_.insert(n);
      declare(n);
    };
    add_data(m_.header.input);
    add_data(m_.header.output);
    for (auto& s : m_.body) collect(*s);
    // Fixpoint: a variable assigned a data expression is data.
    bool changed = true;
    while (changed) {
      changed = false;
      walk_stmts(m_.body, [&](Stmt& s) {
        if (s.kind == StmtKind::Assign && s.target->kind == ExprKind::Name &&
            !data_.count(s.target->name) && is_data(*s.value)) {
          data_.insert(s.target->name);
          changed = true;
        }
      });
    }
    m_.var_types.assign(m_.var_names.size(), Type::Int);
    for (std::size_t i = 0; i < m_.var_names.size(); ++i)
      if (data_.count(m_.var_names[i])) m_.var_types[i] = Type::Data;
    for (auto& s : m_.body) check_stmt(*s);
  }

 private:
  void declare(const std::string& n) {
    if (slots_.count(n)) return;
    slots_[n] = static_cast<int>(m_.var_names.size());
    m_.var_names.push_back(n);
  }
  static void walk_stmts(std::vector<StmtPtr>& v, const std::function<void(Stmt&)>& f) {
    for (auto& s : v) {
      f(*s);
      walk_stmts(s->body, f);
      walk_stmts(s->else_body, f);
    }
  }
  static const Expr& base_of(const Expr& e) {
    const Expr* b = &e;
    while (b->kind == ExprKind::Index || b->kind == ExprKind::Slice) b = b->args[0].get();
    return *b;
  }
  void collect(Stmt& s) {
    if (s.kind == StmtKind::Assign || s.kind == StmtKind::Receive) {
      const Expr& b = base_of(*s.target);
      if (b.kind != ExprKind::Name)
        throw ModelError(s.target->loc, "the target of an assignment must be a variable");
      if (env_names().count(b.name) && !shadowable(b.name))
        throw ModelError(b.loc, "'" + b.name + "' is a built-in name and cannot be assigned");
      declare(b.name);
      if (s.kind == StmtKind::Receive || s.target->kind != ExprKind::Name) data_.insert(b.name);
    }
    if (s.kind == StmtKind::For) {
      if (env_names().count(s.var))
        throw ModelError(s.loc, "'" + s.var + "' is a built-in name and cannot be a loop variable");
      declare(s.var);
    }
    for (auto& c : s.body) collect(*c);
    for (auto& c : s.else_body) collect(*c);
  }
  bool is_data(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::Name:
        return data_.count(e.name) > 0;
      case ExprKind::EmptyBuf:
      case ExprKind::Index:
      case ExprKind::Slice:
        return true;
      case ExprKind::Binary:
        if (e.op == Op::Union) return true;
        if (e.op == Op::Add) return is_data(*e.args[0]) || is_data(*e.args[1]);
        return false;
      default:
        return false;
    }
  }
  static bool is_zero_literal(const Expr& e) { return e.kind == ExprKind::Number && e.value == 0; }

  // Type-checks e and records types and slots. want: the type the context needs.
  void expr(Expr& e, Type want) {
    switch (e.kind) {
      case ExprKind::Number:
        if (want == Type::Data && e.value != 0)
          throw ModelError(e.loc,
                           "a number where a buffer is needed (only 0, the identity, can "
                           "stand for a buffer)");
        e.type = want == Type::Data ? Type::Data : Type::Int;
        return;
      case ExprKind::EmptyBuf:
        if (want != Type::Data) throw ModelError(e.loc, "'[]' (a buffer) where a number is needed");
        e.type = Type::Data;
        return;
      case ExprKind::Name: {
        auto it = slots_.find(e.name);
        if (it != slots_.end()) {
          e.slot = it->second;
          e.type = m_.var_types[e.slot];
        } else if (env_names().count(e.name)) {
          e.slot = -1;
          e.type = Type::Int;
        } else {
          throw ModelError(e.loc, "unknown name '" + e.name +
                                      "' (not assigned anywhere in the procedure and not a "
                                      "built-in name)");
        }
        if (e.type != want)
          throw ModelError(e.loc, "'" + e.name + "' is " +
                                      (e.type == Type::Data ? "a buffer" : "a number") + " but " +
                                      (want == Type::Data ? "a buffer" : "a number") +
                                      " is needed here");
        return;
      }
      case ExprKind::Index:
      case ExprKind::Slice:
        if (want != Type::Data)
          throw ModelError(e.loc,
                           "indexing gives a buffer, but a number is needed here (use "
                           "len(...) for the length)");
        expr(*e.args[0], Type::Data);
        for (std::size_t i = 1; i < e.args.size(); ++i) expr(*e.args[i], Type::Int);
        e.type = Type::Data;
        return;
      case ExprKind::Unary:
        if (want == Type::Data)
          throw ModelError(e.loc, std::string("'") + op_spelling(e.op) +
                                      "' gives a number, but a buffer is needed here");
        expr(*e.args[0], Type::Int);
        e.type = Type::Int;
        return;
      case ExprKind::Binary:
        if (want == Type::Data) {
          if (e.op != Op::Add && e.op != Op::Union)
            throw ModelError(e.loc, std::string("'") + op_spelling(e.op) +
                                        "' works on numbers; buffers combine with '+' and "
                                        "concatenate with '∪'");
          for (auto& a : e.args) expr(*a, Type::Data);
          e.type = Type::Data;
          return;
        }
        if (e.op == Op::Union)
          throw ModelError(e.loc, "'∪' gives a buffer, but a number is needed here");
        for (auto& a : e.args) expr(*a, Type::Int);
        e.type = Type::Int;
        return;
      case ExprKind::Call: {
        if (!functions().count(e.name))
          throw ModelError(e.loc, "unknown function '" + e.name +
                                      "' (expected neighbor, log2, sqrt, min, max or len)");
        std::size_t want_args = (e.name == "min" || e.name == "max") ? 2 : 1;
        if (e.args.size() != want_args)
          throw ModelError(e.loc, "'" + e.name + "' takes " + std::to_string(want_args) +
                                      " argument" + (want_args > 1 ? "s" : ""));
        if (want == Type::Data)
          throw ModelError(e.loc, "'" + e.name + "' gives a number, but a buffer is needed here");
        for (auto& a : e.args) expr(*a, e.name == "len" ? Type::Data : Type::Int);
        e.type = Type::Int;
        return;
      }
    }
  }

  void check_stmt(Stmt& s) {
    switch (s.kind) {
      case StmtKind::Assign: {
        const Expr& b = base_of(*s.target);
        bool data = data_.count(b.name) > 0;
        expr(*s.target, data ? Type::Data : Type::Int);
        if (data && !is_data(*s.value) && !is_zero_literal(*s.value))
          throw ModelError(s.value->loc, "'" + b.name +
                                             "' is a buffer (it is received into, combined or "
                                             "indexed) but is assigned a number here");
        expr(*s.value, data ? Type::Data : Type::Int);
        break;
      }
      case StmtKind::Receive:
        expr(*s.target, Type::Data);
        expr(*s.peer, Type::Int);
        break;
      case StmtKind::Send:
        expr(*s.value, Type::Data);
        expr(*s.peer, Type::Int);
        break;
      case StmtKind::If:
      case StmtKind::While:
        expr(*s.cond, Type::Int);
        break;
      case StmtKind::For:
        s.var_slot = slots_.at(s.var);
        if (m_.var_types[s.var_slot] != Type::Int)
          throw ModelError(s.loc, "loop variable '" + s.var + "' is also used as a buffer");
        expr(*s.value, Type::Int);
        expr(*s.limit, Type::Int);
        break;
    }
    for (auto& c : s.body) check_stmt(*c);
    for (auto& c : s.else_body) check_stmt(*c);
  }

  Model& m_;
  std::set<std::string> data_;
  std::unordered_map<std::string, int> slots_;
};

}  // namespace

void check_model(Model& m) { Checker(m).run(); }

std::map<std::string, std::int64_t> topology_env(const Topology& t) {
  std::map<std::string, std::int64_t> env;
  for (const auto& [k, v] : t.params()) env[k] = v;
  auto p = static_cast<std::int64_t>(t.num_processors());
  env["p"] = p;
  if (p > 0 && (p & (p - 1)) == 0) {
    std::int64_t d = 0;
    while ((std::int64_t{1} << d) < p) ++d;
    env["d"] = d;
  } else {
    env.erase("d");
  }
  return env;
}

namespace {
void names_in(const Expr& e, const std::function<void(const Expr&)>& f) {
  f(e);
  for (const auto& a : e.args) names_in(*a, f);
}
void stmt_exprs(const std::vector<StmtPtr>& v, const std::function<void(const Expr&)>& f) {
  for (const auto& s : v) {
    for (const Expr* e :
         {s->target.get(), s->value.get(), s->peer.get(), s->cond.get(), s->limit.get()})
      if (e) names_in(*e, f);
    stmt_exprs(s->body, f);
    stmt_exprs(s->else_body, f);
  }
}
}  // namespace

void check_names_on(const Model& m, const Topology& t) {
  auto env = topology_env(t);
  const std::string& fam = t.family();
  stmt_exprs(m.body, [&](const Expr& e) {
    if (e.kind != ExprKind::Name || e.slot >= 0) return;
    const std::string& n = e.name;
    std::string why;
    if (n == "d" && !env.count("d"))
      why = "'d' (log2 p) needs p to be a power of two, and " + t.spec() +
            " has p = " + std::to_string(t.num_processors());
    else if (n == "n" && !env.count("n"))
      why = "'n' is defined only on star graphs";
    else if ((n == "rows" || n == "cols") && !env.count(n))
      why = "'" + n + "' is defined only on meshes and tori";
    else if ((n == "left" || n == "right") && !t.has_directions())
      why = "'" + n + "' is defined only on rings, linear arrays, meshes and tori";
    else if ((n == "up" || n == "down") && fam != "mesh" && fam != "torus")
      why = "'" + n + "' is defined only on meshes and tori";
    if (!why.empty())
      throw ModelError(e.loc, "the model uses a name " + t.spec() + " does not have: " + why);
  });
}

std::optional<double> eval_header_expr(const Expr& e, const std::map<std::string, double>& env) {
  auto arg = [&](std::size_t i) { return eval_header_expr(*e.args[i], env); };
  switch (e.kind) {
    case ExprKind::Number:
      return static_cast<double>(e.value);
    case ExprKind::Name: {
      auto it = env.find(e.name);
      if (it == env.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::Unary: {
      auto a = arg(0);
      if (!a) return std::nullopt;
      if (e.op == Op::Neg) return -*a;
      if (e.op == Op::Not) return *a == 0 ? 1.0 : 0.0;
      return std::nullopt;
    }
    case ExprKind::Binary: {
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      double x = *a, y = *b;
      switch (e.op) {
        case Op::Add:
          return x + y;
        case Op::Sub:
          return x - y;
        case Op::Mul:
          return x * y;
        case Op::Div:
          return y == 0 ? std::optional<double>() : x / y;
        case Op::IntDiv:
          return y == 0 ? std::optional<double>() : std::floor(x / y);
        case Op::Mod:
          return y == 0 ? std::optional<double>() : x - y * std::floor(x / y);
        case Op::Pow:
          return std::pow(x, y);
        case Op::Eq:
          return x == y ? 1.0 : 0.0;
        case Op::Ne:
          return x != y ? 1.0 : 0.0;
        case Op::Lt:
          return x < y ? 1.0 : 0.0;
        case Op::Le:
          return x <= y ? 1.0 : 0.0;
        case Op::Gt:
          return x > y ? 1.0 : 0.0;
        case Op::Ge:
          return x >= y ? 1.0 : 0.0;
        case Op::And:
          return (x != 0 && y != 0) ? 1.0 : 0.0;
        case Op::Or:
          return (x != 0 || y != 0) ? 1.0 : 0.0;
        case Op::BitXor:
          return static_cast<double>(static_cast<std::int64_t>(x) ^ static_cast<std::int64_t>(y));
        case Op::BitAnd:
          return static_cast<double>(static_cast<std::int64_t>(x) & static_cast<std::int64_t>(y));
        case Op::BitOr:
          return static_cast<double>(static_cast<std::int64_t>(x) | static_cast<std::int64_t>(y));
        default:
          return std::nullopt;
      }
    }
    case ExprKind::Call: {
      std::vector<double> v;
      for (std::size_t i = 0; i < e.args.size(); ++i) {
        auto a = arg(i);
        if (!a) return std::nullopt;
        v.push_back(*a);
      }
      if (e.name == "log2" && v.size() == 1 && v[0] > 0) return std::log2(v[0]);
      if (e.name == "sqrt" && v.size() == 1 && v[0] >= 0) return std::sqrt(v[0]);
      if (e.name == "min" && v.size() == 2) return std::min(v[0], v[1]);
      if (e.name == "max" && v.size() == 2) return std::max(v[0], v[1]);
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace collv
