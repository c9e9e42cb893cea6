// Writing a Trace as MSCCL-XML (the `<step>` format the MSCCL/RCCL runtimes execute), a file
// that msccl-executor-nccl (or microsoft/msccl) loads: every attribute its loader reads, steps
// and counts within its limits, threadblocks spread over channels within the per-channel limit.
//
// Layout: allgather (rank r's input is output chunks r*c .. r*c+c-1, c elements per rank, MPI's
// layout) and allreduce (chunk k is element k), in place or out of place. Out of place, a local
// threadblock first copies the input into the output and everything after works on the output.
// Every GPU gets one threadblock per peer it sends to and one per peer it receives from; the pair
// (r, q) talks on channel ((q - r) mod p - 1) / 32, so no channel has more than 32 threadblocks
// with a send (receive) peer. Sends and receives match FIFO per (sender, receiver, channel) in the
// trace's order. Each transfer's items, sorted by chunk, become one instruction per run of
// contiguous chunks of the same kind (cnt up to MSCCL_MAX_COUNT - 1). Each GPU's instructions are
// laid out in the trace's step order, sends of a step before its receives (a send reads what the
// GPU held at the end of the previous step). Ordering across threadblocks comes from
// dependencies: an instruction waits for the last write of each chunk it reads or writes in
// another threadblock, and a write waits for every read of the old value in other threadblocks
// (no race); a `<step>` names one dependency, so extra ones go on `nop` steps before it.
//
// An allreduce receive either replaces the chunk (the value received includes everything held:
// `r`) or reduces into it (disjoint contributions: `rrc`); anything else cannot be written in
// MSCCL-XML and is refused. A threadblock over MSCCL_MAX_NUM_STEPS steps is refused with the
// reason. The import of the written file is judged by the same checks, the runtime's loading
// rules included, so a wrong reading would show as a failed verdict, never as a pass.
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
  const char* sbuf = "o";
  const char* dbuf = "o";
  int soff = 0, doff = 0, cnt = 1;
  Dep dep;  // a `<step>` waits for at most one step of another threadblock (depid, deps)
  bool hasdep = false;
};

struct Tb {
  int send = -1, recv = -1, chan = 0;
  std::vector<Instr> steps;
};

struct Gpu {
  std::vector<Tb> tbs;
  std::map<std::pair<int, int>, int> send_tb, recv_tb;  // (peer, channel) -> tb index
  // Per chunk: the last write (tb, step) and the reads since it.
  std::map<int, Dep> last_write;
  std::map<int, std::vector<Dep>> reads;
  int tb_for(bool sending, int peer, int chan) {
    auto& m = sending ? send_tb : recv_tb;
    auto it = m.find({peer, chan});
    if (it != m.end()) return it->second;
    Tb tb;
    (sending ? tb.send : tb.recv) = peer;
    tb.chan = chan;
    tbs.push_back(tb);
    m[{peer, chan}] = static_cast<int>(tbs.size()) - 1;
    return m[{peer, chan}];
  }
};

// The runtime's limits the file is written within (docs/formats.md, "The runtime check").
struct Limits {
  int max_steps, max_count, per_channel, max_tbs;
};

}  // namespace

