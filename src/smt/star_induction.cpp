// Theorems 1-3 for every n from the model's program (see star_induction.hpp).
#include "smt/star_induction.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "lang/check.hpp"

namespace collv {

namespace {

// A program outside the method: thrown inside the analysis, turned into StarInduction::refusal.
struct Refused {
  std::string why;
  SourceLoc loc;
};

// b ranges over lo..hi (SMT-LIB2 Int terms).
struct Binder {
  std::string var, lo, hi;
};

// Identity: the single permutation w (before the level loop, only w = e occurs).
// Level: the left coset w G_(k-1) of the symbolic level k. Full: w G_n (after the level loop).
enum class Base { Identity, Level, Full };

// The multiset sum over the binders' ranges of word G, word = t_(word[0]) t_(word[1]) ...
struct Family {
  std::vector<std::string> word;
  std::vector<Binder> binders;
  Base base = Base::Level;
};

// A data variable's relative contents R (node pi holds pi R). tokens: inside a loop being
// summarised, "the value this variable had at the start of the iteration" (opaque).
struct Value {
  bool unknown = false;
  std::string unknown_why;
  std::vector<Family> fams;
  std::vector<std::string> tokens;
};

Value unknown_value(std::string why) {
  Value v;
  v.unknown = true;
  v.unknown_why = std::move(why);
  return v;
}

bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '!';
}

// Renames whole identifiers of an SMT-LIB2 term.
std::string subst(const std::string& term, const std::map<std::string, std::string>& ren) {
  std::string out;
  std::size_t i = 0;
  while (i < term.size()) {
    if (is_ident_char(term[i])) {
      std::size_t j = i;
      while (j < term.size() && is_ident_char(term[j])) ++j;
      std::string id = term.substr(i, j - i);
      auto f = ren.find(id);
      out += f == ren.end() ? id : f->second;
      i = j;
    } else {
      out += term[i++];
    }
  }
  return out;
}

bool mentions(const std::string& term, const std::string& id) {
  return subst(term, {{id, id + "!x"}}) != term;
}

Family renamed(const Family& f, const std::string& suffix, std::vector<std::string>* decls) {
  std::map<std::string, std::string> ren;
  for (const auto& b : f.binders) {
    ren[b.var] = b.var + suffix;
    decls->push_back(b.var + suffix);
  }
  Family g = f;
  for (auto& w : g.word) w = subst(w, ren);
  for (auto& b : g.binders) {
    b.var = ren[b.var];
    b.lo = subst(b.lo, ren);
    b.hi = subst(b.hi, ren);
  }
  return g;
}

std::string ranges(const Family& f) {
  std::string s = "true";
  for (const auto& b : f.binders)
    s = fmt::format("(and {} (<= {} {}) (<= {} {}))", s, b.lo, b.var, b.var, b.hi);
  return s;
}

// The image of k under the representative: cosets w G_(k-1), w' G_(k-1) inside G_k are equal iff
// w(k) = w'(k).
std::string rep(const Family& f, const std::string& k) {
  std::string x = k;
  // Evaluated where tr's tests are decided by the text alone (t_j maps j to 1 and 1 to j; t_1 is
  // the identity), so the certificate compares no term with itself, even inside tr once expanded.
  for (auto it = f.word.rbegin(); it != f.word.rend(); ++it)
    x = *it == "1" ? x
        : x == "1" ? *it
        : *it == x ? std::string("1")
                   : fmt::format("(tr {} {})", *it, x);
  return x;
}

std::string range_size(const std::string& lo, const std::string& hi) {
  return fmt::format("(ite (<= {} {}) (+ (- {} {}) 1) 0)", lo, hi, hi, lo);
}

std::string count_of(const std::vector<Family>& fams) {
  std::string sum = "0";
  for (const auto& f : fams) {
    std::string prod = "1";
    for (const auto& b : f.binders) prod = fmt::format("(* {} {})", prod, range_size(b.lo, b.hi));
    sum = fmt::format("(+ {} {})", sum, prod);
  }
  return sum;
}

// An integer literal of SMT-LIB2 (negative ones as (- k); INT64_MIN too, without overflow).
std::string smt_int(std::int64_t v) {
  return v < 0 ? fmt::format("(- {})", std::uint64_t{0} - static_cast<std::uint64_t>(v))
               : std::to_string(v);
}

const char* kTr = "(define-fun tr ((t Int) (x Int)) Int (ite (= x 1) t (ite (= x t) 1 x)))\n";

class Analyzer {
 public:
  explicit Analyzer(const Model& m) : m_(m) {}

