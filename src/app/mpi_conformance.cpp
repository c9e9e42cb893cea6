// `collv mpi --conformance`: every model whose `library` line names an Open MPI or MPICH
// selector, run as that library's algorithm against the model (docs/mpi.md).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "app/commands.hpp"
#include "app/mpi_internal.hpp"
#include "lang/ast.hpp"
#include "util/error.hpp"
#include "util/exit_codes.hpp"

namespace fs = std::filesystem;

namespace collv {

namespace mpi_detail {

namespace {

// A model file to run, and whether the command line named it (not found in a directory).
struct ModelFile {
  std::string path;
  bool named = false;
};

// Model files under the paths (directories recursively, sorted), each once: a file named on the
// command line counts as named even when a directory holds it too.
std::vector<ModelFile> model_files(const std::vector<std::string>& paths) {
  std::vector<ModelFile> files;
  auto add = [&files](const std::string& f, bool named) {
    for (auto& m : files)
      if (m.path == f) {
        m.named = m.named || named;
        return;
      }
    files.push_back({f, named});
  };
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> here;
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".coll")
          here.push_back(e.path().string());
      std::sort(here.begin(), here.end());
      for (const auto& f : here) add(f, false);
    } else if (fs::is_regular_file(p, ec)) {
      add(p, true);
    } else {
      throw UsageError("--conformance: '" + p + "' is no model file or directory");
    }
  }
  return files;
}

}  // namespace