std::string export_msccl_xml(const Trace& t, const std::string& name,
                             const MscclExportOptions& opts) {
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
  const bool msccl = opts.runtime == MscclRuntime::Msccl;
  const Limits lim{msccl ? 256 : 64, 72, 32, msccl ? 216 : 1024};
  const Domain& d = *t.domain;
  const auto p = static_cast<int>(t.topology.num_processors());
  const int elems = static_cast<int>(d.elems());
  const bool gather = t.collective == Collective::Allgather;
  const int chunks = gather ? p * elems : elems;
  // In place: allgather's chunks are output chunks, allreduce's input chunks. Out of place: the
  // output, after the input is copied into it.
  const char* buf = opts.out_of_place || gather ? "o" : "i";

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
  // The channel of the connection src -> dst: at most 32 peers of a GPU per channel and
  // direction.
  auto channel = [&](int src, int dst) {
    return (((dst - src) % p + p) % p - 1) / lim.per_channel;
  };

  std::vector<Gpu> g(static_cast<std::size_t>(p));
  // What each GPU's chunks hold (allreduce: which ranks' contributions), to choose r or rrc.
  std::vector<std::vector<std::multiset<std::uint32_t>>> held(
      static_cast<std::size_t>(p), std::vector<std::multiset<std::uint32_t>>(chunks));
  if (!gather)
    for (int r = 0; r < p; ++r)
      for (int k = 0; k < chunks; ++k) held[r][k] = {static_cast<std::uint32_t>(r)};

  // Appends an instruction on chunks [chunk, chunk + in.cnt) of gpu r's threadblock tbi.
  auto add = [&](int r, int tbi, Instr in, int chunk, bool writes) {
    Gpu& G = g[static_cast<std::size_t>(r)];
    // The steps of other threadblocks this one waits for; of each threadblock only its latest.
    std::map<int, int> latest;
    auto wait_for = [&](const Dep& x) {
      if (x.tb == tbi) return;
      auto [it, fresh] = latest.emplace(x.tb, x.step);
      if (!fresh) it->second = std::max(it->second, x.step);
    };
    for (int c = chunk; c < chunk + in.cnt; ++c) {
      auto w = G.last_write.find(c);
      if (w != G.last_write.end()) wait_for(w->second);
      if (writes)
        for (const Dep& rd : G.reads[c]) wait_for(rd);
    }
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
      nop.cnt = 0;
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

  // Out of place: a local threadblock copies the input into the output first.
  if (opts.out_of_place)
    for (int r = 0; r < p; ++r) {
      Gpu& G = g[static_cast<std::size_t>(r)];
      G.tbs.push_back(Tb{});
      const int base = gather ? r * elems : 0;
      for (int k = 0; k < elems; k += lim.max_count - 1) {
        Instr in;
        in.type = "cpy";
        in.sbuf = "i";
        in.soff = k;
        in.dbuf = "o";
        in.doff = base + k;
        in.cnt = std::min(lim.max_count - 1, elems - k);
        add(r, 0, in, base + k, true);
      }
    }

  // Events in step order; per step, every send (reading the state before the step) first.
  std::vector<std::uint32_t> order = t.ordered_transfers();
  std::size_t i = 0;
  struct Group {
    int chunk, cnt;
    const char* recv_type;
  };
  while (i < order.size()) {
    std::size_t j = i;
    const std::uint32_t step = t.transfers[order[i]].step;
    while (j < order.size() && t.transfers[order[j]].step == step) ++j;
    // Each transfer's items by chunk (stable: a chunk received twice keeps its order).
    std::vector<std::vector<std::pair<int, Item>>> items(j - i);
    for (std::size_t q = i; q < j; ++q) {
      const Transfer& x = t.transfers[order[q]];
      for (std::uint32_t k = 0; k < x.payload_len; ++k) {
        Item it = t.payload[x.payload_begin + k];
        items[q - i].emplace_back(chunk_of(it), it);
      }
      std::stable_sort(items[q - i].begin(), items[q - i].end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      // A send carries what the chunk holds before the step.
      if (!gather)
        for (const auto& [c, it] : items[q - i])
          if (ranks_of(it) != held[x.src][static_cast<std::size_t>(c)])
            throw UsageError(fmt::format(
                "export --msccl-xml: step {}: gpu {} sends {} from chunk {}, which holds another "
                "value at that point (the run keeps an older partial result; writing it needs "
                "scratch buffers, which the exporter does not use)",
                step, x.src, d.describe(it), c));
    }
    // How each item is received (r or rrc), in that order; then the runs of contiguous chunks
    // received alike, which are one instruction on both sides.
    std::vector<std::vector<Group>> groups(j - i);
    for (std::size_t q = i; q < j; ++q) {
      const Transfer& x = t.transfers[order[q]];
      for (const auto& [c, it] : items[q - i]) {
        const char* type = "r";
        if (!gather) {
          auto got = ranks_of(it);
          auto& mine = held[x.dst][static_cast<std::size_t>(c)];
          bool covers = std::includes(got.begin(), got.end(), mine.begin(), mine.end());
          bool disjoint = true;
          for (auto v : got) disjoint = disjoint && mine.count(v) == 0;
          if (covers) {
            mine = got;
          } else if (disjoint) {
            type = "rrc";
            mine.insert(got.begin(), got.end());
          } else {
            throw UsageError(fmt::format(
                "export --msccl-xml: step {}: gpu {} receives {} into chunk {}, which overlaps "
                "what it holds without including it: neither a copy nor a reduction",
                step, x.dst, d.describe(it), c));
          }
        }
        auto& gs = groups[q - i];
        if (!gs.empty() && gs.back().chunk + gs.back().cnt == c && gs.back().recv_type == type &&
            gs.back().cnt < lim.max_count - 1)
          ++gs.back().cnt;
        else
          gs.push_back({c, 1, type});
      }
    }
    for (int phase = 0; phase < 2; ++phase)
      for (std::size_t q = i; q < j; ++q) {
        const Transfer& x = t.transfers[order[q]];
        const int src = static_cast<int>(x.src), dst = static_cast<int>(x.dst);
        const int chan = channel(src, dst);
        for (const Group& gr : groups[q - i]) {
          Instr in;
          in.sbuf = in.dbuf = buf;
          in.soff = in.doff = gr.chunk;
          in.cnt = gr.cnt;
          if (phase == 0) {
            in.type = "s";
            add(src, g[x.src].tb_for(true, dst, chan), in, gr.chunk, false);
          } else {
            in.type = gr.recv_type;
            add(dst, g[x.dst].tb_for(false, src, chan), in, gr.chunk, true);
          }
        }
      }
    i = j;
  }

  // The runtime's limits: refused with the reason rather than written to be refused.
  int nchannels = 1;
  for (int r = 0; r < p; ++r) {
    const Gpu& G = g[static_cast<std::size_t>(r)];
    if (static_cast<int>(G.tbs.size()) > lim.max_tbs)
      throw UsageError(fmt::format(
          "export --msccl-xml: gpu {} needs {} threadblocks; MSCCL_MAX_NUM_THREAD_BLOCKS is {} in "
          "{}",
          r, G.tbs.size(), lim.max_tbs, msccl_runtime_name(opts.runtime)));
    for (const Tb& tb : G.tbs) {
      nchannels = std::max(nchannels, tb.chan + 1);
      if (static_cast<int>(tb.steps.size()) > lim.max_steps)
        throw UsageError(fmt::format(
            "export --msccl-xml: gpu {}'s threadblock {} {} needs {} steps (its chunks do not "
            "merge into fewer); MSCCL_MAX_NUM_STEPS is {} in {}{}",
            r,
            tb.send >= 0   ? "sending to"
            : tb.recv >= 0 ? "receiving from"
                           : "copying",
            tb.send >= 0   ? tb.send
            : tb.recv >= 0 ? tb.recv
                           : r,
            tb.steps.size(), lim.max_steps, msccl_runtime_name(opts.runtime),
            msccl ? "" : " (--msccl-runtime msccl allows 256)"));
    }
  }
  if (nchannels > 32)
    throw UsageError(
        fmt::format("export --msccl-xml: {} gpus need {} channels of 32 peers; the runtime has 32",
                    p, nchannels));

  std::string safe;
  for (char ch : name) safe += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  std::string o;
  o += fmt::format(
      "<algo name=\"{}\" proto=\"Simple\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" "
      "coll=\"{}\" inplace=\"{}\" outofplace=\"{}\" minBytes=\"0\" maxBytes=\"0\">\n",
      safe, nchannels, chunks, p, gather ? "allgather" : "allreduce", opts.out_of_place ? 0 : 1,
      opts.out_of_place ? 1 : 0);
  for (int r = 0; r < p; ++r) {
    o += fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"0\">\n", r,
                     gather ? elems : chunks, chunks);
    const Gpu& G = g[static_cast<std::size_t>(r)];
    for (std::size_t b = 0; b < G.tbs.size(); ++b) {
      const Tb& tb = G.tbs[b];
      o += fmt::format("    <tb id=\"{}\" send=\"{}\" recv=\"{}\" chan=\"{}\">\n", b, tb.send,
                       tb.recv, tb.chan);
      for (std::size_t s = 0; s < tb.steps.size(); ++s) {
        const Instr& in = tb.steps[s];
        const Dep& dep = in.dep;
        o += fmt::format(
            "      <step s=\"{}\" type=\"{}\" srcbuf=\"{}\" srcoff=\"{}\" dstbuf=\"{}\" "
            "dstoff=\"{}\" cnt=\"{}\" depid=\"{}\" deps=\"{}\" hasdep=\"{}\"/>\n",
            s, in.type, in.sbuf, in.soff, in.dbuf, in.doff, in.cnt, dep.tb, dep.step,
            in.hasdep ? 1 : 0);
      }
      o += "    </tb>\n";
    }
    o += "  </gpu>\n";
  }
  o += "</algo>\n";
  return o;
}

}  // namespace collv
