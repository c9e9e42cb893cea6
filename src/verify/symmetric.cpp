// Verification by symmetry on the star graph (see symmetric.hpp, docs/symmetry.md).
#include "verify/symmetric.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "lang/check.hpp"
#include "topology/topology.hpp"
#include "util/error.hpp"

namespace collv {

namespace {

constexpr int kMaxN = 13;          // star:13, 6.2e9 processors
constexpr int kMaxD = 32;          // hypercube:32, 4.3e9 processors
constexpr int kMaxRing = 1 << 20;  // ring:1048576: (p - 1) exchanges of p-bit sets
constexpr int kTableMax = 10;      // sigma_j tables for j <= 10 (10! entries of 4 bytes)

std::uint64_t fact(int n) {
  std::uint64_t f = 1;
  for (int i = 2; i <= n; ++i) f *= static_cast<std::uint64_t>(i);
  return f;
}

// The pattern (values 0..j-1) of positions 0..j-1 from the j low digits of an index, and back.
void decode(std::uint64_t index, int j, int* r) {
  std::uint32_t avail = (1u << j) - 1;  // values still free
  std::uint64_t digit_weight[kMaxN + 1];
  digit_weight[0] = 1;
  for (int i = 1; i <= j; ++i)
    digit_weight[i] = digit_weight[i - 1] * static_cast<std::uint64_t>(i);
  for (int i = j - 1; i >= 0; --i) {
    auto c = static_cast<int>((index / digit_weight[i]) % static_cast<std::uint64_t>(i + 1));
    // the c-th smallest free value
    std::uint32_t a = avail;
    for (int q = 0; q < c; ++q) a &= a - 1;
    int v = std::countr_zero(a);
    r[i] = v;
    avail &= ~(1u << v);
  }
}

std::uint64_t encode(const int* r, int j) {
  std::uint64_t index = 0, w = 1;
  std::uint32_t seen = 0;
  for (int i = 0; i < j; ++i) {
    if (i > 0) w *= static_cast<std::uint64_t>(i);
    index += static_cast<std::uint64_t>(std::popcount(seen & ((1u << r[i]) - 1))) * w;
    seen |= 1u << r[i];
  }
  return index;
}

// sigma_j: the low index after swapping positions 0 and j-1.
std::uint64_t swap_low(std::uint64_t low, int j) {
  int r[kMaxN];
  decode(low, j, r);
  std::swap(r[0], r[j - 1]);
  return encode(r, j);
}

struct Refused {
  std::string why;
  SourceLoc loc;
};
struct Stop {};  // a violation that ends the run (a link that does not exist)

using Words = std::vector<std::uint64_t>;

// An integer is node-independent, or (hypercube) my_id XOR v: the only node-dependent value the
// engine admits, and only as the peer of a send or receive.
struct IntV {
  std::int64_t v = 0;
  bool xor_id = false;
};

struct Set {
  std::shared_ptr<const Words> bits;  // nullptr: empty
  bool tainted = false;               // built from a `+` that counted a contribution twice
  bool empty() const { return !bits; }
};

CheckResult result(const char* name, Verdict v, std::string note = "") {
  CheckResult r;
  r.name = name;
  r.verdict = v;
  r.note = std::move(note);
  return r;
}

void violate(CheckResult& r, std::string message) {
  r.verdict = Verdict::Fail;
  ++r.violation_count;
  if (r.violations.size() < 5) {
    Counterexample c;
    c.invariant = r.name;
    c.message = std::move(message);
    r.violations.push_back(std::move(c));
  }
}

class Engine {
 public:
  Engine(const Model& m, const std::string& family, int size, const RunOptions& o)
      : m_(m),
        hyper_(family == "hypercube"),
        ring_(family == "ring"),
        n_(size),
        o_(o),
        N_(hyper_  ? std::uint64_t{1} << size
           : ring_ ? static_cast<std::uint64_t>(size)
                   : fact(size)),
        words_((N_ + 63) / 64) {}

