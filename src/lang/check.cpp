// Name resolution and type inference for models.
#include "lang/check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>
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
    if (s.request) {  // `as R`: R holds an integer handle (a variable or an array's element)
      const Expr& b = base_of(*s.request);
      if (b.kind != ExprKind::Name || (s.request->kind != ExprKind::Name && !arrays_.count(b.name)))
        throw ModelError(s.request->loc,
                         "the request after 'as' must be an integer variable or an element of "
                         "an integer array");
      if (env_names().count(b.name) && !shadowable(b.name))
        throw ModelError(b.loc, "'" + b.name + "' is a built-in name and cannot be assigned");
      if (arrays_.count(b.name) && s.request->kind != ExprKind::Index)
        throw ModelError(s.request->loc, "'" + b.name + "' is an integer array: name an element");
      declare(b.name);
    }
    if (s.kind == StmtKind::Assign || s.kind == StmtKind::Receive || s.kind == StmtKind::Irecv) {
      const Expr& b = base_of(*s.target);
      if (b.kind != ExprKind::Name)
        throw ModelError(s.target->loc, "the target of an assignment must be a variable");
      if (env_names().count(b.name) && !shadowable(b.name))
        throw ModelError(b.loc, "'" + b.name + "' is a built-in name and cannot be assigned");
      declare(b.name);
      if (arrays_.count(b.name)) {
        if (s.kind != StmtKind::Assign)
          throw ModelError(s.target->loc, "'" + b.name +
                                              "' is an integer array; data is received into "
                                              "buffers");
        if (s.target->kind != ExprKind::Index)
          throw ModelError(s.target->loc, "'" + b.name +
                                              "' is an integer array: assign its elements, "
                                              "'" +
                                              b.name + "[i] := ...'");
      } else if (s.kind != StmtKind::Assign || s.target->kind != ExprKind::Name) {
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
        if (e.name == "counts" || e.name == "displs" || e.name == "sdispls" ||
            e.name == "rdispls") {
          // The per-rank counts of a v-collective (docs/language.md, "Per-rank counts").
          Collective c = m_.header.collective;
          if (!collective_is_v(c))
            throw ModelError(e.loc, "'" + e.name +
                                        "' is defined in the v-collectives only (allgatherv, "
                                        "gatherv, scatterv, alltoallv, reduce-scatterv), not in "
                                        "a " +
                                        collective_name(c));
          bool pair = c == Collective::Alltoallv;
          if (!pair && (e.name == "sdispls" || e.name == "rdispls"))
            throw ModelError(e.loc, "'" + e.name + "' belongs to alltoallv; a " +
                                        collective_name(c) + " has counts(j) and displs(j)");
          if (pair && e.name == "displs")
            throw ModelError(e.loc, "alltoallv has sdispls(i, j) and rdispls(i, j), not displs");
          std::size_t want_args = pair ? 2 : 1;
          if (e.args.size() != want_args)
            throw ModelError(e.loc, "'" + e.name + "' takes " + std::to_string(want_args) +
                                        " argument" + (want_args > 1 ? "s" : "") + " in a " +
                                        collective_name(c));
          if (want == Type::Data)
            throw ModelError(e.loc, "'" + e.name + "' gives a number, but a buffer is needed here");
          for (auto& a : e.args) expr(*a, Type::Int);
          e.type = Type::Int;
          return;
        }
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
      case StmtKind::Irecv:
      case StmtKind::Isend: {
        if (s.kind == StmtKind::Irecv)
          expr(*s.target, Type::Data);
        else
          expr(*s.value, Type::Data);
        expr(*s.peer, Type::Int);
        if (data_.count(base_of(*s.request).name))
          throw ModelError(s.request->loc, "'" + base_of(*s.request).name +
                                               "' is a buffer; a request is an integer handle");
        expr(*s.request, Type::Int);
        break;
      }
      case StmtKind::Wait:
        for (auto& r : s.requests) expr(*r, Type::Int);
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

// Whether a cost formula's part e names ts or tw. A ModelError where it uses them other than
// linearly (docs/language.md: a cost is linear in ts and tw*m): the cost is then evaluated once as
// c + a*ts + b*tw (header_cost), and a claim such as `ts * tw` or `log2(ts)`, whose value at
// ts = 1, tw = 0 and ts = 0, tw = 1 says nothing of a cost, never reaches a run.
[[noreturn]] void refuse_cost(const Expr& at, const std::string& why) {
  std::string text = expr_to_string(at);
  if (text.size() > 80) text = text.substr(0, 77) + "...";
  throw ModelError(expr_start(at),
                   "'cost' must be linear in ts and tw*m, but '" + printable(text) + "' " + why);
}
bool cost_names_ts_tw(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Name:
      return e.name == "ts" || e.name == "tw";
    case ExprKind::Number:
      return false;
    case ExprKind::Unary: {
      bool a = cost_names_ts_tw(*e.args[0]);
      if (a && e.op != Op::Neg) refuse_cost(e, "applies a logical or bitwise operator to them");
      return a;
    }
    case ExprKind::Cond: {
      if (cost_names_ts_tw(*e.args[0])) refuse_cost(*e.args[0], "decides a condition on them");
      bool a = cost_names_ts_tw(*e.args[1]);
      return cost_names_ts_tw(*e.args[2]) || a;
    }
    case ExprKind::Binary: {
      bool a = cost_names_ts_tw(*e.args[0]), b = cost_names_ts_tw(*e.args[1]);
      if (!a && !b) return false;
      if (e.op == Op::Add || e.op == Op::Sub) return true;
      if (e.op == Op::Mul && a && b) refuse_cost(e, "multiplies them together");
      if (e.op == Op::Mul) return true;
      if (e.op == Op::Div && !b) return true;
      refuse_cost(e, e.op == Op::Div ? "divides by them" : "applies a nonlinear operator to them");
    }
    case ExprKind::Call: {
      if (e.name == "sum" && e.args.size() == 4) {
        if (cost_names_ts_tw(*e.args[1]) || cost_names_ts_tw(*e.args[2]))
          refuse_cost(e, "sums over a range that depends on them");
        return cost_names_ts_tw(*e.args[3]);
      }
      for (const auto& a : e.args)
        if (cost_names_ts_tw(*a)) refuse_cost(e, "applies '" + e.name + "' to them");
      return false;
    }
    default:
      return false;  // buffers: refused by header_expr
  }
}

}  // namespace

void check_model(Model& m) {
  m.header.memo = std::make_shared<HeaderMemo>();
  ModelHeader& h = m.header;
  if (h.requires_) Checker::header_expr(*h.requires_, "requires");
  if (h.steps) Checker::header_expr(*h.steps, "steps");
  if (h.cost) {
    Checker::header_expr(*h.cost, "cost");
    cost_names_ts_tw(*h.cost);
  }
  if (h.elements) Checker::header_expr(*h.elements, "elements");
  if (h.claims_single_port && !h.steps && !h.cost)
    throw ModelError(h.port_loc,
                     "'port single' says the steps and cost claims are single-port formulas, but "
                     "the header has no 'steps' or 'cost' line");
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
