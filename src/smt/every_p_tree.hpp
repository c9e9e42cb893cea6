// The every-p prover's binomial trees, shared by its two readers of the loops before the sends
// (docs/smt.md, "Every p from the model", binomial trees): MPICH's receive loop left by `break`
// (every_p_tree.cpp) and Open MPI's search loop, a `while` of assignments only that finds the
// parent's bit before a straight receive (every_p_tree_search.cpp). Both unroll their loop into
// paths (TreePath), each with at most one receive; tree_back (every_p_tree.cpp) reads the send
// loop of every path and writes the obligations. Internal to src/smt/every_p_tree*.cpp.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "smt/every_p_analyzer.hpp"

namespace collv::everyp {

struct TreeSend {
  std::string guard, dst, round;
  std::string key;  // the numerals the message term reads (a send matches a receive of equal key)
  Buf val, msg;     // what it sends, and the message term for its destination
  std::vector<std::pair<std::string, std::string>> reads;
  SourceLoc loc;
};

struct TreePath {
  std::string pc, tag, src, round;  // src, round: the receive's (recv paths)
  std::string key;                  // the receive's message key, and the message it gets
  Buf msg;
  int iter = 0;  // the unrolled loop's iteration it left at
  bool recv = false;
  const Stmt* rstmt = nullptr;       // the receive (recv paths)
  std::vector<const Stmt*> between;  // run after the receive, before the send loop
  State st;
  std::vector<TreeSend> sends;
  std::string nsend = "0";
};

// One reading of the tree, on one path before the unrolled loop (the root's and the others' when
// the program branches before the loops): its paths, and alive[m] (past iteration m).
struct TreeCall {
  std::string pre;  // the path's condition before the loops
  std::vector<TreePath> tps;
  std::vector<std::string> alive;
};

// The proof's terms: order, round, message, and the receive's names (`receive NAME VAR`: at a
// receive the terms read NAME as the program's VAR).
struct TreeTerms {
  std::string order, round_t;
  Buf msg_t;
  std::set<std::string> names, msg_names;
  // A round term that reads r is over the message's sender: at a send r is the rank, at a receive
  // its source; the names it reads are then in the key with the message's (key_names).
  bool round_r = false;
  // The value whose bits such a round term reads (round_bit_value), at r; empty: none.
  std::string round_x;
  std::set<std::string> key_names;
  std::map<std::string, std::string> at_recv;
};

// What a reader of the loops before the sends hands to tree_back.
struct TreeFront {
  std::vector<TreePath> tps;
  std::vector<std::string> alive;  // alive[m]: past iteration m of the unrolled loop
  std::string tpre;                // "pathN-" when the tree is read on more than one path
  bool first_call = true;          // the lemmas are stated once, with the first path's tree
  bool prefix = false;             // MPICH's prefix form (no bit lemmas at the ranks)
  const Stmt* w2 = nullptr;        // the send loop
  std::size_t w2i = 0;             // its place in the path's statements
  bool guarded_rounds = false;     // each send's round bounded where it is made (`mask < p`)
  SourceLoc loc;                   // the first loop's
  SourceLoc prune_loc;             // where a pruned path is named (infeasible-line-N)
};

// The value a round term takes bit 0 of: the T of its first `(mod T 2)` whose T is not a
// `(div ...)` and reads r; empty if there is none.
std::string round_bit_value(const std::string& round_t);

}  // namespace collv::everyp
