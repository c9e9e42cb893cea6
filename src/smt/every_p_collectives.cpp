// The every-p prover's collectives beyond allgather and reduce-scatter (see every_p.hpp and
// docs/smt.md, "Every p from the model"): their initial buffers and their postconditions in MPI's
// layout, by block, and the chunks of an allreduce whose slices are not whole blocks.
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

bool more_collective(Collective c) {
  return c == Collective::Alltoall || c == Collective::Allreduce || c == Collective::Broadcast ||
         c == Collective::Scatter || c == Collective::Gather || c == Collective::Reduce;
}

Buf more_input(Collective c, bool chunked) {
  // alltoall: rank r's input holds p blocks, block b for rank b: (it r b).
  if (c == Collective::Alltoall) return Buf{"p", "(it r b)"};
  // broadcast: the root's buffer is its one block; the others' start empty (as the executor's).
  if (c == Collective::Broadcast) return Buf{"(ite (= r root) 1 0)", "(it root 0)"};
  // scatter: the root's input is p blocks, block b for rank b; the others' start empty.
  if (c == Collective::Scatter) return Buf{"(ite (= r root) p 0)", "(it root b)"};
  // gather: every rank's input is its one block.
  if (c == Collective::Gather) return Buf{"1", "(it r 0)"};
  // allreduce and reduce: count elements of r's own contribution, one block, or p chunks (chunk b:
  // the input's elements of chunk b).
  return Buf{chunked ? "p" : "1", "(sm b r 1)"};
}

void Analyzer::more_postcondition(const Path& path, const Buf& out) {
  const auto& h = m_.header;
  if (h.collective == Collective::Broadcast) {
    // broadcast: every rank ends with the root's block, nothing else.
    oblige(path, "postcondition-length", "the buffer is count elements (one block)", "",
           "(> count 0)", op2("=", out.len, "1"), h.loc);
    oblige(path, "postcondition-blocks", "the buffer is the root's input", "", "(> count 0)",
           op2("=", at_block(out.blk, "0"), "(it root 0)"), h.loc);
    return;
  }
  if (h.collective == Collective::Scatter) {
    // scatter in MPI's layout: rank r ends with block r of the root's input, nothing else.
    oblige(path, "postcondition-length", "the output is count elements (one block)", "",
           "(> count 0)", op2("=", out.len, "1"), h.loc);
    oblige(path, "postcondition-blocks", "the output is block r of the root's input (MPI's layout)",
           "", "(> count 0)", op2("=", at_block(out.blk, "0"), "(it root r)"), h.loc);
    return;
  }
  if (h.collective == Collective::Gather) {
    // gather in MPI's layout: the root ends with p blocks, block b rank b's input, nothing else
    // (the others' output is not defined by MPI, nor judged by the executor).
    oblige(path, "postcondition-length",
           "the root's output has p blocks of count elements (MPI's layout)", "", "(> count 0)",
           fmt::format("(=> (= r root) {})", op2("=", out.len, "p")), h.loc);
    oblige(path, "postcondition-blocks",
           "block b of the root's output is rank b's input (MPI's layout)",
           "(declare-const b Int)\n", "(and (> count 0) (<= 0 b) (< b p))",
           fmt::format("(=> (= r root) {})", op2("=", out.blk, "(it b 0)")), h.loc);
    return;
  }
  if (h.collective == Collective::Reduce) {
    // reduce: the root ends with one block, every rank's input summed, each once (in rank order
    // unless commutative); the others' output is not defined by MPI.
    bool comm = h.op_class == OperatorClass::Commutative;
    std::string b0 = at_block(out.blk, "0");
    oblige(path, "postcondition-length", "the root's output is count elements (one block)", "",
           "(> count 0)", fmt::format("(=> (= r root) {})", op2("=", out.len, "1")), h.loc);
    oblige(path, "postcondition-blocks",
           fmt::format("the root's output is every rank's input, summed{}, each once",
                       comm ? "" : " in rank order"),
           "", "(> count 0)",
           fmt::format("(=> (= r root) (and ((_ is sm) {}) (= (sb {}) 0) (= (sn {}) p){}))", b0, b0,
                       b0, comm ? "" : fmt::format(" (= (slo {}) 0)", b0)),
           h.loc);
    return;
  }
  if (h.collective == Collective::Alltoall) {
    // alltoall in MPI's layout: p blocks, rank r's output block b is rank b's input block r.
    oblige(path, "postcondition-length", "the output has p blocks of count elements (MPI's layout)",
           "", "(> count 0)", op2("=", out.len, "p"), h.loc);
    oblige(path, "postcondition-blocks",
           "block b of rank r's output is rank b's input block r (MPI's layout)",
           "(declare-const b Int)\n", "(and (> count 0) (<= 0 b) (< b p))",
           op2("=", out.blk, "(it b r)"), h.loc);
    return;
  }
  // allreduce: the buffer is the input's length (one block, or p chunks), and its block (chunk) b
  // is block b of every rank's input summed, each once, from rank 0 up unless commutative.
  bool comm = h.op_class == OperatorClass::Commutative;
  std::string n = chunked() ? "p" : "1";
  oblige(path, "postcondition-length",
         chunked() ? "the output is p chunks (count elements)" : "the output is count elements", "",
         "(> count 0)", op2("=", out.len, n), h.loc);
  oblige(path, "postcondition-blocks",
         fmt::format("{} b of the output is {} b of every rank's input, summed{}, each once",
                     chunked() ? "chunk" : "block", chunked() ? "chunk" : "block",
                     comm ? "" : " in rank order"),
         "(declare-const b Int)\n", fmt::format("(and (> count 0) (<= 0 b) (< b {}))", n),
         fmt::format("(and ((_ is sm) {}) (= (sb {}) b) (= (sn {}) p){})", out.blk, out.blk,
                     out.blk, comm ? "" : fmt::format(" (= (slo {}) 0)", out.blk)),
         h.loc);
}

