// `collv verify` (see verify_cmd.hpp).
#include "app/verify_cmd.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/commands.hpp"
#include "app/every_p_cmd.hpp"
#include "exec/executor.hpp"
#include "import/import.hpp"
#include "render/render.hpp"
#include "util/deadline.hpp"
#include "util/exit_codes.hpp"
#include "util/number_text.hpp"
#include "util/read_file.hpp"
#include "verify/partition.hpp"
#include "verify/symmetric.hpp"

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
  if (d == "symmetry") return {};  // verify_by_symmetry: no executor domain
  if (d == "default") return {DomainKind::Exact, DomainKind::Ordered};
  if (d == "all") return {DomainKind::Exact, DomainKind::Ordered, DomainKind::Fingerprint};
  if (auto k = domain_from_name(d)) return {*k};
  throw UsageError("--domain must be exact, ordered, fingerprint, all or symmetry, not '" + d +
                   "'");
}

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
    } else if (s.verdict == Verdict::Unknown && it->verdict == Verdict::Fail) {
      // The executor's counterexample stands: a violation found is not undone by a proof that
      // did not finish (e.g. no derivation for data the schedule never had).
      it->note += (it->note.empty() ? "smt: " : "; smt: ") + s.note;
      it->decided_by = "exec (smt inconclusive)";
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

// The run's status. In an ordered-domain run of a model that declares `operator commutative`, a
// failure of operand order only is expected: marked commutative_only and never counted as a
// failure, whatever else fails in the run (a run whose only failures are those is
// "commutative-only").
std::string run_status(std::vector<CheckResult>& checks, const Trace& t, DomainKind dom) {
  const bool commutative = dom == DomainKind::Ordered && t.op_class == OperatorClass::Commutative;
  bool fail = false, unknown = false, order = false;
  for (auto& c : checks) {
    c.commutative_only = commutative && c.verdict == Verdict::Fail && c.order_only;
    if (c.commutative_only)
      order = true;
    else if (c.verdict == Verdict::Fail)
      fail = true;
    if (c.verdict == Verdict::Unknown) unknown = true;
  }
  if (fail) return "fail";
  if (order) return "commutative-only";
  return unknown ? "inconclusive" : "pass";
}

// --strict: the collective's own rules, whatever the file or model declares.
void impose_strict(Trace& t) {
  t.layout_any = false;
  t.op_class = OperatorClass::Associative;
}

// Whether a run's verdict held only because the file or model loosened the collective's rules;
// what the strict rules say, or "".
std::string loosened_by(Trace& t, const std::string& status, Partition* part) {
  if (status == "commutative-only")
    return "held only under `operator commutative`: operands are combined out of rank order, "
           "which a non-commutative operator (--strict) fails";
  if (status == "fail" || status == "error" || !t.layout_any || !output_order_free(t)) return "";
  t.layout_any = false;
  auto [pc, fb] = part ? node_checks_partitioned(t, *part)
                       : std::pair{check_postcondition(t, CheckOptions{}),
                                   check_final_buffers(t, CheckOptions{})};
  t.layout_any = true;
  for (const CheckResult* c : {&pc, &fb})
    if (c->verdict == Verdict::Fail)
      return fmt::format("held only under `layout any`: in MPI's layout (--strict) {} fails: {}",
                         c->name, c->violations.empty() ? "" : c->violations.front().message);
  return "";
}

// One picture of the first violation of a failing run, named after the run.
void write_cex_picture(const std::string& dir, const VerifyRun& run, const Trace& t,
                       std::ostream& err) {
  // A deadlock explains the failures that follow from it: draw it first.
  const Counterexample* first = nullptr;
  for (const auto& c : run.checks)
    if (c.verdict == Verdict::Fail && !c.commutative_only && !c.violations.empty() &&
        (!first || c.name == "deadlock"))
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

// Runs f (a run and its checks); a model or usage error becomes the run's error, a limit makes
// the run inconclusive.
template <class F>
void guarded(VerifyRun& run, F&& f) {
  try {
    f();
  } catch (const ModelError& e) {
    run.status = "error";
    run.error = e.what();
  } catch (const StreamRefused& e) {  // --stream on for a run that cannot stream: usage
    run.status = "error";
    run.error = e.what();
  } catch (const LimitError& e) {  // --timeout, --max-memory, --max-ops: undecided, exit 3
    run.status = "inconclusive";   // (exit_codes.hpp: one exit code for every limit)
    run.error = e.what();
  } catch (const UsageError& e) {
    run.status = "error";
    run.error = e.what();
  }
}

void set_exit_code(VerifyReport& rep) {
  Tally all = rep.tally();
  rep.exit_code = all.failed > 0 ? kExitViolation
                  : all.errors > 0 || rep.runs.empty() || !rep.nothing_checked().empty()
                      ? kExitUsage
                  : all.inconclusive > 0 ? kExitInconclusive
                                         : kExitOk;
}

// `--domain symmetry`: every model on star:N, hypercube:D or ring:P by symmetry
// (verify/symmetric.hpp), one representative node; the topology itself is never built, so the size
// may pass the executor's node cap (star:13, hypercube:32, ring:1048576).
VerifyReport verify_by_symmetry(const VerifyOptions& o,
                                const std::vector<std::pair<std::string, bool>>& files,
                                std::ostream& err) {
  if (o.engine != "exec")
    throw UsageError("--domain symmetry is the executor's symmetric engine; --engine " + o.engine +
                     " does not apply");
  if (!o.trace_files.empty() ||
      std::any_of(o.targets.begin(), o.targets.end(), looks_like_schedule_path))
    throw UsageError("--domain symmetry verifies models; schedule files are judged as they are");
  // (family, size) pairs: the explicit specs, or each star/hypercube family of each model.
  std::vector<std::pair<std::string, int>> explicit_specs;
  for (const auto& spec : o.topologies) {
    auto colon = spec.find(':');
    std::string fam = colon == std::string::npos ? spec : spec.substr(0, colon);
    std::string num = colon == std::string::npos ? "" : spec.substr(colon + 1);
    bool ok = (fam == "star" || fam == "hypercube" || fam == "ring") && !num.empty() &&
              num.size() <= 7 && std::all_of(num.begin(), num.end(), ::isdigit);
    int k = ok ? std::stoi(num) : 0;
    if (!ok || (fam == "star" && (k < 2 || k > 13)) || (fam == "hypercube" && (k < 1 || k > 32)) ||
        (fam == "ring" && (k < 2 || k > (1 << 20))))
      throw UsageError(
          "--domain symmetry runs star:N (N in 2..13), hypercube:D (D in 1..32) and ring:P (P in "
          "2..1048576), not '" +
          spec + "'");
    explicit_specs.emplace_back(fam, k);
  }
  auto sizes_of = [&](const std::string& fam) {
    std::vector<std::pair<std::string, int>> v;
    std::int64_t lo = fam == "hypercube" ? 1 : 2;
    std::int64_t hi = fam == "star"   ? o.max_star
                      : fam == "ring" ? static_cast<std::int64_t>(o.max_p)
                                      : std::bit_width(o.max_p) - 1;
    if (o.sizes) {
      lo = std::max(lo, o.sizes->first);
      hi = std::min<std::int64_t>(o.sizes->second, fam == "star"   ? 13
                                                   : fam == "ring" ? (1 << 20)
                                                                   : 32);
    }
    for (auto k = lo; k <= hi; ++k) v.emplace_back(fam, static_cast<int>(k));
    return v;
  };
  VerifyReport rep;
  for (const auto& [file, named] : files) {
    Model m = parse_model_file(file);
    std::vector<std::pair<std::string, int>> specs = explicit_specs;
    if (specs.empty())
      for (const auto& fam : m.header.topologies)
        if (fam == "star" || fam == "hypercube" || fam == "ring")
          for (auto& sp : sizes_of(fam)) specs.push_back(sp);
    std::map<std::string, std::size_t> group_of;
    for (const auto& spec : specs) {
      const std::string& fam = spec.first;  // not a structured binding: clang 14 cannot
      const int k = spec.second;            // capture one in a lambda (the fuzz build)
      if (!group_of.count(fam)) {
        VerifyGroup grp;
        grp.model = m.header.name;
        grp.file = file;
        grp.family = fam;
        grp.named = named;
        group_of[fam] = rep.groups.size();
        rep.groups.push_back(grp);
      }
      std::size_t g = group_of[fam];
      auto t0 = std::chrono::steady_clock::now();
      VerifyRun run;
      run.model = m.header.name;
      run.file = file;
      run.topology = fmt::format("{}:{}", fam, k);
      run.domain = "symmetry";
      run.p = 1;
      if (fam == "hypercube")
        run.p = std::uint64_t{1} << k;
      else if (fam == "ring")
        run.p = static_cast<std::uint64_t>(k);
      else
        for (int i = 2; i <= k; ++i) run.p *= static_cast<std::uint64_t>(i);
      run.group = g;
      rep.groups[g].specs.push_back(run.topology);
      RunOptions ro = o.run;
      if (o.progress && !o.quiet)
        ro.progress = [&](std::uint64_t, std::uint32_t step) {
          err << fmt::format("\r\033[K{} on {} by symmetry: step {}", m.header.name, run.topology,
                             step)
              << std::flush;
        };
      guarded(run, [&] {
        SymmetricResult r = verify_symmetric(m, fam, k, ro);
        if (!r.refusal.empty()) {
          run.status = "error";
          run.error =
              fmt::format("{}: not verified by symmetry: {}", r.refusal_loc.str(), r.refusal);
        } else {
          run.steps = r.steps;
          run.cost_ts = r.cost_ts;
          run.cost_tw = r.cost_tw;
          run.checks = std::move(r.checks);
          bool fail = false, unknown = false;
          for (const auto& c : run.checks) {
            fail = fail || c.verdict == Verdict::Fail;
            unknown = unknown || c.verdict == Verdict::Unknown;
          }
          run.status = fail ? "fail" : unknown ? "inconclusive" : "pass";
        }
      });
      run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rep.groups[g].seconds += run.seconds;
      rep.runs.push_back(std::move(run));
    }
  }
  if (o.progress && !o.quiet) err << "\r\033[K" << std::flush;
  if (o.every_p) add_every_p(rep, o);
  set_exit_code(rep);
  return rep;
}

VerifyReport verify(const VerifyOptions& o, const ExtraEngine& smt, std::ostream& err) {
  if (o.engine != "exec" && o.engine != "smt" && o.engine != "both")
    throw UsageError("--engine must be exec, smt or both, not '" + o.engine + "'");
  if ((o.engine != "exec") && !smt)
    throw UsageError("the SMT engine is not available in this build");
  std::optional<std::uint32_t> fixed_source;
  if (o.source != "all") {
    bool digits = !o.source.empty() && o.source.size() <= 9 &&
                  std::all_of(o.source.begin(), o.source.end(), ::isdigit);
    if (!digits) throw UsageError("--source takes 'all' or one node id, not '" + o.source + "'");
    fixed_source = static_cast<std::uint32_t>(std::stoul(o.source));
  }
  auto doms = domains_of(o.domain);
  // Count 0 is a run too (MPI allows it; docs/language.md, "Count 0").
  if (o.counts.first < 0 || o.counts.second > 4096)
    throw UsageError(
        fmt::format("--count {}..{}: counts run from 0 to 4096", o.counts.first, o.counts.second));
  auto files = model_files(o);
  if (fixed_source) {  // --source must apply to at least one selected model
    bool rooted = false;
    std::string unrooted;
    for (const auto& [f, named] : files) {
      Model fm = parse_model_file(f);
      rooted = rooted || collective_is_rooted(fm.header.collective);
      if (unrooted.empty())
        unrooted = fm.header.name + ": " + collective_name(fm.header.collective);
    }
    if (!rooted && !files.empty())
      throw UsageError("--source: no model selected has a root (" + unrooted +
                       "); --source is for broadcast, reduce, scatter and gather");
  }
  if (o.partition) {  // what partitioned verify follows (docs/partitioned.md)
    std::string why =
        o.domain == "symmetry" ? "-d symmetry (one representative node; run it with collv)"
        : o.engine != "exec"
            ? "--engine " + o.engine + " (the SMT engine reads the whole stored trace)"
        : !o.cex_dir.empty() ? "--cex-dir (the pictures need the stored trace)"
        : !o.trace_files.empty() ||
                std::any_of(o.targets.begin(), o.targets.end(), looks_like_schedule_path)
            ? "schedule files (they are judged as read, in one process)"
            : "";
    if (!why.empty())
      throw UsageError(fmt::format(
          "partitioned verify (collv-mpi, {} processes) does not follow {}; run it with collv",
          o.partition->size(), why));
  }
  if (o.domain == "symmetry") return verify_by_symmetry(o, files, err);
  VerifyReport rep;
  std::map<std::string, Topology> topo_cache;
  auto topo_of = [&](const std::string& spec) -> const Topology& {
    auto it = topo_cache.find(spec);
    if (it == topo_cache.end()) it = topo_cache.emplace(spec, Topology::parse(spec)).first;
    return it->second;
  };
  // Explicit topologies are parsed first so a bad spec is a usage error before any run.
  for (const auto& s : o.topologies) topo_of(s);
  auto group_of = [&](const std::string& model, const std::string& file, const std::string& family,
                      bool named) {
    for (std::size_t g = 0; g < rep.groups.size(); ++g)
      if (rep.groups[g].file == file && rep.groups[g].family == family) return g;
    VerifyGroup g;
    g.model = model;
    g.file = file;
    g.family = family;
    g.named = named;
    rep.groups.push_back(std::move(g));
    return rep.groups.size() - 1;
  };
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };

  std::size_t done = 0;
  std::map<std::size_t, std::uint32_t> largest_p;  // per group: the most processors tried
  for (const auto& [file, named] : files) {
    Model m = parse_model_file(file);
    // (group, spec) pairs: every size of each family in the header, or the explicit specs.
    std::vector<std::pair<std::size_t, std::string>> specs;
    if (o.topologies.empty()) {
      for (const auto& fam : m.header.topologies) {
        std::size_t g = group_of(m.header.name, file, fam, named);
        for (auto& spec : family_sizes(fam, o)) specs.emplace_back(g, std::move(spec));
      }
    } else {
      for (const auto& spec : o.topologies)
        specs.emplace_back(group_of(m.header.name, file, topo_of(spec).family(), named), spec);
    }
    for (const auto& [g, spec] : specs) {
      const Topology& topo = topo_of(spec);
      rep.groups[g].specs.push_back(topo.spec());
      auto p = static_cast<std::uint32_t>(topo.num_processors());
      largest_p[g] = std::max(largest_p[g], p);
      std::vector<std::optional<std::uint32_t>> sources{std::nullopt};
      std::vector<std::optional<std::int64_t>> shifts{std::nullopt};
      if (collective_is_rooted(m.header.collective)) {
        sources.clear();
        if (fixed_source) {
          if (*fixed_source < p) {
            sources.push_back(*fixed_source);
          } else {
            ++rep.groups[g].no_source;
          }
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
          for (std::int64_t cnt = o.counts.first; cnt <= o.counts.second; ++cnt)
            for (DomainKind dom : doms) {
              RunOptions ro = o.run;
              // The SMT engine and the pictures read the trace.
              if (ro.stream == RunOptions::Stream::Auto &&
                  (o.engine != "exec" || !o.cex_dir.empty()))
                ro.stream = RunOptions::Stream::Off;
              ro.count = static_cast<std::uint32_t>(cnt);
              ro.domain = dom;
              ro.root = src.value_or(0);
              ro.shift = q.value_or(1);
              auto applies = model_applies(m, topo, ro);
              if (applies && !*applies) {  // nullopt: run_model reports why
                ++rep.skipped_runs;
                ++rep.groups[g].skipped_runs;
                continue;
              }
              // --timeout bounds the whole command: a run's own loop checks it too, but a sweep
              // of short runs would never reach that check.
              check_deadline(fmt::format("verify, after {} runs,", rep.runs.size()));
              auto t0 = Clock::now();
              VerifyRun run;
              run.model = m.header.name;
              run.file = file;
              run.topology = topo.spec();
              run.domain = domain_name(dom);
              run.p = p;
              run.source = src;
              run.shift = q;
              run.count = ro.count;
              run.group = g;
              if (o.progress && !o.quiet)
                err << fmt::format("\r\033[K[{}] {} on {}{} ({})", ++done, m.header.name, spec,
                                   src ? fmt::format(" from {}", *src) : "", run.domain)
                    << std::flush;
              guarded(run, [&] {
                // Partitioned (collv-mpi): t holds this process's slice of the nodes.
                Trace t = o.partition ? run_model_partitioned(m, topo, ro, *o.partition)
                                      : run_model(m, topo, ro);
                run.steps = t.steps;
                run.cost_ts = t.cost_ts;
                run.cost_tw = t.cost_tw;
                run.streamed = t.streamed;
                if (o.strict) impose_strict(t);
                run.checks = o.partition ? check_partitioned(t, *o.partition)
                                         : check_trace(t, CheckOptions{});
                if (o.engine != "exec") merge_engine(run.checks, smt(m, topo, ro, t), o.engine);
                run.status = run_status(run.checks, t, dom);
                run.loosened = loosened_by(t, run.status, o.partition);
                if (!o.cex_dir.empty() && (run.status == "fail"))
                  write_cex_picture(o.cex_dir, run, t, err);
              });
              run.seconds = seconds_since(t0);
              rep.groups[g].seconds += run.seconds;
              rep.runs.push_back(std::move(run));
            }
    }
    // Why a group of this model ran nothing, in words a user can act on.
    for (std::size_t g = 0; g < rep.groups.size(); ++g) {
      VerifyGroup& G = rep.groups[g];
      if (G.file != file || rep.tally(g).runs > 0) continue;
      std::vector<std::string> why;
      if (G.specs.empty()) {
        why.push_back(o.sizes ? fmt::format("no size of the {} family within --sizes {}..{}",
                                            G.family, o.sizes->first, o.sizes->second)
                              : fmt::format("no size of the {} family within the bounds "
                                            "(--max-p {}, --max-star {})",
                                            G.family, o.max_p, o.max_star));
      }
      if (G.no_source > 0 && G.specs.size() == 1)
        why.push_back(fmt::format("--source {} is not a processor of {} (0 .. {})", *fixed_source,
                                  G.specs.front(), largest_p[g] - 1));
      else if (G.no_source > 0)
        why.push_back(fmt::format(
            "--source {} is not a processor of {} of the {} sizes tried ({} .. {}; the largest "
            "has {} processors)",
            *fixed_source,
            G.no_source == G.specs.size() ? std::string("any") : std::to_string(G.no_source),
            G.specs.size(), G.specs.front(), G.specs.back(), largest_p[g]));
      if (G.skipped_runs > 0) {
        std::string where =
            m.header.requires_ ? " (" + m.header.requires_->loc.str() + ")" : std::string();
        why.push_back(
            fmt::format("its `requires`{} is false for all {} size, source and domain "
                        "combination(s) tried",
                        where, G.skipped_runs));
      }
      if (why.empty()) why.push_back("no size, source or domain to run");
      for (std::size_t k = 0; k < why.size(); ++k) G.no_run += (k ? "; " : "") + why[k];
    }
  }
  // Schedules from files: judged as they are (no sizes, sources or domains to sweep).
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
  if (o.progress && !o.quiet) err << "\r\033[K" << std::flush;
  if (o.every_p) add_every_p(rep, o);
  set_exit_code(rep);
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