int run_conformance(const MpiOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.impl.empty() || !o.collective.empty() || o.algorithm != "auto" || !o.model.empty())
    throw UsageError(
        "--conformance takes the library, collective and algorithm from each model's `library` "
        "line: no --impl, --collective, --algorithm or --model with it");
  if (o.inject != "none") throw UsageError("--inject does not apply to --conformance");
  auto files = model_files(o.conformance);
  std::vector<ConformanceRun> runs;
  std::vector<std::string> skipped;
  // Per model file named on the command line: its lines not run and not judged (below).
  struct Unjudged {
    std::size_t not_run = 0, fell_back = 0;
  };
  std::map<std::string, Unjudged> named;
  for (const auto& f : files) {
    if (f.named) named[f.path];
    for (auto& r : conformance_runs(f.path, o)) {
      if (r.why_not.empty()) {
        runs.push_back(std::move(r));
      } else {
        skipped.push_back(fmt::format("{}: {}", f.path, r.why_not));
        if (f.named) ++named[f.path].not_run;
      }
    }
  }
  if (runs.size() > 1 && (!o.json_file.empty() || !o.junit_file.empty()))
    throw UsageError("--json and --junit take one model; --conformance found " +
                     std::to_string(runs.size()));
  // The worst outcome decides: a violation, then an error, then an inconclusive run.
  auto rank = [](int rc) {
    return rc == kExitViolation ? 3 : rc == kExitUsage ? 2 : rc == kExitInconclusive ? 1 : 0;
  };
  int worst = kExitOk;
  std::size_t judged = 0;  // models with at least one run the library did not fall back in
  std::vector<std::string> lines;
  std::vector<std::string> not_judged;  // the labels whose every run fell back
  std::set<std::string> judged_files;   // model files with a judged line
  for (const auto& r : runs) {
    // A model's `nb` line is labelled apart from its blocking one: file#nb=<nonblocking name>.
    const std::string label =
        r.options.model + (r.options.nb_algorithm.empty() ? "" : "#nb=" + r.options.nb_algorithm);
    out << fmt::format("== {}: {} {} {}{} ({}), {} operation{}{}\n", label, r.options.impl,
                       r.options.collective, r.options.algorithm,
                       r.options.nb_algorithm.empty() ? "" : " " + r.options.nb_algorithm,
                       r.selector, r.options.op, r.options.in_place ? ", in place" : "",
                       r.options.equal_counts ? ", equal counts"
                       : r.options.contiguous ? ", contiguous blocks"
                                              : "");
    int rc = kExitUsage;
    // The library refused the algorithm for every run (MPICH says so and runs its own choice):
    // nothing of the model was judged, which is said, not counted as an error.
    bool fell_back = false;
    std::size_t compared = 0;
    MpiOptions one = r.options;
    one.all_fell_back = &fell_back;
    one.compared_runs = &compared;
    try {
      rc = run_mpi_command(one, out, err);
    } catch (const UsageError& e) {
      err << "collv: error: " << r.options.model << ": " << e.what() << "\n";
    }
    fell_back = fell_back && rc == kExitInconclusive;
    // Runs that pass where nothing was compared with the model (a broadcast under MPICH: no
    // combination, no message counts) say the library's results are right, not that it follows
    // the model: inconclusive (exit 3), never a pass.
    const bool uncompared = rc == kExitInconclusive && compared == 0 && !fell_back;
    lines.push_back(fmt::format(
        "  {}  {}",
        uncompared                ? "inconclusive"
        : rc == kExitOk           ? "pass        "
        : rc == kExitViolation    ? "FAIL        "
        : fell_back               ? "not judged  "
        : rc == kExitInconclusive ? "inconclusive"
                                  : "error       ",
        label + (fell_back ? " (the named algorithm never ran: the library fell back to its own "
                             "choice, or the communicator did not span several nodes, in every "
                             "run: see its report)"
                 : uncompared
                     ? " (no compare: the runs pass; nothing of them could be compared with "
                       "the model: no combination, and no per-peer message counts under "
                       "MPICH)"
                     : "")));
    if (!fell_back) ++judged;
    if (!fell_back && rank(rc) > rank(worst)) worst = rc;
    if (fell_back) {
      not_judged.push_back(label);
      if (named.count(r.options.model)) ++named[r.options.model].fell_back;
    } else {
      judged_files.insert(r.options.model);
    }
  }
  // A model named on the command line none of whose lines was judged (every run fell back, or
  // no line could run) was asked about and not answered: inconclusive (exit 3), never a pass.
  // One found in a directory is skipped, and the summary says so.
  std::vector<std::string> named_unjudged;
  for (const auto& [file, u] : named)
    if (!judged_files.count(file))
      named_unjudged.push_back(
          fmt::format("{} ({} line{} not judged: the library fell back in every run; {} not run)",
                      file, u.fell_back, u.fell_back == 1 ? "" : "s", u.not_run));
  out << fmt::format("\nconformance: {} models with an Open MPI or MPICH selector\n", runs.size());
  for (const auto& l : lines) out << l << "\n";
  if (!skipped.empty() && !o.quiet) {
    out << fmt::format("not run ({}):\n", skipped.size());
    for (const auto& s : skipped) out << "  " << s << "\n";
  }
  if (!not_judged.empty()) {
    out << fmt::format(
        "skipped, not passed: {} of {} model lines not judged (the named algorithm never ran: "
        "the library fell back, or the communicator did not span several nodes, in every run):\n",
        not_judged.size(), runs.size());
    for (const auto& l : not_judged) out << "  " << l << "\n";
  }
  if (!named_unjudged.empty()) {
    out << fmt::format("inconclusive: {} model{} named on the command line never judged:\n",
                       named_unjudged.size(), named_unjudged.size() == 1 ? "" : "s");
    for (const auto& l : named_unjudged) out << "  " << l << "\n";
  }
  if (runs.empty()) {
    err << "collv: error: no model under --conformance names an Open MPI or MPICH selector "
           "that can run at these sizes (exit 2)\n";
    return kExitUsage;
  }
  if (judged == 0) {
    // Every model's every run fell back: none of the named algorithms ran, so nothing passed.
    err << "collv: nothing was judged: the library fell back to its own choice in every run of "
           "every model (exit 3)\n";
    return kExitInconclusive;
  }
  if (!named_unjudged.empty() && rank(kExitInconclusive) > rank(worst)) {
    err << "collv: inconclusive (exit 3): a model named on the command line was never judged\n";
    worst = kExitInconclusive;
  }
  return worst;
}

}  // namespace mpi_detail

using namespace mpi_detail;

