// The every-p prover's collectives beyond allgather and reduce-scatter (see every_p.hpp and
// docs/smt.md, "Every p from the model"): their initial buffers and their postconditions in MPI's
// layout, by block.
#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

bool more_collective(Collective c) { return c == Collective::Alltoall; }

Buf more_input(Collective c) {
  // alltoall: rank r's input holds p blocks, block b for rank b: (it r b).
  (void)c;
  return Buf{"p", "(it r b)"};
}

void Analyzer::more_postcondition(const Path& path, const Buf& out) {
  const auto& h = m_.header;
  // alltoall in MPI's layout: p blocks, rank r's output block b is rank b's input block r.
  oblige(path, "postcondition-length", "the output has p blocks of count elements (MPI's layout)",
         "", "(> count 0)", op2("=", out.len, "p"), h.loc);
  oblige(path, "postcondition-blocks",
         "block b of rank r's output is rank b's input block r (MPI's layout)",
         "(declare-const b Int)\n", "(and (> count 0) (<= 0 b) (< b p))",
         op2("=", out.blk, "(it b r)"), h.loc);
}

}  // namespace collv::everyp
