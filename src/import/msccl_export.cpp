// Writing a Trace as MSCCL-XML (the `<step>` format the MSCCL/RCCL runtimes execute), a file
// that msccl-executor-nccl (or microsoft/msccl) loads: every attribute its loader reads, steps
// and counts within its limits, threadblocks spread over channels within the per-channel limit.
//
// Collectives: allgather, allreduce, reduce_scatter, alltoall, broadcast and reduce, the ones
// both runtimes load and collv replays (docs/formats.md), in place or out of place, with the
// buffers laid out as the runtime's callers lay them out (MPI's layout; expected_outputs).
//
// Where a chunk lives. Without reduction (allgather, alltoall, broadcast) a chunk is one input
// element x{j}.{e}: on its owner it starts in the input (allgather in place: the output at r*c+e);
// on a GPU whose output holds it, it is received into that output position; anywhere else (an
// intermediate hop of Bruck's alltoall, say) into a scratch chunk of its own. With reduction
// (allreduce, reduce_scatter, reduce) a chunk is an element k: every GPU starts with its
// contribution in i[k], and the first receive moves it to the element's home (the output
// position, or scratch where the GPU's output does not hold k or must not be written: a reduce's
// non-roots, an out-of-place reduce_scatter's other blocks), reducing (`rrc`, src = where it is,
// dst = home) or replacing (`r`). At the end, every output position not yet holding its value is
// copied there by a local threadblock (out of place: allgather's own block, a broadcast root).
//
// Every GPU gets one threadblock per (peer, channel) it sends to and one per (peer, channel) it
// receives from; the pair (r, q) talks on channel ((q - r) mod p - 1) / 32, so no channel has
// more than 32 threadblocks with a send (receive) peer. When a threadblock needs more than
// MSCCL_MAX_NUM_STEPS steps, the n-th transfer of a pair goes to the (n mod k)-th set of those
// channels, k = 2, 3, ... as long as the channels stay within the runtime's 32 (MAXCHANNELS):
// each threadblock then has about 1/k of the steps. Sends and receives match FIFO per (sender,
// receiver, channel) in the trace's order. Each transfer's items, sorted by where they are read,
// become one instruction per run contiguous on both sides (cnt up to MSCCL_MAX_COUNT - 1). Each
// GPU's instructions are laid out in the trace's step order, sends of a step before its receives
// (a send reads what the GPU held at the end of the previous step). Ordering across threadblocks
// comes from dependencies: an instruction waits for the last write of each chunk it reads or
// writes in another threadblock, and a write waits for every read of the old value in other
// threadblocks (no race); a `<step>` names one dependency, so extra ones go on `nop` steps.
//
// Values kept for later sends: every GPU's values (a key and whose contributions it holds) are
// followed with the number of their sends still to come. A receive whose destination holds a
// value still to be sent goes to a fresh scratch chunk; a value received whole that is also sent
// on later is received into scratch and added to the GPU's sum by a local `re` (after a `cpy`
// when the sum moves), as the star all-reduce forwards what it receives.
//
// Refused with the reason (UsageError, exit 2): a collective the runtimes have no layout for, a
// send of a value the GPU never stored, a receive that is neither a copy nor a reduction, and
// every limit: steps per threadblock after splitting over channels,
// threadblocks per GPU, XML nodes per rank. The import of the written file is judged by the same
// checks, the runtime's loading rules included, so a wrong reading would show as a failed
// verdict, never as a pass.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "check/checks.hpp"
#include "import/import.hpp"
#include "util/error.hpp"

