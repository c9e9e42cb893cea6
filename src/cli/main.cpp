// The collv executable: parses the command line and calls the library. Nothing else lives here.
#include <CLI/CLI.hpp>
#include <iostream>

#include <unistd.h>

#include "app/commands.hpp"
#include "app/mpi_cmd.hpp"
#include "app/render_cmd.hpp"
#include "app/reproduce_cmd.hpp"
#include "app/smt_cmds.hpp"
#include "app/verify_cmd.hpp"
#include "topology/topology_cmd.hpp"
#include "util/deadline.hpp"
#include "util/exit_codes.hpp"
#include "util/memory.hpp"
#include "util/read_file.hpp"
#include "verify/partition.hpp"
#ifdef COLLV_MPI
#include "cli/partition_mpi.hpp"
#endif

namespace {

// Megabytes to bytes, refusing values that would overflow.
std::uint64_t mib(std::uint64_t m) {
  if (m == 0 || m > (std::uint64_t{1} << 40))
    throw collv::UsageError("--max-memory must be 1 .. 2^40 MiB");
  return m << 20;
}

// The error the command stopped with ("" if none): collv-mpi's processes compare it as they leave
// (MpiSession::finish), so that one that failed alone does not leave the others waiting.
std::string last_error;

int error_exit(int code, const char* prefix, const std::string& what) {
  std::cerr << prefix << what << "\n";
  last_error = what;
  return code;
}

// collv, or collv-mpi with `part` its processes (docs/partitioned.md).
int collv_main(int argc, char** argv, collv::Partition* part) {
  using namespace collv;
  CLI::App app{
      "collv: verify collective communication algorithms on interconnection networks.\n"
      "Models (models/*.coll) are run by an exhaustive executor under the synchronous\n"
      "single-port model. Exit codes: 0 ok, 1 violation, 2 bad usage or input, 3 inconclusive,\n"
      "70 an internal error (a bug in collv). Each command's --help lists what its codes mean."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "collv 0.1.0");

  TopologyCommandOptions topo_opts;
  auto* topo = app.add_subcommand("topology", "Describe a topology: size, degree, diameter, DOT");
  topo->add_option("spec", topo_opts.spec,
                   "ring:P line:P mesh:RxC torus:RxC hypercube:D tree:P star:N complete:P "
                   "debruijn:D, or a product A*B")
      ->required();
  topo->add_flag("--dot", topo_opts.dot, "write the network as Graphviz DOT");
  topo->add_option("-o,--output", topo_opts.dot_file, "with --dot: file to write (default stdout)");
  std::uint64_t topo_mem = 8192, topo_timeout = 0;
  topo->add_option("--max-memory", topo_mem, "memory limit in MiB (default 8192)");
  topo->add_option("--timeout", topo_timeout, "wall-clock limit in milliseconds (default none)");
  topo->footer(
      "Exit codes: 0 described, 2 bad usage or a spec collv refuses (with the reason), 3 stopped\n"
      "at --max-memory or --timeout.\n"
      "Examples:\n  collv topology star:5\n  collv topology mesh:4x4 --dot -o mesh.dot");

  ListOptions list_opts;
  auto* list =
      app.add_subcommand("list", "List the models with their collective, topology and source");
  list->add_option("--models", list_opts.models_dir, "models directory (default: ./models)");
  list->footer(
      "Exit codes: 0 every model listed, 2 a model that does not parse (reported as "
      "file:line:col) or no models directory.");

  RunCommandOptions run_opts;
  std::string domain = "exact";
  std::uint64_t max_mem = 8192;
  auto* run = app.add_subcommand("run", "Run one model on one topology and print its schedule");
  run->add_option("model", run_opts.model, "a .coll file, or a model name from `collv list`")
      ->required();
  run->add_option("-t,--topology", run_opts.topology,
                  "topology spec (default: a small member of the model's first family)");
  run->add_option("-s,--source", run_opts.run.root, "root of a rooted collective (default 0)");
  run->add_option("-q,--shift", run_opts.run.shift, "q of a circular shift (default 1)");
  run->add_option("-c,--count", run_opts.run.count,
                  "elements per input (per block for reduce-scatter, scatter, alltoall); the "
                  "model reads it as `count` (default 1)")
      ->check(CLI::Range(0, 4096));
  run->add_option("-d,--domain", domain, "exact | ordered | fingerprint")
      ->check(CLI::IsMember({"exact", "ordered", "fingerprint"}));
  run->add_option("--seed", run_opts.run.seed, "seed of the fingerprint domain");
  run->add_option("--json", run_opts.json_file,
                  "write the Trace as JSON to this file (- = stdout)");
  run->add_flag("--schedule", run_opts.schedule,
                "print every transfer and buffer, even for large runs");
  run->add_flag("--quiet", run_opts.quiet, "print nothing but errors");
  std::string run_port = "single", ver_port = "single";
  run->add_option("--port", run_port,
                  "port model the steps are timed under: single (default; one send and one "
                  "receive per node per step) | all (one transfer per directed link per step)")
      ->check(CLI::IsMember({"single", "all"}));
  run->add_option("--max-steps", run_opts.run.max_steps, "step limit (default 100000)");
  // --max-ops, the same for every command that runs models: operations per node on average
  // (a statement is one, `array a[n]` n more) before a run stops with exit 3.
  const auto max_ops_range = CLI::Range(std::uint64_t{1}, std::uint64_t{1000000000000000});
  const std::string max_ops_help =
      "operations per node on average before a run is stopped, exit 3 (default 1000000; "
      "1..10^15)";
  run->add_option("--max-ops", run_opts.run.max_ops_per_node, max_ops_help)->check(max_ops_range);
  run->add_option("--max-memory", max_mem, "memory limit in MiB (default 8192)");
  std::uint64_t run_timeout = 0;
  run->add_option("--timeout", run_timeout,
                  "wall-clock limit for the run in milliseconds (default none; exit 3)");
  run->add_option("--models", run_opts.models_dir, "models directory for model names");
  run->footer(
      "Exit codes: 0 the run finished and its step count and cost equal the model's claims;\n"
      "1 the run stopped at a deadlock or runtime error, or the measured steps or cost differ\n"
      "from the claim (said on stderr); 2 bad usage or input; 3 stopped at a limit\n"
      "(--max-steps, --max-ops, --max-memory, --timeout).\n"
      "`collv run` judges only the claims; `collv verify` judges every invariant.\n"
      "Examples:\n  collv run allreduce_star --topology star:3\n"
      "  collv run allgather_hypercube --topology ring:8     # the book's Figure 4.12\n"
      "  collv run scan_hypercube -t hypercube:3 -d ordered --json trace.json");

  ExportCommandOptions exp_opts;
  std::uint64_t exp_mem = 8192;
  auto* exp = app.add_subcommand(
      "export", "Write a model's run or a schedule file as MSCCL-XML for the MSCCL/RCCL runtimes");
  exp->add_option("target", exp_opts.target,
                  "a .coll file or model name (run in the exact domain, all-port), or a schedule "
                  "file (.xml, .json)")
      ->required();
  exp->add_option("-t,--topology", exp_opts.topology,
                  "topology of the run (default: a small member of the model's first family)");
  exp->add_option("-c,--count", exp_opts.run.count, "elements per input (default 1)")
      ->check(CLI::Range(0, 4096));
  exp->add_option("-s,--source", exp_opts.run.root,
                  "root of a broadcast or reduce (default 0; the file is for that root only)");
  exp->add_option("--msccl-xml", exp_opts.msccl_xml, "the MSCCL-XML file to write (- = stdout)")
      ->required();
  exp->add_flag("--out-of-place", exp_opts.msccl.out_of_place,
                "write an out-of-place algorithm (inplace=\"0\" outofplace=\"1\"): the input "
                "buffer is only read");
  std::string exp_msccl_rt = "msccl-executor-nccl";
  exp->add_option("--msccl-runtime", exp_msccl_rt,
                  "the runtime whose limits the file keeps and whose loader re-judges it: "
                  "msccl-executor-nccl (default) | msccl")
      ->check(CLI::IsMember({"msccl-executor-nccl", "msccl"}));
  exp->add_option("--msccl-proto", exp_opts.msccl.proto,
                  "the protocol the file names: Simple (default) | LL | LL128; the re-import "
                  "replays it with that protocol's connection slots (2 sends under Simple, 8 "
                  "under LL and LL128)")
      ->check(CLI::IsMember({"Simple", "LL", "LL128"}));
  exp->add_option("--max-ops", exp_opts.run.max_ops_per_node, max_ops_help)->check(max_ops_range);
  exp->add_option("--max-memory", exp_mem, "memory limit in MiB (default 8192)");
  exp->add_option("--models", exp_opts.models_dir, "models directory for model names");
  exp->footer(
      "allgather, allreduce, reduce_scatter, alltoall, broadcast and reduce, in place (or\n"
      "--out-of-place), one threadblock per peer, direction and channel, up to 32 peers per\n"
      "channel, contiguous chunks merged into one step, threadblocks over the step limit split\n"
      "over more channels; within the limits of --msccl-runtime or refused with the reason\n"
      "(docs/formats.md); gather, scatter, (ex)scan, shift, barrier are refused. The written file\n"
      "is imported and judged before it is kept: it must pass every check, the runtime's loading\n"
      "rules included, and carry every chunk the run sent.\n"
      "Exit codes: 0 written and re-judged as passing; 1 the re-import does not pass (nothing\n"
      "written); 2 bad usage or input, or a schedule MSCCL-XML cannot express.\n"
      "Examples:\n  collv export models/mpich/allgather_bruck.coll -t nvswitch:8 --msccl-xml "
      "ag.xml\n"
      "  collv verify ag.xml -t nvswitch:8");

  VerifyOptions ver_opts;
  std::string sizes;
  std::uint64_t ver_mem = 8192;
  auto* ver = app.add_subcommand(
      "verify", "Run models over topologies, sizes, sources and domains and judge every invariant");
  ver->add_option("targets", ver_opts.targets,
                  "model files, model names, directories, or schedule files (.xml MSCCL, "
                  ".json collv or SCCL/msccl, .goal; docs/formats.md)");
  ver->add_flag("--all", ver_opts.all, "every model in the models directory");
  ver->add_option("--trace", ver_opts.trace_files,
                  "judge a schedule file (JSON as `collv run --json` writes it; "
                  "docs/trace-format.md) instead of running a model");
  ver->add_option("-t,--topology", ver_opts.topologies,
                  "topology spec(s) to run on (default: every size of each model's families); "
                  "a schedule file is judged under each one with as many processors (its links "
                  "and bandwidths: dgx1, nvswitch:N, file:T.json)");
  ver->add_option("--sizes", sizes,
                  "A..B: processors for ring/line/complete/tree/mesh/torus, d for hypercube and "
                  "de Bruijn, n for star (default: p <= 64, star n <= 6)");
  std::string counts;
  ver->add_option("-c,--count", counts,
                  "N or A..B: element counts to run, each a run of its own (default 1; models "
                  "read it as `count`; at most 4096)");
  ver->add_option("-s,--source", ver_opts.source,
                  "root of rooted collectives: all (default) or a node id (for a GOAL file, "
                  "the root its flow is judged from)");
  ver->add_option("--collective", ver_opts.file_collective,
                  "the collective a GOAL file implements (GOAL does not say), which sets who "
                  "must reach whom: broadcast, scatter, outcast, reduce, gather, incast, "
                  "allreduce, allgather, barrier, alltoall, reduce-scatter, scan");
  ver->add_option("-d,--domain", ver_opts.domain,
                  "exact | ordered | fingerprint | all (default: exact and ordered) | symmetry "
                  "(star:2..13, hypercube:1..32 and ring:2..1048576 programs, one node for all: "
                  "docs/symmetry.md)");
  ver->add_option("--engine", ver_opts.engine, "exec (default) | smt | both")
      ->check(CLI::IsMember({"exec", "smt", "both"}));
  ver->add_option("--json", ver_opts.json_file, "write the report as JSON (- = stdout)");
  ver->add_option("--junit", ver_opts.junit_file, "write the report as JUnit XML (- = stdout)");
  ver->add_flag("--quiet", ver_opts.quiet, "print only the summary line");
  ver->add_flag("--strict", ver_opts.strict,
                "judge by the collective's own rules whatever the file or model declares: MPI's "
                "positional layout, operands in rank order (a non-commutative operator)");
  ver->add_flag("--every-p", ver_opts.every_p,
                "also run the model's proof for every p in proofs/every-p (collv prove --every-p), "
                "if it has one, and report it under the model");
  ver->add_flag("--runs", ver_opts.runs_table,
                "one line per run and every failing run in full, instead of one line per model "
                "and family");
  ver->add_option("--cex-dir", ver_opts.cex_dir, "write one SVG picture per failing run into DIR");
  SmtOptions ver_smt;
  std::string ver_algebra = "auto";
  ver->add_option("--timeout", ver_smt.timeout_ms,
                  "SMT engine: milliseconds per query (30000); given, also the wall-clock limit "
                  "of the whole command, runs and schedule readers included (exit 3)");
  ver->add_option("--max-terms", ver_smt.max_terms, "SMT engine: size cap per trace (20000000)");
  ver->add_option("--algebra", ver_algebra,
                  "SMT engine: auto (from the model's operator), commutative (integer sums) or "
                  "associative (sequences)")
      ->check(CLI::IsMember({"auto", "commutative", "associative"}));
  ver->add_option("--emit-smt2", ver_smt.emit_dir,
                  "SMT engine: write every query as SMT-LIB2 into DIR");
  ver->add_option("--max-p", ver_opts.max_p,
                  "default bound on processors (64; at most 4096, as --sizes): the sweep's sizes "
                  "are listed before any runs, so an absurd bound is refused at once")
      ->check(CLI::Range(2, 4096));
  ver->add_option("--max-star", ver_opts.max_star, "default bound on the star's n (6; 2..13)")
      ->check(CLI::Range(2, 13));
  ver->add_option("--port", ver_port,
                  "port model of the runs: single (default) | all (single-port is then not "
                  "checked; congestion judges each directed link); for a schedule file it "
                  "replaces the file's own (MSCCL/SCCL all, GOAL single)")
      ->check(CLI::IsMember({"single", "all"}));
  std::string ver_stream = "auto";
  ver->add_option("--stream", ver_stream,
                  "auto (default): a run whose trace would take over a quarter of --max-memory is "
                  "judged as it runs, keeping no trace (single-port, neighbour transfers; nodup "
                  "and dataflow are then not checked; collv-mpi on 2 or more processes streams "
                  "every run that can be) | on: every run streamed | off: every trace kept")
      ->check(CLI::IsMember({"auto", "on", "off"}));
  std::string ver_msccl_rt = "msccl-executor-nccl";
  ver->add_option("--msccl-runtime", ver_msccl_rt,
                  "MSCCL-XML files: the runtime whose loading rules the `runtime` check applies: "
                  "msccl-executor-nccl (default, the stricter) | msccl")
      ->check(CLI::IsMember({"msccl-executor-nccl", "msccl"}));
  ver->add_option("--msccl-slots", ver_opts.msccl.slots,
                  "MSCCL-XML files: sends a connection holds before a send blocks (default by "
                  "the file's proto: Simple 2, LL and LL128 8; 0 = unbounded)")
      ->check(CLI::Range(0, 1000000));
  ver->add_option("--max-steps", ver_opts.run.max_steps, "step limit per run (100000)");
  ver->add_option("--max-ops", ver_opts.run.max_ops_per_node, max_ops_help)->check(max_ops_range);
  ver->add_option("--max-memory", ver_mem, "memory limit per run in MiB (8192)");
  ver->add_option("--models", ver_opts.models_dir, "models directory (default: ./models)");
  ver->footer(
      "Output: one line per model and topology family (runs, passed, commutative-only, failed,\n"
      "inconclusive, errors, skipped, sizes, time), the failures with their first\n"
      "counterexample in full, and a summary line (--runs: one line per run).\n"
      "Exit codes: 0 every check holds (commutative-only runs included), 1 a violation,\n"
      "2 bad usage or input, a model error in a run, or nothing checked (no run at all, or none\n"
      "of a model named on the command line: a --source, --sizes or --topology that matches\n"
      "nothing, a `requires` false everywhere), 3 inconclusive (a limit, or Z3 gave no answer).\n"
      "Examples:\n  collv verify --all\n  collv verify allreduce_star --sizes 2..5\n"
      "  collv verify models/ --json report.json --junit report.xml\n"
      "  collv verify allgather_hypercube --topology ring:8   # the book's Figure 4.12");

  RenderCommandOptions ren_opts;
  auto* ren = app.add_subcommand("render", "Run a model and draw its schedule with Graphviz");
  ren->add_option("model", ren_opts.model,
                  "a .coll file, a model name from `collv list`, or a schedule file (.xml, "
                  ".json, .goal)");
  ren->add_option("--trace", ren_opts.trace_file,
                  "draw this schedule file (JSON as `collv run --json` writes it) instead of "
                  "running a model");
  ren->add_option("-t,--topology", ren_opts.topology,
                  "topology spec (default: a small member of the model's first family)");
  ren->add_option("-s,--source", ren_opts.source, "root of a rooted collective (default 0)");
  ren->add_option("-q,--shift", ren_opts.shift, "q of a circular shift (default 1)");
  ren->add_option("-d,--domain", ren_opts.domain, "exact | ordered | fingerprint");
  ren->add_option("-o,--output", ren_opts.output,
                  "FILE.svg, FILE.png or FILE.dot (- = DOT on stdout)");
  ren->add_option("--per-step", ren_opts.per_step_dir, "also write one picture per step into DIR");
  ren->add_option("--steps", ren_opts.steps, "only these steps in the -o picture (e.g. 1,2,7)")
      ->delimiter(',');
  ren->add_flag("--counterexample", ren_opts.counterexample,
                "draw the first violation instead of the schedule");
  ren->add_option("--check", ren_opts.check, "with --counterexample: only this invariant");
  ren->add_option("--step", ren_opts.cex_step, "with --counterexample: the violation at this step");
  ren->add_flag("--force", ren_opts.force, "draw topologies above 1000 nodes anyway");
  ren->add_option("--max-ops", ren_opts.max_ops, max_ops_help)->check(max_ops_range);
  ren->add_option("--timeout", ren_opts.timeout, "seconds allowed to the Graphviz program (60)");
  ren->add_option("--graphviz", ren_opts.program, "the Graphviz layout program (neato)");
  ren->add_option("--models", ren_opts.models_dir, "models directory for model names");
  ren->footer(
      "Exit codes: 0 written; 1 written, but the run failed (deadlock, runtime error) or a\n"
      "counterexample was drawn; 2 bad usage or input (unknown model or spec, bad extension,\n"
      "too large without --force, Graphviz missing, failing or too slow); 3 written, but the run\n"
      "stopped at a limit (--max-ops, the step or memory limit).\n"
      "Examples:\n  collv render allreduce_star -t star:3 -o star3.svg --per-step steps/\n"
      "  collv render allgather_hypercube -t ring:8 --counterexample -o fig4-12.svg");

  ProveCommandOptions prv_opts;
  auto* prv = app.add_subcommand(
      "prove", "Discharge proof files (*.proof) and SMT-LIB2 certificates with Z3");
  prv->add_option("paths", prv_opts.paths, "*.proof or *.smt2 files, or directories of them")
      ->required();
  prv->add_option("--emit-smt2", prv_opts.emit_dir,
                  "write every query as a self-contained SMT-LIB2 file into DIR");
  prv->add_option("--timeout", prv_opts.timeout_ms,
                  "milliseconds per query (60000); given, also the wall-clock limit of the "
                  "whole command, file readers included (exit 3)");
  prv->add_option("--rlimit", prv_opts.rlimit,
                  "with --every-p: Z3's resource units per way of the portfolio, the bound "
                  "that does not move with the load (0 = none; default in docs/smt.md); the "
                  "per-way wall clock is --timeout, 300000 ms by default with --every-p");
  prv->add_option("--max-terms", prv_opts.max_terms,
                  "size cap per query, checked before it is built");
  prv->add_option("--models", prv_opts.models_dir, "models directory for proofs about models");
  prv->add_flag("--quiet", prv_opts.quiet, "print only the summary line");
  prv->add_flag("--every-p", prv_opts.every_p,
                "prove MODEL.coll for every p and count from its program, with a `kind every-p` "
                "proof file's loop invariants (docs/smt.md, 'Every p from the model')");
  prv->add_option("--model", prv_opts.every_p_model,
                  "with --every-p: apply the proof file to this model file instead of its own");
  prv->footer(
      "Exit codes: 0 every obligation has its expected answer, 1 one was contradicted, 2 bad "
      "input, 3 inconclusive.\n"
      "A .proof file is `key value` lines; kind model | induction | steps | claim | recurrence |\n"
      "synth | smt2 (docs/smt.md, section 3). kind induction proves a star program's theorems for\n"
      "every n from its own statements (section 3a), e.g.\n"
      "  kind induction\n  model allreduce_star\n  expect proved\n"
      "Example:\n  collv prove proofs/ --emit-smt2 certs/\n"
      "  collv prove proofs/mutants/   # broken variants of allreduce_star, each disproved\n"
      "  collv prove --every-p proofs/every-p/allgather_ring.proof --emit-smt2 certs/\n"
      "  bash scripts/recheck-certificates.sh certs/   # z3 alone re-checks every certificate");

  SynthCommandOptions syn_opts;
  std::string syn_port = "single";
  auto* syn = app.add_subcommand(
      "synth", "Synthesize a schedule with Z3, or prove that none exists in T steps");
  syn->add_option("collective", syn_opts.synth.collective,
                  "broadcast | allgather (gossip) | allreduce")
      ->required();
  syn->add_option("-t,--topology", syn_opts.synth.topology, "topology spec")->required();
  syn->add_option("--steps", syn_opts.synth.steps,
                  "T: the number of steps (with --least: the largest tried)")
      ->required();
  syn->add_option("--port", syn_port, "single (default) | all")
      ->check(CLI::IsMember({"single", "all"}));
  syn->add_flag("--least", syn_opts.synth.least, "find the least T in 1..steps");
  syn->add_flag("--uniform", syn_opts.synth.uniform,
                "only schedules where every node uses the same link in a step (unsat is then not a "
                "lower bound)");
  syn->add_option("--invariant", syn_opts.synth.invariant,
                  "cadical: only schedules invariant under the group these automorphisms span "
                  "(star:n: symbol permutations '(1 2 3),(4 5)'; hypercube:d: xor masks '3,5'); "
                  "unsat is then not a lower bound");
  syn->add_flag("--nodup", syn_opts.synth.nodup,
                "cadical, single-port allreduce: no message carries a contribution its receiver "
                "already holds");
  syn->add_flag("--exchange", syn_opts.synth.exchange,
                "cadical, single-port allreduce: one neighbour per node and step (send to and "
                "receive from the same one)");
  syn->add_option("--root", syn_opts.synth.root, "broadcast source (0)");
  syn->add_option("--json", syn_opts.json_file,
                  "write the schedule (a Trace) as JSON (- = stdout)");
  syn->add_flag("--schedule", syn_opts.schedule, "print every transfer even when there are many");
  syn->add_option("-o,--output", syn_opts.picture,
                  "draw the schedule found: FILE.svg, .png or .dot");
  syn->add_option("--emit-smt2", syn_opts.synth.emit_dir, "write every query as SMT-LIB2 into DIR");
  syn->add_option("--timeout", syn_opts.synth.timeout_ms,
                  "milliseconds per query (60000); given, also the wall-clock limit of the "
                  "whole command (exit 3)");
  std::uint64_t syn_mem = 8192;
  syn->add_option("--max-memory", syn_mem,
                  "memory limit in MiB (8192): a query that would need more is refused before "
                  "it is built (exit 3)");
  syn->add_option("--max-terms", syn_opts.synth.max_terms,
                  "size cap per query (cadical: literals of the CNF)");
  syn->add_option("--backend", syn_opts.synth.backend, "z3 (default) | cadical (CNF, SAT solver)")
      ->check(CLI::IsMember({"z3", "cadical"}));
  syn->add_option("--proof", syn_opts.synth.proof_dir,
                  "cadical: write each query's DIMACS CNF and, for unsat, its DRAT proof into DIR");
  syn->add_flag("!--no-symmetry-breaking", syn_opts.synth.symmetry_breaking,
                "cadical: do not fix the first message by the graph's automorphisms");
  syn->add_option("--cubes", syn_opts.synth.cube_depth,
                  "cadical: cube and conquer, lookahead to depth D, cubes decided in turn (unsat "
                  "then has no DRAT proof; progress on stderr)");
  syn->add_flag("--quiet", syn_opts.quiet, "print only the verdict");
  syn->footer(
      "Exit codes: 0 a schedule was found, 1 proved impossible, 2 bad usage, 3 inconclusive.\n"
      "Examples:\n  collv synth allgather -t hypercube:3 --steps 3\n"
      "  collv synth allreduce -t star:4 --steps 6 --least\n"
      "  collv synth allreduce -t star:5 --steps 9 --backend cadical --invariant \"(1 2 3),(3 4 "
      "5)\"\n"
      "  collv synth allgather -t star:5 --steps 8 --backend cadical --cubes 8 --timeout 3600000");

  ReproduceOptions rep_opts;
  auto* rep = app.add_subcommand(
      "reproduce", "Recompute the star paper's Tables 1 and 2 and report every disagreement");
  rep->add_option("what", rep_opts.what, "table1 | table2 | all (default)")
      ->check(CLI::IsMember({"table1", "table2", "all"}));
  rep->add_option(
      "--max-n", rep_opts.max_n,
      "Table 2: run the all-reduce up to star:N (2..10, default 10; beyond 7 by symmetry)");
  rep->add_option("--broadcast-max-n", rep_opts.broadcast_max_n,
                  "Table 2: prove the least single-port broadcast time on star:n with the SAT "
                  "backend for n up to this (default 5; star:6 takes minutes)");
  rep->add_option("--models", rep_opts.models_dir, "models directory");
  rep->footer(
      "Exit codes: 0 every number agrees, 1 a disagreement (listed), 2 bad usage.\n"
      "The paper's theorems are reproduced by `collv prove proofs/` (docs/smt.md).");

  MpiOptions mpi_opts;
  std::string mpi_sizes = "2..4", mpi_counts = "1";
  auto* mpi = app.add_subcommand(
      "mpi",
      "Judge an installed MPI library's collective: every combination it makes, its results");
  mpi->add_option("--impl", mpi_opts.impl, "openmpi | mpich")
      ->check(CLI::IsMember({"openmpi", "mpich"}));
  mpi->add_option("--collective", mpi_opts.collective,
                  "allreduce reduce bcast allgather gather scatter alltoall reduce_scatter "
                  "reduce_scatter_block scan exscan allgatherv gatherv scatterv alltoallv "
                  "alltoallw barrier");
  mpi->add_option("--conformance", mpi_opts.conformance,
                  "model files or directories: run every model whose `library` line names an "
                  "Open MPI or MPICH selector as that algorithm, with conformance to it");
  mpi->add_option("--algorithm", mpi_opts.algorithm,
                  "the library's own name or number (auto: the library decides), or harness-ring "
                  "(the harness's own ring all-reduce over point-to-point)");
  mpi->add_option("--sizes", mpi_sizes, "P or A..B: process counts (default 2..4, at most 64)");
  mpi->add_option("-c,--count", mpi_counts, "N or A..B: elements (per block; default 1)");
  mpi->add_option("--root", mpi_opts.root,
                  "root of a rooted collective: a rank, last (p-1), all, or sample (default: 0, "
                  "p/2 and p-1)");
  mpi->add_option("--op", mpi_opts.op,
                  "commutative (default) | noncommutative user operation | builtin (MPI_SUM, final "
                  "values only) | matrix (a 2x2 matrix product, final values only)")
      ->check(CLI::IsMember({"commutative", "noncommutative", "builtin", "matrix"}));
  mpi->add_flag("--in-place", mpi_opts.in_place, "MPI_IN_PLACE where the collective allows it");
  mpi->add_flag("--equal-counts", mpi_opts.equal_counts,
                "reduce_scatter: every rank's count is --count (a `collective reduce-scatter` "
                "model's equal blocks), not the uneven counts(j); alltoallv, alltoallw: every "
                "pair's count is --count (a `collective alltoall` model's blocks)");
  mpi->add_flag("--contiguous", mpi_opts.contiguous,
                "allgatherv: the blocks with no gap between them (each displacement the sum of "
                "the counts before it), not one unwritten element after each block");
  mpi->add_option("--nb-algorithm", mpi_opts.nb_algorithm,
                  "MPICH's --algorithm nb: the nonblocking algorithm it runs "
                  "(MPIR_CVAR_I<COLLECTIVE>_INTRA_ALGORITHM; --list-algorithms --algorithm nb "
                  "lists them)");
  mpi->add_option_function<std::string>(
         "--message-order",
         [&](const std::string& v) { mpi_opts.message_dependencies = v == "dependencies"; },
         "with --model under MPICH: program (default: every rank's messages in the model's "
         "program order) | dependencies (the same messages in any order the model's data flow "
         "allows; a model's `message_order = dependencies`)")
      ->check(CLI::IsMember({"program", "dependencies"}));
  mpi->add_option_function<std::string>(
         "--model-item", [&](const std::string& v) { mpi_opts.model_item_byte = v == "byte"; },
         "with --model: element (default: a model's item is one element of the library's "
         "datatype) | byte (one byte of the buffer, the model's count the buffer's bytes, its "
         "messages compared in bytes: MPICH's scatter-allgather broadcasts; a model's `item = "
         "byte`)")
      ->check(CLI::IsMember({"element", "byte"}));
  mpi->add_option("--inject", mpi_opts.inject,
                  "harness-ring only: off-by-one | double-count | swap-operands");
  mpi->add_option("--mpicc", mpi_opts.mpicc, "the compiler (default mpicc.openmpi/mpicc.mpich)");
  mpi->add_option("--mpirun", mpi_opts.mpirun,
                  "the launcher, or a wrapper script (default mpirun.openmpi/mpiexec.mpich)");
  mpi->add_option("--harness", mpi_opts.harness,
                  "the harness: its main file or directory, every .c and .h file there (default "
                  "mpi/)");
  mpi->add_option("--cache-dir", mpi_opts.cache_dir,
                  "where built harnesses and failing runs' output go ($COLLV_MPI_CACHE)");
  mpi->add_option("--timeout", mpi_opts.timeout_s, "seconds per count (60)");
  mpi->add_option("--max-ops", mpi_opts.max_ops,
                  "the model's run (--model, --conformance): " + max_ops_help +
                      "; stopped there, the comparison is inconclusive")
      ->check(max_ops_range);
  mpi->add_option("--json", mpi_opts.json_file, "write the report as JSON (- = stdout)");
  mpi->add_option("--junit", mpi_opts.junit_file, "write the report as JUnit XML (- = stdout)");
  mpi->add_flag("--quiet", mpi_opts.quiet, "print only the summary line");
  mpi->add_flag("--runs", mpi_opts.runs_table, "one line per run");
  mpi->add_option("--model", mpi_opts.model,
                  "conformance: a model (.coll or name) whose run at the same p, count and root "
                  "must make the library's combinations, rank by rank");
  mpi->add_option("--models", mpi_opts.models_dir, "models directory for --model names");
  mpi->add_flag("--list-algorithms", mpi_opts.list,
                "print the algorithms --impl lets a run select for --collective (the first: the "
                "library decides), run nothing");
  mpi->footer(
      "Checks (docs/mpi.md): nodup, operands (same position, never unwritten data), order\n"
      "(non-commutative: left operand ranks i..j, right j+1..k), postcondition (MPI layout: no\n"
      "missing or extra contribution, each result of its own call), runtime (every rank\n"
      "finished, no library error), sendbuf (the send buffer unchanged), unmatched (no message\n"
      "sent and never received).\n"
      "Exit codes: 0 every check holds, 1 a violation, 2 bad usage, no MPI installed, the\n"
      "launcher failed or the harness's output unreadable, 3 a launch timed out or the named\n"
      "algorithm never ran (the library fell back, or count 0 only).\n"
      "Examples:\n  collv mpi --impl openmpi --collective allreduce --algorithm ring --sizes 2..12 "
      "--count 0..25\n"
      "  collv mpi --impl mpich --collective reduce --algorithm binomial --root all --op "
      "noncommutative\n"
      "  collv mpi --impl openmpi --collective allreduce --algorithm harness-ring --inject "
      "double-count\n"
      "  collv mpi --conformance models/ --sizes 2..5 --count 0..11");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  try {
    if (part && part->size() > 1 && !*ver)
      throw UsageError(
          "collv-mpi partitions `verify` over its processes; run the other commands "
          "with collv (or collv-mpi in one process)");
    if (*topo) {
      set_memory_limit(mib(topo_mem));
      set_deadline_ms(topo_timeout);
      return run_topology_command(topo_opts, std::cout, std::cerr);
    }
    if (*list) return run_list_command(list_opts, std::cout, std::cerr);
    if (*ver) {
      if (!sizes.empty()) ver_opts.sizes = parse_size_range(sizes);
      if (!counts.empty()) ver_opts.counts = parse_size_range(counts, "--count");
      ver_opts.run.max_memory = mib(ver_mem);
      ver_opts.run.port = ver_port == "all" ? PortModel::All : PortModel::Single;
      ver_opts.run.stream = ver_stream == "on"    ? RunOptions::Stream::On
                            : ver_stream == "off" ? RunOptions::Stream::Off
                                                  : RunOptions::Stream::Auto;
      if (ver->get_option("--port")->count() > 0) ver_opts.file_port = ver_opts.run.port;
      if (ver_msccl_rt == "msccl") ver_opts.msccl.runtime = MscclRuntime::Msccl;
      set_memory_limit(ver_opts.run.max_memory);  // schedule files are read under it too
      if (ver->count("--timeout") > 0) set_deadline_ms(ver_smt.timeout_ms);
      ver_opts.progress = isatty(2) != 0;
      if (part && part->size() > 1) {
        ver_opts.partition = part;
        Topology::compute_stars_from(2);  // no process holds the whole link table
        ver_opts.progress = false;
        if (part->rank() != 0) ver_opts.json_file = ver_opts.junit_file = "";  // rank 0 writes
      }
      ver_smt.algebra = ver_algebra == "commutative"   ? SmtAlgebra::Commutative
                        : ver_algebra == "associative" ? SmtAlgebra::Associative
                                                       : SmtAlgebra::Auto;
      // With --algebra auto, smt_verify_engine asks the question of the run's domain: integer
      // sums for the exact domain, the model's operator for the ordered one (with operand order
      // compared for a commutative operator), so the two engines judge the same property.
      // A directory that cannot be made is bad usage before any run (not an error per run).
      if (!ver_smt.emit_dir.empty() && ver_opts.engine != "exec")
        make_dir_checked(ver_smt.emit_dir, "--emit-smt2");
      ExtraEngine smt = [&](const Model& m, const Topology& t, const RunOptions& ro,
                            const Trace& tr) { return smt_verify_engine(m, t, ro, tr, ver_smt); };
      return run_verify_command(ver_opts, smt, std::cout, std::cerr);
    }
    if (*mpi) {
      mpi_opts.sizes = parse_size_range(mpi_sizes);
      mpi_opts.counts = parse_size_range(mpi_counts, "--count");
      return run_mpi_command(mpi_opts, std::cout, std::cerr);
    }
    if (*rep) return run_reproduce_command(rep_opts, std::cout, std::cerr);
    if (*prv) {
      if (prv->count("--timeout") > 0) set_deadline_ms(prv_opts.timeout_ms);
      // --every-p: the resource limit decides when a way gives up, the wall clock is a guard.
      else if (prv_opts.every_p)
        prv_opts.timeout_ms = 300000;
      return run_prove_command(prv_opts, std::cout, std::cerr);
    }
    if (*syn) {
      syn_opts.synth.port = syn_port == "all" ? PortModel::All : PortModel::Single;
      set_memory_limit(mib(syn_mem));
      if (syn->count("--timeout") > 0) set_deadline_ms(syn_opts.synth.timeout_ms);
      return run_synth_command(syn_opts, std::cout, std::cerr);
    }
    if (*ren) return run_render_command(ren_opts, std::cout, std::cerr);
    if (*exp) {
      exp_opts.run.max_memory = mib(exp_mem);
      set_memory_limit(exp_opts.run.max_memory);
      if (exp_msccl_rt == "msccl") exp_opts.msccl.runtime = MscclRuntime::Msccl;
      return run_export_command(exp_opts, std::cout, std::cerr);
    }
    if (*run) {
      run_opts.run.domain = *domain_from_name(domain);
      run_opts.run.port = run_port == "all" ? PortModel::All : PortModel::Single;
      run_opts.run.max_memory = mib(max_mem);
      set_memory_limit(run_opts.run.max_memory);
      set_deadline_ms(run_timeout);
      run_opts.source_given = run->count("--source") > 0;
      if (isatty(2) && !run_opts.quiet)
        run_opts.run.progress = [](std::uint64_t transfers, std::uint32_t step) {
          std::cerr << "\r\033[K" << transfers << " transfers, step " << step << std::flush;
        };
      return run_run_command(run_opts, std::cout, std::cerr);
    }
  } catch (const PartitionLeft& e) {  // collv-mpi: another process left (partition.hpp)
    std::cerr << "collv-mpi: error: " << e.what() << "\n";
    last_error = e.what();  // every process returns its code (MpiSession::finish)
    return e.code();
  } catch (const ModelError& e) {
    return error_exit(kExitUsage, "", e.what());
  } catch (const SpecError& e) {
    return error_exit(kExitUsage, "collv: error: ", e.what());
  } catch (const LimitError& e) {  // a resource limit (memory, size, time): exit_codes.hpp
    return error_exit(kExitInconclusive, "collv: error: ", e.what());
  } catch (const UsageError& e) {
    return error_exit(kExitUsage, "collv: error: ", e.what());
  } catch (const InternalError& e) {
    return error_exit(kExitInternal,
                      "collv: ", std::string(e.what()) + " (please report this bug)");
  } catch (const std::bad_alloc&) {
    return error_exit(kExitUsage, "collv: error: ", "out of memory");
  } catch (const std::exception& e) {
    return error_exit(kExitUsage, "collv: error: ", e.what());
  }
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
#ifdef COLLV_MPI
  collv::MpiSession mpi(&argc, &argv);
  if (int rc = mpi.agree_arguments(argc, argv); rc != 0) return mpi.finish(rc, "");
  int code = collv_main(argc, argv, &mpi.partition());
  return mpi.finish(code, last_error);
#else
  return collv_main(argc, argv, nullptr);
#endif
}
