// The every-p prover's symbolic reader (see every_p.hpp): the state of a rank as SMT-LIB2 terms
// over its name r, the paths of a program, and the Analyzer that reads statements and writes the
// obligations. Internal to src/smt/every_p*.cpp: the expressions and writes are in
// every_p_expr.cpp, the paths, straight-line communication and obligations in every_p_paths.cpp,
// the loops in every_p_loop.cpp and every_p_doubling.cpp.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
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
  // A rooted program's send (every_p_rooted.cpp): the condition on the iteration under which the
  // loop sends, the path it is on and that path's sends in all (both over r).
  std::string guard = "true", pc, total;
  SourceLoc loc;
};

// A rooted program's receive: its path and its source (over r).
struct RecvEvent {
  std::string pc, src;
  SourceLoc loc;
};

struct Path {
  std::string pc = "true";
  State st;
  std::vector<SendEvent> sends;
  std::string nsend = "0", nrecv = "0";  // sends and receives so far (each rank)
  std::string decls;  // constants the path introduced (loop exits), with their definitions
  int index = 0;
  std::string tag;  // a binomial tree's path ("recv-k3"): obligations are named NAME@tag
  // A rooted program's receives so far, and for each the sends in all of its sender.
  std::vector<RecvEvent> recvs;
  std::vector<std::string> sender_total;
  // A phased program's (every_p_phases.cpp): the phase statement the path is in (nullptr between
  // phases), where it ends in the path's statement list, the phase's sends and receives so far,
  // whether it is a loop, and each finished phase's rounds (its key, a term).
  const Stmt* phase = nullptr;
  std::size_t phase_end = 0;
  std::string psend = "0", precv = "0";
  bool phase_loop = false;
  std::vector<std::pair<std::string, std::string>> phase_n;
};

// Items: none (identity items), (it RANK BLOCK) the input block BLOCK of rank RANK, and (sm BLOCK
// LO N) the sum, in this order, of block BLOCK of the inputs of ranks LO, LO + 1, ..., LO + N - 1
// (mod p), N <= p: each contribution once.
// (define-fun pow2 ...) and (define-fun clog2 ...): pow2 k = 2^k for 0 <= k <= 32 (0 outside),
// clog2 x = the least c >= 0 with x <= 2^c, for x <= 2^32 (every_p_doubling.cpp).
std::string pow2_defs();
// (define-fun xor_pow2 ((x Int) (e Int)) Int ...): x XOR 2^e (x unchanged where pow2 e is 0), the
// executor's two's-complement XOR for every integer x (every_p_xor.cpp).
std::string xor_defs();
// The program's 2^E and log2(X) (rounded down) as terms: exact for 0 <= E <= 32 and 1 <= X < 2^32
// (the executor refuses E < 0 and X <= 0), an unknown value elsewhere; they need pow2_defs().
std::string pow2_int(const std::string& e);
std::string log2_int(const std::string& x);

inline const std::string kPrelude =
    "(declare-datatypes ((Item 0)) (((none) (it (rk Int) (bk Int)) (sm (sb Int) (slo Int) (sn "
    "Int)))))\n";

// With `sums sets` (every_p_halving.cpp): (ss BLOCK MEM), block BLOCK summed over the ranks q
// with MEM (a Bool over the query's free rank q).
inline const std::string kPreludeSets =
    "(declare-datatypes ((Item 0)) (((none) (it (rk Int) (bk Int)) (sm (sb Int) (slo Int) (sn "
    "Int)) (ss (ssb Int) (ssm Bool)))))\n";

// Whether obligation name n is named by a proof line's OBLIGATION o (`cases`, `abstract`): o
// itself, or o followed by its path ('@') or a case ('-'): "...-k1" does not name "...-k14".
inline bool names_obligation(const std::string& n, const std::string& o) {
  return n.rfind(o, 0) == 0 && (n.size() == o.size() || n[o.size()] == '@' || n[o.size()] == '-');
}
inline bool mentions(const std::string& t, const std::string& id) {
  return rename(t, {{id, id + "_x"}}) != t;
}

inline std::string at_block(const std::string& t, const std::string& blk) {
  return rename(t, {{"b", blk}});
}

// A term over r read at rank R (a binomial fan-in's source or destination).
inline std::string at_rank(const std::string& t, const std::string& R) {
  return rename(t, {{"r", R}});
}

// The binomial fan-in's shape, named in its refusals (every_p_fanin.cpp).
extern const char* const kFanShape;

// Collectives whose initial buffers and postconditions are in every_p_collectives.cpp.
bool more_collective(Collective c);
Buf more_input(Collective c, bool chunked);  // rank r's input buffer, by block (or chunk)

