// `collv verify`'s command line (see verify_cmd.hpp); the plan itself is verify/plan.cpp.
#include "app/verify_cmd.hpp"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "app/commands.hpp"
#include "app/every_p_cmd.hpp"
#include "import/import.hpp"
#include "util/read_file.hpp"

namespace collv {

namespace fs = std::filesystem;

std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& s,
                                                       const std::string& option) {
  auto num = [&](const std::string& x) {
    if (x.empty() || x.size() > 9 || !std::all_of(x.begin(), x.end(), ::isdigit))
      throw UsageError(option + " expects A..B with whole numbers, got '" + s + "'");
    return std::stoll(x);
  };
  auto dots = s.find("..");
  if (dots == std::string::npos) {
    auto v = num(s);
    return {v, v};
  }
  auto a = num(s.substr(0, dots)), b = num(s.substr(dots + 2));
  if (b < a) throw UsageError(option + " " + s + ": the range is empty");
  return {a, b};
}

namespace {

// The model files to run, sorted, each with whether it was named on the command line (a file or
// a model name, not found through --all or a directory).
std::vector<std::pair<std::string, bool>> model_files(const VerifyOptions& o) {
  std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  std::map<std::string, bool> files;
  if (o.all)
    for (const auto& f : list_model_files(dir)) files.emplace(f, false);
  for (const auto& t : o.targets) {
    std::error_code ec;
    if (fs::is_directory(t, ec)) {
      for (const auto& f : list_model_files(t)) files.emplace(f, false);
    } else if (!looks_like_schedule_path(t)) {  // schedule files are judged as --trace ones
      files[resolve_model_path(t, dir)] = true;
    }
  }
  if (files.empty() && o.trace_files.empty() &&
      std::none_of(o.targets.begin(), o.targets.end(), looks_like_schedule_path))
    throw UsageError("nothing to verify: name models or directories, pass --all, or --trace FILE");
  return {files.begin(), files.end()};
}

// The proof for every p of each model file of the report, where the model has one
// (informational: the exit code is the runs').
void add_every_p(VerifyReport& rep, const VerifyOptions& o) {
  std::map<std::string, std::string> done_files;
  for (auto& G : rep.groups) {
    if (G.file.empty() || fs::path(G.file).extension() != ".coll") continue;
    auto f = done_files.find(G.file);
    if (f == done_files.end())
      f = done_files
              .emplace(G.file, every_p_status(G.file, o.models_dir.empty() ? default_models_dir()
                                                                           : o.models_dir))
              .first;
    G.every_p = f->second;
  }
}

}  // namespace

VerifyReport verify(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& err) {
  VerifyReport rep = verify_plan(
      o, [&] { return model_files(o); }, smt, err);
  if (o.every_p) add_every_p(rep, o);
  return rep;
}

int run_verify_command(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& out,
                       std::ostream& err) {
  VerifyReport rep = verify(o, smt, err);
  auto write = [](const std::string& path, const std::string& text) {
    if (path == "-") {
      std::cout << text;
      return;
    }
    write_file_checked(path, text);  // a full disk is an error (exit 2), not a silent pass
  };
  if (!o.json_file.empty()) write(o.json_file, report_to_json(rep));
  if (!o.junit_file.empty()) write(o.junit_file, report_to_junit(rep));
  if (o.json_file != "-" && o.junit_file != "-") out << report_to_text(rep, o.runs_table, o.quiet);
  // No silent pass: say why nothing was checked.
  for (std::size_t g : rep.nothing_checked())
    err << fmt::format("collv: error: nothing checked for {} on {}: {}\n", rep.groups[g].model,
                       rep.groups[g].family, rep.groups[g].no_run);
  if (rep.runs.empty()) err << "collv: error: no run was made, so nothing was verified (exit 2)\n";
  if (!o.quiet && o.json_file != "-" && o.junit_file != "-" && o.engine != "exec") {
    // Which engine decided each check (--engine smt|both), one line per run.
    out << "\nengines (which engine decided each check)\n";
    for (const auto& r : rep.runs) {
      std::map<std::string, std::string> by;
      std::string dis;
      for (const auto& c : r.checks) {
        if (c.decided_by.empty()) continue;
        // A check left open was decided by neither engine.
        std::string who = c.verdict == Verdict::NotChecked ? "not checked" : c.decided_by;
        by[who] += (by[who].empty() ? "" : ",") + c.name;
        if (c.engines_disagree) dis += (dis.empty() ? "" : ",") + c.name;
      }
      std::string line;
      for (const auto& [who, names] : by)
        line += fmt::format("{}{}: {}", line.empty() ? "" : "; ", who, names);
      out << fmt::format("- {}: {}{}\n", run_label(r), line,
                         dis.empty() ? "" : "  ENGINES DISAGREE on " + dis);
    }
  }
  return rep.exit_code;
}

}  // namespace collv