  SymmetricResult run() {
    SymmetricResult out;
    if (m_.header.collective != Collective::Allreduce &&
        !(m_.header.collective == Collective::Allgather && m_.header.layout_any))
      throw Refused{
          "by symmetry collv verifies all-reduce and all-to-all broadcast with `layout "
          "any` (the sets say which contributions a buffer holds, not their order)",
          m_.header.loc};
    if (hyper_ && m_.header.requires_) {
      std::map<std::string, double> env{{"d", n_}, {"p", static_cast<double>(N_)}, {"count", 1}};
      double holds = 0;
      try {
        holds =
            header_value(m_.header, *m_.header.requires_, env, "'requires' on " + topology_spec())
                .approx;
      } catch (const ModelError& e) {
        throw Refused{std::string("its `requires` cannot be evaluated here: ") + e.what(),
                      m_.header.requires_->loc};
      }
      if (holds == 0)
        throw Refused{"the model's `requires` is false on " + topology_spec(),
                      m_.header.requires_->loc};
    }
    if (o_.count != 1 || m_.header.elements)
      throw Refused{"by symmetry collv runs one element per input (--count 1, no `elements`)",
                    m_.header.loc};
    runtime_ = result("runtime", Verdict::Pass);
    nodup_ = result("nodup", m_.header.nodup ? Verdict::Pass : Verdict::NotChecked,
                    m_.header.nodup ? "" : "the model does not claim NODUP (header: nodup no)");
    int in = slot_of(m_.header.input);
    data_[in] = singleton(identity_index());
    bool stopped = false;
    try {
      exec_block(m_.body);
    } catch (const Stop&) {
      stopped = true;
    }
    if (pending_ && !stopped)
      throw Refused{"the program ends with a send that has no receive", pending_loc_};
    out.steps = steps_;
    out.cost_ts = steps_;
    out.cost_tw = tw_;
    out.peak_bytes = peak_;
    finish(out, stopped);
    return out;
  }

 private:
  const Model& m_;
  bool hyper_;  // hypercube:n_ (node x holds x XOR R) instead of star:n_ (pi holds pi R)
  bool ring_;   // ring:n_ (node x holds x + R mod p)
  int n_;
  const RunOptions& o_;
  std::uint64_t N_, words_;
  std::uint64_t live_ = 0, peak_ = 0;  // before every set: the sets' deleters update them
  std::map<int, IntV> ints_;
  std::map<int, Set> data_;
  bool pending_ = false;
  std::int64_t pending_link_ = 0;
  Set pending_value_;
  SourceLoc pending_loc_;
  std::uint32_t steps_ = 0;
  double tw_ = 0;
  std::uint64_t ops_ = 0;
  bool breaking_ = false;
  std::map<int, std::vector<std::uint32_t>> tables_;
  CheckResult runtime_, nodup_;

