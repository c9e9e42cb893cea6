// Name resolution and type inference for models.
#include "lang/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <unordered_map>

namespace collv {

namespace {

const std::set<std::string>& env_names() {
  static const std::set<std::string> s = {"my_id", "p",      "d",     "n",  "rows",
                                          "cols",  "source", "root",  "q",  "m",
                                          "count", "left",   "right", "up", "down"};
  return s;
}
// The book's pseudo-code computes its own neighbours (`left := (my_id - 1) mod p`): these
// built-in names may be assigned, and the variable then hides the built-in.
bool shadowable(const std::string& n) {
  return n == "left" || n == "right" || n == "up" || n == "down";
}
// Functions of the procedure language (integer arithmetic) and of header formulas (real).
const std::set<std::string>& functions() {
  static const std::set<std::string> s = {"neighbor", "log2", "sqrt", "min", "max", "len"};
  return s;
}
const std::set<std::string>& header_functions() {
  static const std::set<std::string> s = {"log2",  "sqrt",     "floor", "ceil", "ilog2",
                                          "clog2", "popcount", "min",   "max",  "sum"};
  return s;
}
// Names a header formula may use; `cost` may also use ts, tw and m.
const std::set<std::string>& header_names() {
  static const std::set<std::string> s = {"p", "d",      "n",    "rows", "cols",
                                          "q", "source", "root", "count"};
  return s;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
// " (did you mean 'floor'?)" for the nearest candidate within two edits, else "".
std::string suggestion(const std::string& name, const std::set<std::string>& candidates) {
  if (name.size() > 64) return "";
  std::string best;
  std::size_t best_d = 3;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(name, c);
    if (d < best_d && d < std::max<std::size_t>(c.size(), 2)) {
      best = c;
      best_d = d;
    }
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}
std::string join(const std::set<std::string>& s) {
  std::string out;
  for (const auto& x : s) out += (out.empty() ? "" : ", ") + x;
  return out;
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
    // Integer arrays are known before anything else: indexing one is a number, not a buffer.
    walk_stmts(m_.body, [&](Stmt& s) {
      if (s.kind == StmtKind::Array) arrays_.insert(s.var);
    });
    for (const auto& a : arrays_)
      if (a == m_.header.input || a == m_.header.output)
        throw ModelError(m_.header.loc, "'" + a +
                                            "' is the model's input or output, a buffer; "
                                            "it cannot be an integer array");
    add_data(m_.header.input);
    add_data(m_.header.output);
    for (auto& s : m_.body) collect(*s);
    // A variable assigned a data expression is data. An assignment `x := e` makes x data if e is
    // a buffer expression, or if one of the variables e combines with '+' is data: propagate over
    // those dependencies with a worklist (linear in the program's length).
    std::unordered_map<std::string, std::vector<std::string>> feeds;  // y -> the x with x := ..y..
    std::vector<std::string> work(data_.begin(), data_.end());
    walk_stmts(m_.body, [&](Stmt& s) {
      if (s.kind != StmtKind::Assign || s.target->kind != ExprKind::Name) return;
      std::vector<std::string> names;
      if (data_roots(*s.value, names)) {
        if (data_.insert(s.target->name).second) work.push_back(s.target->name);
      } else {
        for (auto& n : names) feeds[n].push_back(s.target->name);
      }
    });
    while (!work.empty()) {
      std::string y = std::move(work.back());
      work.pop_back();
      auto it = feeds.find(y);
      if (it == feeds.end()) continue;
      for (const auto& x : it->second)
        if (data_.insert(x).second) work.push_back(x);
    }
    m_.var_types.assign(m_.var_names.size(), Type::Int);
    for (std::size_t i = 0; i < m_.var_names.size(); ++i) {
      if (data_.count(m_.var_names[i])) m_.var_types[i] = Type::Data;
      if (arrays_.count(m_.var_names[i])) m_.var_types[i] = Type::IntArray;
    }
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
      if (arrays_.count(b.name)) {
        if (s.kind == StmtKind::Receive)
          throw ModelError(s.target->loc, "'" + b.name +
                                              "' is an integer array; data is received into "
                                              "buffers");
        if (s.target->kind != ExprKind::Index)
          throw ModelError(s.target->loc, "'" + b.name +
                                              "' is an integer array: assign its elements, "
                                              "'" +
                                              b.name + "[i] := ...'");
      } else if (s.kind == StmtKind::Receive || s.target->kind != ExprKind::Name) {
        data_.insert(b.name);
      }
    }
    if (s.kind == StmtKind::Array) {
      if (env_names().count(s.var))
        throw ModelError(s.loc, "'" + s.var + "' is a built-in name and cannot be an array");
      declare(s.var);
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
      case ExprKind::Index:
        return !indexes_array(e);
      case ExprKind::EmptyBuf:
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
  // Whether e is a buffer expression whatever its variables are (true), else the variables whose
  // being data would make it one (names).
  bool indexes_array(const Expr& e) const {
    return e.kind == ExprKind::Index && e.args[0]->kind == ExprKind::Name &&
           arrays_.count(e.args[0]->name) > 0;
  }
  bool data_roots(const Expr& e, std::vector<std::string>& names) const {
    switch (e.kind) {
      case ExprKind::Name:
        names.push_back(e.name);
        return false;
      case ExprKind::Index:
        return !indexes_array(e);
      case ExprKind::EmptyBuf:
      case ExprKind::Slice:
        return true;
      case ExprKind::Binary:
        if (e.op == Op::Union) return true;
        if (e.op == Op::Add) {
          bool a = data_roots(*e.args[0], names);
          bool b = data_roots(*e.args[1], names);
          return a || b;
        }
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
        if (e.type == Type::IntArray)
          throw ModelError(
              e.loc, "'" + e.name + "' is an integer array: use one element, '" + e.name + "[i]'");
        if (e.type != want)
          throw ModelError(e.loc, "'" + e.name + "' is " +
                                      (e.type == Type::Data ? "a buffer" : "a number") + " but " +
                                      (want == Type::Data ? "a buffer" : "a number") +
                                      " is needed here");
        return;
      }
      case ExprKind::Index:
      case ExprKind::Slice:
        if (e.args[0]->kind == ExprKind::Name && arrays_.count(e.args[0]->name)) {
          Expr& a = *e.args[0];
          if (e.kind == ExprKind::Slice)
            throw ModelError(e.loc, "'" + a.name + "' is an integer array: slices are for buffers");
          if (want == Type::Data)
            throw ModelError(e.loc,
                             "'" + a.name + "[...]' is a number, but a buffer is needed here");
          a.slot = slots_.at(a.name);
          a.type = Type::IntArray;
          expr(*e.args[1], Type::Int);
          e.type = Type::Int;
          return;
        }
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
      case ExprKind::Cond:
        // A number chosen per node (only the branch taken is evaluated); buffers are chosen with
        // an if statement.
        if (want == Type::Data)
          throw ModelError(e.loc,
                           "the conditional 'if C then A else B' gives a number, but a buffer is "
                           "needed here; choose buffers with an if statement");
        for (auto& a : e.args) expr(*a, Type::Int);
        e.type = Type::Int;
        return;
      case ExprKind::Call: {
        if (!functions().count(e.name)) {
          if (header_functions().count(e.name))
            throw ModelError(e.loc, "'" + e.name +
                                        "' is a function of header formulas only (the procedure "
                                        "has neighbor, log2, sqrt, min, max and len)");
          throw ModelError(e.loc, "unknown function '" + e.name +
                                      "' (expected neighbor, log2, sqrt, min, max or len)" +
                                      suggestion(e.name, functions()));
        }
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
      case StmtKind::Break:
        break;
      case StmtKind::Array:
        s.var_slot = slots_.at(s.var);
        expr(*s.value, Type::Int);
        break;
    }
    for (auto& c : s.body) check_stmt(*c);
    for (auto& c : s.else_body) check_stmt(*c);
  }

  Model& m_;
  std::set<std::string> data_;
  std::set<std::string> arrays_;  // names declared by `array NAME[SIZE]`

 public:
  // Header formulas: numbers only, the names of header_names() (and ts, tw, m in `cost`), the
  // functions of header_functions(). Checked when the model is loaded, so a misspelt name can
  // never switch a claim off.
  // bound: the variables of enclosing sum(...)s.
  static void header_expr(Expr& e, const std::string& key,
                          const std::vector<std::string>& bound = {}) {
    e.type = Type::Int;
    switch (e.kind) {
      case ExprKind::Number:
        return;
      case ExprKind::Name: {
        bool cost_name = e.name == "ts" || e.name == "tw" || e.name == "m";
        if (std::find(bound.begin(), bound.end(), e.name) != bound.end()) return;
        if (header_names().count(e.name) || (key == "cost" && cost_name)) return;
        std::set<std::string> allowed = header_names();
        if (key == "cost") allowed.insert({"ts", "tw", "m"});
        std::string why = cost_name ? " ('" + e.name + "' belongs in 'cost' only)" : "";
        if (why.empty()) why = suggestion(e.name, allowed);
        throw ModelError(e.loc, "unknown name '" + e.name + "' in '" + key + "'" + why +
                                    "; header formulas may use " + join(allowed));
      }
      case ExprKind::Call: {
        if (!header_functions().count(e.name))
          throw ModelError(e.loc, "unknown function '" + e.name + "' in '" + key + "'" +
                                      suggestion(e.name, header_functions()) +
                                      "; header formulas may use " + join(header_functions()));
        if (e.name == "sum") {
          // sum(i, a, b, f): f summed over the whole numbers i = a .. b; i is bound in f only.
          if (e.args.size() != 4 || e.args[0]->kind != ExprKind::Name)
            throw ModelError(e.loc,
                             "'sum' takes a variable and three formulas: sum(i, from, to, f)");
          if (!bound.empty())
            throw ModelError(e.loc,
                             "a 'sum' inside a 'sum' is not supported (it could take "
                             "10^12 terms); write the inner sum in closed form");
          const std::string& v = e.args[0]->name;
          if (header_names().count(v) || v == "ts" || v == "tw" || v == "m")
            throw ModelError(e.args[0]->loc, "'" + v +
                                                 "' is a header name; the variable of 'sum' "
                                                 "needs another");
          header_expr(*e.args[1], key, bound);
          header_expr(*e.args[2], key, bound);
          std::vector<std::string> inner = bound;
          inner.push_back(v);
          header_expr(*e.args[3], key, inner);
          return;
        }
        std::size_t want_args = (e.name == "min" || e.name == "max") ? 2 : 1;
        if (e.args.size() != want_args)
          throw ModelError(e.loc, "'" + e.name + "' takes " + std::to_string(want_args) +
                                      " argument" + (want_args > 1 ? "s" : ""));
        break;
      }
      case ExprKind::Unary:
      case ExprKind::Cond:
        break;
      case ExprKind::Binary:
        if (e.op == Op::Union)
          throw ModelError(e.loc, "'∪' joins buffers; a header formula is a number");
        break;
      case ExprKind::Index:
      case ExprKind::Slice:
      case ExprKind::EmptyBuf:
        throw ModelError(e.loc, "a buffer in '" + key + "'; a header formula is a number");
    }
    for (auto& a : e.args) header_expr(*a, key, bound);
  }

 private:
  std::unordered_map<std::string, int> slots_;
};

}  // namespace

void check_model(Model& m) {
  ModelHeader& h = m.header;
  if (h.requires_) Checker::header_expr(*h.requires_, "requires");
  if (h.steps) Checker::header_expr(*h.steps, "steps");
  if (h.cost) Checker::header_expr(*h.cost, "cost");
  if (h.elements) Checker::header_expr(*h.elements, "elements");
  Checker(m).run();
}

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

std::string undefined_on(const std::string& n, const Topology& t) {
  auto env = topology_env(t);
  const std::string& fam = t.family();
  if (n == "d" && !env.count("d"))
    return "'d' (log2 p) needs p to be a power of two, and " + t.spec() +
           " has p = " + std::to_string(t.num_processors());
  if (n == "n" && !env.count("n")) return "'n' is defined only on star graphs";
  if ((n == "rows" || n == "cols") && !env.count(n))
    return "'" + n + "' is defined only on meshes and tori";
  if ((n == "left" || n == "right") && !t.has_directions())
    return "'" + n + "' is defined only on rings, linear arrays, meshes and tori";
  if ((n == "up" || n == "down") && fam != "mesh" && fam != "torus")
    return "'" + n + "' is defined only on meshes and tori";
  return "";
}

void check_names_on(const Model& m, const Topology& t) {
  stmt_exprs(m.body, [&](const Expr& e) {
    if (e.kind != ExprKind::Name || e.slot >= 0) return;
    std::string why = undefined_on(e.name, t);
    if (!why.empty())
      throw ModelError(e.loc, "the model uses a name " + t.spec() + " does not have: " + why);
  });
}

namespace {

class HeaderEval {
  static constexpr std::int64_t kMaxSumTerms = 1000000;

