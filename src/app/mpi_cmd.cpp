// `collv mpi`: builds the harness with an MPI library's compiler, runs it under the library's
// launcher with an algorithm selected, and judges what every rank observed (docs/mpi.md).
#include "app/mpi_cmd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include "app/commands.hpp"
#include "app/verify_cmd.hpp"
#include "exec/executor.hpp"
#include "lang/ast.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"
#include "util/exit_codes.hpp"

namespace fs = std::filesystem;

namespace collv {

namespace {

const std::vector<std::string> kCollectives = {
    "allreduce", "reduce",         "bcast",
    "allgather", "gather",         "scatter",
    "alltoall",  "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan"};

bool rooted(const std::string& c) {
  return c == "reduce" || c == "bcast" || c == "gather" || c == "scatter";
}

// The largest file a rank may write (a run at p = 64, count 65536 stays far below).
constexpr std::uintmax_t kMaxRankFile = std::uintmax_t{512} << 20;

struct Elem {
  std::int64_t idx = -1;
  std::uint64_t mask = 0;
  bool operator==(const Elem&) const = default;
};

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

bool interval(std::uint64_t m) {
  if (m == 0) return false;
  std::uint64_t shifted = m >> std::countr_zero(m);
  return (shifted & (shifted + 1)) == 0;
}

}  // namespace

std::vector<std::string> mpi_algorithms(const std::string& impl, const std::string& coll) {
  static const std::map<std::string, std::vector<std::string>> ompi = {
      {"allreduce",
       {"ignore", "basic_linear", "nonoverlapping", "recursive_doubling", "ring", "segmented_ring",
        "rabenseifner"}},
      {"alltoall", {"ignore", "linear", "pairwise", "modified_bruck", "linear_sync", "two_proc"}},
      {"allgather",
       {"ignore", "linear", "bruck", "recursive_doubling", "ring", "neighbor", "two_proc"}},
      {"bcast",
       {"ignore", "basic_linear", "chain", "pipeline", "split_binary_tree", "binary_tree",
        "binomial", "knomial", "scatter_allgather", "scatter_allgather_ring"}},
      {"reduce",
       {"ignore", "linear", "chain", "pipeline", "binary", "binomial", "in-order_binary",
        "rabenseifner"}},
      {"reduce_scatter", {"ignore", "non-overlapping", "recursive_halving", "ring", "butterfly"}},
      {"reduce_scatter_block",
       {"ignore", "basic_linear", "recursive_doubling", "recursive_halving", "butterfly"}},
      {"gather", {"ignore", "basic_linear", "binomial", "linear_sync"}},
      {"scatter", {"ignore", "basic_linear", "binomial", "linear_nb"}},
      {"exscan", {"ignore", "linear", "recursive_doubling"}},
      {"scan", {"ignore", "linear", "recursive_doubling"}},
  };
  static const std::map<std::string, std::vector<std::string>> mpich = {
      {"bcast",
       {"auto", "binomial", "nb", "smp", "scatter_recursive_doubling_allgather",
        "scatter_ring_allgather"}},
      {"gather", {"auto", "binomial", "nb"}},
      {"scatter", {"auto", "binomial", "nb"}},
      {"allgather", {"auto", "brucks", "nb", "recursive_doubling", "ring"}},
      {"alltoall", {"auto", "brucks", "nb", "pairwise", "pairwise_sendrecv_replace", "scattered"}},
      {"reduce", {"auto", "binomial", "nb", "smp", "reduce_scatter_gather"}},
      {"allreduce", {"auto", "nb", "smp", "recursive_doubling", "reduce_scatter_allgather"}},
      {"reduce_scatter",
       {"auto", "nb", "noncommutative", "pairwise", "recursive_doubling", "recursive_halving"}},
      {"reduce_scatter_block",
       {"auto", "noncommutative", "recursive_doubling", "pairwise", "recursive_halving", "nb"}},
      {"scan", {"auto", "nb", "smp", "recursive_doubling"}},
      {"exscan", {"auto", "nb", "recursive_doubling"}},
  };
  const auto& table = impl == "openmpi" ? ompi : mpich;
  auto it = table.find(coll);
  return it == table.end() ? std::vector<std::string>{} : it->second;
}

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

MpiCombinations model_combinations(const std::string& model_file, int p, int count, int root) {
  return model_run(model_file, p, count, root).combinations;
}

ModelRunResult model_run(const std::string& model_file, int p, int count, int root,
                         std::uint64_t max_ops) {
  Model m = parse_model_file(model_file);
  const auto& fams = m.header.topologies;
  std::string fam = std::find(fams.begin(), fams.end(), "complete") != fams.end() ? "complete"
                    : fams.empty()                                                ? "complete"
                                                                                  : fams.front();
  Topology t = Topology::parse(fmt::format("{}:{}", fam, p));
  RunOptions ro;
  ro.domain = DomainKind::Ordered;
  ro.count = static_cast<std::uint32_t>(count);
  ro.root = static_cast<std::uint32_t>(root);
  ro.max_ops_per_node = max_ops;
  std::vector<std::tuple<NodeId, Item, Item>> seen;
  ro.on_combine = [&](NodeId n, Item a, Item b) {
    if (seen.size() < 10'000'000) seen.emplace_back(n, a, b);
  };
  Trace tr = run_model(m, t, ro);
  if (tr.failure.kind == RunFailure::Kind::OpLimit ||
      tr.failure.kind == RunFailure::Kind::StepLimit)
    throw LimitError("the model's run stopped at a limit: " + tr.failure.message);
  if (tr.failure.kind != RunFailure::Kind::None)
    throw UsageError("the model's run failed: " + tr.failure.message);
  const Domain& d = *tr.domain;
  const std::uint32_t elems = std::max<std::uint32_t>(d.elems(), 1);
  auto decode = [&](Item it, std::int64_t& pos) {
    std::uint64_t mask = 0;
    for (std::uint32_t id : d.terms(it)) {
      std::int64_t e = id % elems;
      pos = pos == -1 ? e : pos == e ? pos : -2;
      if (id / elems < 64) mask |= std::uint64_t{1} << (id / elems);
    }
    return mask;
  };
  ModelRunResult res;
  MpiCombinations& out = res.combinations;
  out.resize(static_cast<std::size_t>(p));
  for (const auto& [n, a, b] : seen) {
    std::int64_t pos = -1;
    std::uint64_t ma = decode(a, pos), mb = decode(b, pos);
    if (ma == 0 || mb == 0) continue;  // a combination with the identity: no operation in MPI
    if (n < out.size()) out[n].push_back({pos, ma, mb});
  }
  // Its transfers, empty ones included (a send of an empty range is a message); a send to
  // oneself is no transfer in collv's executor.
  res.messages = PeerMessages(p);
  for (const Transfer& x : tr.transfers) {
    if (x.src >= static_cast<NodeId>(p) || x.dst >= static_cast<NodeId>(p) || x.src == x.dst)
      continue;
    ++res.messages.msgs[x.src][x.dst];
    res.messages.bytes[x.src][x.dst] += kHarnessElemBytes * x.payload_len;
  }
  return res;
}

std::optional<PeerMessages> read_monitoring(const std::string& dir, int p, std::string& why_not) {
  PeerMessages m(p);
  for (int r = 0; r < p; ++r) {
    fs::path file = fs::path(dir) / fmt::format("monitoring.{}.prof", r);
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec) {
      why_not = fmt::format(
          "Open MPI's pml monitoring wrote no {} (the monitoring component is not installed, or "
          "the rank did not reach MPI_Finalize)",
          file.string());
      return std::nullopt;
    }
    if (size > kMaxRankFile) {
      why_not = file.string() + ": too large";
      return std::nullopt;
    }
    std::ifstream f(file);
    std::string line;
    std::size_t lineno = 0;
    bool p2p = false, header = false;
    while (std::getline(f, line)) {
      ++lineno;
      if (!line.empty() && line[0] == '#') {
        p2p = line == "# POINT TO POINT";
        header = header || p2p;
        continue;
      }
      if (!p2p) continue;
      // E|I <rank> <peer> <bytes> bytes <n> msgs sent [histogram]
      std::istringstream ls(line);
      std::string kind, w_bytes, w_msgs, w_sent;
      long long rank = -1, peer = -1;
      unsigned long long bytes = 0, n = 0;
      ls >> kind >> rank >> peer >> bytes >> w_bytes >> n >> w_msgs >> w_sent;
      if (!ls || (kind != "E" && kind != "I") || w_bytes != "bytes" || w_msgs != "msgs" ||
          w_sent != "sent" || rank != r || peer < 0 || peer >= p) {
        why_not = fmt::format(
            "{}:{}: not a line of Open MPI's monitoring output (E|I rank peer "
            "N bytes M msgs sent) for rank {} of {}",
            file.string(), lineno, r, p);
        return std::nullopt;
      }
      if (peer == r) {
        m.self[r] += n;
        continue;
      }
      m.msgs[r][peer] += n;
      m.bytes[r][peer] += bytes;
    }
    if (!header) {
      why_not =
          file.string() + ": no \"# POINT TO POINT\" section (not Open MPI's monitoring output)";
      return std::nullopt;
    }
  }
  return m;
}

