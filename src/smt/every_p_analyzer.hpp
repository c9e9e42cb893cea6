// The every-p prover's symbolic reader (see every_p.hpp): the state of a rank as SMT-LIB2 terms
// over its name r, the paths of a program, and the Analyzer that reads statements and writes the
// obligations. Internal to src/smt/every_p*.cpp.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "lang/check.hpp"
#include "smt/every_p.hpp"
#include "smt/every_p_terms.hpp"

namespace collv::everyp {

struct Refused {
  std::string why;
  SourceLoc loc;
};

// An integer value c * count + k (c, k SMT-LIB2 terms): slices in whole blocks of count elements
// are recognised exactly (k folds to 0 at a block start and to -1 at a block end).
struct Lin {
  std::string c = "0", k = "0";
};

inline std::string render(const Lin& v) { return add(mul(v.c, "count"), v.k); }

// A data buffer of one rank, by block: its length in blocks and the item in block `b` (a term
// over the free name b, meaningful for 0 <= b < len).
struct Buf {
  std::string len, blk;
};

// A rank's state: terms over the rank's name `r` (instantiated for another rank by renaming r).
struct State {
  std::map<std::string, Lin> ints;
  std::map<std::string, Buf> data;
  std::set<std::string> dead;  // loop counters after their loop
  // A barrier's causal knowledge (a Bool term over r and a free rank q): r has heard, through a
  // chain of messages, from rank q's entry. Every rank starts knowing only itself.
  std::string know = "(= q r)";
};

// A send of the path, for the receives that match it by index (the k-th receive of every rank
// takes the k-th send of its source). A send in a loop stands for one send per iteration.
struct SendEvent {
  bool in_loop = false;
  std::string idx;  // its index; in a loop, the index of the first iteration's send
  std::string lo, hi, iter;
  int loop_id = 0;
  bool before_recv = false;    // in a loop: the send precedes the body's receive
  std::string dst, len, blk;   // templates over r (and iter)
  std::string know = "false";  // a barrier's: what the sender knows when it sends (over r, q)
};

struct Path {
  std::string pc = "true";
  State st;
  std::vector<SendEvent> sends;
  std::string nsend = "0", nrecv = "0";  // sends and receives so far (each rank)
  std::string decls;  // constants the path introduced (loop exits), with their definitions
  int index = 0;
};

// Items: none (identity items), (it RANK BLOCK) the input block BLOCK of rank RANK, and (sm BLOCK
// LO N) the sum, in this order, of block BLOCK of the inputs of ranks LO, LO + 1, ..., LO + N - 1
// (mod p), N <= p: each contribution once.
// (define-fun pow2 ...) and (define-fun clog2 ...): pow2 k = 2^k for 0 <= k <= 32 (0 outside),
// clog2 x = the least c >= 0 with x <= 2^c, for x <= 2^32 (every_p_doubling.cpp).
std::string pow2_defs();

inline const std::string kPrelude =
    "(declare-datatypes ((Item 0)) (((none) (it (rk Int) (bk Int)) (sm (sb Int) (slo Int) (sn "
    "Int)))))\n";

inline bool mentions(const std::string& t, const std::string& id) {
  return rename(t, {{id, id + "_x"}}) != t;
}

inline std::string at_block(const std::string& t, const std::string& blk) {
  return rename(t, {{"b", blk}});
}

// Collectives whose initial buffers and postconditions are in every_p_collectives.cpp.
bool more_collective(Collective c);
Buf more_input(Collective c, bool chunked);  // rank r's input buffer, by block (or chunk)

class Analyzer {
 public:
  Analyzer(const Model& m, const EveryPProof& pf, EveryPAnalysis& out)
      : m_(m), pf_(pf), out_(out) {}

