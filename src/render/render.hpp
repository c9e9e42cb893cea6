// The Graphviz renderer: draws a Trace (a whole schedule, one panel per step, a counterexample, a
// deadlock) as Graphviz DOT text on a layout that fits the topology, the way the sources draw
// them (Grama et al. Figures 4.2-4.13, Oh/Choi/Primeaux Figs. 1 and 3). See docs/rendering.md.
//
//   collv::Trace t = collv::run_model(model, collv::Topology::parse("ring:8"), {});
//   std::string dot = collv::schedule_dot(t);                 // pure: no process is started
//   collv::write_trace_picture(t, "schedule.svg");            // runs Graphviz `neato -Tsvg`
//   collv::write_counterexample_picture(t, cex, "cex.png");   // format by extension
//
// DOT generation is pure and deterministic. Pictures (.svg, .png) are made by running the Graphviz
// program (`neato`, with every node pinned by a `pos` attribute) as a child process through pipes,
// with a timeout; no Graphviz library is linked.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "check/checks.hpp"
#include "exec/trace.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"

namespace collv {

struct RenderOptions {
  std::size_t max_nodes = 1000;      // topologies with more nodes are refused unless `force`
  std::size_t max_transfers = 4000;  // schedules with more transfers are refused unless `force`
  bool force = false;
  std::size_t max_item_chars = 16;   // an item's describe() text longer than this is shortened
  std::size_t max_label_chars = 28;  // one line of a node's buffer text
  std::string title;                 // replaces the default title line when not empty
  std::vector<std::uint32_t> steps;  // schedule_dot: draw only these steps (empty = all), as
                                     // Figure 4.9 shows only steps 1, 2 and 7
};

// A picture that is refused because it is too large (a UsageError: bad input, exit code 2).
class RenderRefused : public UsageError {
 public:
  using UsageError::UsageError;
};

// The Graphviz program failed: missing, timed out, or exited with an error.
class GraphvizError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The Graphviz program crashed (killed by a signal). Graphviz 2.43's spline router crashes on
// some dense pictures; write_picture then retries once with `splines=curved`.
class GraphvizCrash : public GraphvizError {
 public:
  using GraphvizError::GraphvizError;
};

// ---- Layouts -------------------------------------------------------------------------------

struct NodeLayout {
  std::string name;                            // "circle", "line", "grid", "nested-squares", ...
  std::vector<std::pair<double, double>> pos;  // per node (processors and switches), in inches
  // Groups drawn as Graphviz clusters (star: one per last symbol), with their labels.
  std::vector<std::pair<std::string, std::vector<NodeId>>> clusters;
};

// Positions for every node: ring and complete/debruijn/other in a circle, line in a row,
// mesh/torus (and two-factor products) on a grid, hypercube d <= 4 as nested squares (circle
// above), tree top-down with switches above their leaves, star grouped by sub-star. `ux`/`uy`:
// the horizontal/vertical distance between neighbouring nodes, in inches.
NodeLayout layout_topology(const Topology& t, double ux = 1.0, double uy = 1.0);

// Throws RenderRefused when the topology or schedule is too large for the options.
void check_renderable(const Trace& t, const RenderOptions& o);
void check_renderable(const Topology& t, const RenderOptions& o);

// ---- DOT (pure) ----------------------------------------------------------------------------

// A payload as an arrow label shows it: items' describe() text, shortened ("x0+x1", "x0..x7").
std::string payload_text(const Trace& t, const Transfer& x, const RenderOptions& o = {});
// "2 (x7)": the step and what the transfer carries (Figure 4.9's "2 (7)").
std::string transfer_label(const Trace& t, const Transfer& x, const RenderOptions& o = {});

// The whole schedule on the topology: one arrow per transfer labelled "step (payload)"; a routed
// transfer is drawn hop by hop along the links it uses (dashed, labelled on its first hop).
std::string schedule_dot(const Trace& t, const RenderOptions& o = {});

// One panel: the transfers of step `step` and each processor's buffers after it (step 0: the
// initial input only). What a node shows: its input, then every item delivered to it in steps
// 1..step (whether or not the program has read it yet), and the set of inputs those items
// contain; the last step also shows the final output buffer.
std::string step_dot(const Trace& t, std::uint32_t step, const RenderOptions& o = {});

// A counterexample: the failing step's transfers in red, congested links with their load, the
// nodes involved with the counterexample's buffers, the preceding step in grey; the title names
// the invariant, the step and the message. If the trace deadlocked, the waiting chain is drawn too.
std::string counterexample_dot(const Trace& t, const Counterexample& c,
                               const RenderOptions& o = {});

// A deadlock (Trace::failure.kind == Deadlock): the waiting chain or cycle as red "waits for"
// arrows, nodes left waiting in yellow, the transfers made before it in grey.
std::string deadlock_dot(const Trace& t, const RenderOptions& o = {});

// ---- Graphviz (child process) --------------------------------------------------------------

enum class PictureFormat { Dot, Svg, Png };
// By the path's extension (.dot/.gv, .svg, .png, case-insensitive); anything else throws
// UsageError naming the accepted extensions.
PictureFormat picture_format(const std::string& path);
const char* picture_extension(PictureFormat f);  // "dot", "svg", "png"

struct GraphvizOptions {
  std::string program = "neato";  // looked up on PATH
  double timeout_seconds = 60;    // the child is killed after this long
};

// Runs `program -T<format>` with `dot_text` on its stdin and returns its stdout. Throws
// GraphvizError if the program is missing, exits with an error or takes longer than the timeout.
std::string run_graphviz(const std::string& dot_text, const std::string& format,
                         const GraphvizOptions& g = {});

// Writes DOT text to `path` as .dot (the text itself), .svg or .png (through Graphviz).
void write_picture(const std::string& dot_text, const std::string& path,
                   const GraphvizOptions& g = {});

// The library entry points for other commands (verify --cex-dir, synth): format by extension.
void write_trace_picture(const Trace& t, const std::string& path, const RenderOptions& o = {},
                         const GraphvizOptions& g = {});
void write_counterexample_picture(const Trace& t, const Counterexample& c, const std::string& path,
                                  const RenderOptions& o = {}, const GraphvizOptions& g = {});
// step-0.EXT .. step-T.EXT in `dir` (created if missing); returns the paths written.
std::vector<std::string> write_step_pictures(const Trace& t, const std::string& dir,
                                             PictureFormat f, const RenderOptions& o = {},
                                             const GraphvizOptions& g = {});

}  // namespace collv