  // ---- sets ----
  std::shared_ptr<Words> alloc() {
    std::uint64_t bytes = words_ * 8;
    live_ += bytes;
    peak_ = std::max(peak_, live_);
    return std::shared_ptr<Words>(new Words(words_, 0), [this, bytes](Words* w) {
      live_ -= bytes;
      delete w;
    });
  }
  Set singleton(std::uint64_t index) {
    auto w = alloc();
    (*w)[index / 64] |= std::uint64_t{1} << (index % 64);
    return Set{w, false};
  }
  std::uint64_t identity_index() const {
    if (hyper_ || ring_) return 0;
    std::vector<int> h(static_cast<std::size_t>(n_));
    for (int i = 0; i < n_; ++i) h[static_cast<std::size_t>(i)] = i + 1;
    return symmetric_index(h);
  }
  std::uint64_t popcount(const Set& s) const {
    if (s.empty()) return 0;
    std::uint64_t c = 0;
    for (auto w : *s.bits) c += static_cast<std::uint64_t>(std::popcount(w));
    return c;
  }
  const std::vector<std::uint32_t>& table(int j) {
    auto& t = tables_[j];
    if (t.empty()) {
      auto size = fact(j);
      t.resize(size);
      for (std::uint64_t low = 0; low < size; ++low)
        t[low] = static_cast<std::uint32_t>(swap_low(low, j));
    }
    return t;
  }
  // t_j R: every contribution g becomes t_j g (positions 1 and j of g^-1 swapped).
  Set transform(const Set& s, std::int64_t key) {
    if (s.empty()) return s;
    if (ring_) {  // R + b: every contribution r becomes r + b mod p, word by word
      auto out = alloc();
      const auto b = static_cast<std::uint64_t>(key);
      copy_bits(*s.bits, 0, *out, b, N_ - b);
      copy_bits(*s.bits, N_ - b, *out, 0, b);
      return Set{out, s.tainted};
    }
    if (hyper_) {  // c XOR R: every contribution r becomes r XOR c
      auto out = alloc();
      auto c = static_cast<std::uint64_t>(key);
      const Words& in = *s.bits;
      for (std::uint64_t wi = 0; wi < words_; ++wi) {
        std::uint64_t w = in[wi];
        while (w) {
          std::uint64_t t = (wi * 64 + static_cast<std::uint64_t>(std::countr_zero(w))) ^ c;
          w &= w - 1;
          (*out)[t / 64] |= std::uint64_t{1} << (t % 64);
        }
      }
      return Set{out, s.tainted};
    }
    int j = static_cast<int>(key);
    auto out = alloc();
    const Words& in = *s.bits;
    const std::uint64_t block = fact(j);
    const std::vector<std::uint32_t>* tab = j <= kTableMax ? &table(j) : nullptr;
    for (std::uint64_t wi = 0; wi < words_; ++wi) {
      std::uint64_t w = in[wi];
      while (w) {
        std::uint64_t idx = wi * 64 + static_cast<std::uint64_t>(std::countr_zero(w));
        w &= w - 1;
        std::uint64_t high = idx / block, low = idx % block;
        std::uint64_t nl = tab ? (*tab)[low] : swap_low(low, j);
        std::uint64_t t = high * block + nl;
        (*out)[t / 64] |= std::uint64_t{1} << (t % 64);
      }
    }
    return Set{out, s.tainted};
  }

  // ORs len bits of `in` from bit `from` into `out` from bit `to`.
  static void copy_bits(const Words& in, std::uint64_t from, Words& out, std::uint64_t to,
                        std::uint64_t len) {
    while (len > 0) {
      const std::uint64_t k = std::min<std::uint64_t>(
          {len, 64 - from % 64, 64 - to % 64});  // within one word on both sides
      const std::uint64_t mask = k == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << k) - 1;
      const std::uint64_t bits = (in[from / 64] >> (from % 64)) & mask;
      out[to / 64] |= bits << (to % 64);
      from += k;
      to += k;
      len -= k;
    }
  }

  // ---- names ----
  int slot_of(const std::string& name) const {
    for (std::size_t s = 0; s < m_.var_names.size(); ++s)
      if (m_.var_names[s] == name) return static_cast<int>(s);
    throw Refused{"no variable '" + name + "'", m_.header.loc};
  }
  // The node whose contribution index stands for (the representative's view), and its label.
  std::uint64_t origin_id(std::uint64_t index) const {
    if (hyper_ || ring_) return index;
    auto h = symmetric_unindex(index, n_);
    std::vector<int> g(h.size());
    for (std::size_t q = 0; q < h.size(); ++q)
      g[static_cast<std::size_t>(h[q] - 1)] = static_cast<int>(q) + 1;
    return star_rank(g);
  }
  std::string hyper_label(std::uint64_t x) const {
    std::string s(static_cast<std::size_t>(n_), '0');
    for (int i = 0; i < n_; ++i)
      if ((x >> i) & 1) s[static_cast<std::size_t>(n_ - 1 - i)] = '1';
    return s;
  }
  std::string origin_label(std::uint64_t index) const {
    if (ring_) return std::to_string(index);
    if (hyper_) return hyper_label(index);
    auto h = symmetric_unindex(index, n_);
    std::vector<int> g(h.size());
    for (std::size_t i = 0; i < h.size(); ++i)
      g[static_cast<std::size_t>(h[i] - 1)] = static_cast<int>(i) + 1;
    std::string s;
    for (std::size_t i = 0; i < g.size(); ++i) {
      if (n_ >= 10 && i > 0) s += ',';
      s += std::to_string(g[i]);
    }
    return s;
  }
  std::string topology_spec() const {
    return fmt::format("{}:{}", hyper_ ? "hypercube" : ring_ ? "ring" : "star", n_);
  }
  std::string rep_label() const {
    if (ring_) return "0";
    if (hyper_) return hyper_label(0);
    std::string s;
    for (int i = 1; i <= n_; ++i) {
      if (n_ >= 10 && i > 1) s += ',';
      s += std::to_string(i);
    }
    return s;
  }

