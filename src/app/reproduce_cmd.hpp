// `collv reproduce`: the star paper's Tables 1 and 2 recomputed by collv, beside the numbers the
// paper prints, with every disagreement reported.
#pragma once

#include <iosfwd>
#include <string>

namespace collv {

struct ReproduceOptions {
  std::string what = "all";  // table1 | table2 | all
  int max_n = 10;            // Table 2: run the all-reduce on star:n for n up to this
  // Table 2: prove the least single-port broadcast time on star:n with the SAT backend for n up
  // to this (a reduce-then-broadcast all-reduce takes at least twice it); beyond, the counting
  // bound ceil(log2 n!) stands in.
  int broadcast_max_n = 5;
  std::string models_dir;
};

// Exit code 0: every number agrees; 1: a disagreement (listed); 2: bad usage.
int run_reproduce_command(const ReproduceOptions& o, std::ostream& out, std::ostream& err);

}  // namespace collv