  void run(StarInduction& out) {
    out_ = &out;
    if (m_.header.collective == Collective::Allreduce) {
      if (m_.header.op_class != OperatorClass::Commutative)
        throw Refused{"the method proves sums as multisets: it needs `operator commutative`",
                      m_.header.loc};
    } else if (m_.header.collective == Collective::Allgather) {
      if (!m_.header.layout_any)
        throw Refused{
            "the method proves which items arrive, not their order: it needs `layout any`",
            m_.header.loc};
    } else {
      throw Refused{fmt::format("the method covers all-reduce and all-to-all broadcast, not {}",
                                collective_name(m_.header.collective)),
                    m_.header.loc};
    }
    for (std::size_t s = 0; s < m_.var_names.size(); ++s)
      if (m_.var_types[s] == Type::Data) data_[static_cast<int>(s)] = Value{};
    int in = slot_of(m_.header.input);
    Family e;
    e.base = Base::Identity;
    data_[in].fams = {e};
    exec_block(m_.body, 0);
    if (!saw_level_)
      throw Refused{"no level loop `for k := 2 to n` at the top of the procedure", m_.header.loc};
    const Value& o = data_[slot_of(m_.header.output)];
    if (o.unknown)
      throw Refused{"the output '" + m_.header.output + "' at the end: " + o.unknown_why,
                    m_.header.loc};
    if (o.fams.size() != 1 || o.fams[0].base != Base::Full || !o.fams[0].word.empty() ||
        !o.tokens.empty())
      throw Refused{"the output '" + m_.header.output +
                        "' at the end is not the invariant variable of the level loop (G_n)",
                    m_.header.loc};
  }

 private:
  const Model& m_;
  StarInduction* out_ = nullptr;
  std::map<int, Value> data_;
  std::map<int, std::string> ints_;
  std::vector<std::string> ctx_;     // path conditions (SMT-LIB2 Bool terms)
  std::vector<std::string> consts_;  // Int constants in scope (k and loop binders)
  std::optional<std::pair<std::string, Value>> pending_;  // a send waiting for its receive
  std::string count_ = "0";                               // exchanges so far in this level
  bool in_level_ = false, saw_level_ = false;
  std::string k_ = "k";
  std::set<int> written_;    // data variables written since the level's head
  std::set<int> head_;       // data variables that are G_(k-1) at the level's head
  std::set<int> inductive_;  // ... and read before written: the induction's variables
  int fresh_ = 0;
  std::size_t executed_ = 0;
  static constexpr std::size_t kMaxExecuted = 100000, kMaxObligations = 1000,
                               kMaxScript = std::size_t{8} << 20;

  int slot_of(const std::string& name) const {
    for (std::size_t s = 0; s < m_.var_names.size(); ++s)
      if (m_.var_names[s] == name) return static_cast<int>(s);
    throw Refused{"no variable '" + name + "'", m_.header.loc};
  }
  std::string name_of(int slot) const { return m_.var_names[static_cast<std::size_t>(slot)]; }

