// `collv mpi`: reading and judging what the harness's ranks wrote (docs/mpi.md): the result
// regions MPI defines, the checks on every combination and result, the library's combinations.
#include <fmt/format.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "app/mpi_internal.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace collv {
namespace mpi_detail {

extern const std::vector<std::string> kCollectives;
const std::vector<std::string> kCollectives = {
    "allreduce", "reduce",         "bcast",
    "allgather", "gather",         "scatter",
    "alltoall",  "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan"};

bool rooted(const std::string& c) {
  return c == "reduce" || c == "bcast" || c == "gather" || c == "scatter";
}

std::string ranks_text(std::uint64_t m) {
  std::string s = "{";
  bool first = true;
  for (int r = 0; r < 64;) {
    if (!(m >> r & 1)) {
      ++r;
      continue;
    }
    int e = r;
    while (e + 1 < 64 && (m >> (e + 1) & 1)) ++e;
    s += (first ? "" : ",") + (e == r ? std::to_string(r) : fmt::format("{}..{}", r, e));
    first = false;
    r = e + 1;
  }
  return s + "}";
}

std::string elem_text(const Elem& e) {
  if (e.idx == -1 && e.mask == 0) return "nothing (never written)";
  if (e.idx == -2) return "ranks " + ranks_text(e.mask) + " of mixed positions";
  return fmt::format("ranks {} of position {}", ranks_text(e.mask), e.idx);
}

std::uint64_t all_below(int n) { return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1; }

int rs_count(int r, int count) { return r % 2 == 0 ? count : count / 2; }

// The result region the collective defines at rank r (MPI layout), or nullopt where it defines
// none (a non-root of a rooted collective, rank 0 of exscan).
std::optional<std::vector<Elem>> expected(const MpiCase& c, int r) {
  const int p = c.p, n = c.count;
  const std::uint64_t all = all_below(p), root = std::uint64_t{1} << c.root;
  std::vector<Elem> e;
  const std::string& k = c.collective;
  if (k == "allreduce" || k == "ring_allreduce" || (k == "reduce" && r == c.root)) {
    for (int i = 0; i < n; ++i) e.push_back({i, all});
  } else if (k == "reduce" || ((k == "gather") && r != c.root)) {
    return std::nullopt;
  } else if (k == "bcast") {
    for (int i = 0; i < n; ++i) e.push_back({i, root});
  } else if (k == "allgather" || k == "gather") {
    for (int j = 0; j < p; ++j)
      for (int i = 0; i < n; ++i) e.push_back({i, std::uint64_t{1} << j});
  } else if (k == "scatter") {
    for (int i = 0; i < n; ++i) e.push_back({static_cast<std::int64_t>(r) * n + i, root});
  } else if (k == "alltoall") {
    for (int j = 0; j < p; ++j)
      for (int i = 0; i < n; ++i)
        e.push_back({static_cast<std::int64_t>(r) * n + i, std::uint64_t{1} << j});
  } else if (k == "reduce_scatter_block") {
    for (int i = 0; i < n; ++i) e.push_back({static_cast<std::int64_t>(r) * n + i, all});
  } else if (k == "reduce_scatter") {
    std::int64_t off = 0;
    for (int j = 0; j < r; ++j) off += rs_count(j, n);
    for (int i = 0; i < rs_count(r, n); ++i) e.push_back({off + i, all});
  } else if (k == "scan") {
    for (int i = 0; i < n; ++i) e.push_back({i, all_below(r + 1)});
  } else if (k == "exscan") {
    if (r == 0) return std::nullopt;
    for (int i = 0; i < n; ++i) e.push_back({i, all_below(r)});
  } else {
    throw UsageError("unknown collective '" + k + "'");
  }
  return e;
}

bool interval(std::uint64_t m) {
  if (m == 0) return false;
  std::uint64_t shifted = m >> std::countr_zero(m);
  return (shifted & (shifted + 1)) == 0;
}

}  // namespace mpi_detail

using namespace mpi_detail;