  void run() {
    const auto& h = m_.header;
    rooted_ = collective_is_rooted(h.collective);
    barrier_ = h.collective == Collective::Barrier;
    if (h.collective != Collective::Allgather && h.collective != Collective::ReduceScatter &&
        !more_collective(h.collective) && !barrier_)
      throw Refused{fmt::format("collective {} is not in the fragment yet (allgather, "
                                "reduce-scatter, barrier, alltoall and allreduce only)",
                                collective_name(h.collective)),
                    h.loc};
    if (h.elements) throw Refused{"an `elements` line is not in the fragment", h.loc};
    if (chunked() && h.collective != Collective::Allreduce)
      throw Refused{"the proof's `chunks` line applies to allreduce only", h.loc};
    base_ = "(and (>= p 2) (< p 2147483648) (>= count 0) (< count 2147483648) (<= 0 r) (< r p)";
    base_ += rooted_ ? " (<= 0 root) (< root p))" : " (= root 0))";
    if (h.requires_) base_ = fmt::format("(and {} {})", base_, header_term(*h.requires_));
    out_.assumptions = {"2 <= p < 2^31", "0 <= count < 2^31", "0 <= my_id < p"};
    if (rooted_) out_.assumptions.push_back("0 <= root < p");
    if (h.requires_) out_.assumptions.push_back("requires " + expr_to_string(*h.requires_));
    Path p0;
    p0.st.data[h.input] = more_collective(h.collective) ? more_input(h.collective, chunked())
                          : h.collective == Collective::Allgather ? Buf{"1", "(it r 0)"}
                          : barrier_                              ? Buf{"0", "none"}
                                                                  : Buf{"p", "(sm b r 1)"};
    if (h.output != h.input) p0.st.data[h.output] = Buf{"0", "none"};
    std::vector<const Stmt*> todo;
    for (const auto& s : m_.body) todo.push_back(s.get());
    explore(todo, 0, p0);
    out_.paths = paths_;
  }

 private:
  const Model& m_;
  const EveryPProof& pf_;
  EveryPAnalysis& out_;
  bool rooted_ = false;
  bool barrier_ = false;  // tracks State::know; the postcondition is causal
  std::string base_;
  int paths_ = 0;
  std::map<std::string, int> loop_seen_;  // counter name -> loops with it so far
  std::map<const Stmt*, std::string> loop_name_;

  // ---- obligations ----

  void oblige(const Path& path, const std::string& name, const std::string& what,
              const std::string& decls, const std::string& hyp, const std::string& goal,
              const SourceLoc& loc) {
    EveryPObligation ob;
    ob.name = path.index > 0 ? fmt::format("{}@path{}", name, path.index + 1) : name;
    // Names are unique (each is a certificate's file name): a second read of a loop gets "-2".
    for (int n = 2; std::any_of(out_.obligations.begin(), out_.obligations.end(),
                                [&](const EveryPObligation& o) { return o.name == ob.name; });
         ++n)
      ob.name = fmt::format(
          "{}-{}", path.index > 0 ? fmt::format("{}@path{}", name, path.index + 1) : name, n);
    ob.description = what;
    ob.loc = loc;
    std::string body =
        "(declare-const p Int)\n(declare-const count Int)\n(declare-const root Int)\n"
        "(declare-const r Int)\n(declare-const a Bool)\n";
    body += std::string(barrier_ ? "(declare-const q Int)\n" : "") + path.decls + decls +
            fmt::format("(assert {})\n(assert {})\n", base_, path.pc);
    if (hyp != "true") body += fmt::format("(assert {})\n", hyp);
    body += fmt::format("(assert (=> a (not {})))\n", goal);
    // Powers of two and ceil(log2 x) on the 32-bit range (x < 2^31), as finite case splits (the
    // doubling loops' masks and the `clog2` of headers stay quantifier-free and linear), only in
    // the queries that use them: an unused definition changed Z3's search enough to take NCCL's
    // all-reduce consecution from 12 s to over 60 s.
    const bool pw =
        body.find("pow2") != std::string::npos || body.find("clog2") != std::string::npos;
    ob.script = fmt::format("; {}\n; {} ({})\n", ob.name, what, loc.str()) + kPrelude +
                (pw ? pow2_defs() : std::string()) + body;
    out_.obligations.push_back(std::move(ob));
  }

  // ---- expressions ----

  // Items A and B share a contribution: equal, or sums of the same block whose ranges of ranks
  // meet (rank slo(A) + k is in B's range, for the query's free k).
  static std::string overlap(const std::string& A, const std::string& B) {
    return fmt::format(
        "(or (= {} {}) (and ((_ is sm) {}) ((_ is sm) {}) (= (sb {}) (sb {})) (<= 0 k) (< k (sn "
        "{})) (< (mod (- (+ (slo {}) k) (slo {})) p) (sn {}))))",
        A, B, A, B, A, B, A, A, B, B);
  }