  // ---- integer terms ----
  // Terms, values and words are bounded, so a hostile program (`x := x + x` forty times) is
  // refused instead of growing exponentially.
  static constexpr std::size_t kMaxTerm = 1 << 16, kMaxFamilies = 256, kMaxWord = 1024;
  std::string term(const Expr& e) {
    std::string t = term_of(e);
    if (t.size() > kMaxTerm) throw Refused{"an integer term past the method's size limit", e.loc};
    return t;
  }
  std::string term_of(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Number:
        return smt_int(e.value);
      case ExprKind::Name: {
        if (e.slot >= 0 && m_.var_types[static_cast<std::size_t>(e.slot)] == Type::Int) {
          auto f = ints_.find(e.slot);
          if (f == ints_.end())
            throw Refused{"the integer '" + e.name + "' has no value the analysis can name here",
                          e.loc};
          return f->second;
        }
        throw Refused{"'" + e.name +
                          "' here: every node must run the same communications, with link "
                          "numbers from loop counters and constants only",
                      e.loc};
      }
      case ExprKind::Unary:
        if (e.op == Op::Neg) return fmt::format("(- {})", term(*e.args[0]));
        break;
      case ExprKind::Binary: {
        // (div and mod are left out: SMT-LIB's and collv's differ on negative operands.)
        const char* op = e.op == Op::Add   ? "+"
                         : e.op == Op::Sub ? "-"
                         : e.op == Op::Mul ? "*"
                                           : nullptr;
        if (op) return fmt::format("({} {} {})", op, term(*e.args[0]), term(*e.args[1]));
        break;
      }
      default:
        break;
    }
    throw Refused{"the integer expression '" + expr_to_string(e) + "' is outside the method",
                  e.loc};
  }

  // ---- data values ----
  Value read(const Expr& e) {
    switch (e.kind) {
      case ExprKind::EmptyBuf:
        return Value{};
      case ExprKind::Name: {
        if (e.slot < 0 || m_.var_types[static_cast<std::size_t>(e.slot)] != Type::Data)
          throw Refused{"'" + e.name + "' is not a buffer", e.loc};
        if (in_level_ && head_.count(e.slot) && !written_.count(e.slot)) inductive_.insert(e.slot);
        const Value& v = data_[e.slot];
        if (v.unknown) throw Refused{"'" + e.name + "' is read here, but " + v.unknown_why, e.loc};
        return v;
      }
      case ExprKind::Binary:
        if (e.op == Op::Add || e.op == Op::Union)
          return plus(read(*e.args[0]), read(*e.args[1]), e.loc);
        break;
      default:
        break;
    }
    throw Refused{"the data expression '" + expr_to_string(e) + "' is outside the method", e.loc};
  }

  Value plus(Value a, const Value& b, const SourceLoc& loc) {
    if (!a.fams.empty() && !b.fams.empty()) {
      for (const auto& f : b.fams)
        if (f.base != a.fams[0].base)
          throw Refused{"this combines values of different kinds (a node's own input with cosets)",
                        loc};
      if (!in_level_) throw Refused{"data is combined outside the level loop", loc};
      if (a.tokens.empty() && b.tokens.empty()) disjoint(a.fams, b.fams, loc, "nodup");
    }
    a.fams.insert(a.fams.end(), b.fams.begin(), b.fams.end());
    if (a.fams.size() > kMaxFamilies)
      throw Refused{"a value of more than 256 coset families: past the method's size limit", loc};
    a.tokens.insert(a.tokens.end(), b.tokens.begin(), b.tokens.end());
    std::sort(a.tokens.begin(), a.tokens.end());
    return a;
  }

  // ---- obligations ----
  void obligation(std::string name, std::string description, std::vector<std::string> extra,
                  const std::string& violation, const SourceLoc& loc) {
    if (out_->obligations.size() >= kMaxObligations)
      throw Refused{"more than 1000 obligations: past the method's size limit", loc};
    InductionObligation ob;
    // Unique names (the first iteration of a loop and its summary may share a line).
    std::string unique = name;
    for (int i = 2; std::any_of(out_->obligations.begin(), out_->obligations.end(),
                                [&](const InductionObligation& o) { return o.name == unique; });
         ++i)
      unique = fmt::format("{}-{}", name, i);
    ob.name = std::move(unique);
    ob.description = std::move(description);
    ob.loc = loc;
    std::string& s = ob.script;
    s += "; " + ob.description + "\n(declare-const a Bool)\n";
    s += kTr;
    std::vector<std::string> all = consts_;
    for (auto& c : extra)
      if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(std::move(c));
    for (const auto& c : all) s += fmt::format("(declare-const {} Int)\n", c);
    for (const auto& c : ctx_) s += fmt::format("(assert {})\n", c);
    s += fmt::format("(assert (=> a {}))\n", violation);
    ob.witnesses = all;
    out_->obligations.push_back(std::move(ob));
  }

