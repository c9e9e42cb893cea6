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
#include "exec/symmetric.hpp"
#include "import/import.hpp"
#include "render/render.hpp"
#include "util/exit_codes.hpp"
#include "util/number_text.hpp"
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

// --strict: the collective's own rules, whatever the file or model declares.
void impose_strict(Trace& t) {
  t.layout_any = false;
  t.op_class = OperatorClass::Associative;
}

// Whether a run's verdict held only because the file or model loosened the collective's rules;
// what the strict rules say, or "".
std::string loosened_by(Trace& t, const std::string& status) {
  if (status == "commutative-only")
    return "held only under `operator commutative`: operands are combined out of rank order, "
           "which a non-commutative operator (--strict) fails";
  if (status == "fail" || status == "error" || !t.layout_any || !output_order_free(t)) return "";
  t.layout_any = false;
  CheckResult pc = check_postcondition(t, CheckOptions{});
  CheckResult fb = check_final_buffers(t, CheckOptions{});
  t.layout_any = true;
  for (const CheckResult* c : {&pc, &fb})
    if (c->verdict == Verdict::Fail)
      return fmt::format("held only under `layout any`: in MPI's layout (--strict) {} fails: {}",
                         c->name, c->violations.empty() ? "" : c->violations.front().message);
  return "";
}

std::string short_cost(double ts, double tw) {
  auto f = [](double x) { return number_text(x); };
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

// Runs f (a run and its checks); a model or usage error (limits included) becomes the run's error.
template <class F>
void guarded(VerifyRun& run, F&& f) {
  try {
    f();
  } catch (const ModelError& e) {
    run.status = "error";
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
// (exec/symmetric.hpp), one representative node; the topology itself is never built, so the size
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
    for (const auto& [fam, k] : specs) {
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
                Trace t = run_model(m, topo, ro);
                run.steps = t.steps;
                run.cost_ts = t.cost_ts;
                run.cost_tw = t.cost_tw;
                run.streamed = t.streamed;
                if (o.strict) impose_strict(t);
                run.checks = check_trace(t, CheckOptions{});
                if (o.engine != "exec") merge_engine(run.checks, smt(m, topo, ro, t), o.engine);
                run.status = run_status(run.checks, t, dom);
                run.loosened = loosened_by(t, run.status);
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
      run.status = "error";
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
      run.loosened = loosened_by(t, run.status);
      if (!o.cex_dir.empty() && run.status == "fail") write_cex_picture(o.cex_dir, run, t, err);
      run.seconds = seconds_since(t0);
      rep.groups[run.group].seconds += run.seconds;
      rep.runs.push_back(std::move(run));
    }
  }
  if (o.progress && !o.quiet) err << "\r\033[K" << std::flush;
  set_exit_code(rep);
  return rep;
}

void Tally::add(const VerifyRun& r) {
  ++runs;
  if (r.status == "pass") ++passed;
  if (r.status == "commutative-only") ++commutative_only;
  if (r.status == "fail") ++failed;
  if (r.status == "inconclusive") ++inconclusive;
  if (r.status == "error") ++errors;
}

Tally VerifyReport::tally() const {
  Tally t;
  for (const auto& r : runs) t.add(r);
  return t;
}

Tally VerifyReport::tally(std::size_t group) const {
  Tally t;
  for (const auto& r : runs)
    if (r.group == group) t.add(r);
  return t;
}

std::vector<std::size_t> VerifyReport::nothing_checked() const {
  std::vector<std::size_t> out;
  if (runs.empty()) {
    for (std::size_t g = 0; g < groups.size(); ++g) out.push_back(g);
    return out;
  }
  // A model named on the command line none of whose families ran.
  std::map<std::string, bool> ran;
  for (const auto& r : runs) ran[r.file] = true;
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (groups[g].named && !ran[groups[g].file]) out.push_back(g);
  return out;
}

namespace {

// The sizes a group's runs covered, by processors then in run order.
std::vector<std::string> covered_specs(const VerifyReport& rep, std::size_t g) {
  std::vector<std::pair<std::uint32_t, std::string>> seen;
  for (const auto& r : rep.runs)
    if (r.group == g && (seen.empty() || seen.back().second != r.topology))
      seen.emplace_back(r.p, r.topology);
  std::stable_sort(seen.begin(), seen.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (auto& [p, spec] : seen)
    if (std::find(out.begin(), out.end(), spec) == out.end()) out.push_back(spec);
  return out;
}

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

// Where a run ran: "ring:4 from 2 (exact)".
std::string run_where(const VerifyRun& r) {
  std::string s = r.topology;
  if (r.source) s += fmt::format(" from {}", *r.source);
  if (r.shift) s += fmt::format(" q={}", *r.shift);
  if (r.count != 1) s += fmt::format(" count {}", r.count);
  return s + " (" + r.domain + ")";
}

std::string run_label(const VerifyRun& r) { return r.model + " on " + run_where(r); }

}  // namespace

std::string report_to_json(const VerifyReport& rep) {
  nlohmann::json j;
  auto& results = j["results"] = nlohmann::json::array();
  for (const auto& r : rep.runs) {
    nlohmann::json x;
    x["model"] = r.model;
    x["file"] = r.file;
    x["topology"] = r.topology;
    x["p"] = r.p;
    x["source"] = r.source ? nlohmann::json(*r.source) : nlohmann::json(nullptr);
    if (r.shift) x["q"] = *r.shift;
    x["domain"] = r.domain;
    x["count"] = r.count;
    x["steps"] = r.steps;
    x["cost"] = {{"ts", r.cost_ts}, {"tw", r.cost_tw}};
    if (r.streamed) x["streamed"] = true;
    if (r.data_not_checked) x["data_checked"] = false;  // GOAL: no data to judge
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
    if (!r.loosened.empty()) x["loosened"] = r.loosened;
    results.push_back(std::move(x));
  }
  auto counts = [](const Tally& t, nlohmann::json& x) {
    x["runs"] = t.runs;
    x["passed"] = t.passed;
    x["commutative_only"] = t.commutative_only;
    x["failed"] = t.failed;
    x["inconclusive"] = t.inconclusive;
    x["errors"] = t.errors;
  };
  auto& models = j["models"] = nlohmann::json::array();
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    const VerifyGroup& G = rep.groups[g];
    nlohmann::json x;
    x["model"] = G.model;
    x["file"] = G.file;
    x["family"] = G.family;
    x["sizes"] = covered_specs(rep, g);
    x["sizes_tried"] = G.specs.size();
    counts(rep.tally(g), x);
    x["skipped_runs"] = G.skipped_runs;
    if (!G.no_run.empty()) x["no_run"] = G.no_run;
    models.push_back(std::move(x));
  }
  nlohmann::json summary;
  counts(rep.tally(), summary);
  summary["skipped_runs"] = rep.skipped_runs;
  summary["exit_code"] = rep.exit_code;
  j["summary"] = std::move(summary);
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
      if (c.name == "postcondition" && !r.loosened.empty())
        body += fmt::format(
            "      <properties><property name=\"loosened\" value=\"{}\"/></properties>\n",
            xml_escape(r.loosened));
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
  // A model that ran nothing is an error, not an empty pass.
  for (std::size_t g : rep.nothing_checked()) {
    const VerifyGroup& G = rep.groups[g];
    ++tests;
    ++errors;
    body += fmt::format(
        "    <testcase classname=\"{}\" name=\"run\">\n      <error message=\"nothing "
        "checked: {}\"/>\n    </testcase>\n",
        xml_escape(G.model + " on " + G.family), xml_escape(G.no_run));
  }
  return fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"collv verify\" tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n  <testsuite name=\"collv verify\" "
      "tests=\"{}\" "
      "failures=\"{}\" errors=\"{}\" skipped=\"{}\">\n{}  </testsuite>\n</testsuites>\n",
      tests, failures, errors, skipped, tests, failures, errors, skipped, body);
}