CheckResult compare_messages(const PeerMessages& lib, const PeerMessages& model) {
  CheckResult res;
  res.name = "messages";
  res.verdict = Verdict::Pass;
  const std::size_t p = std::min(lib.msgs.size(), model.msgs.size());
  for (std::size_t r = 0; r < p; ++r) {
    for (std::size_t q = 0; q < p; ++q) {
      const auto ln = lib.msgs[r][q], mn = model.msgs[r][q];
      const auto lb = lib.bytes[r][q], mb = model.bytes[r][q];
      if (ln == mn && lb == mb) continue;
      std::string msg = ln != mn
                            ? fmt::format(
                                  "rank {} sends {} message{} to rank {} ({} bytes), the model {} "
                                  "({} bytes)",
                                  r, ln, ln == 1 ? "" : "s", q, lb, mn, mb)
                            : fmt::format(
                                  "rank {} sends {} bytes to rank {} in {} message{}, the model's "
                                  "transfers carry {} bytes ({} items of {} bytes)",
                                  r, lb, q, ln, ln == 1 ? "" : "s", mb, mb / kHarnessElemBytes,
                                  kHarnessElemBytes);
      res.verdict = Verdict::Fail;
      if (res.violations.empty()) {
        Counterexample cx;
        cx.invariant = "messages";
        cx.nodes.push_back(static_cast<NodeId>(r));
        cx.nodes.push_back(static_cast<NodeId>(q));
        cx.message = msg;
        res.violations.push_back(cx);
      }
      ++res.violation_count;
    }
  }
  std::uint64_t self = 0;
  for (auto n : lib.self) self += n;
  if (self > 0)
    res.note = fmt::format(
        "{} message{} a rank sent to itself left out (a model's send to itself "
        "is no transfer)",
        self, self == 1 ? "" : "s");
  return res;
}

