// collv prove --every-p MODEL.coll [PROOF] [--model OTHER.coll]: a model's program proved for
// every process count and element count (smt/every_p.hpp, docs/smt.md "Every p from the model").
// Exit: 0 proved; 1 an obligation is violated and the executor fails at the smallest (p, count)
// found; 3 not proved (outside the fragment, an obligation unknown, or violated where the
// executor passes: the invariants are wrong); 2 bad usage.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "app/smt_cmds.hpp"
#include "smt/every_p.hpp"

namespace collv {

struct EveryPOutcome {
  int exit = 3;
  std::string answer;  // "proved for every p", "disproved", "not proved"
  std::string note;
  std::string failed_obligation;  // the first violated obligation, if any
  long long p = -1, count = -1;   // its smallest counterexample found
  long long root = -1;            // and there the smallest root (rooted collectives)
  std::size_t obligations = 0;
  double seconds = 0;
  std::vector<std::string> lines;  // one per obligation
};

EveryPOutcome prove_every_p(const Model& m, const EveryPProof& pf, const ProveCommandOptions& o);
// For `verify --every-p`: the proofs in proofs/every-p beside the models directory that are
// written for model_file (same file), run; "" when there is none, else e.g. "proved for every p
// (proofs/every-p/allgather_ring.proof, 21 obligations)" or "not proved: ...".
std::string every_p_status(const std::string& model_file, const std::string& models_dir);

int run_every_p_command(const ProveCommandOptions& o, std::ostream& out, std::ostream& err);

}  // namespace collv
