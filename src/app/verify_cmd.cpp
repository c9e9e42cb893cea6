// `collv verify` (see verify_cmd.hpp).
#include "app/verify_cmd.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "import/import.hpp"
#include "render/render.hpp"
#include "util/exit_codes.hpp"

namespace collv {

namespace fs = std::filesystem;

std::pair<std::int64_t, std::int64_t> parse_size_range(const std::string& s) {
  auto num = [&](const std::string& x) {
    if (x.empty() || x.size() > 9 || !std::all_of(x.begin(), x.end(), ::isdigit))
      throw UsageError("--sizes expects A..B with whole numbers, got '" + s + "'");
    return std::stoll(x);
  };
  auto dots = s.find("..");
  if (dots == std::string::npos) {
    auto v = num(s);
    return {v, v};
  }
  auto a = num(s.substr(0, dots)), b = num(s.substr(dots + 2));
  if (b < a) throw UsageError("--sizes " + s + ": the range is empty");
  return {a, b};
}

namespace {

// The topology specs of one family within the bounds. For ring, line, complete, tree, mesh and
// torus the bound is on processors; for hypercube and de Bruijn on d; for the star on n.
std::vector<std::string> family_sizes(const std::string& fam, const VerifyOptions& o) {
  std::vector<std::string> out;
  auto in_range = [&](std::int64_t x, std::int64_t lo, std::int64_t hi) {
    if (o.sizes) return x >= o.sizes->first && x <= o.sizes->second;
    return x >= lo && x <= hi;
  };
  std::int64_t maxp = o.max_p;
  std::int64_t cap = o.sizes ? std::min<std::int64_t>(o.sizes->second, 4096) : maxp;
  if (fam == "ring" || fam == "line" || fam == "complete") {
    for (std::int64_t p = 2; p <= cap; ++p)
      if (in_range(p, 2, maxp)) out.push_back(fmt::format("{}:{}", fam, p));
  } else if (fam == "tree") {
    for (std::int64_t p = 2; p <= cap; p *= 2)
      if (in_range(p, 2, maxp)) out.push_back(fmt::format("tree:{}", p));
  } else if (fam == "mesh" || fam == "torus") {
    for (std::int64_t r = 2; r <= cap; ++r)
      for (std::int64_t c = 2; r * c <= cap; ++c)
        if (in_range(r * c, 4, maxp)) out.push_back(fmt::format("{}:{}x{}", fam, r, c));
  } else if (fam == "hypercube" || fam == "debruijn") {
    std::int64_t maxd = 0;
    while ((std::int64_t{2} << maxd) <= maxp) ++maxd;
    for (std::int64_t d = 1; d <= (o.sizes ? std::min<std::int64_t>(o.sizes->second, 20) : maxd);
         ++d)
      if (in_range(d, 1, maxd)) out.push_back(fmt::format("{}:{}", fam, d));
  } else if (fam == "star") {
    for (std::int64_t n = 2;
         n <= (o.sizes ? std::min<std::int64_t>(o.sizes->second, 10) : o.max_star); ++n)
      if (in_range(n, 2, o.max_star)) out.push_back(fmt::format("star:{}", n));
  }
  return out;
}

std::vector<DomainKind> domains_of(const std::string& d) {
  if (d == "default") return {DomainKind::Exact, DomainKind::Ordered};
  if (d == "all") return {DomainKind::Exact, DomainKind::Ordered, DomainKind::Fingerprint};
  if (auto k = domain_from_name(d)) return {*k};
  throw UsageError("--domain must be exact, ordered, fingerprint or all, not '" + d + "'");
}

std::vector<std::string> model_files(const VerifyOptions& o) {
  std::string dir = o.models_dir.empty() ? default_models_dir() : o.models_dir;
  std::vector<std::string> files;
  if (o.all) {
    auto f = list_model_files(dir);
    files.insert(files.end(), f.begin(), f.end());
  }
  for (const auto& t : o.targets) {
    std::error_code ec;
    if (fs::is_directory(t, ec)) {
      auto f = list_model_files(t);
      files.insert(files.end(), f.begin(), f.end());
    } else if (!looks_like_schedule_path(t)) {  // schedule files are judged as --trace ones
      files.push_back(resolve_model_path(t, dir));
    }
  }
  if (files.empty() && o.trace_files.empty() &&
      std::none_of(o.targets.begin(), o.targets.end(), looks_like_schedule_path))
    throw UsageError("nothing to verify: name models or directories, pass --all, or --trace FILE");
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

// Folds the SMT engine's verdicts into the executor's, per the chosen engine, and records which
// engine decided each check (CheckResult::decided_by) and any disagreement.
void merge_engine(std::vector<CheckResult>& exec, std::vector<CheckResult> smt,
                  const std::string& engine) {
  for (auto& c : exec) c.decided_by = "exec";
  for (auto& s : smt) {
    auto it = std::find_if(exec.begin(), exec.end(),
                           [&](const CheckResult& c) { return c.name == s.name; });
    if (it == exec.end() || s.verdict == Verdict::NotChecked) continue;
    if (engine == "smt") {
      *it = std::move(s);
      it->decided_by = "smt";
    } else if (s.verdict == Verdict::Unknown) {
      it->verdict = Verdict::Unknown;
      it->note = "smt: " + s.note;
      it->decided_by = "exec+smt (smt inconclusive)";
    } else if (it->verdict == Verdict::NotChecked) {
      *it = std::move(s);
      it->decided_by = "smt";
    } else if (s.verdict != it->verdict) {
      Counterexample c;
      c.invariant = it->name;
      c.message = fmt::format("the engines disagree: executor {}, smt {}",
                              verdict_name(it->verdict), verdict_name(s.verdict));
      it->verdict = Verdict::Fail;
      it->order_only = false;  // a disagreement is never an expected failure
      it->violations.insert(it->violations.begin(), c);
      ++it->violation_count;
      it->decided_by = "exec+smt";
      it->engines_disagree = true;
    } else {
      it->decided_by = "exec+smt";
    }
  }
}

std::string run_status(const std::vector<CheckResult>& checks, const Trace& t, DomainKind dom) {
  bool fail = false, unknown = false, only_order = true;
  for (const auto& c : checks) {
    if (c.verdict == Verdict::Fail) {
      fail = true;
      only_order = only_order && c.order_only;
    }
    if (c.verdict == Verdict::Unknown) unknown = true;
  }
  if (fail) {
    if (only_order && dom == DomainKind::Ordered && t.op_class == OperatorClass::Commutative)
      return "commutative-only";
    return "fail";
  }
  return unknown ? "inconclusive" : "pass";
}

std::string short_cost(double ts, double tw) {
  auto f = [](double x) {
    return x == static_cast<double>(static_cast<long long>(x))
               ? fmt::format("{}", static_cast<long long>(x))
               : fmt::format("{:.4g}", x);
  };
  return f(ts) + "ts+" + f(tw) + "tw";
}

// One picture of the first violation of a failing run, named after the run.
void write_cex_picture(const std::string& dir, const VerifyRun& run, const Trace& t,
                       std::ostream& err) {
  // A deadlock explains the failures that follow from it: draw it first.
  const Counterexample* first = nullptr;
  for (const auto& c : run.checks)
    if (c.verdict == Verdict::Fail && !c.violations.empty() && (!first || c.name == "deadlock"))
      first = &c.violations.front();
  if (!first) return;
  std::string name = run.model + "_" + run.topology;
  if (run.source) name += fmt::format("_s{}", *run.source);
  if (run.shift) name += fmt::format("_q{}", *run.shift);
  name += "_" + run.domain + "_" + first->invariant;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '-';
  try {
    fs::create_directories(dir);
    if (t.topology.num_nodes() > 1000) {
      err << fmt::format("collv: note: no picture for {} ({} nodes is too many to draw)\n", name,
                         t.topology.num_nodes());
      return;
    }
    write_counterexample_picture(t, *first, (fs::path(dir) / (name + ".svg")).string());
  } catch (const std::exception& e) {
    err << "collv: warning: could not draw " << name << ": " << e.what() << "\n";
  }
}

}  // namespace

VerifyReport verify(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& err) {
  if (o.engine != "exec" && o.engine != "smt" && o.engine != "both")
    throw UsageError("--engine must be exec, smt or both, not '" + o.engine + "'");
  if ((o.engine != "exec") && !smt)
    throw UsageError("the SMT engine is not available in this build");
  std::optional<std::uint32_t> fixed_source;
  if (o.source != "all") {
    auto r = parse_size_range(o.source);
    if (r.first != r.second) throw UsageError("--source takes 'all' or one node id");
    fixed_source = static_cast<std::uint32_t>(r.first);
  }
  auto doms = domains_of(o.domain);
  auto files = model_files(o);
  if (fixed_source) {  // --source must apply to at least one selected model
    bool rooted = false;
    std::string unrooted;
    for (const auto& f : files) {
      Model fm = parse_model_file(f);
      rooted = rooted || collective_is_rooted(fm.header.collective);
      if (unrooted.empty())
        unrooted = fm.header.name + ": " + collective_name(fm.header.collective);
    }
    if (!rooted && !files.empty())
      throw UsageError("--source: no model selected has a root (" + unrooted +
                       "); --source is for broadcast, reduce, scatter and gather");
  }
  VerifyReport rep;
  std::map<std::string, Topology> topo_cache;
  auto topo_of = [&](const std::string& spec) -> const Topology& {
    auto it = topo_cache.find(spec);
    if (it == topo_cache.end()) it = topo_cache.emplace(spec, Topology::parse(spec)).first;
    return it->second;
  };
  // Explicit topologies are parsed first so a bad spec is a usage error before any run.
  for (const auto& s : o.topologies) topo_of(s);

  std::size_t done = 0;
  for (const auto& file : files) {
    Model m = parse_model_file(file);
    std::vector<std::string> specs = o.topologies;
    if (specs.empty())
      for (const auto& fam : m.header.topologies) {
        auto f = family_sizes(fam, o);
        specs.insert(specs.end(), f.begin(), f.end());
      }
    for (const auto& spec : specs) {
      const Topology& topo = topo_of(spec);
      auto p = static_cast<std::uint32_t>(topo.num_processors());
      std::vector<std::optional<std::uint32_t>> sources{std::nullopt};
      std::vector<std::optional<std::int64_t>> shifts{std::nullopt};
      if (collective_is_rooted(m.header.collective)) {
        sources.clear();
        if (fixed_source) {
          if (*fixed_source < p) sources.push_back(*fixed_source);
        } else {
          for (std::uint32_t s = 0; s < p; ++s) sources.push_back(s);
        }
      }
      if (m.header.collective == Collective::Shift) {
        shifts.clear();
        for (std::int64_t q = 1; q < std::max<std::int64_t>(p, 2); ++q) shifts.push_back(q);
      }
      for (auto src : sources)
        for (auto q : shifts)
          for (DomainKind dom : doms) {
            RunOptions ro = o.run;
            ro.domain = dom;
            ro.root = src.value_or(0);
            ro.shift = q.value_or(1);
            auto applies = model_applies(m, topo, ro);
            if (applies && !*applies) {  // nullopt: run_model reports why
              ++rep.skipped_runs;
              continue;
            }
            VerifyRun run;
            run.model = m.header.name;
            run.file = file;
            run.topology = topo.spec();
            run.domain = domain_name(dom);
            run.p = p;
            run.source = src;
            run.shift = q;
            if (o.progress && !o.quiet)
              err << fmt::format("\r\033[K[{}] {} on {}{} ({})", ++done, m.header.name, spec,
                                 src ? fmt::format(" from {}", *src) : "", run.domain)
                  << std::flush;
            try {
              Trace t = run_model(m, topo, ro);
              run.steps = t.steps;
              run.cost_ts = t.cost_ts;
              run.cost_tw = t.cost_tw;
              run.checks = check_trace(t, CheckOptions{});
              if (o.engine != "exec") merge_engine(run.checks, smt(m, topo, ro, t), o.engine);
              run.status = run_status(run.checks, t, dom);
              if (!o.cex_dir.empty() && (run.status == "fail"))
                write_cex_picture(o.cex_dir, run, t, err);
            } catch (const ModelError& e) {
              run.status = "error";
              run.error = e.what();
            } catch (const UsageError& e) {
              run.status = "error";
              run.error = e.what();
            }
            rep.runs.push_back(std::move(run));
          }
    }
  }
  // Schedules from files: judged as they are (no sizes, sources or domains to sweep).
  std::vector<std::string> schedules = o.trace_files;
  for (const auto& t : o.targets)
    if (looks_like_schedule_path(t) && !fs::is_directory(t)) schedules.push_back(t);
  for (const auto& file : schedules) {
    ImportedSchedule imported;
    try {
      imported = import_schedule(file);  // collv JSON, MSCCL-XML, SCCL JSON, GOAL
    } catch (const UsageError& e) {
      VerifyRun run;
      run.model = fs::path(file).filename().string();
      run.file = file;
      run.status = "error";
      run.error = e.what();
      rep.runs.push_back(std::move(run));
      continue;
    }
    const Trace& t = imported.trace;
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
    run.checks = check_imported(imported, CheckOptions{});
    run.status = run_status(run.checks, t, t.domain->kind());
    if (!o.cex_dir.empty() && run.status == "fail") write_cex_picture(o.cex_dir, run, t, err);
    rep.runs.push_back(std::move(run));
  }
  if (o.progress && !o.quiet) err << "\r\033[K" << std::flush;
  bool fail = false, unknown = false, error = false;
  for (const auto& r : rep.runs) {
    fail = fail || r.status == "fail";
    unknown = unknown || r.status == "inconclusive";
    error = error || r.status == "error";
  }
  rep.exit_code = fail      ? kExitViolation
                  : error   ? kExitUsage
                  : unknown ? kExitInconclusive
                            : kExitOk;
  return rep;
}

namespace {

nlohmann::json cex_json(const Counterexample& c) {
  nlohmann::json j;
  j["invariant"] = c.invariant;
  j["message"] = c.message;
  if (c.step) j["step"] = *c.step;
  j["nodes"] = c.nodes;
  j["transfers"] = c.transfers;
  if (!c.loads.empty()) {
    auto& l = j["loads"] = nlohmann::json::array();
    for (const auto& x : c.loads)
      l.push_back({{"from", x.from}, {"to", x.to}, {"transfers", x.transfers}, {"items", x.items}});
  }
  if (!c.buffers.empty()) {
    auto& b = j["buffers"] = nlohmann::json::array();
    for (const auto& x : c.buffers)
      b.push_back({{"node", x.node}, {"what", x.what}, {"contents", x.contents}});
  }
  return j;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
          o += ' ';
        } else {
          o += c;
        }
    }
  }
  return o;
}