CheckResult compare_combinations(const MpiCombinations& lib, const MpiCombinations& model) {
  CheckResult res;
  res.name = "conformance";
  res.verdict = Verdict::Pass;
  auto text = [](const MpiCombination& c) {
    return fmt::format("ranks {} (op) ranks {} at position {}", ranks_text(c.left),
                       ranks_text(c.right), c.pos);
  };
  std::size_t made = 0;
  for (const auto& v : lib) made += v.size();
  for (const auto& v : model) made += v.size();
  if (made == 0) {
    res.verdict = Verdict::NotChecked;
    res.note =
        "neither the library nor the model combines anything (no reduction): conformance "
        "compares combinations, so it says nothing about this run";
    return res;
  }
  for (std::size_t r = 0; r < lib.size() && r < model.size(); ++r) {
    // Position by position: a library combines whole vectors in one call, a model item by item.
    std::map<std::int64_t, std::vector<MpiCombination>> L, M;
    for (const auto& c : lib[r]) L[c.pos].push_back(c);
    for (const auto& c : model[r]) M[c.pos].push_back(c);
    std::set<std::int64_t> positions;
    for (const auto& [k, v] : L) positions.insert(k);
    for (const auto& [k, v] : M) positions.insert(k);
    for (std::int64_t pos : positions) {
      const auto &l = L[pos], &m = M[pos];
      std::size_t k = 0;
      while (k < l.size() && k < m.size() && l[k] == m[k]) ++k;
      if (k == l.size() && k == m.size()) continue;
      std::string msg =
          fmt::format("rank {}, position {}, combination {}: the library {}, the model {}", r, pos,
                      k + 1, k < l.size() ? "makes " + text(l[k]) : "makes no more",
                      k < m.size() ? "makes " + text(m[k]) : "makes no more");
      res.verdict = Verdict::Fail;
      if (res.violations.empty()) {
        Counterexample cx;
        cx.invariant = "conformance";
        cx.nodes.push_back(static_cast<NodeId>(r));
        cx.message = msg;
        res.violations.push_back(cx);
      }
      ++res.violation_count;
      break;  // the first position of each rank
    }
  }
  return res;
}

