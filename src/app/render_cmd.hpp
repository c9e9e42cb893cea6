// `collv render MODEL --topology SPEC [--source S] [-q Q] [--domain D] -o FILE [--per-step DIR]`:
// runs a model and draws its schedule (or its per-step buffers, or a counterexample) with
// Graphviz. See docs/rendering.md.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "check/checks.hpp"

namespace collv {

struct RenderCommandOptions {
  std::string model;                // MODEL: a .coll file or a model name (positional; or --trace)
  std::string models_dir;           // --models DIR ("" = default_models_dir())
  std::string trace_file;           // --trace FILE: draw this schedule (JSON, docs/trace-format.md)
                                    //   instead of running a model
  std::string topology;             // -t,--topology SPEC ("" = a small member of the first family)
  std::uint32_t source = 0;         // -s,--source S: root of a rooted collective
  std::int64_t shift = 1;           // -q,--shift Q
  std::uint64_t max_ops = 1000000;  // --max-ops N: operations per node on average (as run's)
  std::string domain = "exact";     // -d,--domain exact|ordered|fingerprint
  std::string output;               // -o,--output FILE: .svg, .png or .dot (format by extension;
                                    //   "-" = DOT on stdout)
  std::string per_step_dir;         // --per-step DIR: writes DIR/step-0.EXT .. step-T.EXT
                                    //   (EXT from -o, else svg)
  std::vector<std::uint32_t> steps;  // --steps LIST (comma-separated, CLI11 ->delimiter(',')):
                                     //   the -o picture shows only these steps (empty = all)
  bool counterexample = false;       // --counterexample: draw the first violation found instead
                                     //   of the schedule (nothing to draw: exit 0, says so)
  std::string check;                 // --check NAME: with --counterexample, only this invariant
  std::int64_t cex_step = -1;        // --step N: with --counterexample, the violation at step N
                                     //   (-1 = the first one reported)
  bool force = false;                // --force: draw topologies above 1000 nodes anyway
  double timeout = 60;               // --timeout SECONDS for the Graphviz program
  std::string program = "neato";     // --graphviz PROGRAM (the Graphviz layout program to run)
  // How counterexamples are found; when empty, check_trace(t, {}) (src/check).
  std::function<std::vector<CheckResult>(const Trace&)> checker;
};

// Exit codes: 0 picture(s) written; 1 written, but the run failed (deadlock, limit, runtime
// error) or a counterexample was drawn; 2 bad usage or input (unknown model, bad spec, bad
// extension, too large without --force, Graphviz missing or failing).
int run_render_command(const RenderCommandOptions& o, std::ostream& out, std::ostream& err);

}  // namespace collv