std::string run_label(const VerifyRun& r) {
  std::string s = r.model + " on " + r.topology;
  if (r.source) s += fmt::format(" from {}", *r.source);
  if (r.shift) s += fmt::format(" q={}", *r.shift);
  return s + " (" + r.domain + ")";
}

}  // namespace

std::string report_to_json(const VerifyReport& rep) {
  nlohmann::json j;
  auto& results = j["results"] = nlohmann::json::array();
  std::size_t passed = 0, failed = 0, inconclusive = 0, comm = 0, errors = 0;
  for (const auto& r : rep.runs) {
    nlohmann::json x;
    x["model"] = r.model;
    x["file"] = r.file;
    x["topology"] = r.topology;
    x["p"] = r.p;
    x["source"] = r.source ? nlohmann::json(*r.source) : nlohmann::json(nullptr);
    if (r.shift) x["q"] = *r.shift;
    x["domain"] = r.domain;
    x["steps"] = r.steps;
    x["cost"] = {{"ts", r.cost_ts}, {"tw", r.cost_tw}};
    x["status"] = r.status;
    auto& checks = x["checks"] = nlohmann::json::object();
    auto& viol = x["violations"] = nlohmann::json::array();
    for (const auto& c : r.checks) {
      checks[c.name] = verdict_name(c.verdict);
      for (const auto& v : c.violations) viol.push_back(cex_json(v));
      // --engine smt|both: which engine decided each check, and the disagreements.
      if (!c.decided_by.empty()) x["decided_by"][c.name] = c.decided_by;
      if (c.engines_disagree) x["engines_disagree"].push_back(c.name);
    }
    if (r.status == "error") x["error"] = r.error;
    results.push_back(std::move(x));
    if (r.status == "pass") ++passed;
    if (r.status == "fail") ++failed;
    if (r.status == "inconclusive") ++inconclusive;
    if (r.status == "commutative-only") ++comm;
    if (r.status == "error") ++errors;
  }
  j["summary"] = {{"runs", rep.runs.size()},         {"passed", passed + comm},  {"failed", failed},
                  {"inconclusive", inconclusive},    {"commutative_only", comm}, {"errors", errors},
                  {"skipped_runs", rep.skipped_runs}};
  return j.dump(2) + "\n";
}