namespace collv {
namespace {

constexpr int kIn = 0, kOut = 1, kScr = 2;
constexpr int kShift = 24;  // a location is buf << kShift | offset
int loc_of(int buf, int off) { return (buf << kShift) | off; }
int buf_of(int loc) { return loc >> kShift; }
int off_of(int loc) { return loc & ((1 << kShift) - 1); }
const char* buf_name(int loc) {
  static const char* names[] = {"i", "o", "s"};
  return names[buf_of(loc)];
}

struct Dep {
  int tb = -1, step = -1;
};

struct Instr {
  const char* type;
  int src = 0, dst = 0, cnt = 1;  // locations
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
  int local_tb = -1;
  // Per location: the last write (tb, step) and the reads since it.
  std::map<int, Dep> last_write;
  std::map<int, std::vector<Dep>> reads;
  int scratch = 0;  // scratch chunks used
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
  int local() {
    if (local_tb < 0) {
      tbs.push_back(Tb{});
      local_tb = static_cast<int>(tbs.size()) - 1;
    }
    return local_tb;
  }
};

// The runtime's limits the file is written within (docs/formats.md, "The runtime check").
struct Limits {
  int max_steps, max_count, per_channel, max_tbs, max_channels, max_nodes;
};

struct Layout {
  const char* coll;  // as the chosen runtime names it
  bool reduces;
  int in_chunks, out_chunks, nchunksperloop;
};

// Appends an instruction reading `reads` and writing `writes` on gpu G's threadblock tbi, after
// the dependencies that order it with the other threadblocks.
void add(Gpu& G, int tbi, Instr in, const std::vector<int>& reads, const std::vector<int>& writes) {
  std::map<int, int> latest;  // of each other threadblock, the latest step waited for
  auto wait_for = [&](const Dep& x) {
    if (x.tb == tbi) return;
    auto [it, fresh] = latest.emplace(x.tb, x.step);
    if (!fresh) it->second = std::max(it->second, x.step);
  };
  for (const auto* v : {&reads, &writes})
    for (int c : *v) {
      auto w = G.last_write.find(c);
      if (w != G.last_write.end()) wait_for(w->second);
    }
  for (int c : writes)
    for (const Dep& rd : G.reads[c]) wait_for(rd);
  Tb& tb = G.tbs[static_cast<std::size_t>(tbi)];
  std::vector<Dep> list;
  for (auto [b, s] : latest) {
    list.push_back({b, s});
    G.tbs[static_cast<std::size_t>(b)].steps[static_cast<std::size_t>(s)].hasdep = true;
  }
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
  for (int c : reads) G.reads[c].push_back(me);
  for (int c : writes) {
    G.last_write[c] = me;
    G.reads[c].clear();
  }
}

std::vector<int> range(int loc, int cnt) {
  std::vector<int> v;
  for (int k = 0; k < cnt; ++k) v.push_back(loc + k);
  return v;
}

// The instructions of every GPU for the trace, with the n-th transfer of a pair on the
// (n mod sets)-th set of channels.
std::vector<Gpu> build(const Trace& t, const Layout& L, const MscclExportOptions& opts,
                       const Limits& lim, int sets) {
  const Domain& d = *t.domain;
  const auto p = static_cast<int>(t.topology.num_processors());
  const int elems = static_cast<int>(d.elems());
  const Collective coll = t.collective;
  const bool inplace = !opts.out_of_place;
  const int c = (coll == Collective::ReduceScatter || coll == Collective::Alltoall)
                    ? elems / p
                    : elems;  // chunks per rank (block)
  const int nbase = (p - 2) / lim.per_channel + 1;

  // The output each GPU must end with (MPI's layout), and where output position q lives.
  std::vector<std::optional<Buffer>> want = expected_outputs(t);
  auto home_of_pos = [&](int r, int q) {
    if (!inplace) return loc_of(kOut, q);
    if (coll == Collective::Allgather) return loc_of(kOut, q);
    if (coll == Collective::ReduceScatter) return loc_of(kIn, r * c + q);
    return loc_of(kIn, q);
  };
  // The key of an item: the element (with reduction) or the input term (without).
  std::vector<std::uint32_t> terms_buf;
  auto key_of = [&](Item it) -> int {
    auto ts = d.terms_into(it, terms_buf);
    if (ts.empty()) throw UsageError("export --msccl-xml: a transfer carries the identity");
    if (!L.reduces) {
      if (ts.size() != 1)
        throw UsageError(fmt::format("export --msccl-xml: a {} transfer carries a combined item {}",
                                     collective_name(coll), d.describe(it)));
      return static_cast<int>(ts[0]);
    }
    int k = static_cast<int>(ts[0] % static_cast<std::uint32_t>(elems));
    for (auto x : ts)
      if (static_cast<int>(x % static_cast<std::uint32_t>(elems)) != k)
        throw UsageError("export --msccl-xml: item " + d.describe(it) + " mixes elements");
    return k;
  };
  auto ranks_of = [&](Item it) {
    std::multiset<std::uint32_t> s;
    for (auto x : d.terms_into(it, terms_buf)) s.insert(x / static_cast<std::uint32_t>(elems));
    return s;
  };
  // Per GPU: key -> output position (where the GPU's output holds it).
  std::vector<std::map<int, int>> out_pos(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    if (!want[r]) continue;
    const Buffer& w = *want[r];
    for (std::size_t q = 0; q < w.size(); ++q) {
      int key = L.reduces ? static_cast<int>(q) + (coll == Collective::ReduceScatter ? r * c : 0)
                          : key_of(w[q]);
      out_pos[r][key] = static_cast<int>(q);
    }
  }

  // A value: a key and, with reduction, whose contributions it holds (one per key without).
  using Value = std::pair<int, std::multiset<std::uint32_t>>;
  auto value_of = [&](Item it) {
    return Value{key_of(it), L.reduces ? ranks_of(it) : std::multiset<std::uint32_t>{}};
  };
  std::vector<Gpu> g(static_cast<std::size_t>(p));
  // Per GPU: where each key's latest value is and whose contributions it holds; where each value
  // still kept is; which value occupies a location; how many sends of each value are to come.
  std::vector<std::map<int, int>> where(static_cast<std::size_t>(p));
  std::vector<std::map<int, std::multiset<std::uint32_t>>> held(static_cast<std::size_t>(p));
  std::vector<std::map<Value, int>> kept(static_cast<std::size_t>(p));
  std::vector<std::map<int, Value>> occupant(static_cast<std::size_t>(p));
  std::vector<std::map<Value, int>> sends_left(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    for (int e = 0; e < elems; ++e) {
      int key = L.reduces ? e : r * elems + e;
      int l = inplace && coll == Collective::Allgather ? loc_of(kOut, r * c + e) : loc_of(kIn, e);
      where[r][key] = l;
      if (L.reduces) held[r][key] = {static_cast<std::uint32_t>(r)};
      Value v{key, L.reduces ? held[r][key] : std::multiset<std::uint32_t>{}};
      kept[r][v] = l;
      occupant[r][l] = v;
    }
  for (const Transfer& x : t.transfers)
    for (std::uint32_t k = 0; k < x.payload_len; ++k)
      ++sends_left[x.src][value_of(t.payload[x.payload_begin + k])];
  // A scratch chunk of its own, for a value received while the home still holds one to be sent.
  auto fresh_scratch = [&](int r) {
    Gpu& G = g[static_cast<std::size_t>(r)];
    G.scratch = std::max(G.scratch, L.reduces ? elems : 0) + 1;
    return loc_of(kScr, G.scratch - 1);
  };
  // Where a key received at r goes.
  auto home = [&](int r, int key) {
    auto op = out_pos[r].find(key);
    bool root_only = coll == Collective::Reduce && r != static_cast<int>(t.root);
    if (op != out_pos[r].end() && !root_only) return home_of_pos(r, op->second);
    if (L.reduces && inplace && coll != Collective::Reduce) return loc_of(kIn, key);
    if (L.reduces) {
      g[r].scratch = std::max(g[r].scratch, elems);
      return loc_of(kScr, key);
    }
    auto w = where[r].find(key);
    if (w != where[r].end() && buf_of(w->second) == kScr) return w->second;
    return loc_of(kScr, g[r].scratch++);
  };
  auto channel = [&](int src, int dst, int n) {
    return (((dst - src) % p + p) % p - 1) / lim.per_channel + (n % sets) * nbase;
  };
  std::map<std::pair<int, int>, int> pair_count;

  std::vector<std::uint32_t> order = t.ordered_transfers();
  struct Move {
    int key, sloc, rsrc, rdst;  // sender's location; receiver's source and destination
    const char* type;
    Item item;
    // A value received whole and also sent on later is kept where it arrived (rdst); the
    // receiver's sum goes to acc, copied there from accsrc first if they differ, then reduced.
    int acc = -1, accsrc = -1;
  };
  struct Group {
    int sloc, rsrc, rdst, cnt;
    const char* type;
    int acc, accsrc;
  };
  std::size_t i = 0;
  while (i < order.size()) {
    std::size_t j = i;
    const std::uint32_t step = t.transfers[order[i]].step;
    while (j < order.size() && t.transfers[order[j]].step == step) ++j;
    // The sends read the state before the step.
    std::vector<std::vector<Move>> moves(j - i);
    for (std::size_t q = i; q < j; ++q) {
      const Transfer& x = t.transfers[order[q]];
      for (std::uint32_t k = 0; k < x.payload_len; ++k) {
        Item it = t.payload[x.payload_begin + k];
        Value v = value_of(it);
        auto w = kept[x.src].find(v);
        if (w == kept[x.src].end())
          throw UsageError(
              fmt::format("export --msccl-xml: step {}: gpu {} sends {}, a value it does not hold",
                          step, x.src, d.describe(it)));
        moves[q - i].push_back({v.first, w->second, 0, 0, "r", it});
      }
      std::stable_sort(moves[q - i].begin(), moves[q - i].end(),
                       [](const Move& a, const Move& b) { return a.sloc < b.sloc; });
    }
    // The step's sends are issued before its receives write.
    for (std::size_t q = i; q < j; ++q)
      for (const Move& m : moves[q - i]) --sends_left[t.transfers[order[q]].src][value_of(m.item)];
    for (std::size_t q = i; q < j; ++q) {
      const Transfer& x = t.transfers[order[q]];
      const int r = static_cast<int>(x.dst);
      for (Move& m : moves[q - i]) {
        m.rdst = home(r, m.key);
        // A home still holding a value to be sent keeps it: the new value goes to scratch.
        if (auto occ = occupant[r].find(m.rdst);
            occ != occupant[r].end() && sends_left[r][occ->second] > 0)
          m.rdst = fresh_scratch(r);
        m.rsrc = m.rdst;
        Value now{m.key, {}};
        if (L.reduces) {
          std::multiset<std::uint32_t> got = ranks_of(m.item);
          auto& mine = held[r][m.key];
          bool covers = std::includes(got.begin(), got.end(), mine.begin(), mine.end());
          bool disjoint = true;
          for (auto v : got) disjoint = disjoint && mine.count(v) == 0;
          if (covers) {
            mine = got;
          } else if (disjoint && sends_left[r][{m.key, got}] > 0) {
            // Sent on later as it is: kept in scratch, and reduced into the sum locally.
            m.rdst = m.rsrc = fresh_scratch(r);
            kept[r][{m.key, got}] = m.rdst;
            occupant[r][m.rdst] = {m.key, got};
            m.accsrc = where[r].at(m.key);
            m.acc = home(r, m.key);
            if (auto occ = occupant[r].find(m.acc);
                occ != occupant[r].end() && sends_left[r][occ->second] > 0)
              m.acc = fresh_scratch(r);
            mine.insert(got.begin(), got.end());
          } else if (disjoint) {
            m.type = "rrc";
            m.rsrc = where[r].at(m.key);
            mine.insert(got.begin(), got.end());
          } else {
            throw UsageError(fmt::format(
                "export --msccl-xml: step {}: gpu {} receives a value of element {} that "
                "overlaps what it holds without including it: neither a copy nor a reduction",
                step, r, m.key));
          }
          now.second = mine;
        }
        // The value overwritten is no longer kept anywhere.
        const int at = m.acc >= 0 ? m.acc : m.rdst;
        if (auto occ = occupant[r].find(at); occ != occupant[r].end()) {
          auto k = kept[r].find(occ->second);
          if (k != kept[r].end() && k->second == at) kept[r].erase(k);
        }
        where[r][m.key] = at;
        kept[r][now] = at;
        occupant[r][at] = now;
      }
    }
    // Runs contiguous on both sides and received alike are one instruction on each side.
    std::vector<std::vector<Group>> groups(j - i);
    for (std::size_t q = i; q < j; ++q)
      for (const Move& m : moves[q - i]) {
        auto& gs = groups[q - i];
        if (!gs.empty()) {
          Group& b = gs.back();
          if (b.sloc + b.cnt == m.sloc && b.rsrc + b.cnt == m.rsrc && b.rdst + b.cnt == m.rdst &&
              b.type == m.type && b.cnt < lim.max_count - 1 && (b.acc < 0) == (m.acc < 0) &&
              (b.acc < 0 || (b.acc + b.cnt == m.acc && b.accsrc + b.cnt == m.accsrc))) {
            ++b.cnt;
            continue;
          }
        }
        gs.push_back({m.sloc, m.rsrc, m.rdst, 1, m.type, m.acc, m.accsrc});
      }
    std::vector<int> chans(j - i);
    for (std::size_t q = i; q < j; ++q) {
      const Transfer& x = t.transfers[order[q]];
      chans[q - i] = channel(static_cast<int>(x.src), static_cast<int>(x.dst),
                             pair_count[{static_cast<int>(x.src), static_cast<int>(x.dst)}]++);
    }
    for (int phase = 0; phase < 2; ++phase)
      for (std::size_t q = i; q < j; ++q) {
        const Transfer& x = t.transfers[order[q]];
        const int src = static_cast<int>(x.src), dst = static_cast<int>(x.dst);
        const int chan = chans[q - i];
        for (const Group& gr : groups[q - i]) {
          Instr in;
          in.cnt = gr.cnt;
          if (phase == 0) {
            in.type = "s";
            in.src = in.dst = gr.sloc;
            Gpu& G = g[static_cast<std::size_t>(src)];
            add(G, G.tb_for(true, dst, chan), in, range(gr.sloc, gr.cnt), {});
          } else {
            in.type = gr.type;
            in.src = gr.rsrc;
            in.dst = gr.rdst;
            Gpu& G = g[static_cast<std::size_t>(dst)];
            std::vector<int> reads;
            if (gr.rsrc != gr.rdst) reads = range(gr.rsrc, gr.cnt);
            const int tbi = G.tb_for(false, src, chan);
            add(G, tbi, in, reads, range(gr.rdst, gr.cnt));
            if (gr.acc < 0) continue;
            Instr local;
            local.cnt = gr.cnt;
            if (gr.accsrc != gr.acc) {
              local.type = "cpy";
              local.src = gr.accsrc;
              local.dst = gr.acc;
              add(G, tbi, local, range(gr.accsrc, gr.cnt), range(gr.acc, gr.cnt));
            }
            local.type = "re";
            local.src = gr.rdst;
            local.dst = gr.acc;
            std::vector<int> both = range(gr.rdst, gr.cnt);
            for (int l : range(gr.acc, gr.cnt)) both.push_back(l);
            add(G, tbi, local, both, range(gr.acc, gr.cnt));
          }
        }
      }
    i = j;
  }

  // Every output position not yet holding its value is copied there.
  for (int r = 0; r < p; ++r) {
    if (!want[r] || (coll == Collective::Reduce && r != static_cast<int>(t.root))) continue;
    std::vector<std::pair<int, int>> copies;  // (from, to)
    for (auto [key, q] : out_pos[r]) {
      int to = home_of_pos(r, q), from = where[r].at(key);
      if (from != to) copies.emplace_back(from, to);
    }
    std::sort(copies.begin(), copies.end(), [](auto a, auto b) { return a.second < b.second; });
    std::size_t k = 0;
    while (k < copies.size()) {
      std::size_t e = k + 1;
      while (e < copies.size() && copies[e].first == copies[k].first + int(e - k) &&
             copies[e].second == copies[k].second + int(e - k) && int(e - k) < lim.max_count - 1)
        ++e;
      Instr in;
      in.type = "cpy";
      in.src = copies[k].first;
      in.dst = copies[k].second;
      in.cnt = static_cast<int>(e - k);
      Gpu& G = g[static_cast<std::size_t>(r)];
      add(G, G.local(), in, range(in.src, in.cnt), range(in.dst, in.cnt));
      k = e;
    }
  }
  return g;
}

}  // namespace

std::string export_msccl_xml(const Trace& t, const std::string& name,
                             const MscclExportOptions& opts) {
  const bool msccl = opts.runtime == MscclRuntime::Msccl;
  const char* rtname = msccl_runtime_name(opts.runtime);
  switch (t.collective) {
    case Collective::Allgather:
    case Collective::Allreduce:
    case Collective::ReduceScatter:
    case Collective::Alltoall:
    case Collective::Broadcast:
    case Collective::Reduce:
      break;
    case Collective::Gather:
    case Collective::Scatter:
      throw UsageError(fmt::format(
          "export --msccl-xml: a {} cannot be written for the runtime: microsoft/msccl loads no "
          "coll=\"{}\", and msccl-executor-nccl loads it with sizeMultiplier 1 (nchunksperloop "
          "spans one rank's count, not the root's p-block buffer) and NCCL has no {} call to "
          "run it; collv does not replay it either",
          collective_name(t.collective), collective_name(t.collective),
          collective_name(t.collective)));
    default:
      throw UsageError(fmt::format(
          "export --msccl-xml: a {} cannot be written: the runtimes load no such collective "
          "(reduce, broadcast, allreduce, reducescatter, allgather, alltoall and, in "
          "msccl-executor-nccl, send, recv, gather, scatter, alltoallv)",
          collective_name(t.collective)));
  }
  if (t.failure.kind == RunFailure::Kind::StepLimit || t.failure.kind == RunFailure::Kind::OpLimit)
    throw LimitError("export --msccl-xml: the run did not complete (" + t.failure.message +
                     ")");  // a limit: exit 3 (exit_codes.hpp)
  if (t.failure.kind != RunFailure::Kind::None)
    throw UsageError("export --msccl-xml: the run did not complete (" + t.failure.message + ")");
  if (!t.unreceived.empty())
    throw UsageError("export --msccl-xml: the schedule has sends that are never received");
  if (!t.domain->inspectable())
    throw UsageError("export --msccl-xml: needs the exact domain (items must show their parts)");
  const Limits lim{msccl ? 256 : 64, 72, 32, msccl ? 216 : 1024, 32, 4096};
  const auto p = static_cast<int>(t.topology.num_processors());
  const int elems = static_cast<int>(t.domain->elems());
  if (elems == 0)
    throw UsageError(
        "export --msccl-xml: count 0 has no chunks (the runtimes need nchunksperloop > 0)");
  const Collective coll = t.collective;
  if ((coll == Collective::ReduceScatter || coll == Collective::Alltoall) && elems % p != 0)
    throw UsageError(fmt::format("export --msccl-xml: a {} needs p blocks of elements ({} on {})",
                                 collective_name(coll), elems, p));
  if (p * elems >= (1 << kShift)) throw UsageError("export --msccl-xml: too many chunks to write");
  Layout L{};
  switch (coll) {
    case Collective::Allgather:
      L = {"allgather", false, elems, p * elems, p * elems};
      break;
    case Collective::ReduceScatter:
      L = {msccl ? "reduce_scatter" : "reducescatter", true, elems, elems / p, elems};
      break;
    case Collective::Alltoall:
      L = {"alltoall", false, elems, elems, elems};
      break;
    case Collective::Allreduce:
      L = {"allreduce", true, elems, elems, elems};
      break;
    case Collective::Reduce:
      L = {"reduce", true, elems, elems, elems};
      break;
    default:
      L = {"broadcast", false, elems, elems, elems};
      break;
  }

  // The runtime's limits: a threadblock over the step limit is split over more channels while
  // there are channels; then refused with the reason rather than written to be refused.
  const int nbase = (p - 2) / lim.per_channel + 1;
  if (p > 1 && nbase > lim.max_channels)
    throw UsageError(
        fmt::format("export --msccl-xml: {} gpus need {} channels of 32 peers; the runtime has {}",
                    p, nbase, lim.max_channels));
  std::vector<Gpu> g;
  int sets = 1;
  for (;; ++sets) {
    g = build(t, L, opts, lim, sets);
    std::string over;
    for (int r = 0; r < p && over.empty(); ++r)
      for (const Tb& tb : g[static_cast<std::size_t>(r)].tbs)
        if (static_cast<int>(tb.steps.size()) > lim.max_steps) {
          over = fmt::format(
              "gpu {}'s threadblock {} {} needs {} steps (its chunks do not merge into fewer)", r,
              tb.send >= 0   ? "sending to"
              : tb.recv >= 0 ? "receiving from"
                             : "copying",
              tb.send >= 0   ? tb.send
              : tb.recv >= 0 ? tb.recv
                             : r,
              tb.steps.size());
          break;
        }
    if (over.empty()) break;
    if ((sets + 1) * nbase > lim.max_channels || p < 2)
      throw UsageError(fmt::format(
          "export --msccl-xml: {} even on {} channel{}; MSCCL_MAX_NUM_STEPS is {} in {}{}", over,
          sets * nbase, sets * nbase == 1 ? "" : "s", lim.max_steps, rtname,
          msccl ? "" : " (--msccl-runtime msccl allows 256)"));
  }
  int nchannels = 1;
  for (int r = 0; r < p; ++r) {
    const Gpu& G = g[static_cast<std::size_t>(r)];
    if (static_cast<int>(G.tbs.size()) > lim.max_tbs)
      throw UsageError(fmt::format(
          "export --msccl-xml: gpu {} needs {} threadblocks; MSCCL_MAX_NUM_THREAD_BLOCKS is {} in "
          "{}",
          r, G.tbs.size(), lim.max_tbs, rtname));
    std::size_t nodes = 1 + static_cast<std::size_t>(p) + G.tbs.size();
    for (const Tb& tb : G.tbs) {
      nchannels = std::max(nchannels, tb.chan + 1);
      nodes += tb.steps.size();
    }
    if (nodes >= static_cast<std::size_t>(lim.max_nodes))
      throw UsageError(fmt::format(
          "export --msccl-xml: gpu {} loads {} XML nodes (<algo>, {} <gpu>, its <tb> and <step> "
          "elements); the runtime's parser holds MAX_NODES = {} ({})",
          r, nodes, p, lim.max_nodes, rtname));
  }

  std::string safe;
  for (char ch : name) safe += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
  if (collective_is_rooted(coll)) safe += fmt::format("_root{}", t.root);
  std::string o;
  o += fmt::format(
      "<algo name=\"{}\" proto=\"{}\" nchannels=\"{}\" nchunksperloop=\"{}\" ngpus=\"{}\" "
      "coll=\"{}\" inplace=\"{}\" outofplace=\"{}\" minBytes=\"0\" maxBytes=\"0\">\n",
      safe, opts.proto, nchannels, L.nchunksperloop, p, L.coll, opts.out_of_place ? 0 : 1,
      opts.out_of_place ? 1 : 0);
  for (int r = 0; r < p; ++r) {
    const Gpu& G = g[static_cast<std::size_t>(r)];
    o += fmt::format("  <gpu id=\"{}\" i_chunks=\"{}\" o_chunks=\"{}\" s_chunks=\"{}\">\n", r,
                     L.in_chunks, L.out_chunks, G.scratch);
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
            s, in.type, buf_name(in.src), off_of(in.src), buf_name(in.dst), off_of(in.dst), in.cnt,
            dep.tb, dep.step, in.hasdep ? 1 : 0);
      }
      o += "    </tb>\n";
    }
    o += "  </gpu>\n";
  }
  o += "</algo>\n";
  return o;
}

}  // namespace collv
