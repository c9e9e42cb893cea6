// `collv mpi`: reading and judging what the harness's ranks wrote (docs/mpi.md): the result
// regions MPI defines, the checks on every combination and result, the library's combinations.
#include <fmt/format.h>

#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <bit>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "app/mpi_internal.hpp"
#include "lang/ast.hpp"
#include "util/error.hpp"

namespace fs = std::filesystem;

namespace collv {
namespace mpi_detail {

extern const std::vector<std::string> kCollectives;
const std::vector<std::string> kCollectives = {
    "allreduce", "reduce",         "bcast",
    "allgather", "gather",         "scatter",
    "alltoall",  "reduce_scatter", "reduce_scatter_block",
    "scan",      "exscan",         "allgatherv",
    "gatherv",   "scatterv",       "alltoallv",
    "alltoallw", "barrier"};

bool rooted(const std::string& c) {
  return c == "reduce" || c == "bcast" || c == "gather" || c == "scatter" || c == "gatherv" ||
         c == "scatterv";
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
    if (!first) s += ',';
    s += e == r ? std::to_string(r) : fmt::format("{}..{}", r, e);
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

// MPI_Reduce_scatter's counts in the harness: a `reduce-scatterv` model's counts(j).
int rs_count(int r, int count) { return static_cast<int>(v_count(count, r)); }

// MPI_Alltoallv's and MPI_Alltoallw's counts in place in the harness (mpi/harness.c spair): one
// set of counts for both directions, so the same both ways; uneven, with zeros.
std::int64_t symmetric_pair_count(std::int64_t count, std::int64_t i, std::int64_t j) {
  return (count + i + j) % (count + 1);
}

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
  } else if (k == "alltoall" || k == "alltoallv_equal" || k == "alltoallw_equal") {
    for (int j = 0; j < p; ++j)
      for (int i = 0; i < n; ++i)
        e.push_back({static_cast<std::int64_t>(r) * n + i, std::uint64_t{1} << j});
  } else if (k == "reduce_scatter_block" || k == "reduce_scatter_equal") {
    for (int i = 0; i < n; ++i) e.push_back({static_cast<std::int64_t>(r) * n + i, all});
  } else if (k == "reduce_scatter") {
    std::int64_t off = 0;
    for (int j = 0; j < r; ++j) off += rs_count(j, n);
    for (int i = 0; i < rs_count(r, n); ++i) e.push_back({off + i, all});
  } else if (k == "allgatherv" || k == "gatherv" || k == "allgatherv_contiguous") {
    if (k == "gatherv" && r != c.root) return std::nullopt;
    for (int j = 0; j < p; ++j) {  // rank j's block, then one element no rank sends (not
                                   // between contiguous blocks)
      for (std::int64_t i = 0; i < v_count(n, j); ++i) e.push_back({i, std::uint64_t{1} << j});
      if (k != "allgatherv_contiguous") e.push_back({-1, 0});
    }
  } else if (k == "scatterv") {
    std::int64_t off = 0;
    for (int j = 0; j < r; ++j) off += v_count(n, j) + 1;
    for (std::int64_t i = 0; i < v_count(n, r); ++i) e.push_back({off + i, root});
  } else if (k == "alltoallv" || k == "alltoallw") {
    // From rank j: pc(j, r) elements, from j's send buffer at its block for r. In place, one set
    // of counts serves both directions: the harness's symmetric counts.
    auto pc = [&](int i, int q) {
      return c.in_place ? symmetric_pair_count(n, i, q) : v_pair_count(n, i, q);
    };
    for (int j = 0; j < p; ++j) {
      std::int64_t off = 0;
      for (int q = 0; q < r; ++q) off += pc(j, q) + 1;
      for (std::int64_t i = 0; i < pc(j, r); ++i) e.push_back({off + i, std::uint64_t{1} << j});
      e.push_back({-1, 0});
    }
  } else if (k == "barrier") {
    return std::nullopt;  // no result: judged by the times of entry and exit
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

// A tag of the harness (mpi/harness.c): the call's number (harness_call: unique across the counts
// of a launch), plus kOutOfOrder when a combination out of rank order went into the element.
constexpr std::int64_t kOutOfOrder = std::int64_t{1} << 30;

// A call's number as messages name it: "call K" within the count being judged, "call K of
// count N" for another count's (a stale message or result), "call N" for a number of no count.
std::string call_text(std::int64_t n, int count) {
  const std::int64_t first = harness_call(count, 1);
  if (n >= first && n < first + kHarnessCalls) return fmt::format("call {}", n - first + 1);
  if (n >= 1)
    return fmt::format("call {} of count {}", (n - 1) % kHarnessCalls + 1, (n - 1) / kHarnessCalls);
  return fmt::format("call {}", n);
}

// A harness line that is not in its format: an error naming the file and line.
[[noreturn]] void bad_line(const std::string& where, const std::string& what) {
  throw UsageError(where + ": not the harness's output (" + what + ")");
}

std::int64_t int_field(const nlohmann::json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer())
    bad_line(where, fmt::format("\"{}\" must be an integer", key));
  return it->get<std::int64_t>();
}

// [[idx, mask, tag], ...] (tag may be left out: untagged, of the call being read).
std::vector<Elem> read_elems(const nlohmann::json& j, const std::string& where,
                             std::int64_t call = 0) {
  if (!j.is_array()) bad_line(where, "expected an array of [idx, mask, tag]");
  std::vector<Elem> v;
  v.reserve(j.size());
  for (const auto& x : j) {
    if (!x.is_array() || x.size() < 2 || x.size() > 3 || !x[0].is_number_integer() ||
        !x[1].is_number_unsigned() || (x.size() == 3 && !x[2].is_number_integer()))
      bad_line(where, "expected [idx, mask, tag] with integers, mask unsigned");
    Elem e{x[0].get<std::int64_t>(), x[1].get<std::uint64_t>()};
    e.tag = x.size() == 3 ? x[2].get<std::int64_t>() : call;
    v.push_back(e);
  }
  return v;
}

bool adjacent(std::uint64_t a, std::uint64_t b) {
  return interval(a) && interval(b) && 64 - std::countl_zero(a) == std::countr_zero(b);
}

// OP m: entry e of rank r's input matrix at position k in call c (mpi/harness.c's mix).
std::uint32_t mix(std::uint32_t r, std::uint32_t k, std::uint32_t c, std::uint32_t e) {
  std::uint32_t x =
      r * 0x9E3779B1u ^ (k + 1) * 0x85EBCA77u ^ c * 0xC2B2AE3Du ^ (e + 1) * 0x27D4EB2Fu;
  x ^= x >> 16;
  x *= 0x7FEB352Du;
  x ^= x >> 15;
  x *= 0x846CA68Bu;
  x ^= x >> 16;
  return x;
}
using Mat = std::array<std::uint32_t, 4>;
Mat mat_mul(const Mat& x, const Mat& y) {
  return {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3], x[2] * y[0] + x[3] * y[2],
          x[2] * y[1] + x[3] * y[3]};
}
// The product in rank order of the inputs of the ranks in mask at position k, call c.
Mat product(std::uint64_t mask, std::int64_t k, std::int64_t c) {
  Mat m{1, 0, 0, 1};
  for (int q = 0; q < 64; ++q)
    if (mask >> q & 1) {
      Mat in;
      for (std::uint32_t e = 0; e < 4; ++e)
        in[e] = mix(static_cast<std::uint32_t>(q), static_cast<std::uint32_t>(k),
                    static_cast<std::uint32_t>(c), e);
      m = mat_mul(m, in);
    }
  return m;
}

// The checks of one run, filled rank by rank.
struct Judges {
  Judge nodup{"nodup"}, operands{"operands"}, order{"order"}, post{"postcondition"},
      runtime{"runtime"}, sendbuf{"sendbuf"}, unmatched{"unmatched"};
  std::size_t out_of_order = 0;  // combinations no rank order allows, reaching the result or not
  std::string first_out_of_order;
  std::size_t ranks_unmatched_checked = 0, ranks_without_queue = 0;
  struct BarrierTimes {
    std::int64_t call;
    int rank;
    std::int64_t enter, leave;
  };
  std::vector<BarrierTimes> barrier;  // a barrier's times of entry and exit, per call and rank
};

// One rank's file: every line is a claim, checked (format in mpi/harness.c).
void judge_rank(const MpiCase& c, int r, std::string_view text, const std::string& file,
                Judges& J) {
  const std::uint64_t in_p = all_below(c.p);
  std::size_t lineno = 0, combination = 0;
  // The count's calls are numbered harness_call(count, 1..): a file without "call" lines is one
  // call, untagged (its elements take the first call's number).
  const std::int64_t first_call = harness_call(c.count, 1);
  std::int64_t call = first_call;
  auto ct = [&](std::int64_t n) { return call_text(n, c.count); };
  bool tagged = false, done = false, have_out = false, unmatched_seen = false;
  std::string lib_error;
  const auto exp = expected(c, r);
  auto end_call = [&] {
    if (exp && !have_out && lib_error.empty() && lineno > 0)
      J.post.fail(r, fmt::format("rank {}: no result written in {}", r, ct(call)));
  };
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t nl = text.find('\n', at);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(at, nl - at);
    at = nl + 1;
    ++lineno;
    const std::string where = fmt::format("{}:{}", file, lineno);
    if (done) bad_line(where, "a line after the \"done\" line");
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("k") || !j["k"].is_string()) {
      // A rank killed mid-line leaves a partial last line: that is the run's failure.
      J.runtime.fail(r, where + ": not a line of the harness's output (a rank cut short?)");
      return;
    }
    const std::string k = j["k"].get<std::string>();
    if (k == "call") {
      const std::int64_t n = int_field(j, "n", where);
      const std::int64_t due = tagged ? call + 1 : first_call;
      if (n != due || n >= first_call + kHarnessCalls)
        bad_line(where, fmt::format("call {} where {} was due (count {}'s calls are {}..{})", n,
                                    n == due ? "no call" : fmt::format("call {}", due), c.count,
                                    first_call, first_call + kHarnessCalls - 1));
      if (tagged) end_call();
      tagged = true;
      call = n;
      have_out = false;
      combination = 0;
    } else if (k == "op") {
      ++combination;
      if (!j.contains("a") || !j.contains("b")) bad_line(where, "an op line without a and b");
      auto a = read_elems(j["a"], where + ": a", call);
      auto b = read_elems(j["b"], where + ": b", call);
      if (a.size() != b.size()) bad_line(where, "operands of different lengths");
      for (std::size_t i = 0; i < a.size(); ++i) {
        const std::string ctx =
            fmt::format("rank {}, {}, combination {}, element {}", r, ct(call), combination, i);
        const Elem &x = a[i], &y = b[i];
        if (x.mask == 0 || y.mask == 0) {
          J.operands.fail(r, fmt::format("{}: an operand holds no contribution (data never "
                                         "written): {} (op) {}",
                                         ctx, elem_text(x), elem_text(y)));
          continue;
        }
        if ((x.mask | y.mask) & ~in_p)
          J.operands.fail(r, fmt::format("{}: a contribution of no rank below p = {}", ctx, c.p));
        if (x.idx != y.idx || x.idx < 0)
          J.operands.fail(r, fmt::format("{}: combines {} with {}: different positions", ctx,
                                         elem_text(x), elem_text(y)));
        for (const Elem* e : {&x, &y})
          if ((e->tag & ~kOutOfOrder) != call)
            J.operands.fail(r, fmt::format("{}: an operand of {}: {} (data of another call)", ctx,
                                           ct(e->tag & ~kOutOfOrder), elem_text(*e)));
        if (x.mask & y.mask) {
          J.nodup.fail(r, fmt::format("{}: {} (op) {}: ranks {} counted twice", ctx, elem_text(x),
                                      elem_text(y), ranks_text(x.mask & y.mask)));
        } else if (!adjacent(x.mask, y.mask)) {
          if (J.out_of_order++ == 0)
            J.first_out_of_order = fmt::format("{}: {} (op) {}", ctx, elem_text(x), elem_text(y));
          if (!tagged && !c.commutative)  // untagged: no way to tell where its value went
            J.order.fail(r, fmt::format("{}: {} (op) {}: under a non-commutative operation the "
                                        "left operand must be ranks i..j and the right j+1..k",
                                        ctx, elem_text(x), elem_text(y)));
        }
      }
    } else if (k == "outv" || k == "outm") {
      // OP b: values, digit r = (position + 1) times rank r's multiplicity; OP m: matrices.
      have_out = true;
      const bool matrix = k == "outm";
      if (!(matrix ? c.matrix : c.builtin)) bad_line(where, k + " from a run of another operation");
      const auto& buf = j.value("buf", nlohmann::json());
      if (!buf.is_array()) bad_line(where, "buf: expected an array");
      if (!exp) continue;
      if (buf.size() != exp->size()) {
        J.post.fail(r, fmt::format("rank {}: {} result elements, MPI defines {}", r, buf.size(),
                                   exp->size()));
        continue;
      }
      for (std::size_t i = 0; i < buf.size(); ++i) {
        const Elem& e = (*exp)[i];
        if (matrix) {
          if (!buf[i].is_array() || buf[i].size() != 4)
            bad_line(where, "buf: expected [a, b, c, d] matrices");
          Mat got;
          for (std::size_t q = 0; q < 4; ++q) {
            if (!buf[i][q].is_number_unsigned() || buf[i][q].get<std::uint64_t>() > 0xFFFFFFFFu)
              bad_line(where, "buf: a matrix entry is no uint32");
            got[q] = static_cast<std::uint32_t>(buf[i][q].get<std::uint64_t>());
          }
          const Mat want = product(e.mask, e.idx, call);
          if (got == want) continue;
          std::string why;
          for (std::int64_t back = 1; back <= kHarnessCalls && back < call && why.empty(); ++back)
            if (got == product(e.mask, e.idx, call - back))
              why = fmt::format(" ({}'s)", ct(call - back));
          J.post.fail(r, fmt::format("rank {}, {}, position {}: holds [{}], the product in "
                                     "rank order of ranks {}'s inputs is [{}]{}",
                                     r, ct(call), i, fmt::join(got, ","), ranks_text(e.mask),
                                     fmt::join(want, ","), why));
          continue;
        }
        if (!buf[i].is_number_unsigned()) bad_line(where, "buf: expected unsigned numbers");
        const std::uint64_t got = buf[i].get<std::uint64_t>();
        const std::uint64_t unit = static_cast<std::uint64_t>(e.idx + 1);
        std::uint64_t want = 0;
        for (int q = 0; q < std::min(c.p, 12); ++q)  // 5-bit digits: p <= 12
          if (e.mask >> q & 1) want += unit << (5 * q);
        if (got == want) continue;
        std::string diff;
        for (int q = 0; q < std::min(c.p, 12); ++q) {
          const std::uint64_t d = got >> (5 * q) & 31, w = (e.mask >> q & 1) ? unit : 0;
          if (d == w) continue;
          if (d == 0)
            diff += fmt::format(", rank {} missing", q);
          else if (w == 0)
            diff += fmt::format(", rank {} extra (digit {})", q, d);
          else if (d % w == 0)
            diff += fmt::format(", rank {} counted {} times", q, d / w);
          else
            diff +=
                fmt::format(", rank {}'s digit is {}, not {} (another position's input?)", q, d, w);
        }
        J.post.fail(
            r, fmt::format("rank {} position {}: holds {}, MPI_SUM of the inputs is {}{}", r, i,
                           got, want, diff.empty() ? "" : " (" + diff.substr(2) + ")"));
      }
    } else if (k == "out") {
      have_out = true;
      if (!j.contains("buf")) bad_line(where, "an out line without buf");
      auto got = read_elems(j["buf"], where + ": buf", call);
      if (!exp) continue;
      if (got.size() != exp->size()) {
        J.post.fail(r, fmt::format("rank {}: {} result elements, MPI defines {}", r, got.size(),
                                   exp->size()));
        continue;
      }
      for (std::size_t i = 0; i < got.size(); ++i) {
        const Elem &g = got[i], &w = (*exp)[i];
        if (g.idx != w.idx || g.mask != w.mask) {
          std::string diff;
          if (g.mask != w.mask) {
            std::uint64_t miss = w.mask & ~g.mask, extra = g.mask & ~w.mask;
            if (miss) diff += " missing " + ranks_text(miss);
            if (extra) diff += " extra " + ranks_text(extra);
          }
          J.post.fail(
              r, fmt::format("rank {} position {}: holds {}, expected {}{}", r, i, elem_text(g),
                             elem_text(w), diff.empty() ? "" : " (" + diff.substr(1) + ")"));
          continue;
        }
        if (w.mask != 0 && (g.tag & ~kOutOfOrder) != call) {
          J.post.fail(r, fmt::format("rank {}, {}, position {}: holds {} of {}: the result of "
                                     "another call",
                                     r, ct(call), i, elem_text(g), ct(g.tag & ~kOutOfOrder)));
          continue;
        }
        if ((g.tag & kOutOfOrder) && !c.commutative)
          J.order.fail(r, fmt::format("rank {}, {}, position {}: its value went through a "
                                      "combination no rank order allows (the left operand must "
                                      "be ranks i..j and the right j+1..k); the run's first: {}",
                                      r, ct(call), i,
                                      J.first_out_of_order.empty() ? std::string("not logged")
                                                                   : J.first_out_of_order));
      }
    } else if (k == "barrier") {
      if (c.collective != "barrier")
        bad_line(where, "a barrier line from a run of another collective");
      const std::int64_t enter = int_field(j, "enter", where), leave = int_field(j, "leave", where);
      J.barrier.push_back({call, r, enter, leave});
      have_out = true;
    } else if (k == "sendbuf") {
      const std::int64_t pos = int_field(j, "pos", where), n = int_field(j, "changed", where);
      std::string what;
      if (j.contains("before") && j.contains("after")) {
        auto b = read_elems(j["before"], where + ": before", call);
        auto a = read_elems(j["after"], where + ": after", call);
        if (b.size() == 1 && a.size() == 1)
          what = fmt::format(": it held {} before the call and {} after", elem_text(b[0]),
                             elem_text(a[0]));
      }
      J.sendbuf.fail(r, fmt::format("rank {}, {}: the library changed the send buffer "
                                    "(input-only in MPI) at {} position{}, the first {}{}",
                                    r, ct(call), n, n == 1 ? "" : "s", pos, what));
    } else if (k == "unmatched") {
      unmatched_seen = true;
      ++J.ranks_unmatched_checked;
      const auto user = j.find("user");
      const auto queue = j.find("queue");
      if (user == j.end() || !user->is_array() || queue == j.end() ||
          !(queue->is_null() || queue->is_array()))
        bad_line(where, "unmatched: expected user: [[src, tag, bytes], ...], queue: [...] or null");
      for (const auto& m : *user) {
        if (!m.is_array() || m.size() != 3 || !m[0].is_number_integer() ||
            !m[1].is_number_integer() || !m[2].is_number_integer())
          bad_line(where, "unmatched: expected [src, tag, bytes]");
      }
      if (!user->empty())
        J.unmatched.fail(
            r, fmt::format("rank {}: {}{} message{} on MPI_COMM_WORLD that no receive "
                           "matched, the first from rank {} (tag {}, {} bytes)",
                           r, user->size(), user->size() >= 16 ? " or more" : "",
                           user->size() == 1 ? "" : "s", (*user)[0][0].get<std::int64_t>(),
                           (*user)[0][1].get<std::int64_t>(), (*user)[0][2].get<std::int64_t>()));
      if (queue->is_null()) {
        ++J.ranks_without_queue;
      } else {
        for (std::size_t q = 0; q < queue->size(); ++q) {
          if (!(*queue)[q].is_number_unsigned())
            bad_line(where, "unmatched: queue: expected counts");
          const auto n = (*queue)[q].get<std::uint64_t>();
          if (n > 0)
            J.unmatched.fail(
                r, fmt::format("rank {}: {} message{} from rank {} sent and never received (the "
                               "library's queue of unexpected messages after the collective)",
                               r, n, n == 1 ? "" : "s", q));
        }
      }
    } else if (k == "node") {
      // The rank's node (COLLV_MPI_NODES=1, MPICH's smp algorithms): read by the run's layout
      // (mpi_smp.cpp); here only its form is checked.
      const std::int64_t leader = int_field(j, "leader", where),
                         local = int_field(j, "local", where);
      if (leader < 0 || leader > r || local < 1 || local > c.p)
        bad_line(where, fmt::format("node: leader {} and {} local ranks do not fit rank {} of {}",
                                    leader, local, r, c.p));
    } else if (k == "sent") {
      // The messages the rank sent during the call (MPICH over UCX): compared with a model's
      // transfers by `messages` (mpi_pattern.cpp); here only its form is checked.
      std::string why;
      if (!read_sent_line(j, why)) bad_line(where, "sent: " + why);
    } else if (k == "error") {
      const auto m = j.find("message");
      if (m == j.end() || !m->is_string()) bad_line(where, "\"message\" must be a string");
      lib_error = m->get<std::string>();
      if (lib_error.size() > 300) lib_error = lib_error.substr(0, 300) + "...";
      have_out = true;  // no result expected after an error
    } else if (k == "done") {
      const std::int64_t dr = int_field(j, "rank", where), ds = int_field(j, "size", where);
      if (tagged) end_call();
      if (dr != r || ds != c.p)
        J.runtime.fail(r,
                       fmt::format("{}: rank {} of {} wrote rank {} of {}", where, r, c.p, dr, ds));
      done = true;
    } else {
      bad_line(where, "unknown line kind '" + (k.size() > 40 ? k.substr(0, 40) + "..." : k) + "'");
    }
  }
  if (!lib_error.empty())
    J.runtime.fail(r, fmt::format("rank {}: the library returned an error: {}", r, lib_error));
  else if (!done)
    J.runtime.fail(r, fmt::format("rank {} did not finish (no \"done\" line)", r));
  else if (!tagged && exp && !have_out)
    J.post.fail(r, fmt::format("rank {}: no result written", r));
  (void)unmatched_seen;
}

}  // namespace

