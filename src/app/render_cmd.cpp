// `collv render`: run a model and draw it with Graphviz.
#include "app/render_cmd.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "exec/executor.hpp"
#include "render/render.hpp"
#include "util/exit_codes.hpp"

namespace collv {

namespace fs = std::filesystem;

namespace {

std::string default_spec(const Model& m) {
  static const std::map<std::string, std::string> defaults = {
      {"ring", "ring:8"},     {"line", "line:8"},           {"mesh", "mesh:4x4"},
      {"torus", "torus:4x4"}, {"hypercube", "hypercube:3"}, {"tree", "tree:8"},
      {"star", "star:4"},     {"complete", "complete:8"},   {"debruijn", "debruijn:3"}};
  if (m.header.topologies.empty())
    throw UsageError("model '" + m.header.name + "' names no topology family; pass --topology");
  auto it = defaults.find(m.header.topologies.front());
  if (it == defaults.end()) throw UsageError("pass --topology");
  return it->second;
}

int render(const RenderCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.output.empty() && o.per_step_dir.empty())
    throw UsageError("nothing to write: pass -o FILE (.svg, .png or .dot) and/or --per-step DIR");
  PictureFormat step_format = PictureFormat::Svg;
  if (!o.output.empty() && o.output != "-") step_format = picture_format(o.output);
  if (!o.check.empty() && !o.counterexample) throw UsageError("--check needs --counterexample");
  if (o.cex_step >= 0 && !o.counterexample) throw UsageError("--step needs --counterexample");
  if (o.timeout <= 0) throw UsageError("--timeout must be positive");
  auto dom = domain_from_name(o.domain);
  if (!dom) throw UsageError("unknown domain '" + o.domain + "' (exact, ordered or fingerprint)");

  std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  std::string path = resolve_model_path(o.model, dir);
  Model m = parse_model_file(path);
  Topology topo = Topology::parse(o.topology.empty() ? default_spec(m) : o.topology);
  RenderOptions ro;
  ro.force = o.force;
  ro.steps = o.steps;
  check_renderable(topo, ro);  // before running: star:7 is refused at once
  GraphvizOptions go;
  go.program = o.program;
  go.timeout_seconds = o.timeout;

  RunOptions run;
  run.domain = *dom;
  run.root = o.source;
  run.shift = o.shift;
  Trace t = run_model(m, topo, run);
  check_renderable(t, ro);
  bool failed = t.failure.kind != RunFailure::Kind::None;
  int status = failed ? kExitViolation : kExitOk;

  auto emit = [&](const std::string& dot_text, const std::string& file) {
    if (file == "-") {
      out << dot_text;
    } else {
      write_picture(dot_text, file, go);
      out << "wrote " << file << "\n";
    }
  };

  if (o.counterexample) {
    auto results = o.checker ? o.checker(t) : check_trace(t, CheckOptions{});
    const Counterexample* found = nullptr;
    for (const auto& r : results) {
      if (r.verdict != Verdict::Fail || (!o.check.empty() && r.name != o.check)) continue;
      for (const auto& c : r.violations)
        if (o.cex_step < 0 || (c.step && *c.step == o.cex_step)) {
          found = &c;
          break;
        }
      if (found) break;
    }
    if (!found) {
      out << fmt::format("no counterexample{}{} for {} on {}: nothing drawn\n",
                         o.check.empty() ? "" : " of " + o.check,
                         o.cex_step < 0 ? "" : fmt::format(" at step {}", o.cex_step),
                         m.header.name, topo.spec());
      return status;
    }
    if (!o.output.empty()) emit(counterexample_dot(t, *found, ro), o.output);
    status = kExitViolation;
  } else if (!o.output.empty()) {
    emit(failed && t.failure.kind == RunFailure::Kind::Deadlock ? deadlock_dot(t, ro)
                                                                : schedule_dot(t, ro),
         o.output);
  }
  if (!o.per_step_dir.empty()) {
    auto files = write_step_pictures(t, o.per_step_dir, step_format, ro, go);
    out << fmt::format("wrote {} step pictures to {}\n", files.size(), o.per_step_dir);
  }
  if (failed) err << "collv: " << t.failure.message << "\n";
  return status;
}

}  // namespace

int run_render_command(const RenderCommandOptions& o, std::ostream& out, std::ostream& err) {
  try {
    return render(o, out, err);
  } catch (const ModelError& e) {
    err << e.what() << "\n";
  } catch (const SpecError& e) {
    err << "collv: error: " << e.what() << "\n";
  } catch (const UsageError& e) {
    err << "collv: error: " << e.what() << "\n";
  } catch (const GraphvizError& e) {
    err << "collv: error: " << e.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace collv
