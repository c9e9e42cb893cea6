// Every p from the model: the entry point of the symbolic reading (see every_p.hpp; the reader
// is in every_p_analyzer.hpp, its loops in every_p_loop.cpp).
#include "smt/every_p.hpp"

#include "smt/every_p_analyzer.hpp"

namespace collv {

EveryPAnalysis analyze_every_p(const Model& m, const EveryPProof& proof) {
  EveryPAnalysis out;
  try {
    everyp::Analyzer a(m, proof, out);
    a.run();
  } catch (const everyp::Refused& r) {
    out.refusal = r.why;
    out.refusal_loc = r.loc;
    out.obligations.clear();
  }
  return out;
}

}  // namespace collv