std::vector<CheckResult> judge_mpi_text(const MpiCase& c,
                                        const std::vector<std::optional<std::string>>& files,
                                        const std::string& dir) {
  Judges J;
  for (int r = 0; r < c.p; ++r) {
    const std::string file = (fs::path(dir) / fmt::format("rank{}.jsonl", r)).string();
    if (static_cast<std::size_t>(r) >= files.size() || !files[static_cast<std::size_t>(r)]) {
      J.runtime.fail(r, fmt::format("rank {} wrote no observations ({})", r, file));
      continue;
    }
    try {
      judge_rank(c, r, *files[static_cast<std::size_t>(r)], file, J);
    } catch (const nlohmann::json::exception& e) {  // a value of another type than read
      throw UsageError(file + ": not the harness's output (" + e.what() + ")");
    }
  }
  if (c.collective == "barrier") {
    // MPI's barrier: no rank leaves before every rank has entered (one clock: one node).
    for (std::int64_t k = 1; k <= kHarnessCalls; ++k) {
      const std::int64_t n = harness_call(c.count, static_cast<int>(k));
      const Judges::BarrierTimes *last_in = nullptr, *first_out = nullptr;
      std::size_t ranks = 0;
      for (const auto& b : J.barrier) {
        if (b.call != n) continue;
        ++ranks;
        if (!last_in || b.enter > last_in->enter) last_in = &b;
        if (!first_out || b.leave < first_out->leave) first_out = &b;
      }
      if (ranks == static_cast<std::size_t>(c.p) && first_out->leave < last_in->enter)
        J.post.fail(first_out->rank,
                    fmt::format("call {}: rank {} left the barrier {} us before rank {} entered it",
                                k, first_out->rank, (last_in->enter - first_out->leave) / 1000,
                                last_in->rank));
      else if (ranks != static_cast<std::size_t>(c.p) && J.runtime.res.verdict == Verdict::Pass)
        J.post.fail(
            0, fmt::format("call {}: {} of {} ranks wrote the barrier's times", k, ranks, c.p));
    }
  }
  if (c.commutative) {
    J.order.res.verdict = Verdict::NotChecked;
    J.order.res.note = "a commutative operation may combine in any order";
  } else if (J.order.res.verdict == Verdict::Pass && J.out_of_order > 0) {
    J.order.res.note = fmt::format(
        "{} combination{} out of rank order whose value reaches no result (the library discards "
        "it); the first: {}",
        J.out_of_order, J.out_of_order == 1 ? "" : "s", J.first_out_of_order);
  }
  if (c.builtin || c.matrix) {
    for (Judge* jg : {&J.nodup, &J.operands, &J.order}) {
      jg->res.verdict = Verdict::NotChecked;
      jg->res.note = c.builtin ? "a built-in operation (MPI_SUM): the library calls no user "
                                 "function, so no combination is visible; the result's values say "
                                 "how often each input was added"
                               : "a matrix product (OP m): the values are judged, not the "
                                 "combinations (the result's product is right only in rank order)";
    }
  }
  if (J.ranks_unmatched_checked < static_cast<std::size_t>(c.p)) {
    if (J.unmatched.res.verdict == Verdict::Pass) J.unmatched.res.verdict = Verdict::NotChecked;
    J.unmatched.res.note = fmt::format("{} of {} ranks wrote no check of unmatched messages",
                                       c.p - static_cast<int>(J.ranks_unmatched_checked), c.p);
  } else if (J.ranks_without_queue > 0) {
    J.unmatched.res.note =
        "MPI_COMM_WORLD's user messages only: the library exports no count of its unexpected "
        "messages (MPI_T), so a message of its own sent and never received is not seen";
  }
  return {J.runtime.res, J.nodup.res,   J.operands.res, J.order.res,
          J.post.res,    J.sendbuf.res, J.unmatched.res};
}