  // ---- integers ----
  std::int64_t ival(const Expr& e) {
    IntV x = iv(e);
    if (x.xor_id)
      throw Refused{"'" + expr_to_string(e) +
                        "' depends on my_id: by symmetry my_id may only name a peer (my_id XOR c)",
                    e.loc};
    return x.v;
  }
  IntV iv(const Expr& e) {
    switch (e.kind) {
      case ExprKind::Number:
        return {e.value};
      case ExprKind::Name: {
        if (e.slot >= 0) {
          if (m_.var_types[static_cast<std::size_t>(e.slot)] != Type::Int)
            throw Refused{"'" + e.name + "' is not an integer", e.loc};
          auto f = ints_.find(e.slot);
          return f == ints_.end() ? IntV{} : f->second;
        }
        if (!ring_ && e.name == (hyper_ ? "d" : "n")) return {n_};
        if (e.name == "p") return {static_cast<std::int64_t>(N_)};
        if (e.name == "my_id" && hyper_) return {0, true};
        throw Refused{"'" + e.name +
                          "' makes the program node-dependent: by symmetry every node must run "
                          "the same communications",
                      e.loc};
      }
      case ExprKind::Unary: {
        std::int64_t a = ival(*e.args[0]);
        if (e.op == Op::Neg) {
          if (a == INT64_MIN) throw Refused{"integer overflow", e.loc};
          return {-a};
        }
        if (e.op == Op::Not) return {a == 0};
        break;
      }
      case ExprKind::Binary: {
        if (e.op == Op::BitXor) {
          IntV a = iv(*e.args[0]), b = iv(*e.args[1]);
          return {a.v ^ b.v, a.xor_id != b.xor_id};
        }
        if (e.op == Op::And) return {ival(*e.args[0]) != 0 && ival(*e.args[1]) != 0};
        if (e.op == Op::Or) return {ival(*e.args[0]) != 0 || ival(*e.args[1]) != 0};
        std::int64_t a = ival(*e.args[0]), b = ival(*e.args[1]);
        switch (e.op) {
          case Op::Add:
          case Op::Sub:
          case Op::Mul: {
            std::int64_t r = 0;
            bool over = e.op == Op::Add   ? __builtin_add_overflow(a, b, &r)
                        : e.op == Op::Sub ? __builtin_sub_overflow(a, b, &r)
                                          : __builtin_mul_overflow(a, b, &r);
            if (over) throw Refused{"integer overflow", e.loc};
            return {r};
          }
          case Op::Pow:
            if (b < 0 || b > 62 || (a != 2 && b > 0 && (a < 0 || a > 2)))
              throw Refused{"powers are run here as 2^k, 0 <= k <= 62", e.loc};
            return {b == 0 ? 1 : (a == 2 ? std::int64_t{1} << b : a)};
          case Op::BitAnd:
            return {a & b};
          case Op::BitOr:
            return {a | b};
          case Op::IntDiv:
          case Op::Mod:
            if (a < 0 || b <= 0)
              throw Refused{"div and mod are run here on non-negative operands only", e.loc};
            return {e.op == Op::IntDiv ? a / b : a % b};
          case Op::Eq:
            return {a == b};
          case Op::Ne:
            return {a != b};
          case Op::Lt:
            return {a < b};
          case Op::Le:
            return {a <= b};
          case Op::Gt:
            return {a > b};
          case Op::Ge:
            return {a >= b};
          default:
            break;
        }
        break;
      }
      default:
        break;
    }
    throw Refused{"the expression '" + expr_to_string(e) + "' is outside the symmetric engine",
                  e.loc};
  }