namespace {

// "2..64" for families sized by one number (ring:2 .. ring:64), "p=4..64" (processors)
// otherwise, with the number of sizes when they are not every value of the range; the spec itself
// when there is one.
std::string sizes_text(const VerifyReport& rep, std::size_t g) {
  std::vector<std::string> specs = covered_specs(rep, g);
  if (specs.empty()) return "-";
  if (specs.size() == 1) return specs.front();
  std::vector<long long> nums;
  for (const auto& sp : specs) {
    auto colon = sp.find(':');
    std::string v = colon == std::string::npos ? "" : sp.substr(colon + 1);
    if (v.empty() || v.size() > 9 || !std::all_of(v.begin(), v.end(), ::isdigit)) {
      nums.clear();
      break;
    }
    nums.push_back(std::stoll(v));
  }
  std::string prefix;
  if (nums.empty()) {  // meshes, tori, products: by processors
    prefix = "p=";
    for (const auto& r : rep.runs)
      if (r.group == g) nums.push_back(r.p);
  }
  std::sort(nums.begin(), nums.end());
  nums.erase(std::unique(nums.begin(), nums.end()), nums.end());
  std::string s = fmt::format("{}{}..{}", prefix, nums.front(), nums.back());
  if (specs.size() != static_cast<std::size_t>(nums.back() - nums.front() + 1))
    s += fmt::format(" ({} sizes)", specs.size());
  return s;
}

std::string seconds_text(double s) {
  return s < 10 ? fmt::format("{:.2f}s", s) : fmt::format("{:.0f}s", s);
}

// The first counterexample of one check, in full: message, buffers, loaded links.
void write_check_failure(std::string& o, const CheckResult& c, const std::string& indent) {
  if (c.verdict == Verdict::Unknown) {
    o += fmt::format("{}{}: inconclusive: {}\n", indent, c.name, c.note);
    return;
  }
  if (c.verdict != Verdict::Fail) return;
  if (c.violations.empty()) {
    o += fmt::format("{}{}: fails\n", indent, c.name);
    return;
  }
  const auto& v = c.violations.front();
  o += fmt::format("{}{}: {}", indent, c.name, v.message);
  if (c.violation_count > 1) o += fmt::format(" (and {} more)", c.violation_count - 1);
  o += "\n";
  for (const auto& b : v.buffers)
    o += fmt::format("{}  node {} {}: {}\n", indent, b.node, b.what, b.contents);
  for (std::size_t k = 0; k < v.loads.size() && k < 6; ++k)
    o += fmt::format("{}  link {} -> {}: {} transfers, {} items\n", indent, v.loads[k].from,
                     v.loads[k].to, v.loads[k].transfers, v.loads[k].items);
}

bool reported(const VerifyRun& r) {
  return r.status == "fail" || r.status == "inconclusive" || r.status == "error";
}

std::string runs_table(const VerifyReport& rep) {
  std::string o;
  std::size_t w0 = 5, w1 = 8;
  for (const auto& r : rep.runs) {
    w0 = std::max(w0, r.model.size());
    w1 = std::max(w1, r.topology.size());
  }
  o += fmt::format("{:<{}}  {:<{}}  {:>4}  {:<11}  {:>5}  {:<14}  {}\n", "MODEL", w0, "TOPOLOGY",
                   w1, "SRC", "DOMAIN", "STEPS", "COST", "RESULT");
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
    if (!r.loosened.empty()) result += " (loosened: --strict fails it)";
    o += fmt::format("{:<{}}  {:<{}}  {:>4}  {:<11}  {:>5}  {:<14}  {}\n", r.model, w0, r.topology,
                     w1, src, r.domain, r.steps, short_cost(r.cost_ts, r.cost_tw), result);
  }
  bool header = false;
  for (const auto& r : rep.runs) {
    if (r.status != "fail" && r.status != "inconclusive") continue;
    if (!header) {
      o += "\ncounterexamples (the first of each failing run)\n";
      header = true;
    }
    o += fmt::format("- {}\n", run_label(r));
    for (const auto& c : r.checks) write_check_failure(o, c, "    ");
  }
  return o;
}

