// `collv mpi`: builds the harness with an MPI library's compiler, runs it under the library's
// launcher with an algorithm selected, and judges what every rank observed (docs/mpi.md).
#include "app/mpi_cmd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "app/commands.hpp"
#include "app/mpi_internal.hpp"
#include "app/verify_cmd.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"
#include "util/exit_codes.hpp"

namespace fs = std::filesystem;

namespace collv {

using namespace mpi_detail;

int run_mpi_command(const MpiOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.conformance.empty()) return run_conformance(o, out, err);
  if (o.impl != "openmpi" && o.impl != "mpich") throw UsageError("--impl must be openmpi or mpich");
  if (std::find(kCollectives.begin(), kCollectives.end(), o.collective) == kCollectives.end()) {
    std::string l;
    for (const auto& c : kCollectives) l += (l.empty() ? "" : ", ") + c;
    throw UsageError("--collective must be one of " + l);
  }
  if (o.op != "commutative" && o.op != "noncommutative" && o.op != "builtin" && o.op != "matrix")
    throw UsageError("--op must be commutative, noncommutative, builtin or matrix");
  if (o.op == "matrix") {
    const std::string& k = o.collective;
    if (k != "allreduce" && k != "reduce" && k != "scan" && k != "exscan" &&
        k != "reduce_scatter" && k != "reduce_scatter_block")
      throw UsageError("--op matrix applies to the reductions only");
    if (o.algorithm == "harness-ring" || !o.model.empty())
      throw UsageError(
          "--op matrix judges the values of a library's reduction (a product of matrices), with "
          "no --model and no harness-ring");
  }
  if (o.op == "builtin") {
    const std::string& k = o.collective;
    if (k != "allreduce" && k != "reduce" && k != "scan" && k != "exscan" &&
        k != "reduce_scatter" && k != "reduce_scatter_block")
      throw UsageError("--op builtin applies to the reductions only");
    // No combination is visible; a model is compared by its messages only (MPICH's pattern,
    // Open MPI's per-peer counts), one item being a uint64.
    if (o.algorithm == "harness-ring")
      throw UsageError(
          "--op builtin: the library calls no user function, so no combination is visible; it "
          "judges the final values of a library's collective (and, with --model, its "
          "messages), with no harness-ring");
    // Digit r of a value is 5 bits: p <= 12 ranks, and (position + 1) < 32 at every position.
    const std::int64_t P = o.sizes.second, C = o.counts.second;
    std::int64_t positions = k == "reduce_scatter_block" ? P * C : C;
    if (k == "reduce_scatter") {  // the harness's counts: rs_count(j) = v_count(C, j)
      positions = 0;
      for (std::int64_t j = 0; j < P; ++j) positions += v_count(C, j);
    }
    if (P > 12 || positions > 31)
      throw UsageError(fmt::format(
          "--op builtin: p <= 12 and at most 31 positions (each rank's input is (position + 1) "
          "<< 5 rank); here p up to {} and up to {} positions",
          P, positions));
  }
  const bool ring = o.algorithm == "harness-ring";
  if (ring && o.collective != "allreduce")
    throw UsageError("--algorithm harness-ring is an all-reduce (the harness's own ring)");
  if (o.inject != "none" && !ring)
    throw UsageError(
        "--inject needs --algorithm harness-ring (bugs go into the harness's own "
        "ring all-reduce, never into the library)");
  if (o.inject != "none" && o.inject != "off-by-one" && o.inject != "double-count" &&
      o.inject != "swap-operands")
    throw UsageError("--inject must be off-by-one, double-count or swap-operands");
  if (o.sizes.first < 1 || o.sizes.second > 64 || o.sizes.first > o.sizes.second)
    throw UsageError("--sizes must lie in 1..64 (a rank's contributions are a 64-bit set)");
  if (o.counts.first < 0 || o.counts.second > 65536 || o.counts.first > o.counts.second)
    throw UsageError("--count must lie in 0..65536");
  if (o.timeout_s < 1 || o.timeout_s > 86400) throw UsageError("--timeout must be 1..86400");
  if (o.equal_counts && ((o.collective != "reduce_scatter" && o.collective != "alltoallv" &&
                          o.collective != "alltoallw") ||
                         o.op == "builtin" || o.op == "matrix"))
    throw UsageError(
        "--equal-counts applies to --collective reduce_scatter under a user operation "
        "(commutative or noncommutative), alltoallv and alltoallw");
  if (o.contiguous && o.collective != "allgatherv")
    throw UsageError("--contiguous applies to --collective allgatherv");
  if (o.in_place && o.collective == "bcast")
    throw UsageError("--in-place: MPI_Bcast has no MPI_IN_PLACE");
  if (o.in_place && o.collective == "barrier")
    throw UsageError("--in-place: a barrier has no buffer");
  if (o.in_place && ring) throw UsageError("--in-place does not apply to harness-ring");
  if (o.list) {
    // With --algorithm nb (MPICH): the nonblocking algorithms it can run, --nb-algorithm's names.
    const bool nb = o.impl == "mpich" && o.algorithm == "nb";
    for (const auto& a :
         nb ? mpich_nb_algorithms(o.collective) : mpi_algorithms(o.impl, o.collective))
      out << a << "\n";
    return kExitOk;
  }
  std::string alg = algorithm_name(o);
  // MPICH's `nb` runs the nonblocking collective's own selection; --nb-algorithm pins it.
  if (!o.nb_algorithm.empty()) {
    if (o.impl != "mpich" || alg != "nb")
      throw UsageError(
          "--nb-algorithm selects the nonblocking algorithm that MPICH's `nb` runs: it needs "
          "--impl mpich --algorithm nb");
    auto names = mpich_nb_algorithms(o.collective);
    if (std::find(names.begin(), names.end(), o.nb_algorithm) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      throw UsageError(
          fmt::format("--nb-algorithm '{}' is not one of MPICH's nonblocking {} "
                      "algorithms (MPIR_CVAR_I{}_INTRA_ALGORITHM): {}",
                      o.nb_algorithm, o.collective, upper(o.collective), list));
    }
  }
  std::string model_file;
  std::optional<Model> model;
  if (!o.model.empty()) {
    model_file =
        resolve_model_path(o.model, o.models_dir.empty() ? default_models_dir() : o.models_dir);
    model = parse_model_file(model_file);  // a model that does not parse is a usage error
  }
  // A model whose item is one byte of the library's buffer (MPICH's broadcasts that scatter
  // nbytes) runs at count x the element's bytes, and its messages are compared in bytes.
  const bool model_bytes = o.model_item_byte;
  if (model_bytes && (o.model.empty() || !item_bytes_apply(o.collective)))
    throw UsageError(
        "--model-item byte (a library line's `item = byte`) needs --model and a collective "
        "without a reduction: a library combines whole elements, never bytes");

