// Schedule files in the verification plan, judged as they are (see plan_run.hpp).
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "import/import.hpp"
#include "util/deadline.hpp"
#include "verify/plan_run.hpp"

namespace collv {

namespace fs = std::filesystem;

// Schedules from files: judged as they are (no sizes, sources or domains to sweep).
void verify_schedule_files(const VerifyOptions& o, std::optional<std::uint32_t> fixed_source,
                           const ExtraEngine& smt, VerifyReport& rep, std::ostream& err) {
  auto group_of = [&](const std::string& model, const std::string& file, const std::string& family,
                      bool named) { return report_group(rep, model, file, family, named); };
  std::vector<std::string> schedules = o.trace_files;
  for (const auto& t : o.targets)
    if (looks_like_schedule_path(t) && !fs::is_directory(t)) schedules.push_back(t);
  for (const auto& file : schedules) {
    check_deadline(fmt::format("verify, after {} runs,", rep.runs.size()));
    auto t0 = Clock::now();
    ImportedSchedule imported;
    try {
      MscclOptions mo = o.msccl;
      mo.root = fixed_source;                // MSCCL-XML has no root: -s is the call's
      imported = import_schedule(file, mo);  // collv JSON, MSCCL-XML, SCCL JSON, GOAL
      // GOAL declares no collective: --collective and -s say whose flow to ask for. The other
      // formats declare theirs, which the options may not contradict.
      if (imported.format == ScheduleFormat::Goal) {
        if (!o.file_collective.empty() || fixed_source)
          judge_goal_flow(imported, o.file_collective, fixed_source);
      } else {
        const Trace& t = imported.trace;
        if (!o.file_collective.empty() && o.file_collective != collective_name(t.collective))
          throw UsageError(fmt::format("{} declares {}, not the --collective {}", file,
                                       collective_name(t.collective), o.file_collective));
        if (fixed_source && collective_is_rooted(t.collective) && t.root != *fixed_source)
          throw UsageError(
              fmt::format("{} declares root {}, not the --source {}", file, t.root, *fixed_source));
      }
    } catch (const UsageError& e) {
      VerifyRun run;
      run.model = fs::path(file).filename().string();
      run.file = file;
      // A reader stopped at a limit (--timeout, --max-memory): undecided, exit 3, as guarded()
      // says of a run.
      run.status = dynamic_cast<const LimitError*>(&e) ? "inconclusive" : "error";
      run.error = e.what();
      run.group = group_of(run.model, file, "(unread)", true);
      run.seconds = seconds_since(t0);
      rep.runs.push_back(std::move(run));
      continue;
    }
    // Judged as written (the file's own network and port model), or under each machine of
    // --topology with as many processors: its links route the transfers and its bandwidths bound
    // the congestion check; --port, when given, replaces the file's port model.
    std::vector<std::optional<Topology>> machines;
    if (o.topologies.empty()) machines.emplace_back();
    for (const auto& spec : o.topologies) {
      try {
        machines.emplace_back(Topology::parse(spec));
      } catch (const SpecError& e) {
        throw UsageError(std::string("--topology: ") + e.what());
      }
    }
    for (const auto& machine : machines) {
      ImportedSchedule judged = imported;
      Trace& t = judged.trace;
      if (o.file_port) t.port = *o.file_port;
      if (machine && machine->num_processors() != t.topology.num_processors() &&
          judged.format == ScheduleFormat::MscclXml) {
        // The MSCCL runtimes use a file only for a communicator of ngpus ranks
        // (msccl_lifecycle.cc): on this machine it would never run. Judged on its own ranks.
        for (auto& c : judged.checks)
          if (c.name == "runtime") {
            Counterexample ce;
            ce.message = fmt::format(
                "{}: ngpus={} but {} has {} gpus: the runtime uses an algorithm only for a "
                "communicator of ngpus ranks",
                file, t.topology.num_processors(), machine->spec(), machine->num_processors());
            c.violations.insert(c.violations.begin(), std::move(ce));
            ++c.violation_count;
            c.verdict = Verdict::Fail;
          }
      } else if (machine && machine->num_processors() != t.topology.num_processors()) {
        VerifyRun run;
        run.model = t.model_name;
        run.file = file;
        run.topology = machine->spec();
        run.status = "error";
        run.error =
            fmt::format("{}: the schedule has {} ranks but {} has {} processors", file,
                        t.topology.num_processors(), machine->spec(), machine->num_processors());
        run.group = group_of(t.model_name, file, machine->family(), true);
        rep.runs.push_back(std::move(run));
        continue;
      }
      if (machine && machine->num_processors() == t.topology.num_processors()) {
        t.topology = *machine;
        judged.congestion_note.clear();
        // A file's steps are dependency levels, not time: several channels' chunks in one level
        // share the links. Under a machine with bandwidths the level-synchronous time is what
        // the file takes; congestion per level would cry wolf on every multi-channel file.
        if (machine->declares_bandwidth())
          judged.congestion_note = fmt::format(
              "the file's {} steps are dependency levels; on {} they take {} steps, one level "
              "after another at each link's bandwidth",
              t.steps, machine->spec(), level_synchronous_steps(t));
      }
      VerifyRun run;
      run.model = t.model_name;
      run.file = file;
      run.topology = t.topology.spec();
      run.domain = domain_name(t.domain->kind());
      run.p = static_cast<std::uint32_t>(t.topology.num_processors());
      if (collective_is_rooted(t.collective)) run.source = t.root;
      if (t.collective == Collective::Shift) run.shift = t.shift;
      run.steps = t.steps;
      run.cost_ts = t.cost_ts;
      run.cost_tw = t.cost_tw;
      run.group = group_of(t.model_name, file, t.topology.family(), true);
      rep.groups[run.group].specs.push_back(t.topology.spec());
      if (o.strict) impose_strict(t);
      run.checks = check_imported(judged, CheckOptions{});
      if (o.engine != "exec") {  // the file's own terms (smt_verify_engine: no model to re-run)
        // The same reading of the file: what it leaves open (t.file_expected, its required
        // output, was set by the reader).
        t.file_not_checked = not_checked_by_format(judged);
        RunOptions ro;
        ro.domain = t.domain->kind();
        try {
          merge_engine(run.checks, smt(Model{}, t.topology, ro, t), o.engine);
        } catch (const UsageError& e) {
          merge_engine(run.checks, {}, o.engine);
          for (auto& c : run.checks)
            if (c.name == "postcondition") {
              c.verdict = Verdict::Unknown;
              c.note = std::string("the SMT engine cannot judge this file: ") + e.what();
            }
        }
      }
      run.status = run_status(run.checks, t, t.domain->kind());
      run.data_not_checked = !judged.carries_data;
      run.loosened = loosened_by(t, run.status, nullptr);
      if (!o.cex_dir.empty() && run.status == "fail") write_cex_picture(o.cex_dir, run, t, err);
      run.seconds = seconds_since(t0);
      rep.groups[run.group].seconds += run.seconds;
      rep.runs.push_back(std::move(run));
    }
  }
}

}  // namespace collv
