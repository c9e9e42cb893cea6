// `collv list` and `collv run`.
#include "app/commands.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "check/checks.hpp"
#include "import/import.hpp"
#include "util/exit_codes.hpp"
#include "util/number_text.hpp"
#include "util/read_file.hpp"

namespace collv {

namespace fs = std::filesystem;

std::string default_models_dir() {
  if (const char* e = std::getenv("COLLV_MODELS"); e && *e) return e;
  if (fs::is_directory("models")) return "models";
  return std::string(COLLV_SOURCE_DIR) + "/models";
}

std::vector<std::string> list_model_files(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw UsageError("models directory '" + dir + "' does not exist");
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file() && it->path().extension() == ".coll")
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string resolve_model_path(const std::string& arg, const std::string& models_dir) {
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) return arg;
  if (arg.find('/') == std::string::npos) {
    for (const auto& f : list_model_files(models_dir))
      if (fs::path(f).stem() == arg) return f;
  }
  throw UsageError("no model '" + arg + "': not a file, and no " + arg + ".coll in " + models_dir +
                   " (see `collv list`)");
}

std::string default_topology_spec(const Model& m) {
  static const std::map<std::string, std::string> defaults = {
      {"ring", "ring:8"},     {"line", "line:8"},           {"mesh", "mesh:4x4"},
      {"torus", "torus:4x4"}, {"hypercube", "hypercube:3"}, {"tree", "tree:8"},
      {"star", "star:4"},     {"complete", "complete:8"},   {"debruijn", "debruijn:3"}};
  if (m.header.topologies.empty())
    throw UsageError("model '" + m.header.name + "' names no topology family; pass --topology");
  return defaults.at(m.header.topologies.front());
}

int run_list_command(const ListOptions& o, std::ostream& out, std::ostream& err) {
  std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  auto files = list_model_files(dir);
  int status = kExitOk;
  struct Row {
    std::string name, coll, fams, source;
  };
  std::vector<Row> rows;
  for (const auto& f : files) {
    try {
      Model m = parse_model_file(f);
      std::string fams;
      for (const auto& t : m.header.topologies) fams += (fams.empty() ? "" : ",") + t;
      rows.push_back({fs::path(f).stem().string(), collective_name(m.header.collective), fams,
                      m.header.source});
    } catch (const ModelError& e) {
      err << e.what() << "\n";
      status = kExitUsage;
    }
  }
  std::size_t w0 = 5, w1 = 10, w2 = 8;
  for (const auto& r : rows) {
    w0 = std::max(w0, r.name.size());
    w1 = std::max(w1, r.coll.size());
    w2 = std::max(w2, r.fams.size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "MODEL", w0, "COLLECTIVE", w1, "TOPOLOGY", w2,
                     "SOURCE");
  for (const auto& r : rows)
    out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", r.name, w0, r.coll, w1, r.fams, w2,
                       r.source);
  out << fmt::format("{} models in {}\n", rows.size(), dir);
  return status;
}

namespace {

std::string fmt_num(double x) { return number_text(x); }

std::string fmt_cost(double ts, double tw) {
  return fmt::format("{} ts + {} tw*m", fmt_num(ts), fmt_num(tw));
}

}  // namespace

