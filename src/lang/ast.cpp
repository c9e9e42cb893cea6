// The names and counts of ast.hpp: collectives and their spellings, the v-collectives' counts
// and displacements, operators' spellings.
#include <cstdint>
#include <optional>
#include <string>

#include "lang/ast.hpp"

namespace collv {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::Broadcast:
      return "broadcast";
    case Collective::Reduce:
      return "reduce";
    case Collective::Allgather:
      return "allgather";
    case Collective::ReduceScatter:
      return "reduce-scatter";
    case Collective::Allreduce:
      return "allreduce";
    case Collective::Scan:
      return "scan";
    case Collective::Scatter:
      return "scatter";
    case Collective::Gather:
      return "gather";
    case Collective::Alltoall:
      return "alltoall";
    case Collective::Shift:
      return "shift";
    case Collective::Barrier:
      return "barrier";
    case Collective::Exscan:
      return "exscan";
    case Collective::Allgatherv:
      return "allgatherv";
    case Collective::Gatherv:
      return "gatherv";
    case Collective::Scatterv:
      return "scatterv";
    case Collective::Alltoallv:
      return "alltoallv";
    case Collective::ReduceScatterv:
      return "reduce-scatterv";
  }
  return "?";
}

bool collective_is_v(Collective c) {
  return c == Collective::Allgatherv || c == Collective::Gatherv || c == Collective::Scatterv ||
         c == Collective::Alltoallv || c == Collective::ReduceScatterv;
}

std::int64_t v_count(std::int64_t count, std::int64_t j) { return (count + j) % (count + 1); }
std::int64_t v_pair_count(std::int64_t count, std::int64_t i, std::int64_t j) {
  return (count + i + 2 * j) % (count + 1);
}

namespace {

// GCC's 128-bit integer; __extension__ keeps -Wpedantic quiet about it.
__extension__ using i128 = __int128;

// The sum of floor((a k + b) / m) over k = 0 .. n - 1 (a, b >= 0, m > 0), in O(log m) steps: the
// terms with a >= m or b >= m are split off, and the rest is the same sum with a and m exchanged
// (the lattice points under the line, counted the other way).
i128 floor_sum(i128 n, i128 m, i128 a, i128 b) {
  i128 r = 0;
  for (;;) {
    if (a >= m) {
      r += n * (n - 1) / 2 * (a / m);
      a %= m;
    }
    if (b >= m) {
      r += n * (b / m);
      b %= m;
    }
    const i128 top = a * n + b;
    if (top < m) return r;
    n = top / m;
    b = top % m;
    std::swap(m, a);
  }
}

// The sum of (a + s k) mod m over k = 0 .. n - 1 (a, s >= 0, m > 0).
std::int64_t mod_sum(std::int64_t a, std::int64_t s, std::int64_t n, std::int64_t m) {
  if (n <= 0) return 0;
  const i128 plain = i128{a} * n + i128{s} * n * (n - 1) / 2;
  return static_cast<std::int64_t>(plain - i128{m} * floor_sum(n, m, s, a));
}

}  // namespace

std::int64_t v_displs(std::int64_t count, std::int64_t j) {
  return mod_sum(count, 1, j, count + 1);
}
std::int64_t v_sdispls(std::int64_t count, std::int64_t i, std::int64_t j) {
  return mod_sum(count + i, 2, j, count + 1);
}
std::int64_t v_rdispls(std::int64_t count, std::int64_t i, std::int64_t j) {
  return mod_sum(count + 2 * j, 1, i, count + 1);
}

std::optional<Collective> collective_from_name(const std::string& s) {
  for (int i = 0; i <= static_cast<int>(kLastCollective); ++i) {
    auto c = static_cast<Collective>(i);
    if (s == collective_name(c)) return c;
  }
  return std::nullopt;
}

bool collective_is_rooted(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce || c == Collective::Scatter ||
         c == Collective::Gather || c == Collective::Scatterv || c == Collective::Gatherv;
}

const char* op_spelling(Op op) {
  switch (op) {
    case Op::Add:
      return "+";
    case Op::Sub:
      return "-";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::IntDiv:
      return "div";
    case Op::Mod:
      return "mod";
    case Op::Pow:
      return "^";
    case Op::BitXor:
      return "XOR";
    case Op::BitAnd:
      return "AND";
    case Op::BitOr:
      return "OR";
    case Op::BitNot:
      return "NOT";
    case Op::Eq:
      return "=";
    case Op::Ne:
      return "<>";
    case Op::Lt:
      return "<";
    case Op::Le:
      return "<=";
    case Op::Gt:
      return ">";
    case Op::Ge:
      return ">=";
    case Op::And:
      return "and";
    case Op::Or:
      return "or";
    case Op::Not:
      return "not";
    case Op::Neg:
      return "-";
    case Op::Union:
      return "∪";
  }
  return "?";
}

}  // namespace collv
