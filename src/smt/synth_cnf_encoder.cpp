// The CNF encodings of synthesis: the same constraints as synth_query.cpp's Builder, as clauses,
// with the orbits of an invariance group, the single-port allreduce's compact form, and the uniform
// (symmetric) encoding (synth_cnf_encoder.hpp).
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "smt/synth_cnf_encoder.hpp"

namespace collv::sat::cnf_detail {

Encoder::Encoder(const SynthProblem& p, Cnf& f, bool unpruned)
    : p_(p), f_(f), T_(p.steps), unpruned_(unpruned) {
  // Orbits of the invariance group (acting freely): rep_[x] = the least node of x's orbit and
  // g_[x] = the element that maps x to it. Without a group every node is its own orbit.
  rep_.resize(p_.p);
  g_.assign(p_.p, 0);
  for (std::uint32_t x = 0; x < p_.p; ++x) rep_[x] = x;
  // The action is free, so an element is known by where it sends any one node. inverse[i]: the
  // element j with j(i(0)) = 0, found through the node each element sends to 0.
  std::size_t n = p_.group.size();
  std::vector<std::size_t> sends_to_0(p_.p, SIZE_MAX), inverse(n);
  for (std::size_t j = 0; j < n; ++j)
    for (std::uint32_t z = 0; z < p_.p; ++z)
      if (p_.group[j][z] == 0) sends_to_0[z] = j;
  for (std::size_t i = 0; i < n; ++i) inverse[i] = sends_to_0[p_.group[i][0]];
  for (std::uint32_t x = 0; x < p_.p; ++x) {
    if (rep_[x] != x) continue;
    for (std::size_t i = 0; i < n; ++i) {
      std::uint32_t y = p_.group[i][x];
      if (y == x) continue;
      rep_[y] = x;
      g_[y] = inverse[i];
    }
  }
}

void Encoder::build(bool symmetry, CnfResult& res) {
  if (p_.uniform && p_.kind != SynthKind::Broadcast) {
    res.symmetry_note = "uniform: the symmetric encoding follows node 0 only";
    build_symmetric();
    return;
  }
  // Message variables, one per directed link and step (a repeated neighbour shares it).
  mv_.assign(T_ + 1, {});
  for (unsigned t = 1; t <= T_; ++t) {
    mv_[t].resize(p_.p);
    for (std::uint32_t u = 0; u < p_.p; ++u) {
      auto& row = mv_[t][u];
      for (std::size_t i = 0; i < p_.nbr[u].size(); ++i) {
        std::uint32_t v = p_.nbr[u][i];
        std::size_t first = index_of(u, v);
        if (!is_rep(u))  // the representative's variable (rep_[u] < u: already made)
          row.push_back(M(rep_[u], to_rep(u, v), t));
        else
          row.push_back(first < i ? row[first] : f_.var(fmt::format("m{}_{}_{}", u, v, t)));
      }
    }
  }
  if (p_.single_port)
    for (unsigned t = 1; t <= T_; ++t)
      for (std::uint32_t u = 0; u < p_.p; ++u) {
        if (p_.nbr[u].size() < 2 || !is_rep(u)) continue;
        std::vector<int> out, in;
        for (std::uint32_t v : p_.nbr[u]) {
          out.push_back(M(u, v, t));
          in.push_back(M(v, u, t));
        }
        f_.at_most_one(out);
        f_.at_most_one(in);
      }
  if (p_.uniform) {  // broadcast: every node sends along link l_t in step t
    std::set<int> nums;
    for (auto& row : p_.link_number) nums.insert(row.begin(), row.end());
    for (unsigned t = 1; t <= T_; ++t) {
      std::map<int, int> l;
      std::vector<int> am;
      for (int k : nums) am.push_back(l[k] = f_.var(fmt::format("l{}_{}", t, k)));
      f_.at_most_one(am);
      for (std::uint32_t u = 0; u < p_.p; ++u)
        for (std::size_t i = 0; i < p_.nbr[u].size(); ++i) {
          int m = mv_[t][u][i], li = l[p_.link_number[u][i]];
          f_.add({-m, li});
          f_.add({m, -li});
        }
    }
  }
  if (symmetry && !p_.group.empty()) {
    // The arc argument maps a schedule by an automorphism, which need not keep it invariant
    // under the group: not combined.
    res.symmetry_note = "no symmetry breaking: the schedule is restricted to invariant ones";
  } else if (symmetry && !p_.uniform && T_ >= 1 && p_.p >= 2) {
    std::uint32_t a = p_.kind == SynthKind::Broadcast ? p_.root : 0;
    std::string why;
    if (!p_.nbr[a].empty() &&
        arcs_in_one_orbit(p_.nbr, p_.kind == SynthKind::Broadcast, p_.root, &why)) {
      f_.add({M(a, p_.nbr[a][0], 1)});
      res.symmetry_used = true;
      res.symmetry_note =
          fmt::format("symmetry breaking: {} sends to {} in step 1 ({})", a, p_.nbr[a][0], why);
    } else {
      res.symmetry_note = "no symmetry breaking: " + why;
    }
  }
  switch (p_.kind) {
    case SynthKind::Broadcast:
      gossip_like({p_.root});
      break;
    case SynthKind::Gossip: {
      std::vector<std::uint32_t> all(p_.p);
      for (std::uint32_t c = 0; c < p_.p; ++c) all[c] = c;
      gossip_like(all);
      break;
    }
    case SynthKind::Allreduce:
      if (p_.single_port)
        allreduce_single_port();
      else
        allreduce();
      break;
  }
}

std::uint32_t Encoder::to_rep(std::uint32_t x, std::uint32_t y) const {
  return rep_[x] == x ? y : p_.group[g_[x]][y];
}

std::size_t Encoder::index_of(std::uint32_t u, std::uint32_t v) const {
  const auto& n = p_.nbr[u];
  return static_cast<std::size_t>(std::find(n.begin(), n.end(), v) - n.begin());
}

int Encoder::H(std::uint32_t v, std::uint32_t c, unsigned t) {
  if (!is_rep(v)) return H(rep_[v], to_rep(v, c), t);
  if (v == c) return kTrue;
  if (t == 0 || (p_.dist[c][v] > t && !unpruned_)) return kFalse;
  int& h = hv_[(static_cast<std::size_t>(t) * p_.p + v) * nchunks_ + chunk_index_[c]];
  if (h == 0) {
    h = f_.var(fmt::format("h{}_{}_{}", v, c, t));
    if (p_.dist[c][v] > t) lemma(2 * t + 1, -h);
  }
  return h;
}

void Encoder::gossip_like(const std::vector<std::uint32_t>& chunks) {
  // Each holding variable has at least two literals: refuse before allocating past the cap.
  nchunks_ = chunks.size();
  if (static_cast<std::uint64_t>(T_ + 1) * p_.p * nchunks_ * 2 > f_.cap()) throw CapExceeded{};
  chunk_index_.assign(p_.p, 0);
  for (std::size_t i = 0; i < chunks.size(); ++i) chunk_index_[chunks[i]] = i;
  hv_.assign(static_cast<std::size_t>(T_ + 1) * p_.p * nchunks_, 0);
  std::vector<int> cl;
  for (unsigned t = 1; t <= T_; ++t)
    for (std::uint32_t v = 0; v < p_.p; ++v)
      for (std::uint32_t c : chunks) {
        if (!is_rep(v)) continue;  // its constraints are the representative's, mapped
        int h = H(v, c, t);
        if (h == kTrue || h == kFalse) continue;
        int prev = H(v, c, t - 1);
        cl.assign({-h, prev});
        if (p_.single_port) {
          // At most one message arrives: v gained c only if a message arrived, and whoever
          // sent it held c. No auxiliary variables.
          for (std::uint32_t u : p_.nbr[v]) {
            int hu = H(u, c, t - 1), m = M(u, v, t);
            if (hu != kFalse) cl.push_back(m);
            if (hu != kTrue) f_.add({-h, prev, -m, hu});
          }
        } else {
          for (std::uint32_t u : p_.nbr[v]) cl.push_back(f_.and_pos(M(u, v, t), H(u, c, t - 1)));
        }
        f_.add(cl);
      }
  for (std::uint32_t v = 0; v < p_.p; ++v)
    if (is_rep(v))
      for (std::uint32_t c : chunks) f_.add({H(v, c, T_)});
}

void Encoder::selection(const std::vector<int>& sel,
                        const std::function<int(std::size_t, std::uint32_t)>& atom,
                        const std::function<int(std::uint32_t)>& target, int gate) {
  std::vector<int> zs;
  for (std::uint32_t c = 0; c < p_.p; ++c) {
    int tc = target(c);
    if (tc == kFalse) {  // no selected atom may contain c
      for (std::size_t j = 0; j < sel.size(); ++j) {
        int a = atom(j, c);
        if (a != kFalse) f_.add({-sel[j], -a});
      }
      continue;
    }
    zs.clear();
    for (std::size_t j = 0; j < sel.size(); ++j) {
      int z = f_.and_full(sel[j], atom(j, c));
      if (z == kFalse) continue;
      zs.push_back(z);
      if (tc != kTrue) f_.add({-z, tc});
    }
    std::vector<int> cover{tc == kTrue ? -gate : -tc};
    cover.insert(cover.end(), zs.begin(), zs.end());
    f_.add(cover);
    f_.at_most_one(zs);
  }
}

std::vector<Encoder::Atom> Encoder::atoms(std::uint32_t u, unsigned t) const {
  std::vector<Atom> a{{0, u}};
  for (unsigned tau = 1; tau < t; ++tau)
    for (std::uint32_t w : p_.nbr[u]) a.push_back({tau, w});
  return a;
}

int Encoder::S(std::uint32_t u, std::uint32_t v, std::uint32_t c, unsigned t) {
  if (t == 0 || (p_.dist[c][u] > t - 1 && !unpruned_)) return kFalse;
  auto key = std::make_tuple(u, v, c, t);
  auto it = sv_.find(key);
  if (it != sv_.end()) return it->second;
  int s = f_.var(fmt::format("s{}_{}_{}_{}", u, v, c, t));
  sv_.emplace(key, s);
  if (p_.dist[c][u] > t - 1) lemma(2 * t, -s);
  return s;
}

int Encoder::A(std::uint32_t u, const Atom& a, std::uint32_t c) {
  if (a.tau == 0) return c == u ? kTrue : kFalse;
  return S(a.w, u, c, a.tau);
}

void Encoder::allreduce() {
  for (unsigned t = 1; t <= T_; ++t)
    for (std::uint32_t u = 0; u < p_.p; ++u) {
      auto as = atoms(u, t);
      for (std::size_t i = 0; i < p_.nbr[u].size(); ++i) {
        std::uint32_t v = p_.nbr[u][i];
        if (index_of(u, v) < i) continue;  // a repeated neighbour: the same message
        int m = mv_[t][u][i];
        std::vector<int> sel;
        for (std::size_t j = 0; j < as.size(); ++j) {
          sel.push_back(f_.var(fmt::format("q{}_{}_{}_{}", u, v, t, j)));
          f_.add({-sel.back(), m});
        }
        for (std::uint32_t c = 0; c < p_.p; ++c) S(u, v, c, t);  // names in order
        selection(
            sel, [&](std::size_t j, std::uint32_t c) { return A(u, as[j], c); },
            [&](std::uint32_t c) { return S(u, v, c, t); }, kFalse);
      }
    }
  for (std::uint32_t v = 0; v < p_.p; ++v) {
    auto as = atoms(v, T_ + 1);
    std::vector<int> sel;
    for (std::size_t j = 0; j < as.size(); ++j) sel.push_back(f_.var(fmt::format("f{}_{}", v, j)));
    selection(
        sel, [&](std::size_t j, std::uint32_t c) { return A(v, as[j], c); },
        [](std::uint32_t) { return kTrue; }, kTrue);
  }
}

std::size_t Encoder::cell(unsigned t, std::uint32_t v, std::uint32_t c) const {
  return (static_cast<std::size_t>(t) * p_.p + v) * p_.p + c;
}

int Encoder::X(std::uint32_t u, std::uint32_t c, unsigned t) {
  if (!is_rep(u)) return X(rep_[u], to_rep(u, c), t);
  if (t == 0 || (p_.dist[c][u] > t - 1 && !unpruned_)) return kFalse;
  int& x = xv_[cell(t, u, c)];
  if (x == 0) {
    x = f_.var(fmt::format("x{}_{}_{}", u, c, t));
    if (p_.dist[c][u] > t - 1) lemma(2 * t, -x);
  }
  return x;
}

int Encoder::R(std::uint32_t v, std::uint32_t c, unsigned t) {
  if (!is_rep(v)) return R(rep_[v], to_rep(v, c), t);
  if (t == 0 || (p_.dist[c][v] > t && !unpruned_)) return kFalse;
  int& r = rv_[cell(t, v, c)];
  if (r == 0) {
    r = f_.var(fmt::format("r{}_{}_{}", v, c, t));
    if (p_.dist[c][v] > t) lemma(2 * t + 1, -r);
  }
  return r;
}

int Encoder::atom_sp(std::uint32_t v, unsigned j, std::uint32_t c) {
  if (j == 0) return c == v ? kTrue : kFalse;
  return R(v, c, j);
}

void Encoder::allreduce_single_port() {
  // x and r of every node, step and contribution; each has at least two literals.
  if (static_cast<std::uint64_t>(T_ + 1) * p_.p * p_.p * 2 > f_.cap()) throw CapExceeded{};
  xv_.assign(static_cast<std::size_t>(T_ + 1) * p_.p * p_.p, 0);
  rv_ = xv_;
  std::vector<int> any;
  for (unsigned t = 1; t <= T_; ++t)
    for (std::uint32_t v = 0; v < p_.p; ++v) {
      if (!is_rep(v)) continue;
      for (std::uint32_t c = 0; c < p_.p; ++c) {
        // r <-> OR_u (m(u,v,t) AND x(u,c,t)); at most one m(u,v,t) holds, so no auxiliaries.
        int r = R(v, c, t);
        any.assign({-r});
        for (std::uint32_t u : p_.nbr[v]) {
          int m = M(u, v, t), x = X(u, c, t);
          if (x != kFalse) any.push_back(m);
          f_.add({-r, -m, x});
          f_.add({r, -m, -x});
        }
        f_.add(any);
        // --nodup: what arrives holds no contribution v held before (its input, or an atom
        // received in an earlier step).
        if (p_.nodup) {
          if (c == v) f_.add({-r});
          for (unsigned tau = 1; tau < t; ++tau) f_.add({-r, -R(v, c, tau)});
        }
      }
      // --exchange: v sends to u and receives from w in step t only if u = w.
      if (p_.exchange)
        for (std::uint32_t u : p_.nbr[v])
          for (std::uint32_t w : p_.nbr[v])
            if (u != w) f_.add({-M(v, u, t), -M(w, v, t)});
      std::vector<int> sel;
      for (unsigned j = 0; j < t; ++j) sel.push_back(f_.var(fmt::format("y{}_{}_{}", v, t, j)));
      selection(
          sel, [&](std::size_t j, std::uint32_t c) { return atom_sp(v, j, c); },
          [&](std::uint32_t c) { return X(v, c, t); }, kFalse);
    }
  fsel_.assign(p_.p, {});
  for (std::uint32_t v = 0; v < p_.p; ++v) {
    if (!is_rep(v)) continue;
    for (unsigned j = 0; j <= T_; ++j) fsel_[v].push_back(f_.var(fmt::format("g{}_{}", v, j)));
    selection(
        fsel_[v], [&](std::size_t j, std::uint32_t c) { return atom_sp(v, j, c); },
        [](std::uint32_t) { return kTrue; }, kTrue);
  }
}

std::vector<int> Encoder::lemmas() const {
  auto l = lemmas_;
  std::stable_sort(l.begin(), l.end(), [](auto a, auto b) { return a.first < b.first; });
  std::vector<int> out;
  for (auto [rank, lit] : l) out.push_back(lit);
  return out;
}

bool Encoder::decodes() const {
  return !p_.uniform && (!p_.group.empty() || (p_.kind == SynthKind::Allreduce && p_.single_port));
}

std::map<std::string, std::string> Encoder::decode(const std::function<bool(int)>& val) {
  auto truth = [&](int lit) {
    if (lit == kTrue) return true;
    if (lit == kFalse) return false;
    return val(lit);
  };
  auto name = [](bool b) { return std::string(b ? "true" : "false"); };
  std::map<std::string, std::string> out;
  bool ar = p_.kind == SynthKind::Allreduce;
  for (unsigned t = 1; t <= T_; ++t)
    for (std::uint32_t u = 0; u < p_.p; ++u)
      for (std::uint32_t v : p_.nbr[u]) {
        bool m = truth(M(u, v, t));
        out[fmt::format("m{}_{}_{}", u, v, t)] = name(m);
        if (ar && m)
          for (std::uint32_t c = 0; c < p_.p; ++c)
            out[fmt::format("s{}_{}_{}_{}", u, v, c, t)] = name(truth(X(u, c, t)));
      }
  if (ar)
    for (std::uint32_t v = 0; v < p_.p; ++v) {
      const auto& f = fsel_[rep_[v]];
      out[fmt::format("f{}_0", v)] = name(truth(f[0]));
      std::size_t j = 0;
      for (unsigned tau = 1; tau <= T_; ++tau)
        for (std::uint32_t w : p_.nbr[v])
          out[fmt::format("f{}_{}", v, ++j)] = name(truth(f[tau]) && truth(M(w, v, tau)));
    }
  return out;
}

void Encoder::build_symmetric() {
  std::size_t L = p_.links.size();
  std::vector<std::vector<int>> l(T_ + 1, std::vector<int>(L));
  for (unsigned t = 1; t <= T_; ++t) {
    for (std::size_t k = 0; k < L; ++k) l[t][k] = f_.var(fmt::format("l{}_{}", t, p_.links[k]));
    f_.at_most_one(l[t]);
  }
  if (p_.kind == SynthKind::Gossip) {
    std::vector<std::vector<int>> K(T_ + 1, std::vector<int>(p_.p, kFalse));
    K[0][0] = kTrue;
    for (unsigned t = 1; t <= T_; ++t) {
      K[t][0] = kTrue;
      for (std::uint32_t g = 1; g < p_.p; ++g) K[t][g] = f_.var(fmt::format("k{}_{}", t, g));
      for (std::uint32_t g = 1; g < p_.p; ++g) {
        std::vector<int> cl{-K[t][g], K[t - 1][g]};
        for (std::size_t k = 0; k < L; ++k)
          cl.push_back(f_.and_pos(l[t][k], K[t - 1][p_.lmul[k][g]]));
        f_.add(cl);
      }
    }
    for (std::uint32_t g = 1; g < p_.p; ++g) f_.add({K[T_][g]});
    return;
  }
  // allreduce: atoms of e before step t: j = 0 its input {e}, j = 1..t-1 received R_j.
  std::vector<std::vector<int>> R(T_ + 1, std::vector<int>(p_.p, kFalse));
  for (std::uint32_t g = 0; g < p_.p; ++g) R[0][g] = g == 0 ? kTrue : kFalse;
  for (unsigned t = 1; t <= T_; ++t) {
    std::vector<int> sel;
    for (unsigned j = 0; j < t; ++j) sel.push_back(f_.var(fmt::format("y{}_{}", t, j)));
    std::vector<int> Mt(p_.p);
    for (std::uint32_t g = 0; g < p_.p; ++g) Mt[g] = f_.var(fmt::format("M{}_{}", t, g));
    selection(
        sel, [&](std::size_t j, std::uint32_t g) { return R[j][g]; },
        [&](std::uint32_t g) { return Mt[g]; }, kFalse);
    for (std::uint32_t g = 0; g < p_.p; ++g) {
      int r = R[t][g] = f_.var(fmt::format("r{}_{}", t, g));
      std::vector<int> cl{-r};  // r <-> OR_k (l_k AND M(gen_k g))
      for (std::size_t k = 0; k < L; ++k) {
        int z = f_.and_full(l[t][k], Mt[p_.lmul[k][g]]);
        cl.push_back(z);
        f_.add({-z, r});
      }
      f_.add(cl);
    }
  }
  std::vector<int> fsel;
  for (unsigned j = 0; j <= T_; ++j) fsel.push_back(f_.var(fmt::format("f{}", j)));
  selection(
      fsel, [&](std::size_t j, std::uint32_t g) { return R[j][g]; },
      [](std::uint32_t) { return kTrue; }, kTrue);
}

}  // namespace collv::sat::cnf_detail