namespace {

// A check and its first violations.
struct Judge {
  CheckResult res;
  explicit Judge(const std::string& name) {
    res.name = name;
    res.verdict = Verdict::Pass;
  }
  void fail(int rank, const std::string& msg) {
    res.verdict = Verdict::Fail;
    if (res.violations.size() < 5) {
      Counterexample cx;
      cx.invariant = res.name;
      cx.nodes.push_back(static_cast<NodeId>(rank));
      cx.message = msg;
      res.violations.push_back(std::move(cx));
    }
    ++res.violation_count;
  }
};

std::vector<Elem> read_elems(const nlohmann::json& j, const std::string& where) {
  if (!j.is_array()) throw UsageError(where + ": expected an array of [idx, mask]");
  std::vector<Elem> v;
  v.reserve(j.size());
  for (const auto& x : j) {
    if (!x.is_array() || x.size() != 2 || !x[0].is_number_integer() ||
        (!x[1].is_number_unsigned() && !x[1].is_number_integer()))
      throw UsageError(where + ": expected [idx, mask]");
    v.push_back({x[0].get<std::int64_t>(), x[1].get<std::uint64_t>()});
  }
  return v;
}

}  // namespace

std::vector<CheckResult> judge_mpi_run(const MpiCase& c, const std::string& dir) {
  Judge nodup("nodup"), operands("operands"), order("order"), post("postcondition"),
      runtime("runtime");
  const std::uint64_t in_p = all_below(c.p);
  for (int r = 0; r < c.p; ++r) {
    fs::path file = fs::path(dir) / fmt::format("rank{}.jsonl", r);
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec) {
      runtime.fail(r, fmt::format("rank {} wrote no observations ({})", r, file.string()));
      continue;
    }
    if (size > kMaxRankFile)
      throw LimitError(fmt::format("{}: {} bytes, more than collv reads ({})", file.string(), size,
                                   kMaxRankFile));
    std::ifstream f(file);
    std::string line;
    std::size_t lineno = 0, call = 0;
    bool done = false, have_out = false;
    std::string lib_error;
    auto exp = expected(c, r);
    while (std::getline(f, line)) {
      ++lineno;
      std::string where = fmt::format("{}:{}", file.string(), lineno);
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("k") || !j["k"].is_string()) {
        // A rank killed mid-line leaves a partial last line: that is the run's failure.
        runtime.fail(r, where + ": not a line of the harness's output (a rank cut short?)");
        break;
      }
      std::string k = j["k"];
      if (k == "op") {
        ++call;
        auto a = read_elems(j.value("a", nlohmann::json()), where + ": a");
        auto b = read_elems(j.value("b", nlohmann::json()), where + ": b");
        if (a.size() != b.size()) throw UsageError(where + ": operands of different lengths");
        for (std::size_t i = 0; i < a.size(); ++i) {
          std::string at = fmt::format("rank {}, combination {}, element {}", r, call, i);
          const Elem &x = a[i], &y = b[i];
          if (x.mask == 0 || y.mask == 0) {
            operands.fail(r, fmt::format("{}: an operand holds no contribution (data never "
                                         "written): {} (op) {}",
                                         at, elem_text(x), elem_text(y)));
            continue;
          }
          if ((x.mask | y.mask) & ~in_p)
            operands.fail(r, fmt::format("{}: a contribution of no rank below p = {}", at, c.p));
          if (x.idx != y.idx || x.idx < 0)
            operands.fail(r, fmt::format("{}: combines {} with {}: different positions", at,
                                         elem_text(x), elem_text(y)));
          if (x.mask & y.mask)
            nodup.fail(r, fmt::format("{}: {} (op) {}: ranks {} counted twice", at, elem_text(x),
                                      elem_text(y), ranks_text(x.mask & y.mask)));
          else if (!c.commutative && (!interval(x.mask) || !interval(y.mask) ||
                                      64 - std::countl_zero(x.mask) != std::countr_zero(y.mask)))
            order.fail(r, fmt::format("{}: {} (op) {}: under a non-commutative operation the "
                                      "left operand must be ranks i..j and the right j+1..k",
                                      at, elem_text(x), elem_text(y)));
        }
      } else if (k == "outv") {
        // OP b: values, digit r = (position + 1) times rank r's multiplicity.
        have_out = true;
        if (!c.builtin) throw UsageError(where + ": values (outv) from a run of a user operation");
        const auto& buf = j.value("buf", nlohmann::json());
        if (!buf.is_array()) throw UsageError(where + ": buf: expected an array of numbers");
        if (!exp) continue;
        if (buf.size() != exp->size()) {
          post.fail(r, fmt::format("rank {}: {} result elements, MPI defines {}", r, buf.size(),
                                   exp->size()));
          continue;
        }
        for (std::size_t i = 0; i < buf.size(); ++i) {
          if (!buf[i].is_number_unsigned() && !buf[i].is_number_integer())
            throw UsageError(where + ": buf: expected an array of numbers");
          const std::uint64_t got = buf[i].get<std::uint64_t>();
          const Elem& e = (*exp)[i];
          const std::uint64_t unit = static_cast<std::uint64_t>(e.idx + 1);
          std::uint64_t want = 0;
          for (int q = 0; q < c.p; ++q)
            if (e.mask >> q & 1) want += unit << (5 * q);
          if (got == want) continue;
          std::string diff;
          for (int q = 0; q < c.p; ++q) {
            const std::uint64_t d = got >> (5 * q) & 31, w = (e.mask >> q & 1) ? unit : 0;
            if (d == w) continue;
            if (d == 0)
              diff += fmt::format(", rank {} missing", q);
            else if (w == 0)
              diff += fmt::format(", rank {} extra (digit {})", q, d);
            else if (d % w == 0)
              diff += fmt::format(", rank {} counted {} times", q, d / w);
            else
              diff += fmt::format(", rank {}'s digit is {}, not {} (another position's input?)", q,
                                  d, w);
          }
          post.fail(
              r, fmt::format("rank {} position {}: holds {}, MPI_SUM of the inputs is {}{}", r, i,
                             got, want, diff.empty() ? "" : " (" + diff.substr(2) + ")"));
        }
      } else if (k == "out") {
        have_out = true;
        auto got = read_elems(j.value("buf", nlohmann::json()), where + ": buf");
        if (!exp) continue;
        if (got.size() != exp->size()) {
          post.fail(r, fmt::format("rank {}: {} result elements, MPI defines {}", r, got.size(),
                                   exp->size()));
          continue;
        }
        for (std::size_t i = 0; i < got.size(); ++i) {
          if (got[i] == (*exp)[i]) continue;
          std::string diff;
          if (got[i].mask != (*exp)[i].mask) {
            std::uint64_t miss = (*exp)[i].mask & ~got[i].mask,
                          extra = got[i].mask & ~(*exp)[i].mask;
            if (miss) diff += " missing " + ranks_text(miss);
            if (extra) diff += " extra " + ranks_text(extra);
          }
          post.fail(r, fmt::format("rank {} position {}: holds {}, expected {}{}", r, i,
                                   elem_text(got[i]), elem_text((*exp)[i]),
                                   diff.empty() ? "" : " (" + diff.substr(1) + ")"));
        }
      } else if (k == "error") {
        lib_error = j.value("message", std::string("?"));
      } else if (k == "done") {
        if (j.value("rank", -1) != r || j.value("size", -1) != c.p)
          runtime.fail(r, fmt::format("{}: rank {} of {} wrote rank {} of {}", where, r, c.p,
                                      j.value("rank", -1), j.value("size", -1)));
        done = true;
      } else {
        throw UsageError(where + ": unknown line kind '" + k + "'");
      }
    }
    if (!lib_error.empty())
      runtime.fail(r, fmt::format("rank {}: the library returned an error: {}", r, lib_error));
    else if (!done)
      runtime.fail(r, fmt::format("rank {} did not finish (no \"done\" line)", r));
    else if (exp && !have_out)
      post.fail(r, fmt::format("rank {}: no result written", r));
  }
  if (c.commutative) {
    order.res.verdict = Verdict::NotChecked;
    order.res.note = "a commutative operation may combine in any order";
  }
  if (c.builtin) {
    for (Judge* jg : {&nodup, &operands, &order}) {
      jg->res.verdict = Verdict::NotChecked;
      jg->res.note =
          "a built-in operation (MPI_SUM): the library calls no user function, so no "
          "combination is visible; the result's values say how often each input was added";
    }
  }
  return {runtime.res, nodup.res, operands.res, order.res, post.res};
}

MpiCombinations library_combinations(const std::string& dir, int p) {
  MpiCombinations out(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    fs::path file = fs::path(dir) / fmt::format("rank{}.jsonl", r);
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec) continue;
    if (size > kMaxRankFile) throw LimitError(file.string() + ": too large");
    std::ifstream f(file);
    std::string line;
    while (std::getline(f, line)) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || j.value("k", std::string()) != "op") continue;
      auto a = read_elems(j.value("a", nlohmann::json()), file.string());
      auto b = read_elems(j.value("b", nlohmann::json()), file.string());
      for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
        out[static_cast<std::size_t>(r)].push_back(
            {a[i].idx == b[i].idx ? a[i].idx : -2, a[i].mask, b[i].mask});
    }
  }
  return out;
}

}  // namespace collv