std::string report_to_junit(const VerifyReport& rep) {
  std::size_t tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const auto& r : rep.runs) {
    std::string cls = xml_escape(run_label(r));
    if (r.status == "error") {
      ++tests;
      ++errors;
      body += fmt::format(
          "    <testcase classname=\"{}\" name=\"run\">\n      <error message=\"{}\"/>\n    "
          "</testcase>\n",
          cls, xml_escape(r.error));
      continue;
    }
    for (const auto& c : r.checks) {
      ++tests;
      body += fmt::format("    <testcase classname=\"{}\" name=\"{}\">\n", cls, xml_escape(c.name));
      if (c.verdict == Verdict::Fail && r.status == "commutative-only") {
        ++skipped;
        body +=
            "      <skipped message=\"operand order only; the model declares a commutative "
            "operator\"/>\n";
      } else if (c.verdict == Verdict::Fail) {
        ++failures;
        std::string msg = c.violations.empty() ? c.name : c.violations.front().message;
        std::string all;
        for (const auto& v : c.violations) all += v.message + "\n";
        body += fmt::format("      <failure message=\"{}\">{}</failure>\n", xml_escape(msg),
                            xml_escape(all));
      } else if (c.verdict == Verdict::Unknown) {
        ++errors;
        body += fmt::format("      <error message=\"inconclusive: {}\"/>\n", xml_escape(c.note));
      } else if (c.verdict == Verdict::NotChecked) {
        ++skipped;
        body += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c.note));
      }
      body += "    </testcase>\n";
    }
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"collv verify\" tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n  <testsuite name=\"collv verify\" "
      "tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      tests, failures, errors, skipped, tests, failures, errors, skipped, body);
}