int run_run_command(const RunCommandOptions& o, std::ostream& out, std::ostream& err) {
  std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  std::string path = resolve_model_path(o.model, dir);
  Model m = parse_model_file(path);
  if (o.source_given && !collective_is_rooted(m.header.collective))
    throw UsageError(
        fmt::format("--source: model '{}' is a {} collective, which has no root "
                    "(--source is for broadcast, reduce, scatter and gather)",
                    m.header.name, collective_name(m.header.collective)));
  std::string spec = o.topology.empty() ? default_topology_spec(m) : o.topology;
  Topology topo = Topology::parse(spec);
  Trace tr = run_model(m, topo, o.run);
  if (o.run.progress) err << "\r\033[K" << std::flush;  // clear the progress line

  if (!o.json_file.empty()) {
    auto j = trace_to_json(tr);
    if (o.json_file == "-") {
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
      write_file_checked(o.json_file,
                         j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                             "\n");  // a full disk is an error too
    }
  }
  bool failed = tr.failure.kind != RunFailure::Kind::None;
  // The model's claims, judged by the same checks `collv verify` runs: a measured step count or
  // cost that differs from the claim is reported and makes the exit code 1.
  CheckResult steps_claim = check_steps(tr, CheckOptions{});
  CheckResult cost_claim = check_cost(tr, CheckOptions{});
  auto differs = [](const CheckResult& c) { return c.verdict == Verdict::Fail; };
  if (!o.quiet && o.json_file != "-") {
    auto p = topo.num_processors();
    out << fmt::format("model      {} ({})\n", m.header.name, path);
    if (!m.header.source.empty()) out << fmt::format("source     {}\n", m.header.source);
    out << fmt::format("collective {}", collective_name(m.header.collective));
    if (collective_is_rooted(m.header.collective)) out << fmt::format(" (source {})", o.run.root);
    if (m.header.collective == Collective::Shift) out << fmt::format(" (q = {})", o.run.shift);
    out << "\n";
    out << fmt::format("topology   {} ({} processors)\n", topo.spec(), p);
    out << fmt::format("domain     {}\n", domain_name(o.run.domain));
    out << fmt::format("port       {}\n", port_model_name(tr.port));
    const std::size_t kMaxShown = 2000;
    if (o.schedule || tr.transfers.size() <= kMaxShown) {
      print_schedule(tr, out);
    } else {
      out << fmt::format("({} transfers; --schedule prints them all)\n", tr.transfers.size());
    }
    if (o.schedule || p <= 64) {
      // A run that stopped early has no final buffers: these are what the nodes held then.
      out << (failed ? "buffers when the run stopped (not final: see the message below)\n"
                     : "final buffers\n");
      for (NodeId v = 0; v < p; ++v)
        out << fmt::format("  {}: {}\n", topo.label(v), buffer_to_string(tr, tr.final_output[v]));
    }
    out << fmt::format("steps      {}", tr.steps);
    if (tr.claimed_steps)
      out << fmt::format("   (claimed {}{}{})", tr.steps_at_most ? "at most " : "",
                         *tr.claimed_steps, differs(steps_claim) ? ": DIFFERS from the claim" : "");
    if (tr.claimed_steps_real)
      out << fmt::format("   (claimed {:.6g}: not a whole number)", *tr.claimed_steps_real);
    out << "\n";
    out << fmt::format("cost       {}", fmt_cost(tr.cost_ts, tr.cost_tw));
    if (tr.claimed_ts)
      out << fmt::format("   (claimed {}{}{})", tr.cost_at_most ? "at most " : "",
                         fmt_cost(*tr.claimed_ts, *tr.claimed_tw),
                         differs(cost_claim) ? ": DIFFERS from the claim" : "");
    out << "\n";
  }
  if (failed) {
    err << "collv: " << tr.failure.message << "\n";
    // A run stopped at --max-steps or --max-ops is undecided, not wrong: limits exit 3.
    bool limit = tr.failure.kind == RunFailure::Kind::StepLimit ||
                 tr.failure.kind == RunFailure::Kind::OpLimit;
    return limit ? kExitInconclusive : kExitViolation;
  }
  bool contradicted = false;
  for (const CheckResult* c : {&steps_claim, &cost_claim})
    if (differs(*c)) {
      err << fmt::format(
          "collv: {} claim contradicted: {} (exit 1; `collv verify` judges every "
          "invariant)\n",
          c->name, c->violations.empty() ? c->name : c->violations.front().message);
      contradicted = true;
    }
  return contradicted ? kExitViolation : kExitOk;
}