  std::string where(const SourceLoc& loc) const { return fmt::format("line {}", loc.line); }

  // Every member of a is a coset distinct from every member of b (a == b: pairwise distinct
  // members of one multiset).
  void disjoint(const std::vector<Family>& a, const std::vector<Family>& b, const SourceLoc& loc,
                const std::string& what, bool self = false) {
    // The query's size, bounded before it is built: pairs times their terms.
    auto size_of = [](const std::vector<Family>& v) {
      std::size_t m = 0;
      for (const auto& f : v) {
        std::size_t z = 64;
        for (const auto& w : f.word) z += w.size() + 8;
        for (const auto& bd : f.binders) z += 2 * (bd.lo.size() + bd.hi.size()) + 32;
        m = std::max(m, z);
      }
      return m;
    };
    if (a.size() * b.size() * (size_of(a) + size_of(b)) > kMaxScript)
      throw Refused{"a NODUP query past the method's size limit", loc};
    std::vector<std::string> decls;
    std::string any = "(or false";  // one n-ary or, appended to: nesting it copied it each time
    for (std::size_t i = 0; i < a.size(); ++i) {
      for (std::size_t j = self ? i : 0; j < b.size(); ++j) {
        if (self && i == j && a[i].binders.empty()) continue;  // one coset
        Family fa = renamed(a[i], "!a" + std::to_string(i), &decls);
        Family fb = renamed(b[j], "!b" + std::to_string(j), &decls);
        std::string differ = "true";
        if (self && i == j) {
          differ = "false";
          for (std::size_t q = 0; q < fa.binders.size(); ++q)
            differ = fmt::format("(or {} (not (= {} {})))", differ, fa.binders[q].var,
                                 fb.binders[q].var);
        }
        any += fmt::format("\n  (and {} {} {} (= {} {}))", ranges(fa), ranges(fb), differ,
                           rep(fa, k_), rep(fb, k_));
      }
    }
    any += ")";
    obligation(fmt::format("{}-line{}", what, loc.line),
               fmt::format("{}: at {}, for every level k >= 2 (and every value of the loop "
                           "counters), the combined cosets of G_(k-1) are pairwise distinct",
                           what, where(loc)),
               decls, any, loc);
  }

  // ---- statements ----
  void exec_block(const std::vector<StmtPtr>& body, int depth) {
    for (const auto& s : body) exec(*s, depth);
  }