int run_verify_command(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& out,
                       std::ostream& err) {
  VerifyReport rep = verify(o, smt, err);
  auto write = [](const std::string& path, const std::string& text) {
    if (path == "-") {
      std::cout << text;
      return;
    }
    std::ofstream f(path);
    if (!f) throw UsageError("cannot write '" + path + "'");
    f << text;
  };
  if (!o.json_file.empty()) write(o.json_file, report_to_json(rep));
  if (!o.junit_file.empty()) write(o.junit_file, report_to_junit(rep));

  std::size_t passed = 0, failed = 0, inconclusive = 0, comm = 0, errors = 0;
  for (const auto& r : rep.runs) {
    if (r.status == "pass") ++passed;
    if (r.status == "fail") ++failed;
    if (r.status == "inconclusive") ++inconclusive;
    if (r.status == "commutative-only") ++comm;
    if (r.status == "error") ++errors;
  }
  if (!o.quiet && o.json_file != "-" && o.junit_file != "-") {
    std::size_t w0 = 5, w1 = 8;
    for (const auto& r : rep.runs) {
      w0 = std::max(w0, r.model.size());
      w1 = std::max(w1, r.topology.size());
    }
    out << fmt::format("{:<{}}  {:<{}}  {:>4}  {:<11}  {:>5}  {:<14}  {}\n", "MODEL", w0,
                       "TOPOLOGY", w1, "SRC", "DOMAIN", "STEPS", "COST", "RESULT");
    for (const auto& r : rep.runs) {
      std::string src = r.source  ? std::to_string(*r.source)
                        : r.shift ? "q" + std::to_string(*r.shift)
                                  : "-";
      std::string result = r.status;
      if (r.status == "fail" || r.status == "inconclusive") {
        std::string names;
        for (const auto& c : r.checks)
          if (c.verdict == Verdict::Fail || c.verdict == Verdict::Unknown)
            names += (names.empty() ? "" : ",") + c.name;
        result += " (" + names + ")";
      }
      if (r.status == "error") result += ": " + r.error;
      out << fmt::format("{:<{}}  {:<{}}  {:>4}  {:<11}  {:>5}  {:<14}  {}\n", r.model, w0,
                         r.topology, w1, src, r.domain, r.steps, short_cost(r.cost_ts, r.cost_tw),
                         result);
    }
    if (o.engine != "exec") {
      // Which engine decided each check (--engine smt|both), one line per run.
      out << "\nengines (which engine decided each check)\n";
      for (const auto& r : rep.runs) {
        std::map<std::string, std::string> by;
        std::string dis;
        for (const auto& c : r.checks) {
          if (c.decided_by.empty()) continue;
          by[c.decided_by] += (by[c.decided_by].empty() ? "" : ",") + c.name;
          if (c.engines_disagree) dis += (dis.empty() ? "" : ",") + c.name;
        }
        std::string line;
        for (const auto& [who, names] : by)
          line += fmt::format("{}{}: {}", line.empty() ? "" : "; ", who, names);
        out << fmt::format("- {}: {}{}\n", run_label(r), line,
                           dis.empty() ? "" : "  ENGINES DISAGREE on " + dis);
      }
    }
    bool header = false;
    for (const auto& r : rep.runs) {
      if (r.status != "fail" && r.status != "inconclusive") continue;
      if (!header) {
        out << "\ncounterexamples (the first of each failing run)\n";
        header = true;
      }
      out << fmt::format("- {}\n", run_label(r));
      for (const auto& c : r.checks) {
        if (c.verdict == Verdict::Unknown)
          out << fmt::format("    {}: inconclusive: {}\n", c.name, c.note);
        if (c.verdict != Verdict::Fail || c.violations.empty()) continue;
        const auto& v = c.violations.front();
        out << fmt::format("    {}: {}", c.name, v.message);
        if (c.violation_count > 1) out << fmt::format(" (and {} more)", c.violation_count - 1);
        out << "\n";
        for (const auto& b : v.buffers)
          out << fmt::format("      node {} {}: {}\n", b.node, b.what, b.contents);
        for (std::size_t k = 0; k < v.loads.size() && k < 6; ++k)
          out << fmt::format("      link {} -> {}: {} transfers, {} items\n", v.loads[k].from,
                             v.loads[k].to, v.loads[k].transfers, v.loads[k].items);
      }
    }
  }
  if (o.json_file != "-" && o.junit_file != "-")
    out << fmt::format(
        "{}{} runs: {} passed, {} failed, {} inconclusive, {} commutative-only (expected "
        "under the ordered domain), {} errors; {} runs skipped by `requires`\n",
        o.quiet ? "" : "\n", rep.runs.size(), passed, failed, inconclusive, comm, errors,
        rep.skipped_runs);
  return rep.exit_code;
}

}  // namespace collv
