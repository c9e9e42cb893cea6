// Writing a Trace as MSCCL-XML (the `<step>` format the MSCCL/RCCL runtimes execute).
//
// Layout: allgather in place (rank r's input is output chunks r*c .. r*c+c-1, c elements per
// rank, MPI's layout), allreduce in place (chunk k is element k). Every GPU gets one threadblock
// per peer it sends to and one per peer it receives from, all on channel 0, so sends and receives
// match FIFO per (sender, receiver) in the trace's order. Each GPU's events are laid out in the
// trace's step order, sends of a step before its receives (a send reads what the GPU held at the
// end of the previous step). Ordering across threadblocks comes from dependencies: an
// instruction waits for the last write of each chunk it reads or writes in another threadblock,
// and a write waits for every read of the old value in other threadblocks (no race); a
// `<step>` names one dependency, so extra ones go on `nop` steps before it.
//
// An allreduce receive either replaces the chunk (the value received includes everything held:
// `r`) or reduces into it (disjoint contributions: `rrc`); anything else cannot be written in
// MSCCL-XML and is refused. The import of the written file is judged by the same checks, so a
// wrong reading would show as a failed verdict, never as a pass.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "import/import.hpp"
#include "util/error.hpp"

namespace collv {
namespace {

struct Dep {
  int tb = -1, step = -1;
};

struct Instr {
  const char* type;
  int off = 0, cnt = 1;
  Dep dep;  // a `<step>` waits for at most one step of another threadblock (depid, deps)
  bool hasdep = false;
};

struct Tb {
  int send = -1, recv = -1;
  std::vector<Instr> steps;
};

struct Gpu {
  std::vector<Tb> tbs;
  std::map<int, int> send_tb, recv_tb;  // peer -> tb index
  // Per chunk: the last write (tb, step) and the reads since it.
  std::map<int, Dep> last_write;
  std::map<int, std::vector<Dep>> reads;
  int tb_for(bool sending, int peer) {
    auto& m = sending ? send_tb : recv_tb;
    auto it = m.find(peer);
    if (it != m.end()) return it->second;
    Tb tb;
    (sending ? tb.send : tb.recv) = peer;
    tbs.push_back(tb);
    m[peer] = static_cast<int>(tbs.size()) - 1;
    return m[peer];
  }
};

}  // namespace

std::string export_msccl_xml(const Trace& t, const std::string& name) {
  if (t.collective != Collective::Allgather && t.collective != Collective::Allreduce)
    throw UsageError(fmt::format(
        "export --msccl-xml: a {} cannot be written yet (allgather and allreduce can; MSCCL's "
        "alltoall and reduce_scatter layouts are not exported)",
        collective_name(t.collective)));
  if (t.failure.kind != RunFailure::Kind::None)
    throw UsageError("export --msccl-xml: the run did not complete (" + t.failure.message + ")");
  if (!t.unreceived.empty())
    throw UsageError("export --msccl-xml: the schedule has sends that are never received");
  if (!t.domain->inspectable())
    throw UsageError("export --msccl-xml: needs the exact domain (items must show their parts)");
  const Domain& d = *t.domain;
  const auto p = static_cast<int>(t.topology.num_processors());
  const int elems = static_cast<int>(d.elems());
  const bool gather = t.collective == Collective::Allgather;
  const int chunks = gather ? p * elems : elems;

  // The chunk an item lives in, and (allreduce) its contributions.
  auto chunk_of = [&](Item it) -> int {
    auto ts = d.terms_view(it);
    if (ts.empty()) throw UsageError("export --msccl-xml: a transfer carries the identity");
    if (gather) {
      if (ts.size() != 1)
        throw UsageError("export --msccl-xml: an allgather transfer carries a combined item " +
                         d.describe(it));
      return static_cast<int>(ts[0]);  // node * elems + elem: MPI's output position
    }
    int k = static_cast<int>(ts[0] % static_cast<std::uint32_t>(elems));
    for (auto x : ts)
      if (static_cast<int>(x % static_cast<std::uint32_t>(elems)) != k)
        throw UsageError("export --msccl-xml: item " + d.describe(it) + " mixes elements");
    return k;
  };
  auto ranks_of = [&](Item it) {
    std::multiset<std::uint32_t> s;
    for (auto x : d.terms_view(it)) s.insert(x / static_cast<std::uint32_t>(elems));
    return s;
  };

  std::vector<Gpu> g(static_cast<std::size_t>(p));
  // What each GPU's chunks hold (allreduce: which ranks' contributions), to choose r or rrc.
  std::vector<std::vector<std::multiset<std::uint32_t>>> held(
      static_cast<std::size_t>(p), std::vector<std::multiset<std::uint32_t>>(chunks));
  if (!gather)
    for (int r = 0; r < p; ++r)
      for (int k = 0; k < chunks; ++k) held[r][k] = {static_cast<std::uint32_t>(r)};

  auto add = [&](int r, int tbi, Instr in, int chunk, bool writes) {
    Gpu& G = g[static_cast<std::size_t>(r)];
    // The steps of other threadblocks this one waits for; of each threadblock only its latest.
    std::map<int, int> latest;
    auto wait_for = [&](const Dep& x) {
      if (x.tb == tbi) return;
      auto [it, fresh] = latest.emplace(x.tb, x.step);
      if (!fresh) it->second = std::max(it->second, x.step);
    };
    auto w = G.last_write.find(chunk);
    if (w != G.last_write.end()) wait_for(w->second);
    if (writes)
      for (const Dep& rd : G.reads[chunk]) wait_for(rd);
    Tb& tb = G.tbs[static_cast<std::size_t>(tbi)];
    std::vector<Dep> list;
    for (auto [b, s] : latest) {
      list.push_back({b, s});
      G.tbs[static_cast<std::size_t>(b)].steps[static_cast<std::size_t>(s)].hasdep = true;
    }
    // All but the last dependency go on nop steps before the instruction.
    for (std::size_t k = 0; k + 1 < list.size(); ++k) {
      Instr nop;
      nop.type = "nop";
      nop.dep = list[k];
      tb.steps.push_back(nop);
    }
    if (!list.empty()) in.dep = list.back();
    tb.steps.push_back(in);
    Dep me{tbi, static_cast<int>(tb.steps.size()) - 1};
    for (int c = chunk; c < chunk + in.cnt; ++c) {
      if (writes) {
        G.last_write[c] = me;
        G.reads[c].clear();
      } else {
        G.reads[c].push_back(me);
      }
    }
  };

  // Events in step order; per step, every send (reading the state before the step) first.
  std::vector<std::uint32_t> order = t.ordered_transfers();
  std::size_t i = 0;
  while (i < order.size()) {
    std::size_t j = i;
    const std::uint32_t step = t.transfers[order[i]].step;
    while (j < order.size() && t.transfers[order[j]].step == step) ++j;
    for (int phase = 0; phase < 2; ++phase)
      for (std::size_t q = i; q < j; ++q) {
        const Transfer& x = t.transfers[order[q]];
        for (std::uint32_t k = 0; k < x.payload_len; ++k) {
          Item it = t.payload[x.payload_begin + k];
          int c = chunk_of(it);
          Instr in;
          in.off = c;
          if (phase == 0) {
            in.type = "s";
            int r = static_cast<int>(x.src);
            if (!gather && ranks_of(it) != held[x.src][static_cast<std::size_t>(c)])
              throw UsageError(fmt::format(
                  "export --msccl-xml: step {}: gpu {} sends {} from chunk {}, which holds another "
                  "value at that point (the run keeps an older partial result; writing it needs "
                  "scratch buffers, which the exporter does not use)",
                  step, r, d.describe(it), c));
            add(r, g[x.src].tb_for(true, static_cast<int>(x.dst)), in, c, false);
          } else {
            int r = static_cast<int>(x.dst);
            auto got = ranks_of(it);
            auto& mine = held[x.dst][static_cast<std::size_t>(c)];
            bool covers = std::includes(got.begin(), got.end(), mine.begin(), mine.end());
            bool disjoint = true;
            for (auto v : got) disjoint = disjoint && mine.count(v) == 0;
            if (gather || covers) {
              in.type = "r";
              mine = got;
            } else if (disjoint) {
              in.type = "rrc";
              mine.insert(got.begin(), got.end());
            } else {
              throw UsageError(fmt::format(
                  "export --msccl-xml: step {}: gpu {} receives {} into chunk {}, which overlaps "
                  "what it holds without including it: neither a copy nor a reduction",
                  step, r, d.describe(it), c));
            }
            add(r, g[x.dst].tb_for(false, static_cast<int>(x.src)), in, c, true);
          }
        }
      }
    i = j;
  }

  std::string safe;
  for (char ch : name) safe += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  std::string o;
  o += fmt::format(
      "<algo name=\"{}\" proto=\"Simple\" nchannels=\"1\" nchunksperloop=\"{}\" ngpus=\"{}\" "
      "coll=\"{}\" inplace=\"1\" outofplace=\"0\" minBytes=\"0\" maxBytes=\"0\">\n",
      safe, chunks, p, gather ? "allgather" : "allreduce");
  for (int r = 0; r < p; ++r) {
    o += fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"0\">\n", r,
                     gather ? elems : chunks, chunks);
    const Gpu& G = g[static_cast<std::size_t>(r)];
    for (std::size_t b = 0; b < G.tbs.size(); ++b) {
      const Tb& tb = G.tbs[b];
      o += fmt::format("    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"0\">\n", b, tb.send,
                       tb.recv);
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Instr& in = tb.steps[s];
        const Dep& dep = in.dep;
        // In place: allgather's chunks are output chunks, allreduce's input chunks.
        const char* buf = gather ? "o" : "i";
        o += fmt::format(
            "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" "
            "dstoff=\"{}\" cnt=\"{}\" depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
            s, in.type, buf, in.off, buf, in.off, in.cnt, dep.tb, dep.step, in.hasdep ? 1 : 0);
      }
      o += "    </tb>\n";
    }
    o += "  </gpu>\n";
  }
  o += "</algo>\n";
  return o;
}

}  // namespace collv
