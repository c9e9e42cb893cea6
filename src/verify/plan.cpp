// The verification plan (see plan.hpp): which runs the options ask for, and the strategy that
// serves each (plan_symmetry.cpp, plan_files.cpp; one run's verdicts: plan_run.cpp).
#include "verify/plan.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "lang/ast.hpp"
#include "util/deadline.hpp"
#include "verify/partition.hpp"
#include "verify/plan_run.hpp"

namespace collv {

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

}  // namespace

VerifyReport verify_plan(const VerifyOptions& o, const ModelFiles& model_files,
                         const ExtraEngine& smt, std::ostream& err) {
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
  auto files = model_files();
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
                      bool named) { return report_group(rep, model, file, family, named); };

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
  verify_schedule_files(o, fixed_source, smt, rep, err);
  if (o.progress && !o.quiet) err << "\r\033[K" << std::flush;
  set_exit_code(rep);
  return rep;
}

}  // namespace collv