std::vector<CheckResult> judge_mpi_run(const MpiCase& c, const std::string& dir) {
  std::vector<std::optional<std::string>> files;
  for (int r = 0; r < c.p; ++r) {
    fs::path file = fs::path(dir) / fmt::format("rank{}.jsonl", r);
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec) {
      files.emplace_back();  // judged as a rank that wrote nothing
      continue;
    }
    if (size > kMaxRankFile)
      throw LimitError(fmt::format("{}: {} bytes, more than collv reads ({})", file.string(), size,
                                   kMaxRankFile));
    files.emplace_back(slurp(file, kMaxRankFile));
  }
  return judge_mpi_text(c, files, dir);
}

MpiCombinations library_combinations(const std::string& dir, int p, int count) {
  MpiCombinations out(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    fs::path file = fs::path(dir) / fmt::format("rank{}.jsonl", r);
    std::error_code ec;
    auto size = fs::file_size(file, ec);
    if (ec) continue;
    if (size > kMaxRankFile) throw LimitError(file.string() + ": too large");
    std::ifstream f(file);
    std::string line;
    // The count's first call's combinations (each call makes its own).
    std::int64_t call = harness_call(count, 1);
    while (std::getline(f, line)) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      const auto k = j.find("k");
      if (k == j.end() || !k->is_string()) continue;
      if (*k == "call" && j.contains("n") && j["n"].is_number_integer())
        call = j["n"].get<std::int64_t>();
      if (*k != "op" || call != harness_call(count, 1) || !j.contains("a") || !j.contains("b"))
        continue;
      auto a = read_elems(j["a"], file.string());
      auto b = read_elems(j["b"], file.string());
      for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
        out[static_cast<std::size_t>(r)].push_back(
            {a[i].idx == b[i].idx ? a[i].idx : -2, a[i].mask, b[i].mask});
    }
  }
  return out;
}

}  // namespace collv