 public:
  HeaderEval(const std::map<std::string, double>& env, const std::string& what, const Topology* t)
      : env_(env), what_(what), t_(t) {}

  double eval(const Expr& e) const {
    switch (e.kind) {
      case ExprKind::Number:
        return static_cast<double>(e.value);
      case ExprKind::Name: {
        auto it = env_.find(e.name);
        if (it != env_.end()) return it->second;
        std::string why = t_ ? undefined_on(e.name, *t_) : "";
        fail(e, "'" + e.name + "' is not defined " +
                    (t_ ? "on " + t_->spec() + (why.empty() ? "" : ": " + why) : "here"));
      }
      case ExprKind::Unary: {
        double a = eval(*e.args[0]);
        if (e.op == Op::Neg) return -a;
        if (e.op == Op::Not) return a == 0 ? 1.0 : 0.0;
        return static_cast<double>(~whole(e, a, "NOT"));
      }
      case ExprKind::Cond:
        return eval(*e.args[0]) != 0 ? eval(*e.args[1]) : eval(*e.args[2]);
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
  static std::string num(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", x);
    return buf;
  }
  // x as a 64-bit integer, for the bitwise operators and popcount.
  std::int64_t whole(const Expr& e, double x, const char* op) const {
    if (x != std::floor(x) || std::fabs(x) >= 9.2e18)
      fail(e, std::string("'") + op + "' needs whole numbers, not " + num(x));
    return static_cast<std::int64_t>(x);
  }
  double checked(const Expr& e, double r, const std::string& what) const {
    if (std::isnan(r)) fail(e, what + " is undefined");
    return r;
  }

  double binary(const Expr& e) const {
    // `and` and `or` look at their right operand only when it decides: `p >= 2 and log2(p - 1)`
    // is false on p = 1 rather than undefined.
    if (e.op == Op::And) return eval(*e.args[0]) != 0 && eval(*e.args[1]) != 0 ? 1.0 : 0.0;
    if (e.op == Op::Or) return eval(*e.args[0]) != 0 || eval(*e.args[1]) != 0 ? 1.0 : 0.0;
    double x = eval(*e.args[0]), y = eval(*e.args[1]);
    switch (e.op) {
      case Op::Add:
        return x + y;
      case Op::Sub:
        return x - y;
      case Op::Mul:
        return x * y;
      case Op::Div:
        if (y == 0) fail(e, "division by zero (" + num(x) + " / 0)");
        return x / y;
      case Op::IntDiv:
        if (y == 0) fail(e, "division by zero (" + num(x) + " div 0)");
        return std::floor(x / y);
      case Op::Mod:
        if (y == 0) fail(e, "'" + num(x) + " mod 0'");
        return x - y * std::floor(x / y);
      case Op::Pow:
        if (x == 0 && y < 0) fail(e, "0 ^ " + num(y) + " is undefined");
        return checked(e, std::pow(x, y), num(x) + " ^ " + num(y));
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
      case Op::BitXor:
        return static_cast<double>(whole(e, x, "XOR") ^ whole(e, y, "XOR"));
      case Op::BitAnd:
        return static_cast<double>(whole(e, x, "AND") & whole(e, y, "AND"));
      case Op::BitOr:
        return static_cast<double>(whole(e, x, "OR") | whole(e, y, "OR"));
      default:
        fail(e, std::string("'") + op_spelling(e.op) + "' is not defined on numbers");
    }
  }

  double call(const Expr& e) const {
    if (e.name == "sum") {
      double lo = eval(*e.args[1]), hi = eval(*e.args[2]);
      std::int64_t a = whole(e, lo, "sum"), b = whole(e, hi, "sum");
      if (b >= a && b - a >= kMaxSumTerms)
        fail(e, "sum over " + std::to_string(a) + " .. " + std::to_string(b) + ": more than " +
                    std::to_string(kMaxSumTerms) + " terms");
      std::map<std::string, double> inner = env_;
      double total = 0;
      for (std::int64_t i = a; i <= b; ++i) {
        inner[e.args[0]->name] = static_cast<double>(i);
        total += HeaderEval(inner, what_, t_).eval(*e.args[3]);
      }
      return total;
    }
    std::vector<double> v;
    for (const auto& a : e.args) v.push_back(eval(*a));
    const std::string& f = e.name;
    auto positive = [&] {
      if (!(v[0] > 0)) fail(e, f + "(" + num(v[0]) + ") is undefined");
    };
    if (f == "min") return std::min(v[0], v[1]);
    if (f == "max") return std::max(v[0], v[1]);
    if (f == "floor") return std::floor(v[0]);
    if (f == "ceil") return std::ceil(v[0]);
    if (f == "sqrt") return checked(e, std::sqrt(v[0]), "sqrt(" + num(v[0]) + ")");
    if (f == "log2") {
      positive();
      return std::log2(v[0]);
    }
    if (f == "ilog2" || f == "clog2") {
      positive();
      double x = v[0];
      if (x == std::floor(x) && x < 9.2e18) {  // exact on whole numbers
        auto u = static_cast<std::uint64_t>(x);
        int fl = 63 - __builtin_clzll(u);
        return f == "ilog2" || (u & (u - 1)) == 0 ? fl : fl + 1;
      }
      return f == "ilog2" ? std::floor(std::log2(x)) : std::ceil(std::log2(x));
    }
    if (f == "popcount") {
      std::int64_t x = whole(e, v[0], "popcount");
      if (x < 0) fail(e, "popcount(" + num(v[0]) + ") is undefined (a negative number)");
      return __builtin_popcountll(static_cast<std::uint64_t>(x));
    }
    fail(e, "unknown function '" + f + "'");
  }

  const std::map<std::string, double>& env_;
  const std::string& what_;
  const Topology* t_;
};

int precedence(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Cond:
      return 0;
    case ExprKind::Unary:
      return e.op == Op::Not ? 3 : 9;
    case ExprKind::Binary:
      switch (e.op) {
        case Op::Or:
          return 1;
        case Op::And:
          return 2;
        case Op::Eq:
        case Op::Ne:
        case Op::Lt:
        case Op::Le:
        case Op::Gt:
        case Op::Ge:
          return 4;
        case Op::BitOr:
        case Op::BitXor:
          return 5;
        case Op::BitAnd:
          return 6;
        case Op::Add:
        case Op::Sub:
        case Op::Union:
          return 7;
        case Op::Pow:
          return 10;
        default:
          return 8;
      }
    default:
      return 11;
  }
}

std::string to_string_at(const Expr& e, int need) {
  auto wrap = [&](std::string s) { return precedence(e) < need ? "(" + s + ")" : s; };
  switch (e.kind) {
    case ExprKind::Number:
      return std::to_string(e.value);
    case ExprKind::Name:
      return e.name;
    case ExprKind::EmptyBuf:
      return "[]";
    case ExprKind::Unary: {
      std::string op = op_spelling(e.op);
      return wrap(op + (e.op == Op::Neg ? "" : " ") + to_string_at(*e.args[0], precedence(e)));
    }
    case ExprKind::Binary: {
      int p = precedence(e);
      bool right_assoc = e.op == Op::Pow;
      // Bitwise operators bind looser than arithmetic and tighter than comparisons; for the
      // reader, their binary operands and the bitwise operations inside other operators are
      // parenthesized: (p AND (p - 1)) = 0.
      auto bitwise = [](const Expr& x) {
        return x.kind == ExprKind::Binary &&
               (x.op == Op::BitAnd || x.op == Op::BitOr || x.op == Op::BitXor);
      };
      auto side = [&](const Expr& c, int need) {
        if (bitwise(e) && c.kind == ExprKind::Binary && c.op != Op::Pow) need = 11;
        if (!bitwise(e) && bitwise(c)) need = 11;
        return to_string_at(c, need);
      };
      return wrap(side(*e.args[0], right_assoc ? p + 1 : p) + " " + op_spelling(e.op) + " " +
                  side(*e.args[1], right_assoc ? p - 1 : p + 1));
    }
    case ExprKind::Call: {
      std::string s = e.name + "(";
      for (std::size_t i = 0; i < e.args.size(); ++i)
        s += (i ? ", " : "") + to_string_at(*e.args[i], 0);
      return s + ")";
    }
    case ExprKind::Index:
      return to_string_at(*e.args[0], 11) + "[" + to_string_at(*e.args[1], 0) + "]";
    case ExprKind::Slice:
      return to_string_at(*e.args[0], 11) + "[" + to_string_at(*e.args[1], 0) + " .. " +
             to_string_at(*e.args[2], 0) + "]";
    case ExprKind::Cond:
      return wrap("if " + to_string_at(*e.args[0], 0) + " then " + to_string_at(*e.args[1], 0) +
                  " else " + to_string_at(*e.args[2], 0));
  }
  return "?";
}

}  // namespace

double eval_header_expr(const Expr& e, const std::map<std::string, double>& env,
                        const std::string& what, const Topology* t) {
  return HeaderEval(env, what, t).eval(e);
}

std::string expr_to_string(const Expr& e) { return to_string_at(e, 0); }

const SourceLoc& expr_start(const Expr& e) {
  const Expr* x = &e;
  while (
      (x->kind == ExprKind::Binary || x->kind == ExprKind::Index || x->kind == ExprKind::Slice) &&
      !x->args.empty())
    x = x->args[0].get();
  return x->loc;
}

}  // namespace collv