std::string model_table(const VerifyReport& rep) {
  std::string o;
  std::vector<std::string> sizes;
  std::size_t w0 = 5, w1 = 6, w2 = 5;
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    sizes.push_back(sizes_text(rep, g));
    w0 = std::max(w0, rep.groups[g].model.size());
    w1 = std::max(w1, rep.groups[g].family.size());
    w2 = std::max(w2, sizes.back().size());
  }
  auto row = [&](const std::string& a, const std::string& b, const std::string& c,
                 const std::string& d, const std::string& e, const std::string& f,
                 const std::string& g, const std::string& h, const std::string& i,
                 const std::string& j, const std::string& k) {
    return fmt::format(
        "{:<{}}  {:<{}}  {:<{}}  {:>5}  {:>6}  {:>9}  {:>6}  {:>7}  {:>6}  {:>7}  {:>6}\n", a, w0,
        b, w1, c, w2, d, e, f, g, h, i, j, k);
  };
  o += row("MODEL", "FAMILY", "SIZES", "RUNS", "PASSED", "COMM-ONLY", "FAILED", "INCONCL", "ERRORS",
           "SKIPPED", "TIME");
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    const VerifyGroup& G = rep.groups[g];
    Tally t = rep.tally(g);
    auto n = [](std::size_t x) { return std::to_string(x); };
    o +=
        row(G.model, G.family, sizes[g], n(t.runs), n(t.passed), n(t.commutative_only), n(t.failed),
            n(t.inconclusive), n(t.errors), n(G.skipped_runs), seconds_text(G.seconds));
    if (!G.no_run.empty()) o += fmt::format("  ^ nothing checked: {}\n", G.no_run);
  }
  o += "COMM-ONLY: fails on operand order only, under the ordered domain, in a model that "
       "declares\na commutative operator (expected). SKIPPED: size, source and domain combinations "
       "where\nthe model's `requires` is false. SIZES: the sizes that ran.\n";
  return o;
}