// A slice v[LO .. HI] in chunk mode is chunk C (the proof's INDEX variable) of count cut into
// chunks of U elements (its UNIT variable): LO = min(C U, count), HI + 1 = LO + max(0, min(U,
// count - LO)), 0 <= C < p, with U > 0 and p U >= count, so that the p chunks partition 0 ..
// count - 1 (the last ones short or empty). The goal waits in chunk_goal_ for the caller.
std::pair<std::string, std::string> Analyzer::chunk_slice(const Expr& lo, const Expr& hi,
                                                          const State& st, const SourceLoc& loc) {
  auto var = [&](const std::string& v) {
    auto f = st.ints.find(v);
    if (f == st.ints.end())
      refuse(
          fmt::format("the proof's chunks name '{}', which has no integer value at this slice", v),
          loc);
    return render(f->second);
  };
  std::string U = var(pf_.chunk_unit), C = var(pf_.chunk_index);
  // One partition for every rank and every slice: the unit is one term, free of the rank.
  if (mentions(U, "r") || mentions(U, "src_r"))
    refuse(fmt::format("the chunk unit '{}' depends on the rank: outside the fragment",
                       pf_.chunk_unit),
           loc);
  if (chunk_unit_term_.empty()) chunk_unit_term_ = U;
  if (U != chunk_unit_term_)
    refuse(fmt::format("the chunk unit '{}' is not the value it had at the first slice: "
                       "outside the fragment (one partition of count for the whole program)",
                       pf_.chunk_unit),
           loc);
  std::string LO = render(int_expr(lo, st)), HI = render(int_expr(hi, st));
  std::string CU = mul(C, U);
  chunk_goal_ = fmt::format(
      "(and (> {} 0) (>= (* p {}) count) (<= 0 {}) (< {} p) (= {} (ite (<= {} count) {} count)) "
      "(= (+ {} 1) (+ {} (ite (<= 0 (- count {})) (ite (<= {} (- count {})) {} (- count {})) "
      "0))))",
      U, U, C, C, LO, CU, CU, HI, LO, LO, U, LO, U, LO);
  return {C, C};
}

std::string Analyzer::chunk_what(const SourceLoc& loc) {
  return fmt::format(
      "chunk: the slice at {} is chunk c of count elements cut into p chunks of the unit (the "
      "proof's `chunks`), which cover every element",
      loc.str());
}

// The item written into chunk c is chunk c's (so the message and the slice have one length).
std::string Analyzer::chunk_home(const std::string& item, const std::string& c) {
  return fmt::format("(or (and ((_ is sm) {}) (= (sb {}) {})) (and ((_ is it) {}) (= (bk {}) {})))",
                     item, item, c, item, item, c);
}

// In chunk mode a loop's exit splits the path: hi + 1 >= lo (its exit index is hi + 1) or not
// (lo), so that the queries after it hold the exit index as a plain term, not an ite on a
// condition only the path's assertions decide (Z3 answered NCCL's all-gather loop in 1.5 s with
// it, not in 200 s without). The loop's own obligations are written once, before the split.
void Analyzer::split_loop(const Stmt& s, const std::vector<const Stmt*>& todo, std::size_t at,
                          Path path) {
  std::string lot = render(int_expr(*s.value, path.st)), hit = render(int_expr(*s.limit, path.st));
  std::size_t mark = path.decls.size();
  loop(s, path);
  // hi + 1 >= lo: the exit index is hi + 1 (also when the loop runs zero times, hi + 1 = lo).
  std::string x = fmt::format("x_L{}", out_.loops),
              ran = op2(">=", fmt::format("(+ {} 1)", hit), lot);
  if (++paths_ > 64) refuse("more than 64 paths", s.loc);
  Path pa = path, pb = path;
  pa.decls = path.decls.substr(0, mark) +
             fmt::format("(declare-const {} Int)\n(assert (= {} (+ {} 1)))\n", x, x, hit);
  pa.pc = fmt::format("(and {} {})", path.pc, ran);
  pb.decls = path.decls.substr(0, mark) +
             fmt::format("(declare-const {} Int)\n(assert (= {} {}))\n", x, x, lot);
  pb.pc = fmt::format("(and {} (not {}))", path.pc, ran);
  pb.index = paths_;
  explore(todo, at + 1, pa);
  explore(todo, at + 1, pb);
}

}  // namespace collv::everyp
