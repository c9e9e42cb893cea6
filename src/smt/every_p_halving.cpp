// The every-p prover's recursive halving (docs/smt.md, "Every p from the model", recursive
// halving): three additions that make Open MPI's recursive-halving reduce_scatter_block readable.
//
// * `sums sets` in the proof (operator commutative only): a sum is block B of the inputs of a SET
//   of ranks, the item (ss B MEM) where MEM is a Bool term over a free rank q (q is in the set).
//   Recursive halving's partial sums are over ranks that agree with r in their low bits: strided,
//   not the ranges of ranks (sm ...) stands for. Every query declares q free, so its unsat is the
//   claim for every q: two items are equal iff their blocks are and their sets have the same
//   members; `a + b` needs the same block and disjoint sets (no q in both: each contribution
//   once) and is the union; the postcondition is block r over exactly the ranks 0..p-1. Every
//   operation on items is pointwise in q and no hypothesis names q, so the per-q reading is the
//   set reading.
// * `invariant LOOP VAR care TERM` (a Bool over r, the counter, p, count and b): the closed form
//   says what block b holds only where TERM holds (the window recursive halving still reduces);
//   elsewhere the block is an unknown item (havoc_L<id>_VAR r ITER b), a function the queries
//   declare and never constrain, so every obligation holds for whatever those blocks hold.
//   Initiation and consecution check the blocks where TERM holds at that iteration; a send, a
//   sum or a postcondition that reads another block depends on the unknown item and fails.
// * a round loop's `if C then ... endif` (no else) around its send or its receive (Open MPI's `if
//   sc > 0 then send ...`): read as its statements, with the obligation `always-line-N` that C
//   holds for every rank in every round, in the state where the `if` stands, so every rank still
//   sends and receives once a round.
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

void Analyzer::flatten_guards(const Stmt& loop, std::vector<const Stmt*>& flat,
                              std::map<const Stmt*, const Stmt*>& guard_of) {
  for (const auto& b : loop.body) {
    if (b->kind != StmtKind::If || (!has_comm(b->body) && !has_comm(b->else_body))) {
      flat.push_back(b.get());
      continue;
    }
    if (!b->else_body.empty())
      refuse(
          "an `if` with an `else` around a round loop's send or receive is outside the fragment "
          "(only `if C then ... endif`, with C true in every round)",
          b->loc);
    for (const auto& x : b->body) {
      if (x->kind == StmtKind::If && (has_comm(x->body) || has_comm(x->else_body)))
        refuse("a nested `if` around a round loop's send or receive is outside the fragment",
               x->loc);
      flat.push_back(x.get());
      guard_of[x.get()] = b.get();
    }
  }
}

bool Analyzer::write_first_flat(const std::vector<const Stmt*>& body,
                                const std::map<const Stmt*, const Stmt*>& guard_of,
                                const std::string& v) {
  std::set<const Stmt*> guards_seen;
  for (const Stmt* s : body) {
    auto g = guard_of.find(s);
    if (g != guard_of.end() && guards_seen.insert(g->second).second &&
        reads_name(*g->second->cond, v))
      return false;
    if (s->kind == StmtKind::If) {
      // An `if` of assignments: read conservatively, any mention of v counts as a read.
      std::set<std::string> w;
      assigned(s->body, w);
      assigned(s->else_body, w);
      if (w.count(v) || reads_name(*s->cond, v) || mentions_in(s->body, v) ||
          mentions_in(s->else_body, v))
        return false;
      continue;
    }
    bool writes = (s->kind == StmtKind::Assign || s->kind == StmtKind::Receive) &&
                  s->target->kind == ExprKind::Name && s->target->name == v;
    bool reads = (s->value && reads_name(*s->value, v)) || (s->peer && reads_name(*s->peer, v)) ||
                 (s->target && s->target->kind != ExprKind::Name && reads_name(*s->target, v));
    if (reads) return false;
    if (writes) return true;
  }
  return false;
}

bool Analyzer::mentions_in(const std::vector<StmtPtr>& body, const std::string& v) {
  for (const auto& s : body) {
    if ((s->value && reads_name(*s->value, v)) || (s->peer && reads_name(*s->peer, v)) ||
        (s->target && reads_name(*s->target, v)) || (s->cond && reads_name(*s->cond, v)) ||
        mentions_in(s->body, v) || mentions_in(s->else_body, v))
      return true;
  }
  return false;
}

void Analyzer::sets_check() {
  if (!sets()) return;
  const auto& h = m_.header;
  if (h.collective != Collective::ReduceScatter)
    throw Refused{"`sums sets` is written for reduce-scatter only", h.loc};
  if (h.op_class != OperatorClass::Commutative)
    throw Refused{
        "`sums sets` reads a sum as a set of ranks, in no order: the model must declare "
        "`operator commutative`",
        h.loc};
  if (h.nodup)
    throw Refused{"`sums sets` with NODUP is not written yet (the model claims nodup)", h.loc};
}

Buf Analyzer::set_combine(const Buf& x, const Buf& y, const Expr& e,
                          std::vector<std::pair<std::string, std::string>>* reads) {
  const std::string &A = x.blk, &B = y.blk;
  reads->emplace_back(
      fmt::format("(and (= {} {}) (=> (and (<= 0 b) (< b {})) (and ((_ is ss) {}) ((_ is ss) {}) "
                  "(= (ssb {}) (ssb {})) (not (and (ssm {}) (ssm {}))))))",
                  x.len, y.len, x.len, A, B, A, B, A, B),
      fmt::format("combine: the + at {} adds, block by block, sums of the same block over "
                  "disjoint sets of ranks",
                  e.loc.str()));
  return Buf{x.len, fmt::format("(ss (ssb {}) (or (ssm {}) (ssm {})))", A, A, B)};
}

std::string Analyzer::set_decls(const std::string& body) const {
  std::string out;
  if (sets()) out += "(declare-const q Int)\n";
  for (const auto& h : havocs_)
    if (mentions(body, h)) out += fmt::format("(declare-fun {} (Int Int Int) Item)\n", h);
  return out;
}

bool Analyzer::phased_skip(const Stmt& s, const Path& path) {
  // A phased program's `while` whose condition fails at its entry for every rank of the path
  // (Open MPI's `while distance < adjsize and newrank >= 0` on the even fold ranks, newrank = -1)
  // runs no round there: proved with the certificate `skipped-line-N`, as a pruned branch.
  if (!phased_ || s.kind != StmtKind::While) return false;
  oblige(path, fmt::format("skipped-line-{}", s.loc.line),
         "the `while` loop's condition fails at its entry for every rank of this path (it runs no "
         "round here)",
         "", "true", fmt::format("(not {})", bool_expr(*s.cond, path.st)), s.loc);
  const bool skip = proved_now(out_.obligations.back().script);
  if (!skip) out_.obligations.pop_back();
  return skip;
}

}  // namespace collv::everyp