  // The generator a send or receive goes through: a star link j (2..n), or a hypercube mask 2^i
  // (`along link i` or `to my_id XOR 2^i`). nullopt: a link the topology does not have.
  std::optional<std::int64_t> generator(const Stmt& s) {
    if (ring_) {  // the offset of the peer: right +1, left -1 (as p - 1)
      const Expr& e = *s.peer;
      if (!s.along_link && e.kind == ExprKind::Name && e.slot < 0 &&
          (e.name == "right" || e.name == "left"))
        return e.name == "right" ? std::int64_t{1} % static_cast<std::int64_t>(N_)
                                 : static_cast<std::int64_t>(N_ - 1);
      throw Refused{"on the ring, by symmetry, the peers are `left` and `right`", s.loc};
    }
    if (s.along_link) {
      std::int64_t link = ival(*s.peer);
      if (hyper_) {
        if (link < 0 || link >= n_) return std::nullopt;
        return std::int64_t{1} << link;
      }
      if (link < 2 || link > n_) return std::nullopt;
      return link;
    }
    if (!hyper_)
      throw Refused{"a peer given as a node id: on the star, by symmetry, sends go `along link`",
                    s.loc};
    IntV x = iv(*s.peer);
    if (!x.xor_id)
      throw Refused{
          "a fixed node id as the peer: every node would talk to the same node, which "
          "is not symmetric",
          s.loc};
    if (x.v <= 0 || x.v >= static_cast<std::int64_t>(N_) || (x.v & (x.v - 1)) != 0)
      throw Refused{
          "a peer my_id XOR c that is not a neighbour (c is not a power of two below "
          "p): outside the engine",
          s.loc};
    return x.v;
  }

  // ---- data ----
  Set dval(const Expr& e) {
    switch (e.kind) {
      case ExprKind::EmptyBuf:
        return Set{};
      case ExprKind::Name:
        if (e.slot < 0 || m_.var_types[static_cast<std::size_t>(e.slot)] != Type::Data)
          throw Refused{"'" + e.name + "' is not a buffer", e.loc};
        return data_[e.slot];
      case ExprKind::Binary:
        if (e.op == Op::Add || e.op == Op::Union)
          return combine(dval(*e.args[0]), dval(*e.args[1]), e.loc);
        break;
      default:
        break;
    }
    throw Refused{"the data expression '" + expr_to_string(e) + "' is outside the symmetric engine",
                  e.loc};
  }

  Set combine(const Set& a, const Set& b, const SourceLoc& loc) {
    if (a.empty()) return b;
    if (b.empty()) return a;
    auto out = alloc();
    bool dup = false;
    std::uint64_t first = 0;
    for (std::uint64_t i = 0; i < words_; ++i) {
      std::uint64_t x = (*a.bits)[i], y = (*b.bits)[i];
      if ((x & y) && !dup) {
        dup = true;
        first = i * 64 + static_cast<std::uint64_t>(std::countr_zero(x & y));
      }
      (*out)[i] = x | y;
    }
    if (dup && m_.header.nodup)
      violate(nodup_, fmt::format("{}: after step {}, node {} combines the contribution of node {} "
                                  "twice (by symmetry every node pi combines pi's image of it "
                                  "twice)",
                                  loc.str(), steps_, rep_label(), origin_label(first)));
    return Set{out, a.tainted || b.tainted || dup};
  }

  // ---- statements ----
  void exec_block(const std::vector<StmtPtr>& body) {
    for (const auto& s : body) {
      if (breaking_) return;
      exec(*s);
    }
  }

