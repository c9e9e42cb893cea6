// The every-p prover's `while` loops (docs/smt.md, "Every p from the model", while loops): a loop
// whose trip count is not written in the program (MPICH's `while mask < p`, mask doubling) is
// read as iterations k = 0, 1, ..., T - 1 of a ghost counter k, where the proof states T (a term
// in p, count and root, so every rank runs the same rounds) and the closed forms of what the loop
// assigns in k (a doubling mask: `(pow2 k)`). The body is then a round loop as a `for` loop's
// (every_p_loop.cpp), and two more obligations tie T to the program's condition: it holds at the
// head of iterations 0..T-1 (read in the closed forms there) and fails at the head of iteration T.
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

std::string pow2_defs() {
  // 2^k for k = 0..32 and ceil(log2 x) for x <= 2^32: ranks are 32-bit (p < 2^31), so a doubling
  // mask never passes 2^31 at a loop's head and 2^32 after its last doubling.
  std::string pw = "0", cl = "33";
  for (int k = 32; k >= 0; --k) {
    long long v = 1LL << k;
    pw = fmt::format("(ite (= x {}) {} {})", k, v, pw);
    cl = fmt::format("(ite (<= x {}) {} {})", v, k, cl);
  }
  return fmt::format(
      "(define-fun pow2 ((x Int)) Int {})\n(define-fun clog2 ((x Int)) Int (ite (<= x 1) 0 {}))\n"
      "(declare-fun clog2_undefined (Int) Int)\n(declare-fun pow2_undefined (Int) Int)\n"
      "(declare-fun log2_undefined (Int) Int)\n(declare-fun popcount_undefined (Int) Int)\n",
      pw, cl);
}

void Analyzer::while_loop(const Stmt& s, Path& path) {
  // Named in program order (`while#2` the second), once per statement: a loop read again on
  // another path keeps its name.
  auto named = loop_name_.find(&s);
  if (named == loop_name_.end()) {
    int nth = ++loop_seen_["while"];
    named = loop_name_.emplace(&s, nth == 1 ? "while" : fmt::format("while#{}", nth)).first;
  }
  std::string lname = named->second;
  int id = loop_id(s);
  note_split(lname, id, s.loc);
  const EveryPInvariant* tr = invariant(lname, "#trips", "trips");
  if (!tr)
    refuse(fmt::format("a `while` loop needs its trip count in the proof: 'trips {} TERM' (a term "
                       "in p, count and root), and closed forms in its iteration counter k",
                       lname),
           s.loc);
  // The trip count may not name r: every rank runs the same rounds.
  std::string why = check_user_term(tr->term, {"p", "count", "root"});
  if (!why.empty())
    throw Refused{fmt::format("{}:{}: trips term: {}", pf_.path, tr->line, why),
                  SourceLoc{pf_.path, tr->line, 1}};
  round_loop(s, path, LoopSpec{lname, "k", true, "0", sub(tr->term, "1"), s.cond.get(), id});
}

std::string Analyzer::while_holds(const LoopSpec& spec, const State& st) {
  return bool_expr(*spec.cond, st);
}

void Analyzer::while_trips(const Stmt& s, const Path& path, const LoopSpec& spec, const State& head,
                           const State& exit) {
  std::string where = fmt::format("loop {} ({})", spec.lname, s.loc.str());
  std::string trips = add(spec.hit, "1");
  std::string iter = fmt::format("i_L{}", spec.id);
  oblige(path, fmt::format("trips-nonnegative-loop-{}", spec.lname),
         fmt::format("the trip count of {} is at least 0", where), "", "true",
         op2(">=", trips, "0"), s.loc);
  oblige(path, fmt::format("trips-run-loop-{}", spec.lname),
         fmt::format("the condition of {} holds at the head of every iteration k < trips (read in "
                     "the closed forms at k)",
                     where),
         fmt::format("(declare-const {} Int)\n", iter),
         fmt::format("(and (<= 0 {}) (< {} {}))", iter, iter, trips), while_holds(spec, head),
         s.loc);
  oblige(path, fmt::format("trips-exit-loop-{}", spec.lname),
         fmt::format("the condition of {} fails at the head of iteration trips: the loop exits "
                     "there",
                     where),
         "", "true", fmt::format("(not {})", while_holds(spec, exit)), s.loc);
}

}  // namespace collv::everyp
