// `collv mpi`: judges an installed MPI library's collectives (docs/mpi.md). The harness
// (mpi/harness.c) is built with the library's own compiler and run under its launcher with the
// algorithm selected; it runs the collective on tagged elements under a user-defined operation
// that records every combination, at the rank that makes it, with both operands. collv reads what
// each rank wrote and judges it: nodup, operand positions, operand order (non-commutative), the
// positional MPI postcondition. Reports and exit codes are `collv verify`'s.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "check/checks.hpp"
#include "exec/executor.hpp"

namespace collv {

struct MpiOptions {
  std::string impl;                // openmpi | mpich
  std::string collective;          // allreduce reduce bcast allgather gather scatter alltoall ...
  std::string algorithm = "auto";  // the library's own name or number; harness-ring
  std::pair<std::int64_t, std::int64_t> sizes{2, 4};   // processes
  std::pair<std::int64_t, std::int64_t> counts{1, 1};  // elements (per block)
  // A rank, "last" (p-1), "all", or "sample": the first, a middle (p/2) and the last rank.
  std::string root = "sample";
  std::string op = "commutative";  // commutative | noncommutative
  bool in_place = false;
  std::string inject = "none";  // harness-ring only: off-by-one | double-count | swap-operands
  std::string mpicc, mpirun;    // default: the library's Debian names
  std::string harness;    // default: mpi/harness.c of the source tree (every .c and .h of its dir)
  std::string cache_dir;  // default: $COLLV_MPI_CACHE or <tmp>/collv-mpi-<uid>
  int timeout_s = 60;     // per count (a launch of n counts gets n times as long)
  // A model's run (--model, --conformance): operations per node on average before it stops;
  // a run stopped there leaves the comparison inconclusive (exit 3).
  std::uint64_t max_ops = RunOptions{}.max_ops_per_node;
  std::string json_file, junit_file;
  bool quiet = false;
  bool runs_table = false;
  bool list = false;  // print the selectable algorithms of --impl and --collective, run nothing
  // Conformance: a model (.coll file or name) whose run at the same p, count and root must make
  // the same combinations, rank by rank and position by position, as the library.
  std::string model, models_dir;
  // Conformance by the models' own `library` lines: model files or directories (searched
  // recursively); each model that names an Open MPI or MPICH selector is run as that library's
  // algorithm (impl, collective and algorithm from the line) with --model set to it.
  std::vector<std::string> conformance;
  // reduce_scatter only: MPI_Reduce_scatter with `count` elements for every rank (a `collective
  // reduce-scatter` model's equal blocks; set by --conformance), not the uneven counts(j).
  bool equal_counts = false;
  // allgatherv only: the blocks with no gap between them (each displacement the sum of the
  // counts before it; --contiguous, a library line's `displs = contiguous`), not one unwritten
  // element after each block.
  bool contiguous = false;
  // MPICH's `nb` only: the nonblocking collective's algorithm it runs,
  // MPIR_CVAR_I<COLLECTIVE>_INTRA_ALGORITHM (--nb-algorithm; a library line's key of that name).
  std::string nb_algorithm;
  // Further selector settings of a library line (Open MPI: OMPI_MCA_<name>=<value>).
  std::vector<std::pair<std::string, std::string>> extra_env;
  // MPICH's smp algorithms: the algorithms of the calls they make on the node and node-roots
  // communicators (node_<coll> / node_roots_<coll> = <algorithm>, from a model's library line;
  // the others fixed, mpi_smp.cpp).
  std::vector<std::pair<std::string, std::string>> smp_nested;
  // A library message of exactly this many bytes (a control message: the smp barrier's 1-byte
  // release, the smp scan's int) is compared as a model's send of no item; -1: none.
  std::int64_t control_bytes = -1;
  // `messages` compares per rank the multiset of messages and the model's data dependencies
  // (compare_sends_dependent), not the sequence (a library line's `message_order =
  // dependencies`; --message-order dependencies).
  bool message_dependencies = false;
  // The model's item is one byte of the library's buffer, its count the buffer's bytes (a
  // library line's `item = byte`; --model-item byte): for an algorithm that cuts the buffer in
  // bytes whatever the datatype (MPICH's scatter-allgather broadcasts, scatter_size =
  // ceil(nbytes / p)). The model runs at count x the element's bytes; its messages are compared
  // byte for byte. Collectives without a reduction only.
  bool model_item_byte = false;
  // Set (when not null) to whether the library fell back to its own choice in every run.
  bool* all_fell_back = nullptr;
  // Set (when not null) to the number of runs whose `conformance` or `messages` check compared
  // something with the model (passed or failed; not "not checked").
  std::size_t* compared_runs = nullptr;
};

// The run a model's `library` line asks for: impl, collective and algorithm set from the line,
// extra selector settings in extra_env. Empty `why_not` when it applies; else why it does not
// (no Open MPI or MPICH line, a collective the harness does not run, a selector for another
// collective).
struct ConformanceRun {
  MpiOptions options;
  std::string selector;  // the line's settings, as written
  std::string why_not;
};
std::vector<ConformanceRun> conformance_runs(const std::string& model_file, const MpiOptions& base);

// The algorithms a library lets a run select for a collective, in the library's order (Open MPI:
// the number is the index, 0 = "ignore", the library's own decision; MPICH: 0 = "auto").
std::vector<std::string> mpi_algorithms(const std::string& impl, const std::string& collective);
// MPICH's nonblocking algorithms of a collective (MPIR_CVAR_I<COLLECTIVE>_INTRA_ALGORITHM, as
// MPICH 4.0.2's mpivars lists them), which its blocking `nb` algorithm runs; 0 = "auto".
std::vector<std::string> mpich_nb_algorithms(const std::string& collective);

// One launch: a collective at p processes, count elements, a root.
struct MpiCase {
  std::string collective;  // as the harness names it (ring_allreduce for harness-ring)
  int p = 2, count = 1, root = 0;
  bool commutative = true, in_place = false;
  // The built-in MPI_SUM on uint64 values (harness OP b): no combination is visible; the result
  // is judged by value, digit r (5 bits) being (position + 1) times rank r's multiplicity.
  bool builtin = false;
  // A real non-commutative operation (harness OP m): the product of 2x2 uint32 matrices, judged by
  // value against the product in rank order.
  bool matrix = false;
};

// How many times the harness runs the collective per count, each call with fresh tags.
inline constexpr int kHarnessCalls = 2;
// The number (and tag) of the harness's call k (1..kHarnessCalls) of a count: unique across the
// counts of a launch, so that data of another count's call is told from this one's.
inline std::int64_t harness_call(int count, int k) {
  return std::int64_t{count} * kHarnessCalls + k;
}

// Judges the files rank0.jsonl .. rank<p-1>.jsonl the harness wrote into dir (format in
// mpi/harness.c). Returns the checks runtime, nodup, operands, order, postcondition, sendbuf and
// unmatched. Throws UsageError naming the file and line for a line that is not the harness's
// format, LimitError for a file larger than collv reads.
std::vector<CheckResult> judge_mpi_run(const MpiCase& c, const std::string& dir);
// The same over the files' texts (nullopt: the rank wrote no file); dir names them in messages.
std::vector<CheckResult> judge_mpi_text(const MpiCase& c,
                                        const std::vector<std::optional<std::string>>& texts,
                                        const std::string& dir);

// The combinations of one run, per rank: (position, left ranks, right ranks) in the order the
// rank made them.
struct MpiCombination {
  std::int64_t pos;
  std::uint64_t left, right;
  bool operator==(const MpiCombination&) const = default;
};
using MpiCombinations = std::vector<std::vector<MpiCombination>>;

// What the library combined (the harness's files in dir).
MpiCombinations library_combinations(const std::string& dir, int p, int count);
// What the model combines at the same p, count and root (ordered domain, on complete:p, else its
// first family at p); throws ModelError/UsageError when it cannot run there.
MpiCombinations model_combinations(const std::string& model_file, int p, int count, int root);
// The conformance check: the first rank and position whose sequences differ.
CheckResult compare_combinations(const MpiCombinations& lib, const MpiCombinations& model);

// Point-to-point messages per sender and receiver: msgs[src][dst] and the bytes they carried
// (a model's: 16 bytes per item, the harness's element). Self-messages are not counted (a model's
// send to itself is no transfer); a library's are in `self`.
struct PeerMessages {
  std::vector<std::vector<std::uint64_t>> msgs, bytes;
  std::vector<std::uint64_t> self;  // per rank: messages a library rank sent to itself
  explicit PeerMessages(int p = 0)
      : msgs(p, std::vector<std::uint64_t>(p)), bytes(p, std::vector<std::uint64_t>(p)), self(p) {}
};
inline constexpr std::uint64_t kHarnessElemBytes = 16;
// Under --op builtin the harness's element is one uint64 (MPI_SUM on MPI_UINT64_T).
inline constexpr std::uint64_t kHarnessValueBytes = 8;

// One message a rank sent: its receiver and its size in bytes (-1: not known); for the
// library's, the UCX tag it carried and when it was posted (CLOCK_MONOTONIC nanoseconds; -1:
// not logged). Two messages are the same message when their receiver and size are.
struct SentMessage {
  std::int64_t to = -1;
  std::int64_t bytes = -1;
  std::uint64_t tag = 0;
  std::int64_t ns = -1;
  std::int64_t host = -1;  // the sender's machine (a hash of its name); -1: not logged
  bool operator==(const SentMessage& o) const { return to == o.to && bytes == o.bytes; }
};
// Per rank, the messages it sent in the order it posted them.
using SentMessages = std::vector<std::vector<SentMessage>>;

// A model's run at p, count, root: its combinations and its transfers per sender and receiver,
// and per rank its sends in program order (a send to itself left out).
// A model's send as another rank's message: the sender and the index in its sends.
struct SendRef {
  std::size_t rank = 0, index = 0;
  bool operator==(const SendRef&) const = default;
};
struct ModelRunResult {
  MpiCombinations combinations;
  PeerMessages messages;
  SentMessages sends;
  // With dependencies asked for: per rank and send (as in `sends`), the messages it received
  // before that send whose payload the send carries on (its data flow: model_send_dependencies).
  std::vector<std::vector<std::vector<SendRef>>> depends;
};
// Throws LimitError when the run stops at max_ops (or the step limit): undecided, not wrong.
// elem_bytes: the bytes of one item in the library's run (the harness's tagged element, or a
// uint64 under --op builtin).
// dependencies: also fill `depends` (MpiOptions::message_dependencies).
ModelRunResult model_run(const std::string& model_file, int p, int count, int root,
                         std::uint64_t max_ops = RunOptions{}.max_ops_per_node,
                         std::uint64_t elem_bytes = kHarnessElemBytes, bool dependencies = false);

// The check "messages": the first rank and peer (in rank order) whose message counts, or bytes,
// differ between the library (the messages its pml monitoring counted during the calls) and the
// model.
// item_bytes: the bytes of one model item (the harness's element; 1 for a model of `item byte`).
CheckResult compare_messages(const PeerMessages& lib, const PeerMessages& model,
                             std::uint64_t item_bytes = kHarnessElemBytes);

// The message pattern the harness logged (its "sent" lines: the messages each rank posted during
// each call, through the UCX interposer, docs/mpi.md): [call][rank]. Returns nullopt and sets
// why_not when some rank logged no pattern for a call, or a message whose receiver or size it
// could not tell, or messages it could not log.
std::optional<std::vector<SentMessages>> library_sends(const std::string& dir, int p, int count,
                                                       std::string& why_not);
// The per-peer messages and bytes of a logged pattern, summed over its calls (a rank's messages
// to itself counted apart): Open MPI's monitored messages, compared by compare_messages.
PeerMessages peer_messages(const std::vector<SentMessages>& calls, int p);
// The check "messages" by pattern: at every rank and call, the library's messages (receiver and
// bytes, in posting order; its messages to itself left out) are the model's sends in program
// order. Fails at the first rank, call and message that differ.
// control_bytes >= 0: a library message of exactly that size (a control message, no element)
// is compared as a model's send of no item.
CheckResult compare_sends(const std::vector<SentMessages>& lib, const SentMessages& model,
                          std::uint64_t elem_bytes = kHarnessElemBytes,
                          std::int64_t control_bytes = -1);

// The check "messages" by dependencies (a library line's `message_order = dependencies`, for
// schedules that issue a send when its last dependency completes, so that sends may leave in
// any order the data flow allows: docs/mpi.md, "Messages in dependency order"). At every rank
// and call: the same multiset of messages (receiver and size) as the model's sends; the
// library's messages of one receiver and size matched to the model's in the order of their
// UCX tags (MPICH takes a schedule's tags in program order); and no send posted before the
// message its payload depends on in the model (model.depends) was posted by its sender (the
// harness's CLOCK_MONOTONIC times: a send that left before its data was sent to it cannot have
// carried that data). Messages without tags or times: not compared (inconclusive).
CheckResult compare_sends_dependent(const std::vector<SentMessages>& lib,
                                    const ModelRunResult& model,
                                    std::uint64_t elem_bytes = kHarnessElemBytes);

int run_mpi_command(const MpiOptions& o, std::ostream& out, std::ostream& err);

}  // namespace collv