  std::string mpicc =
      o.mpicc.empty() ? (o.impl == "openmpi" ? "mpicc.openmpi" : "mpicc.mpich") : o.mpicc;
  std::string mpirun =
      o.mpirun.empty() ? (o.impl == "openmpi" ? "mpirun.openmpi" : "mpiexec.mpich") : o.mpirun;
  std::string cc = find_program(mpicc), run = find_program(mpirun);
  if (cc.empty() || run.empty())
    throw UsageError(fmt::format(
        "no MPI to run: {} not found ({} is not installed? scripts/install-deps.sh installs Open "
        "MPI and MPICH; --mpicc and --mpirun name another build)",
        cc.empty() ? mpicc : mpirun, o.impl == "openmpi" ? "Open MPI" : "MPICH"));
  std::string src = !o.harness.empty() ? o.harness
                    : std::getenv("COLLV_MPI_HARNESS")
                        ? std::string(std::getenv("COLLV_MPI_HARNESS"))
                        : std::string(COLLV_SOURCE_DIR) + "/mpi/harness.c";
  std::string bin = build_harness(o, cc, src, err);

  // MPICH's smp algorithms are selected through the library's selection file, with the
  // algorithm variable at `auto` (mpi_smp.cpp), and judged only where the communicator spans
  // several nodes (the harness's node lines).
  const bool smp = o.impl == "mpich" && !ring && alg == "smp";
  if (!smp && (!o.smp_nested.empty()))
    throw UsageError("node_... and node_roots_... settings apply to MPICH's smp algorithms only");
  const std::string smp_json = smp ? mpich_smp_selection(o.collective, o.smp_nested) : "";
  // How the algorithm is selected: environment variables, so that a wrapper script given as
  // --mpirun passes them on without knowing them.
  std::vector<std::pair<std::string, std::string>> env;
  if (o.impl == "openmpi") {
    if (geteuid() == 0) {
      env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT", "1");
      env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    env.emplace_back("OMPI_MCA_rmaps_base_oversubscribe", "1");
    if (!ring && o.collective != "gatherv" && o.collective != "scatterv" &&
        o.collective != "alltoallw") {
      auto algs = mpi_algorithms(o.impl, o.collective);
      auto n = std::find(algs.begin(), algs.end(), alg) - algs.begin();
      env.emplace_back("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
      env.emplace_back("OMPI_MCA_coll_tuned_" + o.collective + "_algorithm", std::to_string(n));
    }
  } else {
    // MPIR-level selection (the ch4 device would otherwise pick its own), and a message instead
    // of a silent fallback when the algorithm does not apply to the arguments. (`error` is no
    // better: when a nested call refuses, the ranks see "Failure during collective" and no
    // reason; measured with the smp all-reduce.)
    env.emplace_back("MPIR_CVAR_DEVICE_COLLECTIVES", "none");
    env.emplace_back("MPIR_CVAR_COLLECTIVE_FALLBACK", "print");
    if (!ring)
      env.emplace_back("MPIR_CVAR_" + upper(o.collective) + "_INTRA_ALGORITHM", smp ? "auto" : alg);
    if (smp) env.emplace_back("COLLV_MPI_NODES", "1");
    if (!o.nb_algorithm.empty())
      env.emplace_back("MPIR_CVAR_I" + upper(o.collective) + "_INTRA_ALGORITHM", o.nb_algorithm);
    // Against a model: the harness logs every message a rank posts (its UCX interposer).
    if (!model_file.empty()) env.emplace_back("COLLV_MPI_TRACE", "1");
  }
  // Per-peer message counts (Open MPI, against a model's transfers): its pml monitoring counts
  // every message a rank posts, through a function the harness interposes, which logs the
  // messages made inside each call of the collective (its "sent" lines), so one launch serves
  // every count; pml_monitoring_enable=2 counts the collectives' internal messages (negative
  // tags) and user ones alike.
  const bool monitor = o.impl == "openmpi" && !model_file.empty();
  if (monitor) {
    env.emplace_back("OMPI_MCA_pml_monitoring_enable", "2");
    env.emplace_back("COLLV_MPI_TRACE", "1");
  }
  for (const auto& kv : o.extra_env) env.push_back(kv);

  VerifyReport rep;
  VerifyGroup g;
  g.model = fmt::format("{} {} {}", o.impl, o.collective, alg);
  if (!o.nb_algorithm.empty()) g.model += " " + o.nb_algorithm;
  if (o.inject != "none") g.model += " inject=" + o.inject;
  g.file = src;
  g.family = "np";
  g.named = true;
  rep.groups.push_back(g);
  std::vector<std::string> repro, refused, msgs_not_checked, not_spread;
  // The process counts where the model's `requires` holds at no count (Open MPI's two_proc
  // algorithms at p != 2, which the library refuses with an error): not launched, listed.
  std::vector<std::string> not_applicable;
  std::string not_spread_why;
  const bool commutative_op = o.op == "commutative" || o.op == "builtin";
  std::string silent_fallback;
  if (o.impl == "openmpi" && !ring) {
    silent_fallback = openmpi_silent_fallback(o.collective, alg, commutative_op);
    if (!silent_fallback.empty()) silent_fallback = "Open MPI's source: " + silent_fallback;
  }
  // Selected through the file, MPICH checks no restriction: collv applies smp's own.
  if (smp && !commutative_op &&
      (o.collective == "allreduce" || o.collective == "reduce" || o.collective == "scan"))
    silent_fallback =
        "MPICH runs its smp " + o.collective +
        " for commutative operations only (coll_algorithms.txt: restrictions commutative; "
        "through the selection file it would run it anyway)";
  // What a passing check says besides (order: combinations out of rank order whose value was
  // discarded; unmatched: what it could not see): per check, the runs and the first note.
  std::map<std::string, std::pair<std::size_t, std::string>> pass_notes;
  fs::path runs_dir = fs::path(cache_root(o)) / fmt::format("runs-{}", getpid());
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec) throw UsageError("cannot create '" + runs_dir.string() + "': " + ec.message());
  if (smp) {
    const fs::path json = runs_dir / "smp-selection.json";
    std::ofstream(json) << smp_json;
    env.emplace_back("MPIR_CVAR_COLL_SELECTION_TUNING_JSON_FILE", json.string());
  }
  auto t_all = std::chrono::steady_clock::now();
  std::size_t launches = 0;  // of the collective (the baseline launches not counted)

  for (std::int64_t p = o.sizes.first; p <= o.sizes.second; ++p) {
    const std::string not_here =
        model ? model_refuses_size(*model, static_cast<int>(p), o.counts.first, o.counts.second)
              : "";
    if (not_here.empty()) rep.groups[0].specs.push_back(fmt::format("np:{}", p));
    std::vector<int> roots;
    if (!rooted(o.collective)) {
      roots.push_back(0);
    } else if (o.root == "sample") {  // the first, a middle and the last rank
      for (int r : {0, static_cast<int>(p / 2), static_cast<int>(p - 1)})
        if (std::find(roots.begin(), roots.end(), r) == roots.end()) roots.push_back(r);
    } else if (o.root == "all") {
      for (int r = 0; r < p; ++r) roots.push_back(r);
    } else if (o.root == "last") {
      roots.push_back(static_cast<int>(p) - 1);
    } else {
      int r = -1;
      try {
        r = std::stoi(o.root);
      } catch (const std::exception&) {
        throw UsageError("--root must be a rank, last, sample or all");
      }
      if (r < 0) throw UsageError("--root must be a rank, last, sample or all");
      if (r >= p) {
        ++rep.groups[0].skipped_runs;
        continue;
      }
      roots.push_back(r);
    }
    // The model says nothing at this p: its runs are skipped by its `requires`, not launched.
    if (!not_here.empty()) {
      not_applicable.push_back(fmt::format("np:{} ({})", p, not_here));
      const auto runs =
          roots.size() * static_cast<std::size_t>(o.counts.second - o.counts.first + 1);
      rep.skipped_runs += runs;
      rep.groups[0].skipped_runs += runs;
      continue;
    }
    // Every count of a root in one launch (the launcher's start-up is most of a run's time);
    // what a rank prints during a count is in its c<N>/rank<R>.err (the harness points its
    // error stream there), so MPICH's fallback message still belongs to one count and rank, and
    // the messages each call posted are logged per call (MPICH's UCX sends, Open MPI's
    // monitored ones).
    for (int root : roots) {
      for (std::int64_t next = o.counts.first; next <= o.counts.second;) {
        const std::int64_t lo = next, hi = o.counts.second;
        fs::path dir = runs_dir / fmt::format("p{}-r{}-c{}", p, root, lo);
        fs::remove_all(dir, ec);
        fs::create_directories(dir, ec);
        std::string kind = ring             ? "ring_allreduce"
                           : o.equal_counts ? o.collective + "_equal"
                           : o.contiguous   ? o.collective + "_contiguous"
                                            : o.collective;
        std::vector<std::string> argv = {
            run,
            "-n",
            std::to_string(p),
            bin,
            dir.string(),
            kind,
            lo == hi ? std::to_string(lo) : fmt::format("{}..{}", lo, hi),
            std::to_string(root),
            o.op == "commutative" ? "c"
            : o.op == "builtin"   ? "b"
            : o.op == "matrix"    ? "m"
                                  : "n",
            o.in_place ? "1" : "0",
            o.inject};
        auto t0 = std::chrono::steady_clock::now();
        const auto& launch_env = env;
        // --timeout is per count: the launch's deadline moves on whenever a count starts (the
        // harness makes its directory c<N> first).
        std::int64_t started = lo;
        ++launches;
        ProcResult pr = run_process(argv, launch_env, dir, o.timeout_s, [&] {
          if (started >= hi || !fs::exists(dir / fmt::format("c{}", started + 1), ec)) return false;
          ++started;
          return true;
        });
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string launch;
        for (const auto& [k, v] : launch_env) launch += k + "=" + shell_quote(v) + " ";
        for (const auto& a : argv) launch += shell_quote(a) + " ";
        bool keep = false;
        // The launcher's own failure: it exited non-zero (or could not be started) and no rank
        // of any count wrote a file. Not the library's failure: an error (exit 2), with the
        // launcher's exit code and the first lines of its output.
        bool any_rank_file = false;
        for (std::int64_t n = lo; n <= hi && !any_rank_file; ++n)
          for (int r = 0; r < p && !any_rank_file; ++r)
            any_rank_file =
                fs::exists(dir / fmt::format("c{}", n) / fmt::format("rank{}.jsonl", r), ec);
        const bool launcher_failed = pr.status != 0 && pr.status != -1 && !any_rank_file;
        // A launch that ended abnormally (an abort, a crash, stopped at --timeout) ended in its
        // first count that some rank did not finish (no "done" line): the counts before it are
        // judged as finished runs (exit 0), that count as the launch's, and the counts after
        // it run again in a launch of their own. A count cut in a launch that did not start
        // with it runs again first in a new launch, so every count's verdict is the one a
        // launch of that count alone gives (the per-count launches this replaces).
        std::int64_t cut = hi + 1;
        if (pr.status != 0 && !launcher_failed)
          for (std::int64_t n = lo; n <= hi && cut > hi; ++n)
            if (!count_finished(dir / fmt::format("c{}", n), static_cast<int>(p))) cut = n;
        const std::int64_t last = launcher_failed ? hi : cut > hi ? hi : cut == lo ? lo : cut - 1;
        next = last + 1;
        for (std::int64_t count = lo; count <= last; ++count) {
          // This count's exit: a count finished before the launch's end went wrong is 0.
          const int status = count < cut && cut <= hi ? 0 : pr.status;
          MpiCase c{kind,
                    static_cast<int>(p),
                    static_cast<int>(count),
                    root,
                    o.op == "commutative" || o.op == "builtin",
                    o.in_place};
          c.builtin = o.op == "builtin";
          c.matrix = o.op == "matrix";
          fs::path cdir = dir / fmt::format("c{}", count);
          VerifyRun vr;
          vr.model = rep.groups[0].model;
          vr.file = src;
          vr.topology = fmt::format("np:{}", p);
          vr.p = static_cast<std::uint64_t>(p);
          if (rooted(o.collective)) vr.source = static_cast<std::uint32_t>(root);
          vr.count = static_cast<std::uint32_t>(count);
          vr.domain = o.op + (o.in_place ? "+in-place" : "") +
                      (o.equal_counts ? "+equal-counts" : "") + (o.contiguous ? "+contiguous" : "");
          std::string cmd = fmt::format(
              "collv mpi --impl {} --collective {} --algorithm {} --sizes {} --count {}{} --op "
              "{}{}",
              o.impl, o.collective, alg, p, count,
              rooted(o.collective) ? fmt::format(" --root {}", root) : "", o.op,
              o.in_place ? " --in-place" : "");
          if (o.equal_counts) cmd += " --equal-counts";
          if (o.contiguous) cmd += " --contiguous";
          if (o.message_dependencies) cmd += " --message-order dependencies";
          if (o.model_item_byte) cmd += " --model-item byte";
          if (!o.nb_algorithm.empty()) cmd += " --nb-algorithm " + o.nb_algorithm;
          if (o.inject != "none") cmd += " --inject " + o.inject;
          if (!o.model.empty()) cmd += " --model " + shell_quote(o.model);
          if (!o.model.empty() && o.max_ops != RunOptions{}.max_ops_per_node)
            cmd += fmt::format(" --max-ops {}", o.max_ops);
          if (!o.mpicc.empty()) cmd += " --mpicc " + shell_quote(o.mpicc);
          if (!o.mpirun.empty()) cmd += " --mpirun " + shell_quote(o.mpirun);
          // MPICH says when an algorithm does not apply and falls back to its own choice
          // (MPIR_CVAR_COLLECTIVE_FALLBACK=print): the library's documented behaviour, and the
          // run did not run the algorithm asked for, so it is not counted as its run.
          const std::string ranks_say = rank_messages(cdir, static_cast<int>(p), 1 << 16);
          const std::string launcher_says = head_lines(ranks_say + pr.err + pr.out, 12, 1200);
          std::string all_out = ranks_say + pr.err + pr.out;
          for (int r = 0; r < p; ++r)
            all_out += slurp(cdir / fmt::format("rank{}.jsonl", r), 1 << 16);
          // Open MPI says nothing, but its source calls another algorithm for every
          // non-commutative operation in a few of them: those runs are skipped alike.
          if (all_out.find("not usable for the provided arguments") != std::string::npos ||
              all_out.find("cannot be applied") != std::string::npos ||
              (count > 0 && !silent_fallback.empty())) {
            refused.push_back(
                fmt::format("np:{} count {}{}", p, count,
                            rooted(o.collective) ? fmt::format(" root {}", root) : ""));
            ++rep.skipped_runs;
            ++rep.groups[0].skipped_runs;
            continue;
          }
          // smp: a communicator of one node, or of nodes of one rank each, is no run of it.
          if (smp && any_rank_file) {
            const std::string why = smp_not_spread(cdir.string(), static_cast<int>(p));
            if (!why.empty()) {
              if (not_spread.empty()) not_spread_why = why;
              not_spread.push_back(
                  fmt::format("np:{} count {}{}", p, count,
                              rooted(o.collective) ? fmt::format(" root {}", root) : ""));
              ++rep.skipped_runs;
              ++rep.groups[0].skipped_runs;
              continue;
            }
          }
          if (launcher_failed) {
            vr.status = "error";
            vr.error =
                fmt::format("the launcher {} exited with {} before any rank wrote: {}", run,
                            pr.status, launcher_says.empty() ? "(no output)" : launcher_says);
            keep = true;
            repro.push_back(cmd + "\n      launch: " + launch + "(output kept in " + dir.string() +
                            ")");
            rep.runs.push_back(std::move(vr));
            rep.runs.back().group = 0;
            continue;
          }
          try {
            vr.checks = judge_mpi_run(c, cdir.string());
          } catch (const UsageError& e) {  // a line not in the harness's format: the run's error
            vr.status = "error";
            vr.error = e.what();
            keep = true;
            repro.push_back(cmd + "\n      launch: " + launch + "(output kept in " + cdir.string() +
                            ")");
            rep.runs.push_back(std::move(vr));
            rep.runs.back().group = 0;
            continue;
          }
          if (!model_file.empty()) {
            CheckResult conf, msgs;
            conf.name = "conformance";
            msgs.name = "messages";
            std::optional<ModelRunResult> mr;
            // The bytes of one library element, and of one model item (`item byte`: 1, the
            // model run at count x elem_bytes items; --count <= 65536 keeps that <= 1 MiB, and
            // --max-ops bounds the run).
            const std::uint64_t elem_bytes = c.builtin ? kHarnessValueBytes : kHarnessElemBytes;
            const std::uint64_t item_bytes = model_bytes ? 1 : elem_bytes;
            const std::int64_t model_count =
                model_bytes ? count * static_cast<std::int64_t>(elem_bytes) : count;
            try {
              mr = model_run(model_file, static_cast<int>(p), static_cast<int>(model_count), root,
                             o.max_ops, item_bytes, o.message_dependencies);
            } catch (const LimitError& e) {  // undecided: the comparison is inconclusive
              conf.verdict = msgs.verdict = Verdict::Unknown;
              conf.note = msgs.note = std::string("not checked: ") + e.what();
            } catch (const ModelError& e) {
              conf.note = msgs.note = std::string("the model does not run here: ") + e.what();
            } catch (const UsageError& e) {
              conf.note = msgs.note = std::string("the model does not run here: ") + e.what();
            }
            if (mr && c.builtin) {
              conf.verdict = Verdict::NotChecked;
              conf.note =
                  "not checked: a built-in operation (--op builtin) calls no user function, so "
                  "the library's combinations are not seen; its messages are compared";
            } else if (mr) {
              conf = compare_combinations(
                  library_combinations(cdir.string(), static_cast<int>(p), static_cast<int>(count)),
                  mr->combinations);
            }
            if (mr) {
              // The messages the harness logged per call: MPICH's through its UCX interposer (a
              // pattern: receivers, order, sizes), Open MPI's as its pml monitoring counted them
              // (per peer: messages and bytes; the order is not compared there).
              std::string why;
              auto lib = status == 0 ? library_sends(cdir.string(), static_cast<int>(p),
                                                     static_cast<int>(count), why)
                                     : std::nullopt;
              if (status != 0) why = "the launch did not end normally";
              if (!lib) {
                msgs.note = "not checked: " + why;
              } else if (!monitor && o.message_dependencies) {
                msgs = compare_sends_dependent(*lib, *mr, item_bytes);
              } else if (!monitor) {
                msgs = compare_sends(*lib, mr->sends, item_bytes, o.control_bytes);
              } else {
                // The harness calls the collective kHarnessCalls times per count.
                PeerMessages per_count = mr->messages;
                for (auto* m : {&per_count.msgs, &per_count.bytes})
                  for (auto& row : *m)
                    for (auto& v : row) v *= kHarnessCalls;
                msgs = compare_messages(peer_messages(*lib, static_cast<int>(p)), per_count,
                                        item_bytes);
                msgs.note += fmt::format(
                    "{}the count's {} calls of the collective against {} times the model's "
                    "transfers",
                    msgs.note.empty() ? "" : "; ", kHarnessCalls, kHarnessCalls);
              }
            }
            vr.checks.push_back(conf);
            vr.checks.push_back(msgs);
            if (msgs.verdict == Verdict::NotChecked)
              msgs_not_checked.push_back(fmt::format(
                  "np:{} count {}{}: {}", p, count,
                  rooted(o.collective) ? fmt::format(" root {}", root) : "", msgs.note));
          }
          CheckResult& rt = vr.checks.front();
          if (status == -1) {
            // The launch was stopped: its logs end where it was cut, so what they lack is no
            // violation of the library's. Every check is undecided, the model's comparison too.
            for (auto& ch : vr.checks)
              if (ch.verdict == Verdict::Fail) {
                ch.verdict = Verdict::Unknown;
                ch.violations.clear();
                ch.violation_count = 0;
                ch.note = "not judged: the launch was stopped at --timeout, its logs are cut short";
              }
            rt.verdict = Verdict::Unknown;
            rt.note =
                fmt::format("the launch did not finish in {} s (--timeout per count)", o.timeout_s);
          } else if (status != 0) {
            // The library's abort (a rank died, an assertion): what the launcher printed, first.
            Counterexample cx;
            cx.invariant = "runtime";
            cx.message = fmt::format("the launcher exited with {}: {}", status,
                                     launcher_says.empty() ? "(no output)" : launcher_says);
            rt.verdict = Verdict::Fail;
            rt.violations.insert(rt.violations.begin(), cx);
            ++rt.violation_count;
          }
          bool fail = false, unknown = false;
          for (const auto& ch : vr.checks) {
            fail = fail || ch.verdict == Verdict::Fail;
            unknown = unknown || ch.verdict == Verdict::Unknown;
          }
          vr.status = fail ? "fail" : unknown ? "inconclusive" : "pass";
          vr.seconds = secs / static_cast<double>(last - lo + 1);
          if (vr.status != "pass") {
            keep = true;
            repro.push_back(cmd + "\n      launch: " + launch + "(output kept in " + cdir.string() +
                            ")");
          }
          for (const auto& ch : vr.checks)
            if (ch.verdict == Verdict::Pass && !ch.note.empty() && ch.name != "messages") {
              auto& [n, first] = pass_notes[ch.name];
              if (n++ == 0)
                first =
                    fmt::format("np:{} count {}{}: {}", p, count,
                                rooted(o.collective) ? fmt::format(" root {}", root) : "", ch.note);
            }
          rep.runs.push_back(std::move(vr));
          rep.runs.back().group = 0;
        }
        if (!keep) fs::remove_all(dir, ec);
      }
    }
  }
  rep.groups[0].seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  // The smp selection file stays with kept runs (their launch lines name it).
  if (smp && repro.empty()) fs::remove(runs_dir / "smp-selection.json", ec);
  fs::remove(runs_dir, ec);  // only when empty: failing runs' output is kept

  // A run at count 0 runs no algorithm (the libraries return before choosing one): when no run
  // at count > 0 was judged, the named algorithm never ran, and its passing count-0 runs are
  // listed as skipped, not passed (a failing one stays a failure).
  const bool ran = std::any_of(rep.runs.begin(), rep.runs.end(), [](const VerifyRun& r) {
    return r.count > 0 && r.status != "error";
  });
  std::size_t count0 = 0;
  if (!ran) {
    std::vector<VerifyRun> kept;
    for (auto& r : rep.runs) {
      if (r.count == 0 && r.status == "pass") {
        ++count0;
        ++rep.skipped_runs;
        ++rep.groups[0].skipped_runs;
      } else {
        kept.push_back(std::move(r));
      }
    }
    rep.runs = std::move(kept);
  }
  const bool never_ran =
      rep.runs.empty() && (!refused.empty() || count0 > 0 || !not_spread.empty());
  Tally t = rep.tally();
  if (o.all_fell_back) *o.all_fell_back = never_ran;
  std::size_t compared = 0;  // runs whose conformance or messages compared something
  for (const auto& r : rep.runs)
    for (const auto& c : r.checks)
      if ((c.name == "conformance" || c.name == "messages") &&
          (c.verdict == Verdict::Pass || c.verdict == Verdict::Fail)) {
        ++compared;
        break;
      }
  if (o.compared_runs) *o.compared_runs = compared;
  std::string never_ran_why = fmt::format(
      "the named algorithm never ran: {} run{} where the library fell back to its own choice, {} "
      "at count 0 (no algorithm runs on no data)",
      refused.size(), refused.size() == 1 ? "" : "s", count0);
  if (!not_spread.empty())
    never_ran_why += fmt::format(", {} where the communicator did not span several nodes ({})",
                                 not_spread.size(), not_spread_why);
  if (rep.runs.empty())
    rep.groups[0].no_run = never_ran                 ? never_ran_why
                           : !not_applicable.empty() ? "the model's `requires` holds at no p of "
                                                       "--sizes: nothing to compare"
                                                     : "no process count and root to run";
  rep.exit_code = t.failed > 0         ? kExitViolation
                  : t.errors > 0       ? kExitUsage
                  : never_ran          ? kExitInconclusive
                  : rep.runs.empty()   ? kExitUsage
                  : t.inconclusive > 0 ? kExitInconclusive
                                       : kExitOk;

  // A model given and nothing of any run compared with it (a collective without a reduction
  // under MPICH: no combination, no per-peer counts): conformance is undecided, never passed.
  const bool nothing_compared = !model_file.empty() && rep.exit_code == kExitOk && compared == 0;
  if (nothing_compared) rep.exit_code = kExitInconclusive;
  auto write = [](const std::string& path, const std::string& text) {
    if (path == "-") {
      std::cout << text;
      return;
    }
    std::ofstream f(path);
    if (!f) throw UsageError("cannot write '" + path + "'");
    f << text;
  };
  if (!o.json_file.empty()) {
    nlohmann::json j = nlohmann::json::parse(report_to_json(rep));
    std::size_t k = 0;
    for (std::size_t i = 0; i < rep.runs.size(); ++i)
      if (rep.runs[i].status != "pass") j["results"][i]["reproduce"] = repro[k++];
    j["library"] = {{"impl", o.impl},       {"collective", o.collective},
                    {"algorithm", alg},     {"mpicc", cc},
                    {"mpirun", run},        {"harness", src},
                    {"fell_back", refused}, {"messages_not_checked", msgs_not_checked},
                    {"launches", launches}, {"not_applicable", not_applicable}};
    if (smp) j["library"]["not_several_nodes"] = not_spread;
    for (const auto& [name, v] : pass_notes)
      j["library"]["passed_with_note"][name] = {{"runs", v.first}, {"first", v.second}};
    write(o.json_file, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (!o.junit_file.empty()) write(o.junit_file, report_to_junit(rep));
  if (o.json_file != "-" && o.junit_file != "-") {
    out << report_to_text(rep, o.runs_table, o.quiet);
    if (!refused.empty()) {
      out << fmt::format(
          "the skipped runs: {} where the library fell back to its own choice (the algorithm "
          "does not apply to these arguments; {}):",
          refused.size(),
          silent_fallback.empty() ? std::string("MPIR_CVAR_COLLECTIVE_FALLBACK=print")
                                  : silent_fallback);
      for (std::size_t i = 0; i < refused.size() && i < 12; ++i) out << " " << refused[i] << ";";
      out << (refused.size() > 12 ? " ...\n" : "\n");
    }
    if (!not_spread.empty()) {
      out << fmt::format(
          "the skipped runs: {} where the communicator did not span several nodes with one of "
          "two ranks or more, so MPICH's smp algorithm did not run as a model of several nodes "
          "describes (the first: {}):",
          not_spread.size(), not_spread_why);
      for (std::size_t i = 0; i < not_spread.size() && i < 12; ++i)
        out << " " << not_spread[i] << ";";
      out << (not_spread.size() > 12 ? " ...\n" : "\n");
    }
    if (!not_applicable.empty()) {
      out << fmt::format(
          "not run at {} process count{}, where the model's `requires` holds at no count (the "
          "model says nothing of those runs):",
          not_applicable.size(), not_applicable.size() == 1 ? "" : "s");
      for (std::size_t i = 0; i < not_applicable.size() && i < 12; ++i)
        out << " " << not_applicable[i] << ";";
      out << (not_applicable.size() > 12 ? " ...\n" : "\n");
    }
    for (const auto& [name, v] : pass_notes)
      out << fmt::format("{} passed with a note in {} run{}; the first: {}\n", name, v.first,
                         v.first == 1 ? "" : "s", v.second);
    if (!msgs_not_checked.empty())
      out << fmt::format(
          "messages (per-peer counts against the model) not checked in {} of {} "
          "runs; the first: {}\n",
          msgs_not_checked.size(), rep.runs.size(), msgs_not_checked.front());
    if (!repro.empty() && !o.quiet) {
      out << "\nreproduce (the first failing runs):\n";
      for (std::size_t i = 0; i < repro.size() && i < 8; ++i) out << "  " << repro[i] << "\n";
    }
  }
  if (nothing_compared)
    err << "collv: the runs pass, but nothing of them could be compared with the model (no "
           "combination and no per-peer message counts to compare: each run's note says why): "
           "conformance undecided (exit 3)\n";
  if (never_ran)
    err << "collv: " << never_ran_why << "; nothing of it was verified (exit 3)\n";
  else if (rep.runs.empty())
    err << "collv: error: no run was made, so nothing was verified (exit 2)\n";
  return rep.exit_code;
}

}  // namespace collv
