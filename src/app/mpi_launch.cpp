// `collv mpi`: the library's algorithms, building the harness with the library's compiler, and
// running a process (the compiler, the launcher) bounded in time with its output kept.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "app/mpi_internal.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace fs = std::filesystem;

namespace collv {

std::vector<std::string> mpi_algorithms(const std::string& impl, const std::string& coll) {
  static const std::map<std::string, std::vector<std::string>> ompi = {
      {"allreduce",
       {"ignore", "basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring",
        "rabenseifner"}},
      {"alltoall", {"ignore", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"}},
      {"allgather",
       {"ignore", "linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"}},
      {"bcast",
       {"ignore", "basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree",
        "binomial", "knomial", "scatter_allgather", "scatter_allgather_ring"}},
      {"reduce",
       {"ignore", "linear", "chain", "pipeline", "binary", "binomial", "in-order_binary",
        "rabenseifner"}},
      {"reduce_scatter", {"ignore", "non-overlapping", "recursive_halving", "ring", "butterfly"}},
      {"reduce_scatter_block",
       {"ignore", "basic_linear", "recursive_doubling", "recursive_halving", "butterfly"}},
      {"gather", {"ignore", "basic_linear", "binomial", "linear_sync"}},
      {"scatter", {"ignore", "basic_linear", "binomial", "linear_nb"}},
      {"exscan", {"ignore", "linear", "recursive_doubling"}},
      {"scan", {"ignore", "linear", "recursive_doubling"}},
      {"allgatherv", {"ignore", "default", "bruck", "ring", "neighbor", "two_proc"}},
      {"alltoallv", {"ignore", "basic_linear", "pairwise"}},
      // The tuned component has no alltoallw algorithm (ompi_info --param coll tuned --level 9
      // lists none): the library's own choice.
      {"alltoallw", {"ignore"}},
      {"barrier",
       {"ignore", "linear", "double_ring", "recursive_doubling", "bruck", "two_proc", "tree"}},
      // The tuned component has no gatherv or scatterv algorithm: the library's own choice.
      {"gatherv", {"ignore"}},
      {"scatterv", {"ignore"}},
  };
  static const std::map<std::string, std::vector<std::string>> mpich = {
      {"bcast",
       {"auto", "binomial", "nb", "smp", "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather"}},
      {"gather", {"auto", "binomial", "nb"}},
      {"scatter", {"auto", "binomial", "nb"}},
      {"allgather", {"auto", "brucks", "nb", "recursive_doubling", "ring"}},
      {"alltoall", {"auto", "brucks", "nb", "pairwise", "pairwise_sendrecv_replace", "scattered"}},
      {"reduce", {"auto", "binomial", "nb", "smp", "reduce_scatter_gather"}},
      {"allreduce", {"auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather"}},
      {"reduce_scatter",
       {"auto", "nb", "noncommutative", "pairwise", "recursive_doubling", "recursive_halving"}},
      {"reduce_scatter_block",
       {"auto", "noncommutative", "recursive_doubling", "pairwise", "recursive_halving", "nb"}},
      {"scan", {"auto", "nb", "smp", "recursive_doubling"}},
      {"exscan", {"auto", "nb", "recursive_doubling"}},
      {"allgatherv", {"auto", "brucks", "nb", "recursive_doubling", "ring"}},
      {"gatherv", {"auto", "linear", "nb"}},
      {"scatterv", {"auto", "linear", "nb"}},
      {"alltoallv", {"auto", "nb", "pairwise_sendrecv_replace", "scattered"}},
      {"alltoallw", {"auto", "nb", "pairwise_sendrecv_replace", "scattered"}},
      {"barrier", {"auto", "nb", "smp", "dissemination"}},
  };
  const auto& table = impl == "openmpi" ? ompi : mpich;
  auto it = table.find(coll);
  return it == table.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> mpich_nb_algorithms(const std::string& coll) {
  static const std::map<std::string, std::vector<std::string>> nb = {
      {"barrier", {"auto", "sched_auto", "sched_recursive_doubling"}},
      {"bcast",
       {"auto", "sched_auto", "sched_binomial", "sched_smp",
        "sched_scatter_recursive_doubling_allgather", "sched_scatter_ring_allgather", "tsp_tree",
        "tsp_scatterv_recexch_allgatherv", "tsp_ring"}},
      {"gather", {"auto", "sched_auto", "sched_binomial", "tsp_tree"}},
      {"gatherv", {"auto", "sched_auto", "sched_linear", "tsp_linear"}},
      {"scatter", {"auto", "sched_auto", "sched_binomial", "tsp_tree"}},
      {"scatterv", {"auto", "sched_auto", "sched_linear", "tsp_linear"}},
      {"allgather",
       {"auto", "sched_auto", "sched_ring", "sched_brucks", "sched_recursive_doubling", "tsp_ring",
        "tsp_brucks", "tsp_recexch_doubling", "tsp_recexch_halving"}},
      {"allgatherv",
       {"auto", "sched_auto", "sched_brucks", "sched_recursive_doubling", "sched_ring",
        "tsp_recexch_doubling", "tsp_recexch_halving", "tsp_ring", "tsp_brucks"}},
      {"alltoall",
       {"auto", "sched_auto", "sched_brucks", "sched_inplace", "sched_pairwise",
        "sched_permuted_sendrecv", "tsp_ring", "tsp_brucks", "tsp_scattered"}},
      {"alltoallv",
       {"auto", "sched_auto", "sched_blocked", "sched_inplace", "tsp_scattered", "tsp_blocked",
        "tsp_inplace"}},
      {"alltoallw",
       {"auto", "sched_auto", "sched_blocked", "sched_inplace", "tsp_blocked", "tsp_inplace"}},
      {"reduce",
       {"auto", "sched_auto", "sched_smp", "sched_binomial", "sched_reduce_scatter_gather",
        "tsp_tree", "tsp_ring"}},
      {"allreduce",
       {"auto", "sched_auto", "sched_naive", "sched_smp", "sched_recursive_doubling",
        "sched_reduce_scatter_allgather", "tsp_recexch_single_buffer",
        "tsp_recexch_multiple_buffer", "tsp_tree", "tsp_ring",
        "tsp_recexch_reduce_scatter_recexch_allgatherv"}},
      {"reduce_scatter",
       {"auto", "sched_auto", "sched_noncommutative", "sched_recursive_doubling", "sched_pairwise",
        "sched_recursive_halving", "tsp_recexch"}},
      {"reduce_scatter_block",
       {"auto", "sched_auto", "sched_noncommutative", "sched_recursive_doubling", "sched_pairwise",
        "sched_recursive_halving", "tsp_recexch"}},
      {"scan",
       {"auto", "sched_auto", "sched_smp", "sched_recursive_doubling", "tsp_recursive_doubling"}},
      {"exscan", {"auto", "sched_auto", "sched_recursive_doubling"}},
  };
  auto it = nb.find(coll);
  return it == nb.end() ? std::vector<std::string>{} : it->second;
}

namespace mpi_detail {

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string d;
  while (std::getline(ss, d, ':')) {
    if (d.empty()) continue;
    fs::path cand = fs::path(d) / name;
    if (access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return "";
}

std::string slurp(const fs::path& p, std::size_t max) {
  std::ifstream f(p, std::ios::binary);
  std::error_code ec;
  const auto size = fs::file_size(p, ec);
  // What the file holds, at most max (never max itself allocated for a small file).
  const std::size_t want = ec ? 0 : static_cast<std::size_t>(std::min<std::uintmax_t>(size, max));
  std::string s(want, '\0');
  f.read(s.data(), static_cast<std::streamsize>(want));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

std::string head_lines(const std::string& s, std::size_t lines, std::size_t max_chars) {
  std::string h;
  std::size_t n = 0;
  for (char ch : s) {
    if (h.size() >= max_chars) return h + "...";
    if (ch == '\n' && ++n >= lines) return h + (h.size() + 1 < s.size() ? "\n..." : "");
    h += (ch == '\n' || static_cast<unsigned char>(ch) >= 0x20) ? ch : '?';
  }
  while (!h.empty() && h.back() == '\n') h.pop_back();
  return h;
}

std::string tail(const std::string& s, std::size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

ProcResult run_process(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env,
                       const fs::path& dir, int timeout_s,
                       const std::function<bool()>& progressed) {
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  pid_t pid = fork();
  if (pid < 0) throw UsageError("cannot start a process (fork failed)");
  if (pid == 0) {
    setpgid(0, 0);
    int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0) _exit(127);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  ProcResult res;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  for (int tick = 1;; ++tick) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) {
      res.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (progressed && tick % 20 == 0 && progressed())
      deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &st, 0);
      res.status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(-pid, SIGKILL);  // whatever the launcher left behind in its group
  res.out = slurp(out);
  res.err = slurp(err);
  return res;
}

bool count_finished(const fs::path& cdir, int p) {
  for (int r = 0; r < p; ++r) {
    // The last line, read from the file's end (a rank's file may be large).
    std::ifstream f(cdir / fmt::format("rank{}.jsonl", r), std::ios::binary);
    if (!f) return false;
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    const std::streamoff from = std::max<std::streamoff>(0, size - 256);
    f.seekg(from);
    std::string end(static_cast<std::size_t>(size - from), '\0');
    f.read(end.data(), static_cast<std::streamsize>(end.size()));
    while (!end.empty() && end.back() == '\n') end.pop_back();
    const auto nl = end.rfind('\n');
    const std::string line = nl == std::string::npos ? end : end.substr(nl + 1);
    if (line.rfind("{\"k\":\"done\"", 0) != 0) return false;
  }
  return true;
}

std::string rank_messages(const fs::path& cdir, int p, std::size_t max) {
  std::string all;
  for (int r = 0; r < p; ++r) {
    std::string text = slurp(cdir / fmt::format("rank{}.err", r), max);
    if (!text.empty())
      all += fmt::format("rank {}: {}{}", r, text, text.back() == '\n' ? "" : "\n");
  }
  return all;
}

std::string cache_root(const MpiOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (const char* e = std::getenv("COLLV_MPI_CACHE"); e && *e) return e;
  return (fs::temp_directory_path() / fmt::format("collv-mpi-{}", getuid())).string();
}

HarnessSources harness_sources(const std::string& path) {
  constexpr std::size_t kMaxFiles = 32, kMaxBytes = std::size_t{1} << 20;
  HarnessSources s;
  std::error_code ec;
  s.dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
  if (s.dir.empty()) s.dir = ".";
  for (const auto& e : fs::directory_iterator(s.dir, ec)) {
    const auto ext = e.path().extension();
    if ((ext == ".c" || ext == ".h") && e.is_regular_file(ec)) s.files.push_back(e.path());
  }
  if (ec) throw UsageError("cannot read the harness's directory '" + s.dir.string() + "'");
  if (s.files.size() > kMaxFiles)
    throw UsageError(
        fmt::format("the harness's directory '{}' holds {} .c and .h files (at most {})",
                    s.dir.string(), s.files.size(), kMaxFiles));
  std::sort(s.files.begin(), s.files.end());
  bool any_c = false;
  for (const auto& f : s.files) {
    const auto bytes = fs::file_size(f, ec);
    if (ec || bytes > kMaxBytes)
      throw UsageError(
          fmt::format("the harness's source '{}' cannot be read or is larger than {} bytes",
                      f.string(), kMaxBytes));
    s.texts.push_back(slurp(f, kMaxBytes));
    if (s.texts.back().size() != bytes)
      throw UsageError("cannot read the harness's source '" + f.string() + "'");
    any_c = any_c || f.extension() == ".c";
  }
  if (!any_c) throw UsageError("no harness source (.c) in '" + s.dir.string() + "'");
  return s;
}

std::string harness_cache_key(const std::string& impl, const std::string& mpicc,
                              const std::vector<std::string>& flags, const HarnessSources& src) {
  std::uint64_t h = fnv1a(impl + "\n" + mpicc + "\n");
  for (const auto& f : flags) h = fnv1a(f + "\n", h);
  // Each file's name and length before its text: no two file sets hash the same bytes.
  for (std::size_t i = 0; i < src.files.size(); ++i)
    h = fnv1a(
        src.texts[i],
        fnv1a(fmt::format("{}\n{}\n", src.files[i].filename().string(), src.texts[i].size()), h));
  return fmt::format("{:016x}", h);
}

// Builds the harness with mpicc, once per (library, compiler, harness sources): the binary is
// cached under a name made from their hash (harness_cache_key: every .c and .h file of the
// harness's directory).
std::string build_harness(const MpiOptions& o, const std::string& mpicc, const std::string& src,
                          std::ostream& err) {
  const HarnessSources sources = harness_sources(src);
  fs::path dir = cache_root(o);
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Open MPI: the harness's record of each message its pml monitoring counts is a function the
  // monitoring pml (a component Open MPI loads) calls: exported from the executable.
  const std::vector<std::string> flags =
      o.impl == "openmpi"
          ? std::vector<std::string>{"-Wl,--export-dynamic-symbol=mca_common_monitoring_record_pml"}
          : std::vector<std::string>{};
  const std::string key = harness_cache_key(o.impl, fs::absolute(mpicc).string(), flags, sources);
  fs::path bin = dir / ("harness-" + o.impl + "-" + key);
  if (access(bin.c_str(), X_OK) == 0) return bin.string();
  fs::path work = dir / fmt::format("build-{}-{}", key, getpid());
  fs::create_directories(work, ec);
  if (ec) throw UsageError("cannot create '" + work.string() + "': " + ec.message());
  fs::path tmp = work / "harness";
  // The compiler is bounded by --timeout too (a wrapper that hangs must not hang collv).
  std::vector<std::string> argv = {mpicc, "-O1", "-o", tmp.string()};
  for (const auto& f : sources.files)
    if (f.extension() == ".c") argv.push_back(fs::absolute(f).string());
  argv.insert(argv.end(), flags.begin(), flags.end());
  ProcResult pr = run_process(argv, {}, work, o.timeout_s);
  if (pr.status == -1) {
    fs::remove_all(work, ec);
    throw UsageError(fmt::format("{} did not build the harness {} in {} s (--timeout); stopped",
                                 mpicc, sources.dir.string(), o.timeout_s));
  }
  if (pr.status != 0 || access(tmp.c_str(), X_OK) != 0) {
    fs::remove_all(work, ec);
    throw UsageError(fmt::format("{} could not build the harness {} (exit {}):\n{}", mpicc,
                                 sources.dir.string(), pr.status, tail(pr.err + pr.out)));
  }
  fs::rename(tmp, bin, ec);
  fs::remove_all(work, ec);
  if (ec) throw UsageError("cannot write '" + bin.string() + "': " + ec.message());
  if (!o.quiet) err << "collv: built the harness with " << mpicc << ": " << bin.string() << "\n";
  return bin.string();
}

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// The library's algorithm name for --algorithm (a name or a number).
std::string algorithm_name(const MpiOptions& o) {
  if (o.algorithm == "harness-ring") return o.algorithm;
  auto algs = mpi_algorithms(o.impl, o.collective);
  std::string a = o.algorithm;
  // A name of the library's first: Open MPI's allgatherv algorithm 1 is called `default`, which
  // is no alias of the library's own choice there.
  if (std::find(algs.begin(), algs.end(), a) != algs.end()) return a;
  if (a == "auto" || a == "ignore" || a == "default") return algs.front();
  if (!a.empty() && std::all_of(a.begin(), a.end(), ::isdigit) && a.size() < 4) {
    std::size_t n = std::stoul(a);
    if (n < algs.size()) return algs[n];
  }
  std::string list;
  for (std::size_t i = 0; i < algs.size(); ++i)
    list += fmt::format("{}{} {}", i ? ", " : "", i, algs[i]);
  throw UsageError(fmt::format("--algorithm '{}' is not one of {}'s {} algorithms: {}", a, o.impl,
                               o.collective, list));
}

// Open MPI's tuned algorithms that call another one, without a word, for every non-commutative
// operation (the v4.1.4 sources): such a run never runs the named algorithm.
std::string openmpi_silent_fallback(const std::string& collective, const std::string& algorithm,
                                    bool commutative) {
  if (commutative) return "";
  if (collective == "reduce_scatter_block" && algorithm == "recursive_halving")
    return "ompi_coll_base_reduce_scatter_block_intra_recursivehalving calls the basic linear "
           "reduce_scatter_block for a non-commutative operation";
  if (collective == "allreduce" && algorithm == "rabenseifner")
    return "ompi_coll_base_allreduce_intra_redscat_allgather calls the basic linear all-reduce "
           "for a non-commutative operation";
  if (collective == "reduce" && algorithm == "rabenseifner")
    return "ompi_coll_base_reduce_intra_redscat_gather calls the basic linear reduce for a "
           "non-commutative operation";
  return "";
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-+=./:,") == std::string::npos)
    return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace mpi_detail

}  // namespace collv