  static std::string read_name(const std::string& what, const std::string& where) {
    return (what.rfind("combine", 0) == 0 ? "combine-"
            : what.rfind("chunk", 0) == 0 ? "chunk-"
                                          : "read-") +
           where;
  }

  [[noreturn]] void refuse(const std::string& why, const SourceLoc& loc) {
    throw Refused{why, loc};
  }

  std::string header_term(const Expr& e) {
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
          return fmt::format(
              "(ite (and (>= {} 1) (<= {} 4294967296)) (clog2 {}) (clog2_undefined {}))", x, x, x,
              x);
        }
        break;
      case ExprKind::Unary:
        if (e.op == Op::Neg) return sub("0", header_term(*e.args[0]));
        if (e.op == Op::Not) return fmt::format("(not {})", header_term(*e.args[0]));
        break;
      case ExprKind::Binary: {
        std::string a = header_term(*e.args[0]), b = header_term(*e.args[1]);
        switch (e.op) {
          case Op::Add:
            return add(a, b);
          case Op::Sub:
            return sub(a, b);
          case Op::Mul:
            return mul(a, b);
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

  std::string divisor(const Lin& d, const Expr& e) {
    auto v = as_int(d.k);
    if (d.c == "0" && (d.k == "p" || (v && *v > 0))) return d.k;
    refuse("division or mod by '" + expr_to_string(e) +
               "': only by p or a positive literal is in the fragment",
           expr_start(e));
  }

  Lin int_expr(const Expr& e, const State& st) {
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
        break;
      case ExprKind::Call:
        // len(v): v's length in elements, its blocks times count.
        if (e.name == "len" && e.args.size() == 1 && e.args[0]->kind == ExprKind::Name)
          return Lin{data_var(e.args[0]->name, st, e.loc).len, "0"};
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
            return Lin{"0", op2(e.op == Op::Mod ? "mod" : "div", a.k, d)};
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

  std::string bool_expr(const Expr& e, const State& st) {
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
      if (f != cmp.end())
        return op2(f->second, render(int_expr(*e.args[0], st)), render(int_expr(*e.args[1], st)));
    }
    refuse("the condition '" + expr_to_string(e) + "' is outside the fragment", expr_start(e));
  }

  // A slice's block range [A, B] (inclusive): v[A * count .. (B + 1) * count - 1].
  std::pair<std::string, std::string> blocks(const Expr& lo, const Expr& hi, const State& st,
                                             const SourceLoc& loc) {
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

  const Buf& data_var(const std::string& name, const State& st, const SourceLoc& loc) {
    auto f = st.data.find(name);
    if (f == st.data.end()) refuse("'" + name + "' is not a data variable with a value here", loc);
    return f->second;
  }

  // A data expression's value; `reads` collects (goal, what) for every slice read (in bounds).
  Buf data_expr(const Expr& e, const State& st,
                std::vector<std::pair<std::string, std::string>>* reads) {
    if (e.kind == ExprKind::EmptyBuf) return Buf{"0", "none"};
    if (e.kind == ExprKind::Name) return data_var(e.name, st, e.loc);
    if (e.kind == ExprKind::Slice && e.args[0]->kind == ExprKind::Name) {
      const Buf& v = data_var(e.args[0]->name, st, e.loc);
      auto [A, B] = blocks(*e.args[1], *e.args[2], st, e.loc);
      if (chunked()) reads->emplace_back(take_chunk_goal(), chunk_what(e.loc));
      reads->emplace_back(fmt::format("(and (>= {} 0) (<= {} (+ {} 1)) (=> (<= {} {}) (< {} {})))",
                                      A, A, B, A, B, B, v.len),
                          fmt::format("the slice of {} at {} lies inside the buffer",
                                      e.args[0]->name, e.loc.str()));
      return Buf{add(sub(B, A), "1"), at_block(v.blk, add(A, "b"))};
    }
    if (e.kind == ExprKind::Binary && e.op == Op::Union) {
      // a ∪ b: a's blocks, then b's.
      Buf x = data_expr(*e.args[0], st, reads), y = data_expr(*e.args[1], st, reads);
      return Buf{add(x.len, y.len), fmt::format("(ite (< b {}) {} {})", x.len, x.blk,
                                                at_block(y.blk, sub("b", x.len)))};
    }
    if (e.kind == ExprKind::Binary && e.op == Op::Add) {
      // a + b, block by block: two sums of the same block over adjacent ranges of ranks (the
      // left one first; either way round under `operator commutative`), each contribution once.
      Buf x = data_expr(*e.args[0], st, reads), y = data_expr(*e.args[1], st, reads);
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

  // Writes `val` into target (a whole variable or a block slice). Returns the length goal (the
  // value fills the slice exactly) or "true".
  std::string write(const Expr& target, const Buf& val, State& st) {
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

  // ---- statements ----

  void explore(std::vector<const Stmt*> todo, std::size_t at, Path path) {
    while (at < todo.size()) {
      const Stmt& s = *todo[at];
      switch (s.kind) {
        case StmtKind::Assign:
          straight(s, path);
          ++at;
          continue;
        case StmtKind::If: {
          std::string c = bool_expr(*s.cond, path.st);
          if (mentions(c, "r"))
            refuse(
                "an `if` whose condition depends on my_id, around communication or data, is "
                "outside the fragment",
                s.loc);
          if (++paths_ > 64) refuse("more than 64 paths", s.loc);
          std::vector<const Stmt*> t2(todo.begin(), todo.begin() + static_cast<long>(at));
          std::vector<const Stmt*> e2 = t2;
          for (const auto& x : s.body) t2.push_back(x.get());
          for (const auto& x : s.else_body) e2.push_back(x.get());
          std::size_t then_at = t2.size() - s.body.size(), else_at = e2.size() - s.else_body.size();
          for (std::size_t k = at + 1; k < todo.size(); ++k) {
            t2.push_back(todo[k]);
            e2.push_back(todo[k]);
          }
          Path pt = path, pe = path;
          pt.pc = fmt::format("(and {} {})", path.pc, c);
          pe.pc = fmt::format("(and {} (not {}))", path.pc, c);
          pe.index = paths_;
          explore(t2, then_at, pt);
          explore(e2, else_at, pe);
          return;
        }
        case StmtKind::For:
          if (chunked()) return split_loop(s, todo, at, path);
          loop(s, path);
          ++at;
          continue;
        case StmtKind::While:
          while_loop(s, path);
          ++at;
          continue;
        case StmtKind::Send:
        case StmtKind::Receive:
          if (s.along_link) refuse("`along link` is outside the fragment", s.loc);
          straight_comm(s, path);
          ++at;
          continue;
        default:
          refuse(
              "this statement is outside the fragment (assignments, `if` on conditions free of "
              "my_id, and `for` loops of send-receive rounds)",
              s.loc);
      }
    }
    finish(path);
  }

  void straight(const Stmt& s, Path& path) {
    if (s.kind != StmtKind::Assign) refuse("outside the fragment here", s.loc);
    bool data = s.value->type == Type::Data || (s.target->kind != ExprKind::Name) ||
                s.value->kind == ExprKind::EmptyBuf;
    if (!data) {
      path.st.ints[s.target->name] = int_expr(*s.value, path.st);
      path.st.dead.erase(s.target->name);
      return;
    }
    std::vector<std::pair<std::string, std::string>> reads;
    Buf v = data_expr(*s.value, path.st, &reads);
    std::string fits = write(*s.target, v, path.st);
    for (const auto& [g, what] : reads)
      oblige(path, read_name(what, fmt::format("line-{}", s.loc.line)), what,
             "(declare-const b Int)\n", "(> count 0)", g, s.loc);
    if (fits != "true")
      oblige(path, fmt::format("assign-length-line-{}", s.loc.line),
             "the assigned value fills the slice exactly", "", "(> count 0)", fits, s.loc);
  }

  const EveryPInvariant* invariant(const std::string& loop, const std::string& var,
                                   const std::string& part) {
    for (const auto& i : pf_.invariants)
      if (i.loop == loop && i.var == var && i.part == part) return &i;
    return nullptr;
  }

  std::string inv_term(const EveryPInvariant& inv, const std::string& counter,
                       const std::string& iter) {
    std::set<std::string> vars = {"r", "p", "count", "root", counter};
    if (inv.part == "block") vars.insert("b");
    if (inv.part == "heard") vars.insert("q");
    std::string why = check_user_term(inv.term, vars);
    if (!why.empty())
      throw Refused{fmt::format("{}:{}: invariant term: {}", pf_.path, inv.line, why),
                    SourceLoc{pf_.path, inv.line, 1}};
    return rename(inv.term, {{counter, iter}});
  }

  static void assigned(const std::vector<StmtPtr>& body, std::set<std::string>& out) {
    for (const auto& s : body) {
      if (s->kind == StmtKind::Assign || s->kind == StmtKind::Receive)
        out.insert(s->target->kind == ExprKind::Name ? s->target->name : s->target->args[0]->name);
      assigned(s->body, out);
      assigned(s->else_body, out);
    }
  }

  // What r receives as its message of index K (an SMT term): the send of that index of its
  // source src_r, among the path's sends so far (so every receive is matched by an earlier send
  // in program order: with buffered sends, matched rounds cannot deadlock). In loop cur_loop at
  // iteration `iter`, the loop's own send counts for earlier iterations (and the same one when it
  // precedes the receive).
  struct Incoming {
    std::string exists = "false", len = "0", blk = "none", dst = "(- 1)", know = "false";
  };
  Incoming incoming(const Path& path, const std::string& K, int cur_loop, const std::string& iter) {
    Incoming in;
    for (const auto& e : path.sends) {
      std::string cond;
      std::map<std::string, std::string> ren = {{"r", "src_r"}};
      if (!e.in_loop) {
        cond = op2("=", K, e.idx);
      } else {
        std::string jp = add(e.lo, sub(K, e.idx));
        cond = fmt::format("(and (<= {} {}) (<= {} {}))", e.lo, jp, jp, e.hi);
        if (e.loop_id == cur_loop)
          cond = fmt::format("(and {} ({} {} {}))", cond, e.before_recv ? "<=" : "<", jp, iter);
        ren[e.iter] = jp;
      }
      in.exists = fmt::format("(or {} {})", cond, in.exists);
      in.len = ite(cond, rename(e.len, ren), in.len);
      in.blk = ite(cond, rename(e.blk, ren), in.blk);
      in.dst = ite(cond, rename(e.dst, ren), in.dst);
      if (barrier_) in.know = ite(cond, rename(e.know, ren), in.know);
    }
    return in;
  }

  // A receive of r (state st) as its message of index K: matching, the slice it fills, NODUP;
  // the obligations go to `obs` as (name, what, goal, data?) for the caller's hypotheses.
  struct Pending {
    std::string name, what, goal;
    bool data;
    SourceLoc loc;
  };
  void do_receive(const Stmt& b, State& st, const Path& path, const std::string& K, int cur_loop,
                  const std::string& iter, std::vector<Pending>& obs, std::string& src) {
    src = render(int_expr(*b.peer, st));
    Incoming in = incoming(path, K, cur_loop, iter);
    obs.push_back({fmt::format("match-line-{}", b.loc.line),
                   "r's source is a rank whose send of the same index (an earlier statement) "
                   "goes to r",
                   fmt::format("(and {} (<= 0 src_r) (< src_r p) (= {} r))", in.exists, in.dst),
                   false, b.loc});
    if (m_.header.nodup)
      for (const auto& [name, buf] : st.data)
        obs.push_back(
            {fmt::format("nodup-{}-line-{}", name, b.loc.line),
             fmt::format("no item r receives at line {} is one r already holds in {}", b.loc.line,
                         name),
             fmt::format("(not (and (<= 0 t) (< t {}) (not (= {} none)) (<= 0 b) (< b {}) {}))",
                         in.len, at_block(in.blk, "t"), buf.len,
                         overlap(buf.blk, at_block(in.blk, "t"))),
             true, b.loc});
    std::string f = write(*b.target, Buf{in.len, in.blk}, st);
    // A barrier's receive: r now knows what its source knew when it sent (the send of the same
    // index, an earlier statement of the source).
    if (barrier_) st.know = fmt::format("(or {} {})", st.know, in.know);
    if (f != "true")
      obs.push_back({fmt::format("fill-line-{}", b.loc.line),
                     "the message fills the receive's slice exactly", f, true, b.loc});
  }

  void straight_comm(const Stmt& s, Path& path) {
    if (s.kind == StmtKind::Send) {
      SendEvent e;
      e.idx = path.nsend;
      e.dst = render(int_expr(*s.peer, path.st));
      std::vector<std::pair<std::string, std::string>> reads;
      Buf m = data_expr(*s.value, path.st, &reads);
      e.len = m.len;
      e.blk = m.blk;
      e.know = path.st.know;
      for (const auto& [g, what] : reads)
        oblige(path, read_name(what, fmt::format("line-{}", s.loc.line)), what,
               "(declare-const b Int)\n", "(> count 0)", g, s.loc);
      path.sends.push_back(e);
      path.nsend = add(path.nsend, "1");
      return;
    }
    std::vector<Pending> obs;
    std::string src;
    std::string K = path.nrecv;
    State st = path.st;
    do_receive(s, st, path, K, -1, "", obs, src);
    std::string decls =
        "(declare-const src_r Int)\n(declare-const b Int)\n(declare-const t Int)\n(declare-const "
        "k Int)\n";
    for (const auto& o : obs)
      oblige(path, o.name, o.what, decls,
             o.data ? fmt::format("(and (= src_r {}) (> count 0))", src)
                    : fmt::format("(= src_r {})", src),
             o.goal, o.loc);
    // The state goes on without the query's name for the source: its term, over r.
    std::string srcp = "(" + std::string("+ 0 ") + src + ")";
    for (auto& [n, l] : st.ints)
      l = Lin{rename(l.c, {{"src_r", srcp}}), rename(l.k, {{"src_r", srcp}})};
    for (auto& [n, bf] : st.data)
      bf = Buf{rename(bf.len, {{"src_r", srcp}}), rename(bf.blk, {{"src_r", srcp}})};
    st.know = rename(st.know, {{"src_r", srcp}});
    path.st = st;
    path.nrecv = add(path.nrecv, "1");
  }

  static bool reads_name(const Expr& e, const std::string& n) {
    if (e.kind == ExprKind::Name && e.name == n) return true;
    for (const auto& a : e.args)
      if (a && reads_name(*a, n)) return true;
    return false;
  }
  // v's first mention in body order is a write of the whole variable that does not read it.
  static bool write_first(const std::vector<StmtPtr>& body, const std::string& v) {
    for (const auto& s : body) {
      bool writes = (s->kind == StmtKind::Assign || s->kind == StmtKind::Receive) &&
                    s->target->kind == ExprKind::Name && s->target->name == v;
      bool reads = (s->value && reads_name(*s->value, v)) || (s->peer && reads_name(*s->peer, v)) ||
                   (s->target && s->target->kind != ExprKind::Name && reads_name(*s->target, v));
      if (reads) return false;
      if (writes) return true;
    }
    return false;
  }

  // A round loop: `for` (every_p_loop.cpp), or `while` with a ghost iteration counter k and the
  // trip count the proof states (every_p_doubling.cpp); both run round_loop on the body.
  struct LoopSpec {
    std::string lname;           // the proof's name for the loop: the counter, or `while`
    std::string counter;         // the name the proof's terms use for the iteration
    bool ghost = false;          // a while loop's counter: not a program variable
    std::string lot, hit;        // first and last iteration (terms free of r)
    const Expr* cond = nullptr;  // a while loop's condition: holds at lot..hit, not at hit + 1
    int id = 0;
  };
  void loop(const Stmt& s, Path& path);
  void while_loop(const Stmt& s, Path& path);
  std::string while_holds(const LoopSpec& spec, const State& st);
  void while_trips(const Stmt& s, const Path& path, const LoopSpec& spec, const State& head,
                   const State& exit);
  void round_loop(const Stmt& s, Path& path, const LoopSpec& spec);
  void finish(const Path& path);
  // every_p_collectives.cpp: the collectives after allgather and reduce-scatter, and chunks.
  void more_postcondition(const Path& path, const Buf& out);
  bool chunked() const { return !pf_.chunk_unit.empty(); }
  void split_loop(const Stmt& s, const std::vector<const Stmt*>& todo, std::size_t at, Path path);
  std::string chunk_unit_term_;      // the unit's value at the first slice
  std::string chunk_goal_ = "true";  // the last chunk slice's goal, until its caller takes it
  std::pair<std::string, std::string> chunk_slice(const Expr& lo, const Expr& hi, const State& st,
                                                  const SourceLoc& loc);
  std::string take_chunk_goal() { return std::exchange(chunk_goal_, "true"); }
  static std::string chunk_what(const SourceLoc& loc);
  static std::string chunk_home(const std::string& item, const std::string& c);
};

}  // namespace collv::everyp
