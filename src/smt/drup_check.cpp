// A forward RUP checker of DRUP proofs: re-checks CaDiCaL's unsat answers without drat-trim
// (check_drup_proof, synth_cnf.hpp).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "smt/synth_cnf.hpp"

namespace collv::sat {

namespace {

class Rup {
 public:
  void ensure(int var) {
    if (static_cast<std::size_t>(var) >= val_.size()) {
      val_.resize(static_cast<std::size_t>(var) + 1, 0);
      watches_.resize(2 * (static_cast<std::size_t>(var) + 1));
    }
  }
  // Adds a clause at the top level (after a successful check); returns false on a conflict.
  bool add(std::vector<int> c) {
    if (conflict_) return false;
    for (int l : c) ensure(std::abs(l));
    // Non-false literals first.
    std::stable_partition(c.begin(), c.end(), [&](int l) { return value(l) >= 0; });
    if (c.empty() || value(c[0]) < 0) return !(conflict_ = true);
    if (c.size() == 1 || value(c[1]) < 0) {
      if (value(c[0]) == 0) {
        assign(c[0]);
        if (!propagate()) return !(conflict_ = true);
      }
      if (c.size() == 1) return true;
    }
    std::size_t id = clauses_.size();
    clauses_.push_back(std::move(c));
    watches_[idx(-clauses_[id][0])].push_back(id);
    watches_[idx(-clauses_[id][1])].push_back(id);
    return true;
  }
  // Is c a reverse-unit-propagation consequence of the clauses added so far?
  bool rup(const std::vector<int>& c) {
    if (conflict_) return true;
    for (int l : c) ensure(std::abs(l));
    std::size_t mark = trail_.size();
    bool ok = false;
    for (int l : c) {
      if (value(l) > 0) {
        ok = true;
        break;
      }
      if (value(l) == 0) assign(-l);
    }
    if (!ok) ok = !propagate();
    while (trail_.size() > mark) {
      val_[static_cast<std::size_t>(std::abs(trail_.back()))] = 0;
      trail_.pop_back();
    }
    qhead_ = mark;
    return ok;
  }
  bool conflict() const { return conflict_; }

 private:
  static std::size_t idx(int lit) {
    return 2 * static_cast<std::size_t>(std::abs(lit)) + (lit < 0 ? 1 : 0);
  }
  int value(int lit) const {
    int v = val_[static_cast<std::size_t>(std::abs(lit))];
    return lit < 0 ? -v : v;
  }
  void assign(int lit) {
    val_[static_cast<std::size_t>(std::abs(lit))] = lit > 0 ? 1 : -1;
    trail_.push_back(lit);
  }
  // Unit propagation; false on a conflict. watches_[idx(x)]: clauses watching -x, visited when x
  // becomes true.
  bool propagate() {
    while (qhead_ < trail_.size()) {
      int x = trail_[qhead_++];
      auto& ws = watches_[idx(x)];
      std::size_t keep = 0;
      bool confl = false;
      for (std::size_t i = 0; i < ws.size(); ++i) {
        std::size_t id = ws[i];
        if (confl) {
          ws[keep++] = id;
          continue;
        }
        auto& c = clauses_[id];
        if (c[0] == -x) std::swap(c[0], c[1]);
        if (value(c[0]) > 0) {
          ws[keep++] = id;
          continue;
        }
        bool moved = false;
        for (std::size_t k = 2; k < c.size(); ++k)
          if (value(c[k]) >= 0) {
            std::swap(c[1], c[k]);
            watches_[idx(-c[1])].push_back(id);
            moved = true;
            break;
          }
        if (moved) continue;
        ws[keep++] = id;
        if (value(c[0]) < 0)
          confl = true;
        else
          assign(c[0]);
      }
      ws.resize(keep);
      if (confl) return false;
    }
    return true;
  }

  std::vector<std::vector<int>> clauses_;
  std::vector<std::vector<std::size_t>> watches_;
  std::vector<int> val_{0};
  std::vector<int> trail_;
  std::size_t qhead_ = 0;
  bool conflict_ = false;
};

}  // namespace

ProofCheck check_drup_proof(const std::string& cnf_file, const std::string& proof_file) {
  ProofCheck pc;
  std::ifstream cnf(cnf_file);
  if (!cnf) {
    pc.message = "cannot read " + cnf_file;
    return pc;
  }
  Rup rup;
  std::string line;
  std::vector<int> c;
  bool header = false;
  while (std::getline(cnf, line)) {
    if (line.empty() || line[0] == 'c') continue;
    if (line[0] == 'p') {
      header = true;
      continue;
    }
    std::istringstream in(line);
    for (int lit; in >> lit;) {
      if (lit != 0) {
        c.push_back(lit);
        continue;
      }
      rup.add(c);
      c.clear();
    }
  }
  if (!header || !c.empty()) {
    pc.message = cnf_file + ": not a DIMACS CNF";
    return pc;
  }
  std::ifstream pf(proof_file);
  if (!pf) {
    pc.message = "cannot read " + proof_file;
    return pc;
  }
  while (std::getline(pf, line)) {
    if (line.empty() || line[0] == 'c') continue;
    bool del = line[0] == 'd';
    std::istringstream in(del ? line.substr(1) : line);
    for (int lit; in >> lit;) {
      if (lit != 0) {
        c.push_back(lit);
        continue;
      }
      if (!del) {
        ++pc.lemmas;
        if (!rup.rup(c)) {
          std::string s;
          for (int l : c) s += fmt::format("{} ", l);
          pc.message = fmt::format("{}: lemma {} ({}0) is not implied by unit propagation",
                                   proof_file, pc.lemmas, s);
          return pc;
        }
        rup.add(c);
      }
      c.clear();
    }
    if (in.fail() && !in.eof()) {
      pc.message = proof_file + ": not a text DRAT proof (binary?)";
      return pc;
    }
  }
  if (!rup.conflict()) {
    pc.message = proof_file + ": the proof does not derive the empty clause";
    return pc;
  }
  pc.ok = true;
  pc.message = fmt::format("{} lemmas checked, the empty clause is derived", pc.lemmas);
  return pc;
}

}  // namespace collv::sat
