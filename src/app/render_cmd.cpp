// `collv render`: run a model and draw it with Graphviz.
#include "app/render_cmd.hpp"

#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "exec/executor.hpp"
#include "import/import.hpp"
#include "render/render.hpp"
#include "util/exit_codes.hpp"

namespace collv {

namespace fs = std::filesystem;

namespace {

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

  RenderOptions ro;
  ro.force = o.force;
  ro.steps = o.steps;
  GraphvizOptions go;
  go.program = o.program;
  go.timeout_seconds = o.timeout;

  auto load = [&]() -> Trace {
    bool schedule_arg = o.trace_file.empty() && looks_like_schedule_path(o.model);
    if (!o.trace_file.empty() || schedule_arg) {
      if (!o.model.empty() && !schedule_arg)
        throw UsageError("give a MODEL or --trace FILE, not both");
      Trace t = import_schedule(schedule_arg ? o.model : o.trace_file).trace;
      check_renderable(t.topology, ro);
      return t;
    }
    if (o.model.empty()) throw UsageError("name a MODEL to run, or --trace FILE to draw");
    std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
    Model m = parse_model_file(resolve_model_path(o.model, dir));
    Topology topo = Topology::parse(o.topology.empty() ? default_topology_spec(m) : o.topology);
    check_renderable(topo, ro);  // before running: star:7 is refused at once
    RunOptions run;
    run.domain = *dom;
    run.root = o.source;
    run.shift = o.shift;
    run.max_ops_per_node = o.max_ops;
    return run_model(m, topo, run);
  };
  Trace t = load();
  check_renderable(t, ro);
  bool failed = t.failure.kind != RunFailure::Kind::None;
  // A run stopped at --max-ops or --max-steps is undecided, not wrong: limits exit 3.
  bool limit =
      t.failure.kind == RunFailure::Kind::StepLimit || t.failure.kind == RunFailure::Kind::OpLimit;
  int status = limit ? kExitInconclusive : failed ? kExitViolation : kExitOk;

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
                         o.cex_step < 0 ? "" : fmt::format(" at step {}", o.cex_step), t.model_name,
                         t.topology.spec());
      return status;
    }
    if (!o.output.empty()) emit(counterexample_dot(t, *found, ro), o.output);
    if (!limit) status = kExitViolation;
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
  } catch (const LimitError& e) {  // a limit (memory, size, time): exit_codes.hpp
    err << "collv: error: " << e.what() << "\n";
    return kExitInconclusive;
  } catch (const UsageError& e) {
    err << "collv: error: " << e.what() << "\n";
  } catch (const GraphvizError& e) {
    err << "collv: error: " << e.what() << "\n";
  }
  return kExitUsage;
}

}  // namespace collv