  void exec(const Stmt& s) {
    if (++ops_ > o_.max_ops_per_node)
      throw Refused{fmt::format("more than {} statements (--max-ops)", o_.max_ops_per_node), s.loc};
    switch (s.kind) {
      case StmtKind::Assign: {
        if (s.target->kind != ExprKind::Name)
          throw Refused{"assignments to parts of a buffer are outside the symmetric engine", s.loc};
        int slot = s.target->slot;
        if (m_.var_types[static_cast<std::size_t>(slot)] == Type::Int)
          ints_[slot] = iv(*s.value);
        else
          data_[slot] = dval(*s.value);
        return;
      }
      case StmtKind::Send: {
        auto key = generator(s);
        Set v = dval(*s.value);
        if (pending_)
          throw Refused{"two sends without a receive between them: the engine needs exchanges",
                        s.loc};
        if (!key) {
          violate(runtime_,
                  fmt::format("{}: every node sends along link {}, which {} does not "
                              "have (links {})",
                              s.loc.str(), ival(*s.peer), topology_spec(),
                              hyper_ ? fmt::format("0..{}", n_ - 1) : fmt::format("2..{}", n_)));
          throw Stop{};
        }
        pending_ = true;
        pending_link_ = *key;
        pending_value_ = std::move(v);
        pending_loc_ = s.loc;
        return;
      }
      case StmtKind::Receive: {
        if (s.target->kind != ExprKind::Name)
          throw Refused{"receiving into part of a buffer is outside the symmetric engine", s.loc};
        auto key = generator(s);
        // Star and hypercube: the same neighbour (the generators are involutions). Ring: a send
        // to x + a and a receive from x - a, so that every node hears from the node that sent
        // to it.
        const bool paired =
            pending_ && key &&
            (ring_
                 ? (static_cast<std::uint64_t>(pending_link_) + static_cast<std::uint64_t>(*key)) %
                           N_ ==
                       0
                 : pending_link_ == *key);
        if (!paired)
          throw Refused{ring_ ? "this receive is not the second half of a shift (a send to one "
                                "side, then this receive from the other)"
                              : "this receive is not the second half of an exchange (a send to "
                                "the same neighbour, then this receive)",
                        s.loc};
        pending_ = false;
        std::uint64_t items = m_.header.collective == Collective::Allgather
                                  ? popcount(pending_value_)
                                  : (pending_value_.empty() ? 0 : 1);
        Set got = transform(pending_value_, *key);
        pending_value_ = Set{};
        data_[s.target->slot] = std::move(got);
        ++steps_;
        tw_ += static_cast<double>(items);
        if (o_.progress) o_.progress(static_cast<std::uint64_t>(steps_) * N_, steps_);
        return;
      }
      case StmtKind::For: {
        // As the executor: bounds evaluated once, the counter stepped after each iteration (a body
        // that assigns it changes the iterations), and kept after the loop.
        std::int64_t from = ival(*s.value), to = ival(*s.limit);
        ints_[s.var_slot] = IntV{from};
        while (true) {
          IntV& v = ints_[s.var_slot];
          if (v.xor_id) throw Refused{"the loop counter '" + s.var + "' depends on my_id", s.loc};
          if (s.downto ? v.v < to : v.v > to) break;
          if (++ops_ > o_.max_ops_per_node)
            throw Refused{fmt::format("more than {} statements (--max-ops)", o_.max_ops_per_node),
                          s.loc};
          exec_block(s.body);
          if (breaking_) {
            breaking_ = false;
            break;
          }
          IntV& w = ints_[s.var_slot];
          if (w.xor_id) throw Refused{"the loop counter '" + s.var + "' depends on my_id", s.loc};
          if (__builtin_add_overflow(w.v, s.downto ? -1 : 1, &w.v))
            throw Refused{"integer overflow", s.loc};
        }
        return;
      }
      case StmtKind::If:
        exec_block(ival(*s.cond) != 0 ? s.body : s.else_body);
        return;
      case StmtKind::While:
        while (!breaking_ && ival(*s.cond) != 0) {
          if (++ops_ > o_.max_ops_per_node)
            throw Refused{fmt::format("more than {} statements (--max-ops)", o_.max_ops_per_node),
                          s.loc};
          exec_block(s.body);
        }
        breaking_ = false;
        return;
      case StmtKind::Break:
        breaking_ = true;
        return;
      default:
        throw Refused{"arrays and nonblocking statements are outside the symmetric engine", s.loc};
    }
  }