int run_export_command(const ExportCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.msccl_xml.empty())
    throw UsageError("export: say what to write, e.g. --msccl-xml allgather.xml");
  Trace tr;
  std::string name;
  if (looks_like_schedule_path(o.target) && std::filesystem::is_regular_file(o.target)) {
    ImportedSchedule s = import_schedule(o.target);
    if (s.format != ScheduleFormat::TraceJson)
      throw UsageError(
          fmt::format("export: {} is {}; export writes runs of models and collv's "
                      "schedule JSON (collv run --json, collv synth --json)",
                      o.target, schedule_format_name(s.format)));
    tr = std::move(s.trace);
    name = tr.model_name;
  } else {
    std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
    Model m = parse_model_file(resolve_model_path(o.target, dir));
    std::string spec = o.topology.empty() ? default_topology_spec(m) : o.topology;
    RunOptions ro = o.run;
    ro.domain = DomainKind::Exact;
    ro.port = PortModel::All;  // MSCCL's runtime: every link at once
    tr = run_model(m, Topology::parse(spec), ro);
    name = m.header.name;
  }
  // Only a schedule that passes is exported: the file places every chunk where MSCCL's layout
  // says, so a run whose own output is wrong (a local rotation, say) must not come out right.
  {
    std::vector<std::string> own;
    // The data checks: timing and link load (single-port, congestion, claims) are the machine's
    // business, and the file is judged under its machine when it is verified.
    const std::set<std::string> data = {"postcondition", "final-buffers", "dataflow",
                                        "match",         "deadlock",      "runtime"};
    for (const auto& c : check_trace(tr, CheckOptions{}))
      if (c.verdict == Verdict::Fail && data.count(c.name))
        own.push_back(c.name + (c.violations.empty() ? "" : ": " + c.violations[0].message));
    if (!own.empty()) {
      err << "collv: error: " << name << " fails its own checks; nothing exported:\n";
      for (const auto& f : own) err << "  " << f << "\n";
      return kExitViolation;
    }
  }
  std::string xml = export_msccl_xml(tr, name, o.msccl);
  // The file must read back to a schedule that passes every check, the runtime's loading rules
  // included, carrying every item the trace carried: otherwise it is not written.
  MscclOptions judge;
  judge.runtime = o.msccl.runtime;
  if (collective_is_rooted(tr.collective)) judge.root = tr.root;
  ImportedSchedule back =
      import_msccl_xml(xml, o.msccl_xml == "-" ? "<stdout>" : o.msccl_xml, judge);
  std::vector<std::string> failed;
  for (const auto& c : check_imported(back, CheckOptions{}))
    if (c.verdict == Verdict::Fail || c.verdict == Verdict::Unknown)
      failed.push_back(c.name + (c.violations.empty() ? "" : ": " + c.violations[0].message));
  std::size_t items = 0, back_items = 0;
  for (const Transfer& x : tr.transfers) items += x.payload_len;
  for (const Transfer& x : back.trace.transfers) back_items += x.payload_len;
  if (back_items != items)
    failed.push_back(
        fmt::format("transfers: {} chunks sent in the trace, {} in the file", items, back_items));
  if (!failed.empty()) {
    err << "collv: error: the MSCCL-XML written for " << name
        << " does not re-import to a passing schedule:\n";
    for (const auto& f : failed) err << "  " << f << "\n";
    return kExitViolation;
  }
  if (o.msccl_xml == "-") {
    out << xml;
  } else {
    std::ofstream f(o.msccl_xml, std::ios::binary);
    if (f) f << xml;
    if (f) f.close();
    if (!f) throw UsageError("cannot write '" + o.msccl_xml + "'");
    out << fmt::format("wrote {}: {} on {} gpus, {} chunks sent; re-imported and judged: pass\n",
                       o.msccl_xml, collective_name(tr.collective), tr.topology.num_processors(),
                       items);
  }
  return kExitOk;
}

}  // namespace collv