// (mod X p) by cases (a binomial tree's: every_p_expr.cpp): exact for every p > 0.
inline std::string mod_p_cases(const std::string& x) {
  const std::string v = "modp";
  return fmt::format(
      "(let (({} {})) (ite (and (<= 0 {}) (< {} p)) {} (ite (and (<= p {}) (< {} (* 2 p))) (- {} "
      "p) (ite (and (<= (- p) {}) (< {} 0)) (+ {} p) (mod {} p)))))",
      v, x, v, v, v, v, v, v, v, v, v, v);
}

// The proof's term with every (mod X p) written by mod_p_cases (every_p_expr.cpp): the same
// value for p > 0, read linearly by Z3 where one addition or subtraction of p brings X in range.
std::string mod_p_by_cases(const std::string& t);

struct TreeCall;  // every_p_tree.hpp
struct TreeTerms;
struct TreeFront;

class Analyzer {
 public:
  Analyzer(const Model& m, const EveryPProof& pf, EveryPAnalysis& out)
      : m_(m), pf_(pf), out_(out) {}

  void run();

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
              const SourceLoc& loc);

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

  std::string header_term(const Expr& e);

  std::string divisor(const Lin& d, const Expr& e);

  Lin int_expr(const Expr& e, const State& st);

  std::string bool_expr(const Expr& e, const State& st);

  // A slice's block range [A, B] (inclusive): v[A * count .. (B + 1) * count - 1].
  std::pair<std::string, std::string> blocks(const Expr& lo, const Expr& hi, const State& st,
                                             const SourceLoc& loc);

  const Buf& data_var(const std::string& name, const State& st, const SourceLoc& loc) {
    auto f = st.data.find(name);
    if (f == st.data.end()) refuse("'" + name + "' is not a data variable with a value here", loc);
    return f->second;
  }

  // A data expression's value; `reads` collects (goal, what) for every slice read (in bounds).
  Buf data_expr(const Expr& e, const State& st,
                std::vector<std::pair<std::string, std::string>>* reads);

  // Writes `val` into target (a whole variable or a block slice). Returns the length goal (the
  // value fills the slice exactly) or "true".
  std::string write(const Expr& target, const Buf& val, State& st);

  // ---- statements ----

  void explore(std::vector<const Stmt*> todo, std::size_t at, Path path);

  void straight(const Stmt& s, Path& path);

  const EveryPInvariant* invariant(const std::string& loop, const std::string& var,
                                   const std::string& part);

  std::string inv_term(const EveryPInvariant& inv, const std::string& counter,
                       const std::string& iter);

  static void assigned(const std::vector<StmtPtr>& body, std::set<std::string>& out);

  // What r receives as its message of index K (an SMT term): the send of that index of its
  // source src_r, among the path's sends so far (so every receive is matched by an earlier send
  // in program order: with buffered sends, matched rounds cannot deadlock). In loop cur_loop at
  // iteration `iter`, the loop's own send counts for earlier iterations (and the same one when it
  // precedes the receive).
  struct Incoming {
    std::string exists = "false", len = "0", blk = "none", dst = "(- 1)", know = "false";
  };
  Incoming incoming(const Path& path, const std::string& K, int cur_loop, const std::string& iter);

  // A receive of r (state st) as its message of index K: matching, the slice it fills, NODUP;
  // the obligations go to `obs` as (name, what, goal, data?) for the caller's hypotheses.
  struct Pending {
    std::string name, what, goal;
    bool data;
    SourceLoc loc;
  };
  void do_receive(const Stmt& b, State& st, const Path& path, const std::string& K, int cur_loop,
                  const std::string& iter, std::vector<Pending>& obs, std::string& src);

  void straight_comm(const Stmt& s, Path& path);

  static bool reads_name(const Expr& e, const std::string& n) {
    if (e.kind == ExprKind::Name && e.name == n) return true;
    for (const auto& a : e.args)
      if (a && reads_name(*a, n)) return true;
    return false;
  }
  // v's first mention in body order is a write of the whole variable that does not read it.
  static bool write_first(const std::vector<StmtPtr>& body, const std::string& v);

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
  // every_p_rooted.cpp: rooted collectives, whose ranks take paths split on my_id; read twice
  // (the first reading collects every path's sends and receives, the second matches them).
  bool pass1_ = false;
  std::vector<SendEvent> rsends_;
  std::vector<RecvEvent> rrecvs_;
  std::vector<Path> rfinal_;  // the second reading's paths at their end
  int rseq_ = 0;
  void rooted_run(const std::vector<const Stmt*>& todo, const Path& p0);
  void rooted_send(const Stmt& s, Path& path);
  void rooted_receive(const Stmt& s, Path& path);
  void rooted_loop(const Stmt& s, Path& path);
  void rooted_finish(const Path& path);
  void rooted_global();
  std::string rooted_match(const SendEvent& e, const std::string& S, const std::string& J);
  // every_p_xor.cpp: XOR with a power of two, an `if` of assignments in a round loop's body
  // (merged into if-then-else terms), and the per-iteration split of a while loop's queries.
  std::string xor_term(const Lin& a, const Lin& b, const Expr& e);
  std::string pow_term(const Lin& a, const Lin& b, const Expr& e);  // 2^E
  std::string log2_term(const Lin& a, const Expr& e);               // log2(X), rounded down
  static bool assignments_only(const std::vector<StmtPtr>& body);
  using AssignFn = std::function<void(const Stmt&, State&)>;
  void branch_assign(const Stmt& s, State& st, const AssignFn& assign,
                     std::vector<std::pair<std::string, std::string>>& reads,
                     std::vector<std::pair<std::string, SourceLoc>>& fits);
  struct SplitLoop {
    std::string iter, exit;
    int n = 0;
    std::string on;  // the term over k whose value the cases fix ("": k itself)
  };
  std::vector<SplitLoop> splits_;
  void note_split(const std::string& lname, int id, const SourceLoc& loc);
  void split_obligations();
  void case_obligations();  // the proof's `cases` lines, after split_obligations
  // every_p_abstract.cpp: the proof's `abstract pof2` lines, after case_obligations
  void abstract_obligations();
  // every_p_tree.cpp: a binomial tree (a receive loop left by `break`, then a send loop), its
  // loops unrolled with the mask as a numeral; the root's sends for steps-root.
  void tree(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path);
  // every_p_tree_search.cpp: Open MPI's shape, a `while` of assignments (the parent's bit) before
  // a straight receive, or the send loop alone (the root's path).
  void tree_search(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path);
  // The shared parts (every_p_tree.cpp): the proof's terms, their values at an event (`recv`: at a
  // receive, with the proof's `receive NAME VAR`), the send loops and the obligations.
  TreeTerms tree_terms(const Path& path, const SourceLoc& loc);
  std::string tree_key(const TreeTerms& tt, const State& st, const SourceLoc& loc, bool recv);
  Buf tree_msg(const TreeTerms& tt, const State& st, const std::string& rr, const SourceLoc& loc,
               bool recv);
  std::string tree_round(const TreeTerms& tt, const State& st, const SourceLoc& loc, bool recv,
                         const std::string& src = "");
  std::string tree_lem(bool prefix, const std::vector<std::string>& ranks, int maxj);
  void tree_back(const std::vector<const Stmt*>& todo, const Path& path, TreeFront& f,
                 const TreeTerms& tt);
  std::string tree_root_ = "false";
  // every_p_fanin.cpp: a binomial fan-in (MPICH's gather and reduce: receives from the children
  // rel + 2^j while bit j of rel is 0, then one send to the parent and `break`), unrolled with
  // the proof's holder invariant at every iteration; then the statements after the loop.
  static bool fanin_shape(const Stmt& w);
  static bool fanin_ompi(const Stmt& w);   // Open MPI's: the bit test in the loop's condition
  static bool is_bit_test(const Expr& e);  // `(V AND mask) = 0`, V a variable
  std::pair<bool, bool> fanin_split(const Stmt& s, const Path& P, Path& T, Path& E);
  const Stmt* fanin_presend(std::vector<const Stmt*> seq, Path& P, std::vector<const Stmt*>& after);
  // A bit test of a tree's loop with the tested variable v replaced by the free name bx (the
  // prefix form's `bits-prefix-kK` states it for every integer bx).
  std::string test_over_bx(const Expr& cond, const State& st, const std::string& v);
  void fanin(const std::vector<const Stmt*>& todo, std::size_t at, const Path& path);
  // The statements after the fan-in's loop on one path: assignments, `for` loops and `if`s
  // without communication, and at most one send then at most one receive (MPICH's reduce: rank 0
  // sends the result to a root other than 0). An `if` around communication that the ranks of a
  // path take both ways splits it. The first reading (collect) gathers every path's sends and
  // receives as templates over r; the second matches them and writes the obligations.
  struct FanEvent {
    std::string pc, peer;  // the path's condition and the peer, over r
    Buf val;               // a send's value
    SourceLoc loc;
  };
  struct FanTail {
    bool collect = true;
    std::vector<FanEvent> sends, recvs;
    std::string bx, round;  // the tested value (bit lemmas at a peer) and the proof's round-after
  };
  struct FanPath {
    Path P;
    std::string loop_dst;             // where the rank sent in the loop ("" if it did not)
    std::vector<std::string> rounds;  // the rounds of its events after the loop
    SourceLoc loc;                    // its last event after the loop
    bool sent = false, received = false;
  };
  void fanin_tail(const std::vector<const Stmt*>& rest, std::size_t i, FanPath fp, FanTail& ft,
                  std::vector<FanPath>& out);
  void fanin_tail_send(const Stmt& s, FanPath& fp, FanTail& ft);
  void fanin_tail_receive(const Stmt& s, FanPath& fp, FanTail& ft);
  void fanin_nodup(const Path& P, const Buf& msg, const SourceLoc& loc);
  bool fanin_prune(const Path& P, const std::string& name, const SourceLoc& loc);
  std::set<std::string> bit_xs_;  // the values (over r) whose bits the program tests
  // A binomial tree's readings on every path before its loops, from the first reading: the
  // second matches each receive against the sends of all of them (every_p_tree.cpp).
  std::vector<std::shared_ptr<TreeCall>> tree_calls_;
  std::set<int> shift_ks_;  // the bits-shift-kK lemmas stated (a round term over the sender)
  bool tree_mod_ = false;   // a rooted program with a while loop: mod p by cases (every_p_expr.cpp)
  // every_p_phases.cpp: an unrooted program whose ranks take different rounds (an `if` on my_id
  // around communication: MPICH's non-power-of-two fold) is read as phases, and each receive is
  // matched with a send of the same phase and index on the same channel, over every path. The
  // program is read until the sends and receives of every path reach a fixed point.
  bool phased_ = false;
  bool my_id_if_ = false;  // the plain reading stopped at an `if` on my_id around communication
  struct PhaseEvent {
    bool send = false, in_loop = false;
    std::string phase, idx = "0", lo, hi, iter, pc, peer, len = "0", blk = "none";
    SourceLoc loc;
  };
  std::vector<PhaseEvent> pev_prev_, pev_cur_;
  std::map<std::string, std::string> pdecl_;  // a loop exit's constant -> its declaration
  std::map<const Stmt*, int> ploop_id_;
  std::map<int, std::pair<std::string, std::string>> ploop_bounds_;  // a loop's lot and hit
  std::map<std::string, const Stmt*> phase_stmt_;  // a phase's key (its line) -> its statement
  std::map<std::string, bool> pruned_;             // an `infeasible-...` query -> Z3 said unsat
  std::vector<Path> pfinal_;                       // the paths at their end (rounds of each phase)
  int loop_id(const Stmt& s);
  void phased_run(const std::vector<const Stmt*>& todo, const Path& p0);
  void phased_if(const Stmt& s, const std::string& c, const Path& path,
                 std::vector<bool>& feasible);
  // Z3's answer to a pruning query (its goal false): unsat, asked once per script.
  bool proved_now(const std::string& script);
  void phase_open(const Stmt& s, Path& path, std::size_t end);
  void phase_close(Path& path);
  void phase_comm(const Stmt& s, Path& path, bool loop);
  void phase_event(const PhaseEvent& e, const Path& path);
  // The condition that event e happens at the phase's index K; a loop's counter is renamed in
  // `ren` to the iteration that index falls on.
  static std::string phase_at(const PhaseEvent& e, const std::string& K,
                              std::map<std::string, std::string>& ren);
  Incoming phased_incoming(const Path& path, const std::string& K);
  std::string phase_received(const Path& path, const std::string& dst, const std::string& K);
  std::string phase_decls(const std::string& text, const std::string& have);
  void phased_global();
  static bool has_comm(const std::vector<StmtPtr>& body);
  // every_p_halving.cpp: sums over sets of ranks (`sums sets`), blocks a closed form leaves
  // unknown (`care`), and a round loop's send or receive under an `if` that always holds.
  bool sets() const { return pf_.set_sums; }
  std::set<std::string> havocs_;  // the unknown-block functions the queries may name
  void sets_check();
  Buf set_combine(const Buf& x, const Buf& y, const Expr& e,
                  std::vector<std::pair<std::string, std::string>>* reads);
  std::string set_decls(const std::string& body) const;
  void flatten_guards(const Stmt& loop, std::vector<const Stmt*>& flat,
                      std::map<const Stmt*, const Stmt*>& guard_of);
  static bool mentions_in(const std::vector<StmtPtr>& body, const std::string& v);
  bool phased_skip(const Stmt& s, const Path& path);
  static bool write_first_flat(const std::vector<const Stmt*>& body,
                               const std::map<const Stmt*, const Stmt*>& guard_of,
                               const std::string& v);
};

}  // namespace collv::everyp