std::vector<ConformanceRun> conformance_runs(const std::string& model_file,
                                             const MpiOptions& base) {
  Model m = parse_model_file(model_file);
  std::vector<ConformanceRun> out;
  if (m.header.libraries.empty()) {
    ConformanceRun r;
    r.why_not = "no `library` line";
    out.push_back(r);
    return out;
  }
  for (const auto& lib : m.header.libraries) {
    ConformanceRun r;
    r.options = base;
    r.options.conformance.clear();
    r.options.message_dependencies = false;  // the model's line says (message_order)
    r.options.model_item_byte = false;       // and (item)
    r.options.contiguous = false;            // and (displs)
    r.options.model = model_file;
    for (const auto& [k, v] : lib.selectors)
      r.selector += (r.selector.empty() ? "" : " ") + k + " = " + v;
    r.selector = lib.library + " " + lib.version_lo +
                 (lib.version_hi != lib.version_lo ? " .. " + lib.version_hi : "") + " " +
                 r.selector;
    if (lib.library != "openmpi" && lib.library != "mpich") {
      r.why_not = lib.library + " is not an MPI library collv mpi runs";
      out.push_back(r);
      continue;
    }
    r.options.impl = lib.library;
    // The harness's name of the collective: MPI's, with reduce_scatter_block where the selector
    // names it (MPICH's models of MPI_Reduce_scatter_block).
    std::string coll;
    switch (m.header.collective) {
      case Collective::Allreduce:
        coll = "allreduce";
        break;
      case Collective::Reduce:
        coll = "reduce";
        break;
      case Collective::Broadcast:
        coll = "bcast";
        break;
      case Collective::Allgather:
        coll = "allgather";
        break;
      case Collective::Gather:
        coll = "gather";
        break;
      case Collective::Scatter:
        coll = "scatter";
        break;
      case Collective::Alltoall:
        coll = "alltoall";
        break;
      case Collective::ReduceScatter:
        coll = "reduce_scatter";
        break;
      case Collective::Scan:
        coll = "scan";
        break;
      case Collective::Exscan:
        coll = "exscan";
        break;
      case Collective::Barrier:  // no combination: compared by its messages
        coll = "barrier";
        break;
      // The v-collectives: the harness runs them with the model's counts(j) / counts(i, j)
      // (mpi/harness.c vcount, vpair), so the model's run at the same count is the library's.
      case Collective::Allgatherv:
        coll = "allgatherv";
        break;
      case Collective::Gatherv:
        coll = "gatherv";
        break;
      case Collective::Scatterv:
        coll = "scatterv";
        break;
      case Collective::Alltoallv:
        coll = "alltoallv";
        break;
      case Collective::ReduceScatterv:  // MPI_Reduce_scatter, with the model's counts(j)
        coll = "reduce_scatter";
        break;
      default:
        break;
    }
    if (coll.empty()) {
      const std::string name = collective_name(m.header.collective);
      r.why_not = std::find(kCollectives.begin(), kCollectives.end(), name) != kCollectives.end()
                      ? fmt::format(
                            "not compared: the harness runs {} (collv mpi --collective) with "
                            "counts of its own, not the model's counts(j)",
                            name)
                      : fmt::format("the harness runs no {}", name);
      out.push_back(r);
      continue;
    }
    std::string algo;
    bool builtin_op = false;
    for (const auto& [k, v] : lib.selectors) {
      // Arguments of the call that make the library run the algorithm (docs/mpi.md): MPICH's
      // pairwise_sendrecv_replace runs in place only, its Rabenseifner reductions for built-in
      // operations only.
      if (k == "MPI_IN_PLACE" || k == "MPI_Op") {
        if (k == "MPI_IN_PLACE" && v == "yes")
          r.options.in_place = true;
        else if (k == "MPI_Op" && v == "MPI_SUM")
          builtin_op = true;
        else
          r.why_not = fmt::format(
              "{} = {}: collv mpi knows {} only", k, v,
              k == "MPI_Op" ? "MPI_Op = MPI_SUM (on MPI_UINT64_T)" : "MPI_IN_PLACE = yes");
        continue;
      }
      // MPICH's smp algorithms (mpi_smp.cpp): the cliques that make one machine look like
      // several nodes (MPICH's MPIR_CVAR_NUM_CLIQUES, MPIR_CVAR_CLIQUES_BY_BLOCK), the
      // algorithms of the nested calls (node_<coll>, node_roots_<coll>), and the size of their
      // control messages (control_message_bytes).
      if (lib.library == "mpich" && !algo.empty() &&
          (k == "MPIR_CVAR_NUM_CLIQUES" || k == "MPIR_CVAR_CLIQUES_BY_BLOCK" ||
           k == "control_message_bytes" || smp_nested_key(k))) {
        const bool number =
            !v.empty() && v.size() < 6 && std::all_of(v.begin(), v.end(), ::isdigit);
        if (algo != "smp")
          r.why_not = fmt::format("{} applies to MPICH's smp algorithms only", k);
        else if (smp_nested_key(k))
          r.options.smp_nested.emplace_back(k, v);
        else if (!number)
          r.why_not = fmt::format("{} = {}: a number expected", k, v);
        else if (k == "control_message_bytes")
          r.options.control_bytes = std::stoll(v);
        else
          r.options.extra_env.emplace_back(k, v);
        continue;
      }
      // A schedule that issues each send when its dependencies complete (MPICH's generic
      // transport): its messages are compared by dependencies, not in program order.
      if (lib.library == "mpich" && !algo.empty() && k == "displs") {
        if (v != "contiguous")
          throw ModelError(lib.loc, fmt::format("'displs = {}': contiguous expected", v));
        r.options.contiguous = true;
        continue;
      }
      // A model that counts bytes (MPICH's scatter-allgather broadcasts cut nbytes): its item is
      // one byte of the library's buffer.
      if (!algo.empty() && k == "item") {
        if (v != "byte" && v != "element")
          throw ModelError(lib.loc, fmt::format("'item = {}': element or byte expected", v));
        if (v == "byte" && !item_bytes_apply(coll))
          throw ModelError(lib.loc, fmt::format("'item = byte' applies to collectives without a "
                                                "reduction, not {}: a library combines whole "
                                                "elements, never bytes",
                                                coll));
        r.options.model_item_byte = v == "byte";
        continue;
      }
      if (lib.library == "mpich" && !algo.empty() && k == "message_order") {
        if (v == "dependencies")
          r.options.message_dependencies = true;
        else if (v != "program")
          throw ModelError(lib.loc, fmt::format("'message_order = {}': program or dependencies "
                                                "expected",
                                                v));
        continue;
      }
      if (lib.library == "mpich") {
        std::string want = "MPIR_CVAR_" + upper(coll) + "_INTRA_ALGORITHM";
        if (coll == "reduce_scatter" && k == "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM") {
          coll = "reduce_scatter_block";
          want = k;
        }
        // MPI_Alltoallw (an alltoallv model: the same blocks, datatypes being the harness's
        // representation), and MPI_Alltoallv or MPI_Alltoallw with equal counts (an alltoall
        // model: --equal-counts, the symmetric counts MPICH's in-place algorithms need).
        if ((coll == "alltoall" || coll == "alltoallv") &&
            k == "MPIR_CVAR_ALLTOALLW_INTRA_ALGORITHM") {
          coll = "alltoallw";
          want = k;
        } else if (coll == "alltoall" && k == "MPIR_CVAR_ALLTOALLV_INTRA_ALGORITHM") {
          coll = "alltoallv";
          want = k;
        }
        if (k == want && algo.empty()) {
          algo = v;
        } else if (k == "MPIR_CVAR_I" + want.substr(10) && algo == "nb" &&
                   r.options.nb_algorithm.empty()) {
          // The nonblocking algorithm MPICH's `nb` runs (the parser checked the pairing).
          r.options.nb_algorithm = v;
        } else {
          // A key collv does not know could change what the library runs: never ignored.
          throw ModelError(lib.loc, fmt::format("'{} = {}': collv mpi --conformance knows no such "
                                                "MPICH setting of {} (the selector {}, then "
                                                "MPIR_CVAR_I{} for nb, MPI_Op, MPI_IN_PLACE, "
                                                "message_order, displs, item)",
                                                k, v, coll, want, want.substr(10)));
        }
      } else {
        // Open MPI's models of MPI_Reduce_scatter_block name its own selector; a further
        // coll_tuned_ setting (a segment size, or the algorithm of a collective the algorithm
        // calls: allgather linear's gather and bcast) goes to the launch's environment.
        if (coll == "reduce_scatter" && algo.empty() &&
            k == "coll_tuned_reduce_scatter_block_algorithm")
          coll = "reduce_scatter_block";
        std::string want = "coll_tuned_" + coll + "_algorithm";
        if (k == want && algo.empty())
          algo = v;
        else if (k.rfind("coll_tuned_", 0) == 0 && !algo.empty())
          r.options.extra_env.emplace_back("OMPI_MCA_" + k, v);
        else  // as for MPICH: a key collv does not know is never ignored
          throw ModelError(lib.loc, fmt::format("'{} = {}': collv mpi --conformance knows no such "
                                                "Open MPI setting of {} (the selector {}, then "
                                                "coll_tuned_ settings for the launch, MPI_Op, "
                                                "MPI_IN_PLACE, item)",
                                                k, v, coll, want));
      }
    }
    if (r.why_not.empty() && algo.empty()) r.why_not = "the line names no algorithm selector";
    // MPI_Reduce_scatter (Open MPI's reduce_scatter algorithms, MPICH's REDUCE_SCATTER selector)
    // runs with the harness's uneven counts, a `reduce-scatterv` model's counts(j); a model of
    // equal blocks (`collective reduce-scatter`) runs with equal counts (--equal-counts), its
    // blocks, under both libraries (Open MPI's since 2026-11-29: before, its ring reduce-scatter
    // model was not run).
    if (r.why_not.empty() && coll == "reduce_scatter" &&
        m.header.collective == Collective::ReduceScatter)
      r.options.equal_counts = true;
    if (r.why_not.empty() && m.header.collective == Collective::Alltoall && coll != "alltoall")
      r.options.equal_counts = true;
    r.options.collective = coll;
    r.options.algorithm = algo;
    // The operator the model is written for: a model of the non-commutative path (`operator
    // associative`) runs with a non-commutative user operation, whose order is judged too.
    // A model of an algorithm the library runs for built-in operations only (`MPI_Op = MPI_SUM`
    // on its line) runs with MPI_SUM: its messages are compared, no combination is seen.
    r.options.op = builtin_op                                        ? "builtin"
                   : m.header.op_class == OperatorClass::Commutative ? "commutative"
                                                                     : "noncommutative";
    if (r.why_not.empty()) {
      try {
        algorithm_name(r.options);          // the library knows the algorithm
        if (!r.options.smp_nested.empty())  // and the selection file can name the nested ones
          mpich_smp_selection(coll, r.options.smp_nested);
      } catch (const UsageError& e) {
        r.why_not = e.what();
      }
    }
    if (r.why_not.empty() && !r.options.nb_algorithm.empty()) {
      auto names = mpich_nb_algorithms(coll);
      if (std::find(names.begin(), names.end(), r.options.nb_algorithm) == names.end())
        r.why_not =
            fmt::format("MPICH has no nonblocking {} algorithm '{}'", coll, r.options.nb_algorithm);
    }
    // A model whose `requires` holds at no p of --sizes (Open MPI's two_proc algorithms: p = 2,
    // which the library refuses elsewhere) says nothing of those runs: not run, with the reason.
    // At a p of --sizes where it holds at no count, `collv mpi --model` does not launch the
    // library either (it lists those p).
    if (r.why_not.empty() && m.header.requires_) {
      std::string refused;
      bool runs_somewhere = false;
      for (std::int64_t p = base.sizes.first; p <= base.sizes.second && !runs_somewhere; ++p) {
        const std::string why =
            model_refuses_size(m, static_cast<int>(p), base.counts.first, base.counts.second);
        runs_somewhere = why.empty();
        if (refused.empty()) refused = why;
      }
      if (!runs_somewhere)
        r.why_not = fmt::format("its `requires` holds at no p of --sizes {}..{} ({})",
                                base.sizes.first, base.sizes.second, refused);
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace collv
