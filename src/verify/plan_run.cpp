// What every strategy does with one run (see plan_run.hpp).
#include "verify/plan_run.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "check/checks.hpp"
#include "render/render.hpp"
#include "util/exit_codes.hpp"

namespace collv {

namespace fs = std::filesystem;

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

void impose_strict(Trace& t) {
  t.layout_any = false;
  t.op_class = OperatorClass::Associative;
}

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

void set_exit_code(VerifyReport& rep) {
  Tally all = rep.tally();
  rep.exit_code = all.failed > 0 ? kExitViolation
                  : all.errors > 0 || rep.runs.empty() || !rep.nothing_checked().empty()
                      ? kExitUsage
                  : all.inconclusive > 0 ? kExitInconclusive
                                         : kExitOk;
}

std::size_t report_group(VerifyReport& rep, const std::string& model, const std::string& file,
                         const std::string& family, bool named) {
  for (std::size_t g = 0; g < rep.groups.size(); ++g)
    if (rep.groups[g].file == file && rep.groups[g].family == family) return g;
  VerifyGroup g;
  g.model = model;
  g.file = file;
  g.family = family;
  g.named = named;
  rep.groups.push_back(std::move(g));
  return rep.groups.size() - 1;
}

}  // namespace collv
