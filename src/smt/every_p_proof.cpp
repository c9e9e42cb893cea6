// The proof files of `collv prove --every-p` (see every_p.hpp): `key value` lines, as the other
// proof files, with `invariant` lines that may repeat.
#include <sstream>

#include <fmt/format.h>

#include "smt/every_p.hpp"
#include "util/read_file.hpp"

namespace collv {

EveryPProof parse_every_p_proof_text(const std::string& text, const std::string& path) {
  EveryPProof pf;
  pf.path = path;
  std::istringstream f(text);
  std::string line;
  int no = 0;
  bool kind = false, model = false, expect = false;
  while (std::getline(f, line)) {
    ++no;
    // A comment starts at a '#' that begins a word ('i#2' names the second loop with counter i).
    std::size_t h = 0;
    while ((h = line.find('#', h)) != std::string::npos && h > 0 && line[h - 1] != ' ' &&
           line[h - 1] != '\t')
      ++h;
    if (h != std::string::npos) line = line.substr(0, h);
    std::istringstream is(line);
    std::string key;
    if (!(is >> key)) continue;
    std::string rest;
    std::getline(is, rest);
    auto b = rest.find_first_not_of(" \t");
    auto e = rest.find_last_not_of(" \t\r");
    std::string value = b == std::string::npos ? "" : rest.substr(b, e - b + 1);
    if (value.empty()) throw UsageError(fmt::format("{}:{}: '{}' needs a value", path, no, key));
    auto once = [&](bool& seen) {
      if (seen) throw UsageError(fmt::format("{}:{}: '{}' is given twice", path, no, key));
      seen = true;
    };
    if (key == "kind") {
      once(kind);
      if (value != "every-p")
        throw UsageError(fmt::format("{}:{}: kind must be every-p here, not '{}'", path, no,
                                     value.substr(0, 40)));
    } else if (key == "model") {
      once(model);
      pf.model = value;
    } else if (key == "expect") {
      once(expect);
      if (value != "proved" && value != "disproved" && value != "not-proved")
        throw UsageError(
            fmt::format("{}:{}: expect must be proved, disproved or not-proved", path, no));
      pf.expect = value;
    } else if (key == "invariant") {
      std::istringstream vs(value);
      EveryPInvariant inv;
      inv.line = no;
      vs >> inv.loop >> inv.var;
      std::string third;
      auto pos = vs.tellg();
      vs >> third;
      if (third == "length" || third == "block" || third == "care") {
        inv.part = third;
      } else {
        inv.part = "value";
        vs.clear();
        vs.seekg(pos);
      }
      std::getline(vs, inv.term);
      auto tb = inv.term.find_first_not_of(" \t");
      inv.term = tb == std::string::npos ? "" : inv.term.substr(tb);
      if (inv.loop.empty() || inv.var.empty() || inv.term.empty())
        throw UsageError(fmt::format(
            "{}:{}: invariant needs LOOP VAR [length|block] TERM (e.g. 'invariant i j (mod (- r "
            "i) p)')",
            path, no));
      for (const auto& o : pf.invariants)
        if (o.loop == inv.loop && o.var == inv.var && o.part == inv.part)
          throw UsageError(
              fmt::format("{}:{}: invariant {} {} {} is given twice (first on line {})", path, no,
                          inv.loop, inv.var, inv.part, o.line));
      pf.invariants.push_back(inv);
    } else if (key == "trips" || key == "heard" || key == "split" || key == "witness") {
      // `trips LOOP TERM` (a while loop's trip count), `heard LOOP TERM` (a barrier's knowledge),
      // `split LOOP N` (queries on a while loop's iteration split into k = 0..N-1 and the rest,
      // every_p_xor.cpp), `witness PHASE TERM` (a phased program's rank with the most rounds
      // in a phase, every_p_phases.cpp): kept as invariants of the pseudo-variables #KEY.
      std::istringstream vs(value);
      EveryPInvariant inv;
      inv.line = no;
      inv.part = key;
      inv.var = "#" + key;
      vs >> inv.loop;
      std::getline(vs, inv.term);
      auto tb = inv.term.find_first_not_of(" \t");
      inv.term = tb == std::string::npos ? "" : inv.term.substr(tb);
      if (inv.loop.empty() || inv.term.empty())
        throw UsageError(fmt::format("{}:{}: {} needs LOOP TERM", path, no, key));
      for (const auto& o : pf.invariants)
        if (o.loop == inv.loop && o.var == inv.var)
          throw UsageError(fmt::format("{}:{}: {} {} is given twice (first on line {})", path, no,
                                       key, inv.loop, o.line));
      pf.invariants.push_back(inv);
    } else if (key == "order" || key == "round" || key == "message" || key == "round-after") {
      // A binomial tree's (docs/smt.md): `order TERM` (a rank's place in the waits-for order),
      // `round TERM` (an event's round), `message length|block TERM` (what every message
      // carries), `round-after TERM` (the round of a fan-in's send or receive after its loop):
      // invariants of the pseudo-loop `tree`.
      EveryPInvariant inv;
      inv.line = no;
      inv.loop = "tree";
      inv.var = "#" + key;
      inv.part = key;
      inv.term = value;
      if (key == "message") {
        std::istringstream vs(value);
        vs >> inv.part;
        std::getline(vs, inv.term);
        auto tb = inv.term.find_first_not_of(" \t");
        inv.term = tb == std::string::npos ? "" : inv.term.substr(tb);
        if ((inv.part != "length" && inv.part != "block") || inv.term.empty())
          throw UsageError(fmt::format("{}:{}: message needs length|block TERM", path, no));
      }
      for (const auto& o : pf.invariants)
        if (o.loop == inv.loop && o.var == inv.var && o.part == inv.part)
          throw UsageError(fmt::format("{}:{}: {} {} is given twice (first on line {})", path, no,
                                       key, inv.part, o.line));
      pf.invariants.push_back(inv);
    } else if (key == "cases") {
      // `cases OBLIGATION LO HI TERM` (every_p_xor.cpp): at most 64 values, once per obligation.
      std::istringstream vs(value);
      EveryPProof::Cases c;
      c.line = no;
      std::string lo, hi;
      vs >> c.obligation >> lo >> hi;
      std::getline(vs, c.term);
      auto tb = c.term.find_first_not_of(" \t");
      c.term = tb == std::string::npos ? "" : c.term.substr(tb);
      auto number = [](const std::string& x, long long& v) {
        if (x.empty() || x.size() > 10 || x.find_first_not_of("0123456789") != std::string::npos)
          return false;
        try {
          v = std::stoll(x);
        } catch (...) {
          return false;
        }
        return true;
      };
      if (c.obligation.empty() || !number(lo, c.lo) || !number(hi, c.hi) || c.term.empty() ||
          c.hi < c.lo || c.hi - c.lo > 63)
        throw UsageError(fmt::format(
            "{}:{}: cases needs OBLIGATION LO HI TERM with 0 <= LO <= HI < LO + 64 (e.g. 'cases "
            "consecution-tmp-loop-while 2 31 (clog2 (+ p 1))')",
            path, no));
      for (const auto& o : pf.cases)
        if (o.obligation == c.obligation)
          throw UsageError(fmt::format("{}:{}: cases {} is given twice (first on line {})", path,
                                       no, c.obligation, o.line));
      pf.cases.push_back(c);
    } else if (key == "abstract") {
      // `abstract pof2 OBLIGATION` (every_p_abstract.cpp): once per obligation.
      std::istringstream vs(value);
      EveryPProof::Abstract ab;
      ab.line = no;
      std::string what, extra;
      if (!(vs >> what >> ab.obligation) || what != "pof2" || (vs >> extra))
        throw UsageError(
            fmt::format("{}:{}: abstract needs pof2 OBLIGATION (e.g. 'abstract pof2 "
                        "consecution-tmp-loop-while@path3')",
                        path, no));
      for (const auto& o : pf.abstracts)
        if (o.obligation == ab.obligation)
          throw UsageError(fmt::format("{}:{}: abstract pof2 {} is given twice (first on line {})",
                                       path, no, ab.obligation, o.line));
      pf.abstracts.push_back(ab);
    } else if (key == "receive") {
      // A binomial tree's `receive NAME VAR`: at a receive the proof's terms read NAME as the
      // program's VAR (every_p_tree_terms.cpp).
      std::istringstream vs(value);
      EveryPInvariant inv;
      inv.line = no;
      inv.loop = "tree";
      inv.var = "#receive";
      std::string extra;
      if (!(vs >> inv.part >> inv.term) || (vs >> extra))
        throw UsageError(fmt::format(
            "{}:{}: receive needs NAME VAR, two program variables (e.g. 'receive mask hb')", path,
            no));
      for (const auto& o : pf.invariants)
        if (o.loop == inv.loop && o.var == inv.var && o.part == inv.part)
          throw UsageError(fmt::format("{}:{}: receive {} is given twice (first on line {})", path,
                                       no, inv.part, o.line));
      pf.invariants.push_back(inv);
    } else if (key == "sums") {
      if (value != "sets" || pf.set_sums)
        throw UsageError(fmt::format("{}:{}: sums takes 'sets', once", path, no));
      pf.set_sums = true;
    } else if (key == "chunks") {
      std::istringstream vs(value);
      std::string extra;
      if (!pf.chunk_unit.empty() || !(vs >> pf.chunk_unit >> pf.chunk_index) || (vs >> extra))
        throw UsageError(fmt::format(
            "{}:{}: chunks needs UNIT INDEX, two program variables, once (e.g. 'chunks cs c')",
            path, no));
    } else {
      throw UsageError(
          fmt::format("{}:{}: unknown key '{}' (keys: kind, model, expect, invariant, "
                      "trips, heard, split, cases, abstract, witness, chunks, sums, order, round, "
                      "message, round-after, receive)",
                      path, no, key.substr(0, 40)));
    }
  }
  if (!kind) throw UsageError(path + ": missing 'kind every-p'");
  if (!model) throw UsageError(path + ": missing 'model' (the model the proof is written for)");
  return pf;
}

EveryPProof parse_every_p_proof(const std::string& path) {
  return parse_every_p_proof_text(read_file_bounded(path, std::uint64_t{1} << 20, "a proof file"),
                                  path);
}

}  // namespace collv
