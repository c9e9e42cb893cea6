// The syntax tree of a model file (docs/language.md): a header and one procedure body.
//
//   collv::Model m = collv::parse_model_file("models/allreduce_star.coll");
//   m.header.collective;          // Collective::Allreduce
//   m.body;                       // statements, each with its SourceLoc
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace collv {

enum class Collective {
  Broadcast,
  Reduce,
  Allgather,
  ReduceScatter,
  Allreduce,
  Scan,
  Scatter,
  Gather,
  Alltoall,
  Shift,
  Barrier,  // no data: every node's exit must depend causally on every node's entry
  Exscan,   // node k: x[0] + ... + x[k-1]; node 0's output is undefined (MPI), never judged
  // The v-collectives: per-rank counts every rank knows (counts(j), displs(j); alltoallv:
  // counts(i, j), sdispls(i, j), rdispls(i, j)), outputs in MPI's layout.
  Allgatherv,
  Gatherv,
  Scatterv,
  Alltoallv,
  ReduceScatterv  // MPI_Reduce_scatter with recvcounts: node j gets elements displs(j) ..
};
constexpr Collective kLastCollective = Collective::ReduceScatterv;
bool collective_is_v(Collective c);
// The per-rank counts of a v-collective run with `count` (docs/language.md, "Per-rank counts"):
// rank j's count (count + j) mod (count + 1), uneven and with zeros; alltoallv's count from i
// to j (count + i + 2 j) mod (count + 1). Every rank knows them all, as MPI passes them.
std::int64_t v_count(std::int64_t count, std::int64_t j);
std::int64_t v_pair_count(std::int64_t count, std::int64_t i, std::int64_t j);
// Their prefix sums, in O(log count) (a sum per call made `displs` linear in p, a ring over 4,096
// ranks quadratic): displs(j) = counts(0) + ... + counts(j - 1); sdispls(i, j) = counts(i, 0) +
// ... + counts(i, j - 1); rdispls(i, j) = counts(0, j) + ... + counts(i - 1, j).
std::int64_t v_displs(std::int64_t count, std::int64_t j);
std::int64_t v_sdispls(std::int64_t count, std::int64_t i, std::int64_t j);
std::int64_t v_rdispls(std::int64_t count, std::int64_t i, std::int64_t j);
const char* collective_name(Collective c);
std::optional<Collective> collective_from_name(const std::string& s);
bool collective_is_rooted(Collective c);

enum class OperatorClass { Associative, Commutative };

enum class ExprKind {
  Number,    // value
  Name,      // name (variable or environment name)
  Unary,     // op, args[0]
  Binary,    // op, args[0], args[1]
  Call,      // name(args...)
  Index,     // args[0][args[1]]
  Slice,     // args[0][args[1] .. args[2]]
  EmptyBuf,  // []
  Cond       // if args[0] then args[1] else args[2] (header formulas only)
};

enum class Op {
  Add,
  Sub,
  Mul,
  Div,
  IntDiv,
  Mod,
  Pow,
  BitXor,
  BitAnd,
  BitOr,
  BitNot,
  Eq,
  Ne,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Not,
  Neg,
  Union
};
const char* op_spelling(Op op);

// IntArray: an integer array local to each node (`array a[n]`), read and written as a[i].
enum class Type : std::uint8_t { Unknown, Int, Data, IntArray };

struct Expr {
  ExprKind kind;
  SourceLoc loc;
  Op op = Op::Add;
  std::int64_t value = 0;
  std::string name;
  std::vector<std::unique_ptr<Expr>> args;
  // Filled by the checker: the expression's type and, for Name, the variable slot (-1 = env).
  Type type = Type::Unknown;
  int slot = -1;
  // Height of the tree below this node (1 for a leaf). The parser refuses trees higher than
  // kMaxExprHeight, so every recursive walk over an expression is bounded.
  std::uint32_t height = 1;
};
using ExprPtr = std::unique_ptr<Expr>;

// Irecv/Isend: nonblocking point-to-point (docs/language.md, "Nonblocking point-to-point");
// Wait: `wait R` (one request) or `waitall R1, R2, ...` / `waitall` (every outstanding one).
enum class StmtKind { Assign, If, For, While, Send, Receive, Break, Array, Irecv, Isend, Wait };

struct Stmt {
  StmtKind kind;
  SourceLoc loc;
  // Assign: target (Name, Index or Slice) := value.  Receive: target from/along peer.
  // Send: value to/along peer.  If/While: cond.  For: var := value to/downto limit.
  // Array: `array var[value]` (value: the number of elements, all 0).
  ExprPtr target, value, peer, cond, limit;
  bool along_link = false;  // Send/Receive: peer is a link number, not a node id
  bool downto = false;      // For
  std::string var;          // For, Array
  int var_slot = -1;        // For, Array
  std::vector<std::unique_ptr<Stmt>> body, else_body;
  // Irecv/Isend: the integer variable (or array element) `as R` that receives the request's
  // handle. Wait: the handles it completes (empty in a bare `waitall`: every outstanding one).
  ExprPtr request;
  std::vector<ExprPtr> requests;
  bool wait_all = false;  // Wait: written `waitall`
};
using StmtPtr = std::unique_ptr<Stmt>;

// `library openmpi 4.1 coll_tuned_allreduce_algorithm = 4`: the model stands for the algorithm
// a library runs when told to use it (docs/language.md, "library"). A claim for tools that run
// the library (collv mpi), checked only for its form here: the library's name, a version or
// version range, and the selector(s) that choose the algorithm.
struct LibraryClaim {
  std::string library;                 // openmpi, mpich or nccl
  std::string version_lo, version_hi;  // "4.1" .. "4.1" (equal when one version is given)
  // Selector settings in the library's own names, in the order written: Open MPI's MCA
  // parameter and its number, MPICH's control variable and its value, NCCL_ALGO and its value.
  std::vector<std::pair<std::string, std::string>> selectors;
  SourceLoc loc;
};

struct HeaderMemo;  // lang/check.hpp

struct ModelHeader {
  std::string name;
  std::string source;
  Collective collective = Collective::Allreduce;
  std::vector<std::string> topologies;
  OperatorClass op_class = OperatorClass::Associative;
  bool nodup = true;  // the model claims NODUP (the paper's term): `nodup no` turns the check off
  // `layout any`: allgather, gather and all-to-all results are judged up to order (the book's
  // union); the default (positional) is MPI's layout: block j holds rank j's contribution.
  bool layout_any = false;
  std::string input, output;
  ExprPtr requires_, steps, cost;
  // `steps at most EXPR`, `cost at most EXPR`: the claim is a bound (the run may take fewer
  // steps, or cost less in ts and in tw), for algorithms whose exact count has no closed form.
  bool steps_at_most = false, cost_at_most = false;
  // `port single`: the steps and cost claims are stated for --port single (a single-port
  // formula); under --port all they are not-checked, with that reason. port_loc: where it is.
  bool claims_single_port = false;
  SourceLoc port_loc;
  ExprPtr elements;  // elements per input (default 1): `elements p` splits a message in p parts
  std::vector<std::string> notes;
  std::vector<LibraryClaim> libraries;  // `library ...` lines; one library's differ in selectors
  SourceLoc loc;
  // The header formulas' values already computed, per formula and environment (header_value in
  // lang/check.hpp); set by check_model.
  std::shared_ptr<HeaderMemo> memo;
};

struct Model {
  std::string file;
  ModelHeader header;
  std::string procedure;
  std::vector<std::string> params;
  std::vector<StmtPtr> body;
  // Variables after checking: name and type per slot.
  std::vector<std::string> var_names;
  std::vector<Type> var_types;
};

// Limits that keep every recursive walk over a model bounded (docs/language.md, "Limits").
constexpr int kMaxNesting = 200;                // parentheses, unary operators, nested blocks
constexpr std::uint32_t kMaxExprHeight = 1000;  // operators on one path of an expression tree
constexpr std::size_t kMaxModelBytes = std::size_t{16} << 20;  // 16 MiB

// Parses a model; throws ModelError with file:line:col and what was expected.
Model parse_model(const std::string& text, const std::string& file);
Model parse_model_file(const std::string& path);

}  // namespace collv