  void finish(SymmetricResult& out, bool stopped) {
    std::map<std::string, double> env{{"p", static_cast<double>(N_)}};
    if (!ring_) env[hyper_ ? "d" : "n"] = n_;
    const Set& o = data_[slot_of(m_.header.output)];
    std::uint64_t held = popcount(o);
    CheckResult post = result("postcondition", Verdict::Pass);
    CheckResult fin = result("final-buffers", Verdict::Pass,
                             "by symmetry node pi ends with pi R, R the representative's output");
    if (stopped) {
      post = result("postcondition", Verdict::NotChecked, "the run did not finish");
      fin = result("final-buffers", Verdict::NotChecked, "the run did not finish");
    } else {
      if (held < N_) {
        std::uint64_t missing = 0;
        for (std::uint64_t i = 0; i < N_; ++i)
          if (o.empty() || !(((*o.bits)[i / 64] >> (i % 64)) & 1)) {
            missing = i;
            break;
          }
        violate(post, fmt::format("node {} ends with {} of {} contributions; node {}'s is missing "
                                  "(by symmetry every node misses as many)",
                                  rep_label(), held, N_, origin_label(missing)));
      } else if (o.tainted) {
        violate(post, fmt::format("node {} ends with a value that counts a contribution twice "
                                  "(see nodup); so does every node",
                                  rep_label()));
      }
      if (held != 0 && held != N_)
        violate(fin, fmt::format("node {} holds {} of {} contributions, and node pi holds pi times "
                                 "them: the outputs of the nodes differ",
                                 rep_label(), held, N_));
      else if (o.tainted)
        fin = result("final-buffers", Verdict::Unknown,
                     "multiplicities are not kept after a NODUP violation");
      if (N_ <= 40320) {
        out.output_origins.assign(N_, false);
        for (std::uint64_t i = 0; i < N_ && !o.empty(); ++i)
          if (((*o.bits)[i / 64] >> (i % 64)) & 1) out.output_origins[origin_id(i)] = true;
      }
    }
    CheckResult steps = result("steps", Verdict::NotChecked, "the model claims no step count");
    if (m_.header.steps && !stopped) {
      // Exact: `steps 2^70 mod 3` is 1.
      HeaderNumber s =
          header_value(m_.header, *m_.header.steps, env, "'steps' on " + topology_spec());
      steps = result("steps", Verdict::Pass);
      Rational ran(BigInt::from_u64(static_cast<std::uint64_t>(steps_)));
      int c = s.exact ? Rational::cmp(ran, s.value) : (steps_ < s.approx ? -1 : 1);
      bool bad = m_.header.steps_at_most ? c > 0 : c != 0;
      if (bad)
        violate(steps,
                fmt::format("the run takes {} steps; the model claims {}{}", steps_,
                            m_.header.steps_at_most ? "at most " : "",
                            s.exact && s.value.bits() <= 64 ? s.value.str()
                                                            : fmt::format("{:.6g}", s.approx)));
    }
    CheckResult cost = result("cost", Verdict::NotChecked, "the model claims no cost formula");
    if (m_.header.cost && !stopped) {
      auto ce = env;
      ce["m"] = 1;
      CostClaim claim = header_cost(m_.header, *m_.header.cost, ce, "'cost' on " + topology_spec());
      double cts = claim.ts.approx, ctw = claim.tw.approx;
      auto near = [](double a, double b) {
        return std::fabs(a - b) <= 1e-6 * std::max(1.0, std::fabs(b));
      };
      auto within = [](double got, double b) { return got <= b + 1e-6 * std::max(1.0, b); };
      bool ok = m_.header.cost_at_most ? within(out.cost_ts, cts) && within(out.cost_tw, ctw)
                                       : near(out.cost_ts, cts) && near(out.cost_tw, ctw);
      cost = result("cost", Verdict::Pass);
      if (!ok)
        violate(cost,
                fmt::format("the run costs {} ts + {} tw m; the model claims {}{} ts + {} tw m",
                            out.cost_ts, out.cost_tw, m_.header.cost_at_most ? "at most " : "", cts,
                            ctw));
    }
    const char* shape = "by the program's shape: every node exchanges along one link per step";
    for (const char* name : kCheckNames) {
      std::string nm = name;
      if (nm == "single-port" || nm == "congestion" || nm == "match" || nm == "deadlock")
        out.checks.push_back(result(name, Verdict::Pass, shape));
      else if (nm == "route")  // every send is checked against the topology's links (runtime)
        out.checks.push_back(
            result(name, Verdict::Pass,
                   fmt::format("every exchange is along a link of {}", topology_spec())));
      else if (nm == "runtime")
        out.checks.push_back(runtime_);
      else if (nm == "nodup")
        out.checks.push_back(nodup_);
      else if (nm == "dataflow")
        out.checks.push_back(
            result(name, Verdict::NotChecked,
                   "the symmetric engine computes contributions, not derivations"));
      else if (nm == "postcondition")
        out.checks.push_back(post);
      else if (nm == "final-buffers")
        out.checks.push_back(fin);
      else if (nm == "steps")
        out.checks.push_back(steps);
      else if (nm == "cost")
        out.checks.push_back(cost);
    }
  }
};

}  // namespace