  void exec(const Stmt& s, int depth) {
    // Every loop runs its body twice (first iteration, summary): nested loops would double the
    // work per level of nesting, so the statements executed are counted.
    if (++executed_ > kMaxExecuted)
      throw Refused{"the program is past the method's size limit (statements executed)", s.loc};
    switch (s.kind) {
      case StmtKind::Assign: {
        if (s.target->kind != ExprKind::Name)
          throw Refused{"assignments to parts of a buffer are outside the method", s.loc};
        int slot = s.target->slot;
        if (m_.var_types[static_cast<std::size_t>(slot)] == Type::Int) {
          ints_[slot] = term(*s.value);
        } else {
          Value v = read(*s.value);
          data_[slot] = std::move(v);
          written_.insert(slot);
        }
        return;
      }
      case StmtKind::Send: {
        if (!s.along_link)
          throw Refused{"a send to a node id: the method needs `along link`", s.loc};
        if (!in_level_) throw Refused{"a send outside the level loop", s.loc};
        std::string link = term(*s.peer);
        Value v = read(*s.value);
        if (!v.tokens.empty())
          throw Refused{"this sends a value the enclosing loop changes in every iteration ('" +
                            v.tokens[0] +
                            "'); the method summarises only loops that add to a "
                            "variable what they receive",
                        s.loc};
        for (const auto& f : v.fams)
          if (f.base != Base::Level)
            throw Refused{"this sends a node's own input, not a union of sub-star cosets", s.loc};
        if (pending_)
          throw Refused{"two sends without a receive between them: the method needs exchanges",
                        s.loc};
        obligation(fmt::format("links-line{}", s.loc.line),
                   fmt::format("links: at {}, the link is in 2..k for every level k >= 2 (the "
                               "level stays inside its sub-star)",
                               where(s.loc)),
                   {}, fmt::format("(not (and (<= 2 {}) (<= {} {})))", link, link, k_), s.loc);
        pending_ = std::make_pair(link, std::move(v));
        return;
      }
      case StmtKind::Receive: {
        if (!s.along_link)
          throw Refused{"a receive from a node id: the method needs `along link`", s.loc};
        if (s.target->kind != ExprKind::Name)
          throw Refused{"receiving into part of a buffer is outside the method", s.loc};
        std::string link = term(*s.peer);
        if (!pending_ || pending_->first != link)
          throw Refused{
              "this receive is not the second half of an exchange (`send ... along "
              "link L` then `receive ... along link L`)",
              s.loc};
        Value v = std::move(pending_->second);
        pending_.reset();
        for (auto& f : v.fams) {
          if (f.word.size() >= kMaxWord)
            throw Refused{"a coset word past the method's size limit", s.loc};
          f.word.insert(f.word.begin(), link);
        }
        data_[s.target->slot] = std::move(v);
        written_.insert(s.target->slot);
        count_ = fmt::format("(+ {} 1)", count_);
        if (count_.size() > kMaxTerm)
          throw Refused{"more exchanges per level than the method's size limit", s.loc};
        return;
      }
      case StmtKind::For:
        if (!in_level_) return level_loop(s, depth);
        return inner_loop(s, depth);
      default:
        throw Refused{
            "`if`, `while`, `break` and arrays are outside the method (every node must "
            "run the same communications)",
            s.loc};
    }
  }