namespace {

std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return access(name.c_str(), X_OK) == 0 ? name : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  std::string d;
  while (std::getline(ss, d, ':')) {
    if (d.empty()) continue;
    fs::path cand = fs::path(d) / name;
    if (access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return "";
}

std::uint64_t fnv1a(const std::string& s, std::uint64_t h = 1469598103934665603ull) {
  for (unsigned char ch : s) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return h;
}

std::string slurp(const fs::path& p, std::size_t max = std::size_t{1} << 24) {
  std::ifstream f(p, std::ios::binary);
  std::string s(max, '\0');
  f.read(s.data(), static_cast<std::streamsize>(max));
  s.resize(static_cast<std::size_t>(f.gcount()));
  return s;
}

std::string tail(const std::string& s, std::size_t n = 1500) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

struct ProcResult {
  int status = -1;  // exit code; -1 = timed out; 128+N = killed by signal N
  std::string out, err;
};

// Runs argv with extra environment variables, its output into files of dir, killing its whole
// process group after timeout_s seconds.
ProcResult run_process(const std::vector<std::string>& argv,
                       const std::vector<std::pair<std::string, std::string>>& env,
                       const fs::path& dir, int timeout_s) {
  fs::path out = dir / "stdout.txt", err = dir / "stderr.txt";
  pid_t pid = fork();
  if (pid < 0) throw UsageError("cannot start a process (fork failed)");
  if (pid == 0) {
    setpgid(0, 0);
    int fo = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0) _exit(127);
    dup2(fi, 0);
    dup2(fo, 1);
    dup2(fe, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  ProcResult res;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int st = 0;
  for (;;) {
    pid_t w = waitpid(pid, &st, WNOHANG);
    if (w == pid) {
      res.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      waitpid(pid, &st, 0);
      res.status = -1;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(-pid, SIGKILL);  // whatever the launcher left behind in its group
  res.out = slurp(out);
  res.err = slurp(err);
  return res;
}

std::string cache_root(const MpiOptions& o) {
  if (!o.cache_dir.empty()) return o.cache_dir;
  if (const char* e = std::getenv("COLLV_MPI_CACHE"); e && *e) return e;
  return (fs::temp_directory_path() / fmt::format("collv-mpi-{}", getuid())).string();
}

// Builds the harness with mpicc, once per (library, compiler, harness source): the binary is
// cached under a name made from their hash.
std::string build_harness(const MpiOptions& o, const std::string& mpicc, const std::string& src,
                          std::ostream& err) {
  std::string text = slurp(src);
  if (text.empty()) throw UsageError("cannot read the harness '" + src + "'");
  fs::path dir = cache_root(o);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string key =
      fmt::format("{:016x}", fnv1a(text, fnv1a(o.impl + "\n" + fs::absolute(mpicc).string())));
  fs::path bin = dir / ("harness-" + o.impl + "-" + key);
  if (access(bin.c_str(), X_OK) == 0) return bin.string();
  fs::path work = dir / fmt::format("build-{}-{}", key, getpid());
  fs::create_directories(work, ec);
  if (ec) throw UsageError("cannot create '" + work.string() + "': " + ec.message());
  fs::path tmp = work / "harness";
  ProcResult pr = run_process({mpicc, "-O1", "-o", tmp.string(), src}, {}, work, 300);
  if (pr.status != 0 || access(tmp.c_str(), X_OK) != 0) {
    fs::remove_all(work, ec);
    throw UsageError(fmt::format("{} could not build the harness {} (exit {}):\n{}", mpicc, src,
                                 pr.status, tail(pr.err + pr.out)));
  }
  fs::rename(tmp, bin, ec);
  fs::remove_all(work, ec);
  if (ec) throw UsageError("cannot write '" + bin.string() + "': " + ec.message());
  if (!o.quiet) err << "collv: built the harness with " << mpicc << ": " << bin.string() << "\n";
  return bin.string();
}

std::string upper(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// The library's algorithm name for --algorithm (a name or a number).
std::string algorithm_name(const MpiOptions& o) {
  if (o.algorithm == "harness-ring") return o.algorithm;
  auto algs = mpi_algorithms(o.impl, o.collective);
  std::string a = o.algorithm;
  if (a == "auto" || a == "ignore" || a == "default") return algs.front();
  if (!a.empty() && std::all_of(a.begin(), a.end(), ::isdigit) && a.size() < 4) {
    std::size_t n = std::stoul(a);
    if (n < algs.size()) return algs[n];
  }
  if (std::find(algs.begin(), algs.end(), a) != algs.end()) return a;
  std::string list;
  for (std::size_t i = 0; i < algs.size(); ++i)
    list += fmt::format("{}{} {}", i ? ", " : "", i, algs[i]);
  throw UsageError(fmt::format("--algorithm '{}' is not one of {}'s {} algorithms: {}", a, o.impl,
                               o.collective, list));
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-+=./:,") == std::string::npos)
    return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace

namespace {

// Model files under the paths (directories recursively), sorted.
std::vector<std::string> model_files(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> here;
      for (const auto& e : fs::recursive_directory_iterator(p, ec))
        if (e.is_regular_file() && e.path().extension() == ".coll")
          here.push_back(e.path().string());
      std::sort(here.begin(), here.end());
      files.insert(files.end(), here.begin(), here.end());
    } else if (fs::is_regular_file(p, ec)) {
      files.push_back(p);
    } else {
      throw UsageError("--conformance: '" + p + "' is no model file or directory");
    }
  }
  return files;
}

int run_conformance(const MpiOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.impl.empty() || !o.collective.empty() || o.algorithm != "auto" || !o.model.empty())
    throw UsageError(
        "--conformance takes the library, collective and algorithm from each model's `library` "
        "line: no --impl, --collective, --algorithm or --model with it");
  if (o.inject != "none") throw UsageError("--inject does not apply to --conformance");
  auto files = model_files(o.conformance);
  std::vector<ConformanceRun> runs;
  std::vector<std::string> skipped;
  for (const auto& f : files)
    for (auto& r : conformance_runs(f, o)) {
      if (r.why_not.empty())
        runs.push_back(std::move(r));
      else
        skipped.push_back(fmt::format("{}: {}", f, r.why_not));
    }
  if (runs.size() > 1 && (!o.json_file.empty() || !o.junit_file.empty()))
    throw UsageError("--json and --junit take one model; --conformance found " +
                     std::to_string(runs.size()));
  // The worst outcome decides: a violation, then an error, then an inconclusive run.
  auto rank = [](int rc) {
    return rc == kExitViolation ? 3 : rc == kExitUsage ? 2 : rc == kExitInconclusive ? 1 : 0;
  };
  int worst = kExitOk;
  std::vector<std::string> lines;
  for (const auto& r : runs) {
    out << fmt::format("== {}: {} {} {} ({})\n", r.options.model, r.options.impl,
                       r.options.collective, r.options.algorithm, r.selector);
    int rc = kExitUsage;
    // The library refused the algorithm for every run (MPICH says so and runs its own choice):
    // nothing of the model was judged, which is said, not counted as an error.
    bool fell_back = false;
    std::size_t compared = 0;
    MpiOptions one = r.options;
    one.all_fell_back = &fell_back;
    one.compared_runs = &compared;
    try {
      rc = run_mpi_command(one, out, err);
    } catch (const UsageError& e) {
      err << "collv: error: " << r.options.model << ": " << e.what() << "\n";
    }
    fell_back = fell_back && rc == kExitUsage;
    // A pass where nothing was compared with the model (a broadcast under MPICH: no combination,
    // no message counts) says the library's results are right, not that it follows the model.
    const bool uncompared = rc == kExitOk && compared == 0;
    lines.push_back(fmt::format(
        "  {}  {}",
        uncompared                ? "no compare  "
        : rc == kExitOk           ? "pass        "
        : rc == kExitViolation    ? "FAIL        "
        : rc == kExitInconclusive ? "inconclusive"
        : fell_back               ? "not judged  "
                                  : "error       ",
        r.options.model +
            (fell_back    ? " (the library fell back to its own choice in every run: see its note)"
             : uncompared ? " (the runs pass; nothing of them could be compared with the model: "
                            "no combination, and no per-peer message counts under MPICH)"
                          : "")));
    if (!fell_back && rank(rc) > rank(worst)) worst = rc;
  }
  out << fmt::format("\nconformance: {} models with an Open MPI or MPICH selector\n", runs.size());
  for (const auto& l : lines) out << l << "\n";
  if (!skipped.empty() && !o.quiet) {
    out << fmt::format("not run ({}):\n", skipped.size());
    for (const auto& s : skipped) out << "  " << s << "\n";
  }
  if (runs.empty()) {
    err << "collv: error: no model under --conformance names an Open MPI or MPICH selector "
           "(exit 2)\n";
    return kExitUsage;
  }
  return worst;
}

}  // namespace

std::vector<ConformanceRun> conformance_runs(const std::string& model_file,
                                             const MpiOptions& base) {
  Model m = parse_model_file(model_file);
  std::vector<ConformanceRun> out;
  if (m.header.libraries.empty()) {
    ConformanceRun r;
    r.why_not = "no `library` line";
    out.push_back(r);
    return out;
  }
  for (const auto& lib : m.header.libraries) {
    ConformanceRun r;
    r.options = base;
    r.options.conformance.clear();
    r.options.model = model_file;
    for (const auto& [k, v] : lib.selectors)
      r.selector += (r.selector.empty() ? "" : " ") + k + " = " + v;
    r.selector = lib.library + " " + lib.version_lo +
                 (lib.version_hi != lib.version_lo ? " .. " + lib.version_hi : "") + " " +
                 r.selector;
    if (lib.library != "openmpi" && lib.library != "mpich") {
      r.why_not = lib.library + " is not an MPI library collv mpi runs";
      out.push_back(r);
      continue;
    }
    r.options.impl = lib.library;
    // The harness's name of the collective: MPI's, with reduce_scatter_block where the selector
    // names it (MPICH's models of MPI_Reduce_scatter_block).
    std::string coll;
    switch (m.header.collective) {
      case Collective::Allreduce:
        coll = "allreduce";
        break;
      case Collective::Reduce:
        coll = "reduce";
        break;
      case Collective::Broadcast:
        coll = "bcast";
        break;
      case Collective::Allgather:
        coll = "allgather";
        break;
      case Collective::Gather:
        coll = "gather";
        break;
      case Collective::Scatter:
        coll = "scatter";
        break;
      case Collective::Alltoall:
        coll = "alltoall";
        break;
      case Collective::ReduceScatter:
        coll = "reduce_scatter";
        break;
      case Collective::Scan:
        coll = "scan";
        break;
      case Collective::Exscan:
        coll = "exscan";
        break;
      default:
        break;
    }
    if (coll.empty()) {
      r.why_not = fmt::format("the harness runs no {} (it has no data to tag)",
                              collective_name(m.header.collective));
      out.push_back(r);
      continue;
    }
    std::string algo;
    for (const auto& [k, v] : lib.selectors) {
      if (lib.library == "mpich") {
        std::string want = "MPIR_CVAR_" + upper(coll) + "_INTRA_ALGORITHM";
        if (coll == "reduce_scatter" && k == "MPIR_CVAR_REDUCE_SCATTER_BLOCK_INTRA_ALGORITHM") {
          coll = "reduce_scatter_block";
          want = k;
        }
        if (k == want)
          algo = v;
        else
          r.why_not = fmt::format("{} does not select MPICH's {} ({})", k, coll, want);
      } else {
        std::string want = "coll_tuned_" + coll + "_algorithm";
        if (k == want)
          algo = v;
        else if (k.rfind("coll_tuned_" + coll + "_", 0) == 0)
          r.options.extra_env.emplace_back("OMPI_MCA_" + k, v);
        else
          r.why_not = fmt::format("{} does not select Open MPI's {} ({})", k, coll, want);
      }
    }
    if (r.why_not.empty() && algo.empty()) r.why_not = "the line names no algorithm selector";
    r.options.collective = coll;
    r.options.algorithm = algo;
    // The operator the model is written for: a model of the non-commutative path (`operator
    // associative`) runs with a non-commutative user operation, whose order is judged too.
    r.options.op =
        m.header.op_class == OperatorClass::Commutative ? "commutative" : "noncommutative";
    if (r.why_not.empty()) {
      try {
        algorithm_name(r.options);  // the library knows the algorithm
      } catch (const UsageError& e) {
        r.why_not = e.what();
      }
    }
    out.push_back(r);
  }
  return out;
}

int run_mpi_command(const MpiOptions& o, std::ostream& out, std::ostream& err) {
  if (!o.conformance.empty()) return run_conformance(o, out, err);
  if (o.impl != "openmpi" && o.impl != "mpich") throw UsageError("--impl must be openmpi or mpich");
  if (std::find(kCollectives.begin(), kCollectives.end(), o.collective) == kCollectives.end()) {
    std::string l;
    for (const auto& c : kCollectives) l += (l.empty() ? "" : ", ") + c;
    throw UsageError("--collective must be one of " + l);
  }
  if (o.op != "commutative" && o.op != "noncommutative" && o.op != "builtin")
    throw UsageError("--op must be commutative, noncommutative or builtin");
  if (o.op == "builtin") {
    const std::string& k = o.collective;
    if (k != "allreduce" && k != "reduce" && k != "scan" && k != "exscan" &&
        k != "reduce_scatter" && k != "reduce_scatter_block")
      throw UsageError("--op builtin applies to the reductions only");
    if (o.algorithm == "harness-ring" || !o.model.empty())
      throw UsageError(
          "--op builtin: the library calls no user function, so no combination is visible; it "
          "judges the final values of a library's collective, with no --model and no "
          "harness-ring");
    // Digit r of a value is 5 bits: p <= 12 ranks, and (position + 1) < 32 at every position.
    const std::int64_t P = o.sizes.second, C = o.counts.second;
    const std::int64_t positions = k == "reduce_scatter_block" ? P * C
                                   : k == "reduce_scatter"     ? (P + 1) / 2 * C + P / 2 * (C / 2)
                                                               : C;
    if (P > 12 || positions > 31)
      throw UsageError(fmt::format(
          "--op builtin: p <= 12 and at most 31 positions (each rank's input is (position + 1) "
          "<< 5 rank); here p up to {} and up to {} positions",
          P, positions));
  }
  const bool ring = o.algorithm == "harness-ring";
  if (ring && o.collective != "allreduce")
    throw UsageError("--algorithm harness-ring is an all-reduce (the harness's own ring)");
  if (o.inject != "none" && !ring)
    throw UsageError(
        "--inject needs --algorithm harness-ring (bugs go into the harness's own "
        "ring all-reduce, never into the library)");
  if (o.inject != "none" && o.inject != "off-by-one" && o.inject != "double-count" &&
      o.inject != "swap-operands")
    throw UsageError("--inject must be off-by-one, double-count or swap-operands");
  if (o.sizes.first < 1 || o.sizes.second > 64 || o.sizes.first > o.sizes.second)
    throw UsageError("--sizes must lie in 1..64 (a rank's contributions are a 64-bit set)");
  if (o.counts.first < 0 || o.counts.second > 65536 || o.counts.first > o.counts.second)
    throw UsageError("--count must lie in 0..65536");
  if (o.timeout_s < 1 || o.timeout_s > 86400) throw UsageError("--timeout must be 1..86400");
  if (o.in_place && o.collective == "bcast")
    throw UsageError("--in-place: MPI_Bcast has no MPI_IN_PLACE");
  if (o.in_place && ring) throw UsageError("--in-place does not apply to harness-ring");
  if (o.list) {
    for (const auto& a : mpi_algorithms(o.impl, o.collective)) out << a << "\n";
    return kExitOk;
  }
  std::string alg = algorithm_name(o);
  std::string model_file;
  if (!o.model.empty()) {
    model_file =
        resolve_model_path(o.model, o.models_dir.empty() ? default_models_dir() : o.models_dir);
    parse_model_file(model_file);  // a model that does not parse is a usage error, up front
  }

  std::string mpicc =
      o.mpicc.empty() ? (o.impl == "openmpi" ? "mpicc.openmpi" : "mpicc.mpich") : o.mpicc;
  std::string mpirun =
      o.mpirun.empty() ? (o.impl == "openmpi" ? "mpirun.openmpi" : "mpiexec.mpich") : o.mpirun;
  std::string cc = find_program(mpicc), run = find_program(mpirun);
  if (cc.empty() || run.empty())
    throw UsageError(fmt::format(
        "no MPI to run: {} not found ({} is not installed? scripts/install-deps.sh installs Open "
        "MPI and MPICH; --mpicc and --mpirun name another build)",
        cc.empty() ? mpicc : mpirun, o.impl == "openmpi" ? "Open MPI" : "MPICH"));
  std::string src = !o.harness.empty() ? o.harness
                    : std::getenv("COLLV_MPI_HARNESS")
                        ? std::string(std::getenv("COLLV_MPI_HARNESS"))
                        : std::string(COLLV_SOURCE_DIR) + "/mpi/harness.c";
  std::string bin = build_harness(o, cc, src, err);

  // How the algorithm is selected: environment variables, so that a wrapper script given as
  // --mpirun passes them on without knowing them.
  std::vector<std::pair<std::string, std::string>> env;
  if (o.impl == "openmpi") {
    if (geteuid() == 0) {
      env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT", "1");
      env.emplace_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    }
    env.emplace_back("OMPI_MCA_rmaps_base_oversubscribe", "1");
    if (!ring) {
      auto algs = mpi_algorithms(o.impl, o.collective);
      auto n = std::find(algs.begin(), algs.end(), alg) - algs.begin();
      env.emplace_back("OMPI_MCA_coll_tuned_use_dynamic_rules", "1");
      env.emplace_back("OMPI_MCA_coll_tuned_" + o.collective + "_algorithm", std::to_string(n));
    }
  } else {
    // MPIR-level selection (the ch4 device would otherwise pick its own), and a message instead
    // of a silent fallback when the algorithm does not apply to the arguments. (`error` is no
    // better: when a nested call refuses, the ranks see "Failure during collective" and no
    // reason; measured with the smp all-reduce.)
    env.emplace_back("MPIR_CVAR_DEVICE_COLLECTIVES", "none");
    env.emplace_back("MPIR_CVAR_COLLECTIVE_FALLBACK", "print");
    if (!ring) env.emplace_back("MPIR_CVAR_" + upper(o.collective) + "_INTRA_ALGORITHM", alg);
  }
  for (const auto& kv : o.extra_env) env.push_back(kv);
  // Per-peer message counts (Open MPI's pml monitoring, against a model's transfers): one launch
  // per count, each writing monitoring.<rank>.prof at MPI_Finalize; pml_monitoring_enable=2
  // keeps the collectives' internal messages (negative tags) apart from user ones, both read.
  const bool monitor = o.impl == "openmpi" && !model_file.empty();
  auto monitoring_env = [&](const fs::path& count_dir) {
    auto e = env;
    e.emplace_back("OMPI_MCA_pml_monitoring_enable", "2");
    e.emplace_back("OMPI_MCA_pml_monitoring_enable_output", "3");
    e.emplace_back("OMPI_MCA_pml_monitoring_filename", (count_dir / "monitoring").string());
    return e;
  };

  VerifyReport rep;
  VerifyGroup g;
  g.model = fmt::format("{} {} {}", o.impl, o.collective, alg);
  if (o.inject != "none") g.model += " inject=" + o.inject;
  g.file = src;
  g.family = "np";
  g.named = true;
  rep.groups.push_back(g);
  std::vector<std::string> repro, refused, msgs_not_checked;
  fs::path runs_dir = fs::path(cache_root(o)) / fmt::format("runs-{}", getpid());
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  if (ec) throw UsageError("cannot create '" + runs_dir.string() + "': " + ec.message());
  auto t_all = std::chrono::steady_clock::now();

  for (std::int64_t p = o.sizes.first; p <= o.sizes.second; ++p) {
    rep.groups[0].specs.push_back(fmt::format("np:{}", p));
    std::vector<int> roots;
    if (!rooted(o.collective)) {
      roots.push_back(0);
    } else if (o.root == "all") {
      for (int r = 0; r < p; ++r) roots.push_back(r);
    } else if (o.root == "last") {
      roots.push_back(static_cast<int>(p) - 1);
    } else {
      int r = -1;
      try {
        r = std::stoi(o.root);
      } catch (const std::exception&) {
        throw UsageError("--root must be a rank, last or all");
      }
      if (r < 0) throw UsageError("--root must be a rank, last or all");
      if (r >= p) {
        ++rep.groups[0].skipped_runs;
        continue;
      }
      roots.push_back(r);
    }
    // Open MPI: every count in one launch (mpirun's start-up is most of a run's time). MPICH:
    // one launch per count, so that a fallback message on the error stream belongs to one count.
    std::vector<std::pair<std::int64_t, std::int64_t>> batches;
    if (o.impl == "openmpi" && !monitor) {
      batches.emplace_back(o.counts);
    } else {
      for (std::int64_t n = o.counts.first; n <= o.counts.second; ++n) batches.emplace_back(n, n);
    }
    // The baseline: a launch of the harness that runs no collective, with monitoring on. What it
    // counts (MPI_Init and MPI_Finalize's own messages, none measured with Open MPI 4.1.4) is
    // subtracted from every run at this p.
    std::optional<PeerMessages> baseline;
    std::string no_baseline;
    if (monitor && !roots.empty()) {
      fs::path dir = runs_dir / fmt::format("p{}-baseline", p);
      fs::remove_all(dir, ec);
      fs::create_directories(dir, ec);
      ProcResult pr = run_process(
          {run, "-n", std::to_string(p), bin, dir.string(), "none", "0", "0", "c", "0", "none"},
          monitoring_env(dir / "c0"), dir, o.timeout_s);
      if (pr.status != 0)
        no_baseline = fmt::format("the baseline launch (no collective) exited with {}: {}",
                                  pr.status, tail(pr.err, 300));
      else
        baseline = read_monitoring((dir / "c0").string(), static_cast<int>(p), no_baseline);
      fs::remove_all(dir, ec);
    }
    for (int root : roots) {
      for (auto [lo, hi] : batches) {
        fs::path dir = runs_dir / fmt::format("p{}-r{}-c{}", p, root, lo);
        fs::remove_all(dir, ec);
        fs::create_directories(dir, ec);
        std::string kind = ring ? "ring_allreduce" : o.collective;
        std::vector<std::string> argv = {
            run,
            "-n",
            std::to_string(p),
            bin,
            dir.string(),
            kind,
            lo == hi ? std::to_string(lo) : fmt::format("{}..{}", lo, hi),
            std::to_string(root),
            o.op == "commutative" ? "c"
            : o.op == "builtin"   ? "b"
                                  : "n",
            o.in_place ? "1" : "0",
            o.inject};
        auto t0 = std::chrono::steady_clock::now();
        int limit = static_cast<int>(std::min<std::int64_t>(86400, o.timeout_s * (hi - lo + 1)));
        const auto launch_env = monitor ? monitoring_env(dir / fmt::format("c{}", lo)) : env;
        ProcResult pr = run_process(argv, launch_env, dir, limit);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::string launch;
        for (const auto& [k, v] : launch_env) launch += k + "=" + shell_quote(v) + " ";
        for (const auto& a : argv) launch += shell_quote(a) + " ";
        bool keep = false;
        for (std::int64_t count = lo; count <= hi; ++count) {
          MpiCase c{kind, static_cast<int>(p),      static_cast<int>(count),
                    root, o.op != "noncommutative", o.in_place};
          c.builtin = o.op == "builtin";
          fs::path cdir = dir / fmt::format("c{}", count);
          VerifyRun vr;
          vr.model = rep.groups[0].model;
          vr.file = src;
          vr.topology = fmt::format("np:{}", p);
          vr.p = static_cast<std::uint64_t>(p);
          if (rooted(o.collective)) vr.source = static_cast<std::uint32_t>(root);
          vr.count = static_cast<std::uint32_t>(count);
          vr.domain = o.op + (o.in_place ? "+in-place" : "");
          std::string cmd = fmt::format(
              "collv mpi --impl {} --collective {} --algorithm {} --sizes {} --count {}{} --op "
              "{}{}",
              o.impl, o.collective, alg, p, count,
              rooted(o.collective) ? fmt::format(" --root {}", root) : "", o.op,
              o.in_place ? " --in-place" : "");
          if (o.inject != "none") cmd += " --inject " + o.inject;
          if (!o.model.empty()) cmd += " --model " + shell_quote(o.model);
          if (!o.model.empty() && o.max_ops != RunOptions{}.max_ops_per_node)
            cmd += fmt::format(" --max-ops {}", o.max_ops);
          if (!o.mpicc.empty()) cmd += " --mpicc " + shell_quote(o.mpicc);
          if (!o.mpirun.empty()) cmd += " --mpirun " + shell_quote(o.mpirun);
          // MPICH says when an algorithm does not apply and falls back to its own choice
          // (MPIR_CVAR_COLLECTIVE_FALLBACK=print): the library's documented behaviour, and the
          // run did not run the algorithm asked for, so it is not counted as its run.
          std::string all_out = pr.err + pr.out;
          for (int r = 0; r < p; ++r)
            all_out += slurp(cdir / fmt::format("rank{}.jsonl", r), 1 << 16);
          if (all_out.find("not usable for the provided arguments") != std::string::npos ||
              all_out.find("cannot be applied") != std::string::npos) {
            refused.push_back(
                fmt::format("np:{} count {}{}", p, count,
                            rooted(o.collective) ? fmt::format(" root {}", root) : ""));
            ++rep.skipped_runs;
            ++rep.groups[0].skipped_runs;
            continue;
          }
          vr.checks = judge_mpi_run(c, cdir.string());
          if (!model_file.empty()) {
            CheckResult conf, msgs;
            conf.name = "conformance";
            msgs.name = "messages";
            std::optional<ModelRunResult> mr;
            try {
              mr = model_run(model_file, static_cast<int>(p), static_cast<int>(count), root,
                             o.max_ops);
            } catch (const LimitError& e) {  // undecided: the comparison is inconclusive
              conf.verdict = msgs.verdict = Verdict::Unknown;
              conf.note = msgs.note = std::string("not checked: ") + e.what();
            } catch (const ModelError& e) {
              conf.note = msgs.note = std::string("the model does not run here: ") + e.what();
            } catch (const UsageError& e) {
              conf.note = msgs.note = std::string("the model does not run here: ") + e.what();
            }
            if (mr) {
              conf = compare_combinations(library_combinations(cdir.string(), static_cast<int>(p)),
                                          mr->combinations);
              if (!monitor) {
                msgs.note =
                    "MPICH: per-peer message counts are read from Open MPI's pml monitoring "
                    "only (MPICH has no such counter collv reads)";
              } else if (!baseline) {
                msgs.note = "not checked: " + no_baseline;
              } else if (pr.status != 0) {
                msgs.note = "not checked: the launch did not end normally";
              } else {
                std::string why;
                auto lib = read_monitoring(cdir.string(), static_cast<int>(p), why);
                if (lib) {
                  for (std::size_t a = 0; a < lib->msgs.size() && why.empty(); ++a)
                    for (std::size_t b = 0; b < lib->msgs.size(); ++b) {
                      if (lib->msgs[a][b] < baseline->msgs[a][b] ||
                          lib->bytes[a][b] < baseline->bytes[a][b]) {
                        why = fmt::format(
                            "rank {} sent fewer messages to rank {} than in the "
                            "baseline launch (no collective)",
                            a, b);
                        break;
                      }
                      lib->msgs[a][b] -= baseline->msgs[a][b];
                      lib->bytes[a][b] -= baseline->bytes[a][b];
                    }
                }
                if (lib && why.empty())
                  msgs = compare_messages(*lib, mr->messages);
                else
                  msgs.note = "not checked: " + why;
              }
            }
            vr.checks.push_back(conf);
            vr.checks.push_back(msgs);
            if (msgs.verdict == Verdict::NotChecked)
              msgs_not_checked.push_back(fmt::format(
                  "np:{} count {}{}: {}", p, count,
                  rooted(o.collective) ? fmt::format(" root {}", root) : "", msgs.note));
          }
          CheckResult& rt = vr.checks.front();
          if (pr.status == -1) {
            rt.verdict = Verdict::Unknown;
            rt.note = fmt::format("the launch did not finish in {} s (--timeout per count)", limit);
          } else if (pr.status != 0 && rt.verdict == Verdict::Pass) {
            Counterexample cx;
            cx.invariant = "runtime";
            cx.message =
                fmt::format("the launcher exited with {}: {}", pr.status, tail(pr.err, 600));
            rt.verdict = Verdict::Fail;
            rt.violations.push_back(cx);
            rt.violation_count = 1;
          }
          bool fail = false, unknown = false;
          for (const auto& ch : vr.checks) {
            fail = fail || ch.verdict == Verdict::Fail;
            unknown = unknown || ch.verdict == Verdict::Unknown;
          }
          vr.status = fail ? "fail" : unknown ? "inconclusive" : "pass";
          vr.seconds = secs / static_cast<double>(hi - lo + 1);
          if (vr.status != "pass") {
            keep = true;
            repro.push_back(cmd + "\n      launch: " + launch + "(output kept in " + cdir.string() +
                            ")");
          }
          rep.runs.push_back(std::move(vr));
          rep.runs.back().group = 0;
        }
        if (!keep) fs::remove_all(dir, ec);
      }
    }
  }
  rep.groups[0].seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_all).count();
  fs::remove(runs_dir, ec);  // only when empty: failing runs' output is kept

  Tally t = rep.tally();
  if (o.all_fell_back) *o.all_fell_back = rep.runs.empty() && !refused.empty();
  if (o.compared_runs) {
    *o.compared_runs = 0;
    for (const auto& r : rep.runs)
      for (const auto& c : r.checks)
        if ((c.name == "conformance" || c.name == "messages") &&
            (c.verdict == Verdict::Pass || c.verdict == Verdict::Fail)) {
          ++*o.compared_runs;
          break;
        }
  }
  if (rep.runs.empty())
    rep.groups[0].no_run = refused.empty() ? "no process count and root to run"
                                           : "the library fell back to its own choice in every run";
  rep.exit_code = t.failed > 0                       ? kExitViolation
                  : t.errors > 0 || rep.runs.empty() ? kExitUsage
                  : t.inconclusive > 0               ? kExitInconclusive
                                                     : kExitOk;

  auto write = [](const std::string& path, const std::string& text) {
    if (path == "-") {
      std::cout << text;
      return;
    }
    std::ofstream f(path);
    if (!f) throw UsageError("cannot write '" + path + "'");
    f << text;
  };
  if (!o.json_file.empty()) {
    nlohmann::json j = nlohmann::json::parse(report_to_json(rep));
    std::size_t k = 0;
    for (std::size_t i = 0; i < rep.runs.size(); ++i)
      if (rep.runs[i].status != "pass") j["results"][i]["reproduce"] = repro[k++];
    j["library"] = {{"impl", o.impl},       {"collective", o.collective},
                    {"algorithm", alg},     {"mpicc", cc},
                    {"mpirun", run},        {"harness", src},
                    {"fell_back", refused}, {"messages_not_checked", msgs_not_checked}};
    write(o.json_file, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  }
  if (!o.junit_file.empty()) write(o.junit_file, report_to_junit(rep));
  if (o.json_file != "-" && o.junit_file != "-") {
    out << report_to_text(rep, o.runs_table, o.quiet);
    if (!refused.empty()) {
      out << fmt::format(
          "the skipped runs: {} where the library fell back to its own choice (the algorithm "
          "does not apply to these arguments; MPIR_CVAR_COLLECTIVE_FALLBACK=print):",
          refused.size());
      for (std::size_t i = 0; i < refused.size() && i < 12; ++i) out << " " << refused[i] << ";";
      out << (refused.size() > 12 ? " ...\n" : "\n");
    }
    if (!msgs_not_checked.empty())
      out << fmt::format(
          "messages (per-peer counts against the model) not checked in {} of {} "
          "runs; the first: {}\n",
          msgs_not_checked.size(), rep.runs.size(), msgs_not_checked.front());
    if (!repro.empty() && !o.quiet) {
      out << "\nreproduce (the first failing runs):\n";
      for (std::size_t i = 0; i < repro.size() && i < 8; ++i) out << "  " << repro[i] << "\n";
    }
  }
  if (rep.runs.empty()) err << "collv: error: no run was made, so nothing was verified (exit 2)\n";
  return rep.exit_code;
}

}  // namespace collv