// The failures of each model and family, one entry per check: how many runs fail it, and the
// first counterexample in full; then runs that ended in an error, the same way.
std::string failures_text(const VerifyReport& rep) {
  std::string o;
  constexpr std::size_t kListed = 8;
  for (std::size_t g = 0; g < rep.groups.size(); ++g) {
    std::vector<const VerifyRun*> bad;
    for (const auto& r : rep.runs)
      if (r.group == g && reported(r)) bad.push_back(&r);
    if (bad.empty()) continue;
    const VerifyGroup& G = rep.groups[g];
    Tally t = rep.tally(g);
    o += fmt::format("\n{} on {} ({}): {} of {} runs failed, {} inconclusive, {} errors\n", G.model,
                     G.family, G.file, t.failed, t.runs, t.inconclusive, t.errors);
    // Check names in the order the runs report them (any list of checks).
    std::vector<std::string> names;
    for (const VerifyRun* r : bad)
      for (const auto& c : r->checks)
        if ((c.verdict == Verdict::Fail || c.verdict == Verdict::Unknown) &&
            std::find(names.begin(), names.end(), c.name) == names.end())
          names.push_back(c.name);
    auto listing = [&](const std::vector<const VerifyRun*>& rs) {
      std::string s;
      for (std::size_t k = 1; k < rs.size() && k <= kListed; ++k)
        s += (s.empty() ? "" : ", ") + run_where(*rs[k]);
      if (rs.size() > kListed + 1)
        s += fmt::format(", +{} more (--runs lists every run)", rs.size() - kListed - 1);
      return s;
    };
    for (const auto& name : names) {
      std::vector<const VerifyRun*> rs;
      const CheckResult* first = nullptr;
      for (const VerifyRun* r : bad)
        for (const auto& c : r->checks)
          if (c.name == name && (c.verdict == Verdict::Fail || c.verdict == Verdict::Unknown)) {
            if (!first) first = &c;
            rs.push_back(r);
          }
      o += fmt::format("  {}: {} run{}; the first: {}\n", name, rs.size(),
                       rs.size() == 1 ? "" : "s", run_where(*rs.front()));
      write_check_failure(o, *first, "    ");
      if (rs.size() > 1) o += "    also: " + listing(rs) + "\n";
    }
    std::vector<const VerifyRun*> errs;
    for (const VerifyRun* r : bad)
      if (r->status == "error") errs.push_back(r);
    if (!errs.empty()) {
      o += fmt::format("  error: {} run{}; the first: {}\n    {}\n", errs.size(),
                       errs.size() == 1 ? "" : "s", run_where(*errs.front()), errs.front()->error);
      if (errs.size() > 1) o += "    also: " + listing(errs) + "\n";
    }
  }
  return o;
}

}  // namespace

std::string summary_line(const VerifyReport& rep) {
  Tally t = rep.tally();
  // A pass of a format without data (GOAL) judged no data: say so, not hide it in the pass
  // (at the end, so that "P passed, F failed" still reads as one phrase).
  std::size_t blind = 0;
  for (const auto& r : rep.runs) blind += r.data_not_checked && r.status == "pass";
  return fmt::format(
      "{} runs: {} passed, {} failed, {} inconclusive, {} commutative-only (expected under the "
      "ordered domain), {} errors; {} runs skipped by `requires`{}\n",
      t.runs, t.passed, t.failed, t.inconclusive, t.commutative_only, t.errors, rep.skipped_runs,
      blind ? fmt::format("; {} of the passes judged no data (the format carries none)", blind)
            : "");
}

// The runs whose verdict held only under the rules their file or model loosened.
std::string loosened_text(const VerifyReport& rep) {
  std::vector<const VerifyRun*> rs;
  for (const auto& r : rep.runs)
    if (!r.loosened.empty()) rs.push_back(&r);
  if (rs.empty()) return "";
  // Two lines whatever the count: the first run in full; --runs and --json name each one.
  return fmt::format(
      "\nloosened: {} run{} held only under rules the file or model loosened (--strict judges by "
      "the collective's own; --runs and --json name each)\n  the first: {}: {}\n",
      rs.size(), rs.size() == 1 ? "" : "s", run_label(*rs.front()), rs.front()->loosened);
}

std::string report_to_text(const VerifyReport& rep, bool runs, bool quiet) {
  if (quiet) return summary_line(rep);
  std::string o = runs ? runs_table(rep) : model_table(rep) + failures_text(rep);
  return o + loosened_text(rep) + "\n" + summary_line(rep);
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
  return rep.exit_code;
}

}  // namespace collv