  void level_loop(const Stmt& s, int depth) {
    if (saw_level_ || depth != 0)
      throw Refused{"one level loop `for k := 2 to n`, at the top of the procedure", s.loc};
    bool limit_n = s.limit->kind == ExprKind::Name && s.limit->slot < 0 && s.limit->name == "n";
    bool value_n = s.value->kind == ExprKind::Name && s.value->slot < 0 && s.value->name == "n";
    if (s.downto && value_n)
      throw Refused{
          "the levels run downward (n downto ...): the induction over the sub-stars "
          "S_1 ⊂ S_2 ⊂ ... ⊂ S_n needs `for k := 2 to n`, the first level on S_2",
          s.loc};
    if (s.downto || !limit_n || s.value->kind != ExprKind::Number || s.value->value != 2)
      throw Refused{"the level loop must be `for k := 2 to n` (one sub-star level per k)", s.loc};
    own_counter(s);
    saw_level_ = true;
    in_level_ = true;
    out_->level_var = s.var;
    ints_[s.var_slot] = k_;
    consts_.push_back(k_);
    ctx_.push_back(fmt::format("(>= {} 2)", k_));
    std::set<int> assigned;
    collect_writes(s.body, &assigned, nullptr);
    // The head of level k: a variable that is {e} on entry is G_(k-1) (the induction hypothesis;
    // the base G_1 = {e} holds before level 2); the others are what they were before the loop if
    // the level never writes them, and unknown if it does (a level must rebuild them first).
    std::map<int, Value> entry = data_;
    for (auto& [slot, v] : data_) {
      bool identity = !v.unknown && v.tokens.empty() && v.fams.size() == 1 &&
                      v.fams[0].base == Base::Identity && v.fams[0].word.empty();
      if (identity) {
        Family g;
        g.base = Base::Level;
        v.fams = {g};
        head_.insert(slot);
      } else if (assigned.count(slot)) {
        v = unknown_value("it is written in the level and read before the level writes it");
      }
    }
    count_ = "0";
    written_.clear();
    exec_block(s.body, depth + 1);
    if (pending_) throw Refused{"a level ends with a send that has no receive", s.loc};
    out_->exchanges_per_level = count_;
    for (int slot : inductive_) {
      out_->invariant_vars.push_back(name_of(slot));
      if (!written_.count(slot))
        throw Refused{"'" + name_of(slot) +
                          "' is read in every level but never rebuilt: the induction needs it to "
                          "grow from G_(k-1) to G_k",
                      s.loc};
      const Value& v = data_[slot];
      if (v.unknown || !v.tokens.empty())
        throw Refused{"'" + name_of(slot) + "' at the end of the level: " + v.unknown_why, s.loc};
      for (const auto& f : v.fams)
        if (f.base != Base::Level)
          throw Refused{"'" + name_of(slot) + "' at the end of the level is not a union of cosets",
                        s.loc};
      obligation(fmt::format("cover-count-{}", name_of(slot)),
                 fmt::format("cover: at the end of level k, '{}' holds exactly k cosets of "
                             "G_(k-1), for every k >= 2",
                             name_of(slot)),
                 {}, fmt::format("(not (= {} {}))", count_of(v.fams), k_), s.loc);
      disjoint(v.fams, v.fams, s.loc, "cover-distinct-" + name_of(slot), true);
      std::vector<std::string> decls;
      std::string any = "(or false";
      for (std::size_t i = 0; i < v.fams.size(); ++i) {
        Family f = renamed(v.fams[i], "!r" + std::to_string(i), &decls);
        std::string r = rep(f, k_);
        any += fmt::format("\n  (and {} (not (and (<= 1 {}) (<= {} {}))))", ranges(f), r, r, k_);
      }
      any += ")";
      obligation(fmt::format("cover-range-{}", name_of(slot)),
                 fmt::format("cover: the cosets '{}' holds at the end of level k lie in G_k "
                             "(their representatives map k into 1..k)",
                             name_of(slot)),
                 decls, any, s.loc);
    }
    if (inductive_.empty())
      throw Refused{"no variable carries the sub-star's data from one level to the next", s.loc};
    // After the loop: the inductive variables are G_n; what the levels wrote is the last level's.
    for (auto& [slot, v] : data_) {
      if (inductive_.count(slot)) {
        Family g;
        g.base = Base::Full;
        v = Value{};
        v.fams = {g};
      } else if (written_.count(slot)) {
        v = unknown_value(
            "its value after the level loop is the last level's, which the method "
            "does not track");
      } else {
        v = entry[slot];
      }
    }
    ints_.erase(s.var_slot);
    ctx_.clear();
    in_level_ = false;
  }

  void collect_writes(const std::vector<StmtPtr>& body, std::set<int>* data, std::set<int>* ints) {
    for (const auto& st : body) {
      if ((st->kind == StmtKind::Assign || st->kind == StmtKind::Receive) &&
          st->target->kind == ExprKind::Name) {
        int slot = st->target->slot;
        if (m_.var_types[static_cast<std::size_t>(slot)] == Type::Int) {
          if (ints) ints->insert(slot);
        } else if (data) {
          data->insert(slot);
        }
      }
      if (st->kind == StmtKind::For && ints) ints->insert(st->var_slot);
      collect_writes(st->body, data, ints);
      collect_writes(st->else_body, data, ints);
    }
  }

  // A loop whose body assigns its own counter does not run lo..hi once each.
  void own_counter(const Stmt& s) {
    std::set<int> ints;
    collect_writes(s.body, nullptr, &ints);
    if (ints.count(s.var_slot))
      throw Refused{"the loop assigns its own counter '" + s.var + "'", s.loc};
  }