std::uint64_t symmetric_index(const std::vector<int>& h) {
  int r[kMaxN];
  for (std::size_t i = 0; i < h.size(); ++i) r[i] = h[i] - 1;
  return encode(r, static_cast<int>(h.size()));
}

std::vector<int> symmetric_unindex(std::uint64_t index, int n) {
  int r[kMaxN];
  decode(index, n, r);
  std::vector<int> h(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = r[i] + 1;
  return h;
}

std::uint64_t symmetric_bytes(const Model& m, const std::string& family, int size) {
  bool hyper = family == "hypercube", ring = family == "ring";
  std::uint64_t data_vars = 0;
  for (auto t : m.var_types) data_vars += t == Type::Data;
  std::uint64_t nodes = hyper  ? std::uint64_t{1} << size
                        : ring ? static_cast<std::uint64_t>(size)
                               : fact(size);
  std::uint64_t set = (nodes + 63) / 64 * 8;
  std::uint64_t tables = 0;
  for (int j = 2; !hyper && !ring && j <= std::min(size, kTableMax); ++j) tables += fact(j) * 4;
  // every variable, the value in flight, and two temporaries of an expression
  return (data_vars + 3) * set + tables;
}

SymmetricResult verify_symmetric(const Model& m, const std::string& family, int n,
                                 const RunOptions& o) {
  bool hyper = family == "hypercube", ring = family == "ring";
  if (!hyper && !ring && family != "star")
    throw UsageError("by symmetry collv runs the star, the hypercube and the ring, not " + family);
  if (hyper ? (n < 1 || n > kMaxD) : ring ? (n < 2 || n > kMaxRing) : (n < 2 || n > kMaxN))
    throw UsageError(fmt::format("by symmetry collv runs {}, not {}:{}",
                                 hyper  ? fmt::format("hypercube:1 .. hypercube:{}", kMaxD)
                                 : ring ? fmt::format("ring:2 .. ring:{}", kMaxRing)
                                        : fmt::format("star:2 .. star:{}", kMaxN),
                                 family, n));
  std::uint64_t need = symmetric_bytes(m, family, n);
  if (need > o.max_memory)
    throw LimitError(fmt::format(
        "verifying {} on {}:{} by symmetry needs about {:.1f} GiB for its sets, more than the "
        "memory limit of {:.1f} GiB; raise --max-memory",
        m.header.name, family, n, static_cast<double>(need) / (1 << 30),
        static_cast<double>(o.max_memory) / (1 << 30)));
  try {
    return Engine(m, family, n, o).run();
  } catch (const Refused& r) {
    SymmetricResult out;
    out.refusal = r.why;
    out.refusal_loc = r.loc;
    return out;
  }
}

}  // namespace collv
