// `collv verify --domain symmetry` (see plan_run.hpp).
#include <algorithm>
#include <bit>
#include <chrono>
#include <map>

#include <fmt/format.h>

#include "lang/ast.hpp"
#include "verify/plan_run.hpp"
#include "verify/symmetric.hpp"

namespace collv {

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
  set_exit_code(rep);
  return rep;
}

}  // namespace collv