  void inner_loop(const Stmt& s, int depth) {
    own_counter(s);
    std::string first = term(*s.value), last = term(*s.limit);
    std::string lo = s.downto ? last : first, hi = s.downto ? first : last;
    if (pending_) throw Refused{"a loop starts between a send and its receive", s.loc};
    // 1. The first iteration on its own, under "the range is not empty": a violation there is
    //    real even if the loop cannot be summarised.
    {
      auto saved_data = data_;
      auto saved_ints = ints_;
      auto saved_ctx = ctx_;
      auto saved_consts = consts_;
      auto saved_written = written_;
      std::string saved_count = count_;
      ctx_.push_back(fmt::format("(<= {} {})", lo, hi));
      ints_[s.var_slot] = first;
      try {
        exec_block(s.body, depth + 1);
      } catch (const Refused&) {
        // The summary below refuses with the same reason, after this iteration's obligations.
      }
      ctx_ = std::move(saved_ctx);
      consts_ = std::move(saved_consts);
      pending_.reset();
      data_ = std::move(saved_data);
      ints_ = std::move(saved_ints);
      written_ = std::move(saved_written);
      count_ = saved_count;
    }
    // 2. The summary: one symbolic iteration with the counter b in lo..hi.
    std::string b = fmt::format("{}!{}", s.var, ++fresh_);
    std::set<int> wd, wi;
    collect_writes(s.body, &wd, &wi);
    std::map<int, Value> before;
    for (int slot : wd) {
      before[slot] = data_[slot];
      Value t;
      t.tokens = {name_of(slot)};
      data_[slot] = t;
    }
    for (int slot : wi) ints_.erase(slot);
    consts_.push_back(b);
    ctx_.push_back(fmt::format("(<= {} {})", lo, b));
    ctx_.push_back(fmt::format("(<= {} {})", b, hi));
    ints_[s.var_slot] = b;
    std::string outer_count = count_;
    count_ = "0";
    exec_block(s.body, depth + 1);
    if (pending_) throw Refused{"an iteration ends with a send that has no receive", s.loc};
    std::string body_count = count_;
    ctx_.pop_back();
    ctx_.pop_back();
    if (mentions(body_count, b))
      throw Refused{"the number of exchanges per iteration depends on the counter", s.loc};
    count_ = fmt::format("(+ {} (* {} {}))", outer_count, body_count, range_size(lo, hi));
    if (count_.size() > kMaxTerm)
      throw Refused{"more exchanges per level than the method's size limit", s.loc};
    for (int slot : wd) {
      Value end = std::move(data_[slot]);
      written_.insert(slot);
      if (end.unknown || end.tokens.empty()) {
        data_[slot] = unknown_value("it is overwritten in every iteration of the loop at " +
                                    where(s.loc) + " and the method does not track its last value");
        continue;
      }
      if (end.tokens != std::vector<std::string>{name_of(slot)})
        throw Refused{"'" + name_of(slot) + "' ends an iteration of the loop holding what '" +
                          end.tokens[0] +
                          "' held at its start: the method summarises only "
                          "loops that add to a variable (`x := x + e`, e free of x)",
                      s.loc};
      Value acc = before[slot];
      if (acc.unknown)
        throw Refused{"'" + name_of(slot) + "' is added to in the loop at " + where(s.loc) +
                          " but " + acc.unknown_why,
                      s.loc};
      for (auto f : end.fams) {
        if (f.base != Base::Level)
          throw Refused{"the loop adds a node's own input, not cosets", s.loc};
        f.binders.push_back(Binder{b, lo, hi});
        acc.fams.push_back(std::move(f));
      }
      if (acc.tokens.empty())
        disjoint(acc.fams, acc.fams, s.loc, "nodup-accumulated-" + name_of(slot), true);
      data_[slot] = std::move(acc);
    }
    for (int slot : wi) ints_.erase(slot);
    ints_.erase(s.var_slot);
  }
};

