// `collv mpi`'s parts (docs/mpi.md), shared between its files: the element the harness tags, the
// result regions MPI defines, running the launcher and the compiler. Not a public interface.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "app/mpi_cmd.hpp"

namespace collv {
struct Model;
}

namespace collv::mpi_detail {

extern const std::vector<std::string> kCollectives;
bool rooted(const std::string& c);
// The largest file a rank may write (a run at p = 64, count 65536 stays far below).
inline constexpr std::uintmax_t kMaxRankFile = std::uintmax_t{512} << 20;

struct Elem {
  std::int64_t idx = -1;
  std::uint64_t mask = 0;
  std::int64_t tag = 0;  // the harness's call number, plus 2^30 when out of rank order
  bool operator==(const Elem&) const = default;
};
std::string ranks_text(std::uint64_t m);
std::string elem_text(const Elem& e);
std::uint64_t all_below(int n);
int rs_count(int r, int count);
std::int64_t symmetric_pair_count(std::int64_t count, std::int64_t i, std::int64_t j);
// The result region the collective defines at rank r (MPI layout), or nullopt where it defines
// none (a non-root of a rooted collective, rank 0 of exscan).
std::optional<std::vector<Elem>> expected(const MpiCase& c, int r);
bool interval(std::uint64_t m);

// Processes, files and the harness's build.
std::string find_program(const std::string& name);
std::string slurp(const std::filesystem::path& p, std::size_t max = std::size_t{1} << 24);
std::string tail(const std::string& s, std::size_t n = 1500);
// The first `lines` lines of s, at most max_chars, control characters shown as '?'.
std::string head_lines(const std::string& s, std::size_t lines, std::size_t max_chars);
struct ProcResult {
  int status = -1;  // exit code; -1 = timed out; 128+N = killed by signal N
  std::string out, err;
};
// Runs argv with extra environment variables, its output into files of dir, killing its whole
// process group after timeout_s seconds; when `progressed` is given (polled every 0.2 s) and
// says true, the timeout_s start again from then.
ProcResult run_process(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env,
                       const std::filesystem::path& dir, int timeout_s,
                       const std::function<bool()>& progressed = {});
// Did every rank of p finish the count whose files are in cdir (its rank<r>.jsonl ends with
// the harness's "done" line)?
bool count_finished(const std::filesystem::path& cdir, int p);
// What the ranks printed during a count (the harness's rank<r>.err files), rank by rank, each
// at most max characters, each file's text after a "rank R: " label.
std::string rank_messages(const std::filesystem::path& cdir, int p, std::size_t max);
std::string cache_root(const MpiOptions& o);
// The harness's sources (mpi/: harness.c and the files it is split into): every .c and .h file
// of the directory `path` names (a directory, or a file in it, such as --harness's main file),
// sorted by name, with their texts. At most 32 files of at most 1 MiB each, else a UsageError.
struct HarnessSources {
  std::filesystem::path dir;
  std::vector<std::filesystem::path> files;  // sorted; the .c ones are compiled
  std::vector<std::string> texts;            // files[i]'s text
};
HarnessSources harness_sources(const std::string& path);
// The cached build's key: a hash over the library, the compiler, the flags and every source
// file's name and text (changing any of them builds the harness again).
std::string harness_cache_key(const std::string& impl, const std::string& mpicc,
                              const std::vector<std::string>& flags, const HarnessSources& src);
std::string build_harness(const MpiOptions& o, const std::string& mpicc, const std::string& src,
                          std::ostream& err);
std::string upper(std::string s);
std::string algorithm_name(const MpiOptions& o);
// Why an Open MPI run never runs the named algorithm (empty: it does): the tuned algorithms that
// call another one for every non-commutative operation, without saying so.
std::string openmpi_silent_fallback(const std::string& collective, const std::string& algorithm,
                                    bool commutative);
std::string shell_quote(const std::string& s);

// A harness "sent" line's messages and how many it could not log; false (why set) when the line
// is not in that form.
struct SentLine {
  std::vector<SentMessage> messages;
  std::int64_t lost = 0;
};
bool read_sent_line(const nlohmann::json& j, std::string& why, SentLine* into = nullptr);

// MPICH's smp algorithms (mpi_smp.cpp). The selection file MPICH reads
// (MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE) that runs smp for `collective` on a parent
// communicator and, on the node and node-roots communicators, the algorithms `nested` names
// (node_<coll> / node_roots_<coll> = <algorithm>; the others fixed); throws UsageError for a key
// or algorithm it cannot name.
std::string mpich_smp_selection(const std::string& collective,
                                const std::vector<std::pair<std::string, std::string>>& nested);
// Whether a library line's key names a nested algorithm of smp (node_..., node_roots_...).
bool smp_nested_key(const std::string& key);
// Why the run in dir (its ranks' "node" lines) says nothing of an smp algorithm: the
// communicator spans one node, or every node holds one rank (MPICH makes it flat), or the lines
// are missing or disagree. Empty: several nodes, one of two ranks or more.
std::string smp_not_spread(const std::string& dir, int p);

int run_conformance(const MpiOptions& o, std::ostream& out, std::ostream& err);

// Whether a model of the collective may count bytes (`item = byte`): a collective without a
// reduction (a library combines whole elements).
bool item_bytes_apply(const std::string& collective);

// Why a model says nothing of a run at p processes for any count of count_lo..count_hi: its
// `requires` holds at none of them (Open MPI's two_proc models at p != 2); empty when it holds
// at some count, or cannot be evaluated there (the model's run then says why).
std::string model_refuses_size(const Model& m, int p, std::int64_t count_lo, std::int64_t count_hi);

}  // namespace collv::mpi_detail