// The header's `steps` formula as an Int term over n, if it is one (numbers, n, + - *, div and
// mod by a positive constant, ^ by a small constant).
std::optional<std::string> steps_term(const Expr& e, std::string* why) {
  switch (e.kind) {
    case ExprKind::Number:
      return smt_int(e.value);
    case ExprKind::Name:
      if (e.name == "n" && e.slot < 0) return std::string("n");
      *why = "'" + e.name + "' (only n can be symbolic)";
      return std::nullopt;
    case ExprKind::Unary:
      if (e.op == Op::Neg) {
        auto a = steps_term(*e.args[0], why);
        if (a) return fmt::format("(- {})", *a);
      }
      break;
    case ExprKind::Binary: {
      auto a = steps_term(*e.args[0], why);
      auto b = steps_term(*e.args[1], why);
      if (!a || !b) return std::nullopt;
      bool pos_const = e.args[1]->kind == ExprKind::Number && e.args[1]->value > 0;
      if (e.op == Op::Add) return fmt::format("(+ {} {})", *a, *b);
      if (e.op == Op::Sub) return fmt::format("(- {} {})", *a, *b);
      if (e.op == Op::Mul) return fmt::format("(* {} {})", *a, *b);
      if (e.op == Op::IntDiv && pos_const) return fmt::format("(div {} {})", *a, *b);
      if (e.op == Op::Mod && pos_const) return fmt::format("(mod {} {})", *a, *b);
      if (a->size() + b->size() > (1u << 16)) {
        *why = "a formula past the method's size limit";
        return std::nullopt;
      }
      if (e.op == Op::Pow && e.args[1]->kind == ExprKind::Number && e.args[1]->value >= 0 &&
          e.args[1]->value <= 8) {
        std::string r = "1";
        for (int i = 0; i < e.args[1]->value; ++i) r = fmt::format("(* {} {})", r, *a);
        return r;
      }
      break;
    }
    default:
      break;
  }
  if (why->empty()) *why = "'" + expr_to_string(e) + "'";
  return std::nullopt;
}

}  // namespace

std::string StarInduction::exchanges_fun() const {
  return fmt::format("(define-fun c ((k Int)) Int {})\n", exchanges_per_level);
}

StarInduction analyze_star_induction(const Model& m) {
  StarInduction out;
  try {
    Analyzer(m).run(out);
  } catch (const Refused& r) {
    out.refusal = r.why;
    out.refusal_loc = r.loc;
    return out;
  }
  // Theorem 3: the exchanges of the levels against the header's claim, by induction on n.
  if (!m.header.steps) {
    out.steps_note = "the model claims no step count";
  } else if (m.header.steps_at_most) {
    out.steps_note = "the model claims a bound (`steps at most`), not a count";
  } else {
    std::string why;
    auto s = steps_term(*m.header.steps, &why);
    if (!s) {
      out.steps_note = "the `steps` claim is not an integer formula in n: " + why;
    } else {
      std::string defs = fmt::format("(declare-const a Bool)\n{}(define-fun S ((n Int)) Int {})\n",
                                     out.exchanges_fun(), *s);
      InductionObligation base;
      base.name = "steps-base";
      base.description =
          "steps, base: on S_2 the one level takes c(2) exchanges, and the claim S(2) says the "
          "same";
      base.script =
          "; " + base.description + "\n" + defs + "(assert (=> a (not (= (S 2) (c 2)))))\n";
      base.loc = m.header.loc;
      InductionObligation step;
      step.name = "steps-step";
      step.description =
          "steps, inductive step: for every n >= 3, S(n) = S(n-1) + c(n) (level n adds c(n) "
          "exchanges), so S(n) = c(2) + ... + c(n) = T(n)";
      step.script = "; " + step.description + "\n" + defs +
                    "(declare-const n Int)\n(assert (>= n 3))\n"
                    "(assert (=> a (not (= (S n) (+ (S (- n 1)) (c n))))))\n";
      step.witnesses = {"n"};
      step.loc = m.header.loc;
      out.obligations.push_back(std::move(base));
      out.obligations.push_back(std::move(step));
      out.steps_proved_obligations = true;
    }
  }
  return out;
}

}  // namespace collv
