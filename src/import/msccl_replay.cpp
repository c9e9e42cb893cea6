// The MSCCL-XML replay: every gpu's threadblocks run as the runtime runs them (dependencies,
// connections with bounded slots), into a Trace; the `bounds` and `race` checks, the deadlock,
// and the positional postcondition. msccl_reader.hpp has the Reader.
#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "import/msccl_reader.hpp"
#include "util/memory.hpp"

namespace collv::msccl_xml {

namespace {

// One threadblock's latest write and latest read of one chunk (their event numbers, the vector
// clock component; 0: none yet). The latest is enough: program order puts each earlier access of
// the same threadblock before it, so an access is unordered with some access of that threadblock
// iff it is unordered with the latest of that kind. Keeping every access made a file whose steps
// all touch one chunk take time quadratic in its steps (200,000 steps: 44 s).
struct LastAccess {
  std::uint32_t tb;  // global threadblock index
  std::uint32_t write_count = 0, read_count = 0;
  int write_line = 0, read_line = 0;
};

struct Msg {
  std::uint32_t transfer;
  std::vector<Item> items;
  int cnt;
  std::vector<std::uint32_t> vc;
  std::uint32_t step;
  int line;
};

struct Signal {
  int index;
  std::vector<std::uint32_t> vc;
  std::uint32_t level;
};

}  // namespace

void Reader::replay(ImportedSchedule& out) {
  const int p = ngpus_;
  const int cpl = nchunksperloop_;
  Collective coll = Collective::Allgather;
  int in_size = 0, out_size = 0;
  if (coll_ == "allgather") {
    coll = Collective::Allgather;
    if (cpl % p != 0)
      throw UsageError(src_ + ": error: allgather needs nchunksperloop to be a multiple of ngpus");
    in_size = cpl / p;
    out_size = cpl;
  } else if (coll_ == "allreduce") {
    coll = Collective::Allreduce;
    in_size = out_size = cpl;
  } else if (coll_ == "reduce_scatter") {
    coll = Collective::ReduceScatter;
    if (cpl % p != 0)
      throw UsageError(src_ +
                       ": error: reduce_scatter needs nchunksperloop to be a multiple of ngpus");
    in_size = cpl;
    out_size = cpl / p;
  } else if (coll_ == "alltoall") {
    coll = Collective::Alltoall;
    if (cpl % p != 0)
      throw UsageError(src_ + ": error: alltoall needs nchunksperloop to be a multiple of ngpus");
    in_size = out_size = cpl;
  } else if (coll_ == "broadcast") {
    // The root is the call's argument, not the file's: it is the gpu that receives nothing.
    coll = Collective::Broadcast;
    in_size = out_size = cpl;
  } else if (coll_ == "reduce") {
    // Likewise the gpu that sends nothing; only its output is defined.
    coll = Collective::Reduce;
    in_size = out_size = cpl;
  } else {
    // custom: a collective the file does not define; its data is replayed, not judged.
    coll = Collective::Gather;
    for (const XGpu& g : gpus_) {
      in_size = std::max(in_size, g.chunks[In]);
      out_size = std::max(out_size, g.chunks[Out]);
    }
  }
  const int c = coll == Collective::Allgather || coll == Collective::ReduceScatter ||
                        coll == Collective::Alltoall
                    ? cpl / p
                    : cpl;  // chunks per rank and peer
  const bool custom = coll_ == "custom";
  int root = 0, root_candidates = 0;
  if (coll == Collective::Broadcast || coll == Collective::Reduce) {
    for (int r = p - 1; r >= 0; --r) {
      bool receives = false, sends = false;
      for (const XTb& tb : gpus_[r].tbs)
        for (const XStep& st : tb.steps) {
          receives = receives || st.info->recv;
          sends = sends || st.info->send;
        }
      if (coll == Collective::Reduce) std::swap(receives, sends);
      if (!receives && (sends || p == 1)) {
        root = r;
        ++root_candidates;
      }
    }
    if (opts_.root) {
      if (*opts_.root >= static_cast<std::uint32_t>(p))
        throw UsageError(
            fmt::format("{}: error: root {} is no gpu of the file's {}", src_, *opts_.root, p));
      root = static_cast<int>(*opts_.root);
    }
  }

  // Memory before it is allocated: every gpu's three buffers and the expected outputs (an
  // all-reduce's items name every rank), the vector clocks of the threadblocks.
  {
    std::uint64_t per_gpu = 0;
    for (const XGpu& g : gpus_) per_gpu = std::max<std::uint64_t>(per_gpu, g.chunks[Scr]);
    constexpr std::uint64_t kMaxChunks = 1u << 20;
    if (static_cast<std::uint64_t>(in_size) > kMaxChunks ||
        static_cast<std::uint64_t>(out_size) > kMaxChunks)
      throw LimitError(fmt::format(
          "{}:{}:{}: error: {} with nchunksperloop={} on {} gpus has buffers of {} and {} chunks; "
          "collv replays at most {} chunks per buffer",
          src_, algo_line_, algo_col_, coll_, cpl, p, in_size, out_size, kMaxChunks));
    std::uint64_t tbs = 0;
    for (const XGpu& g : gpus_) tbs += g.tbs.size();
    std::uint64_t items = static_cast<std::uint64_t>(p) *
                          (static_cast<std::uint64_t>(in_size) * 3 + out_size * 3 + per_gpu);
    std::uint64_t bytes = items * 24 + tbs * tbs * 8;
    if (coll == Collective::Allreduce || coll == Collective::ReduceScatter ||
        coll == Collective::Reduce)
      bytes += static_cast<std::uint64_t>(p) * static_cast<std::uint64_t>(out_size) * p * 8;
    require_memory(bytes, fmt::format("replaying {} ({} on {} gpus, {} chunks per loop)", src_,
                                      coll_, p, cpl));
  }

  // The declared sizes must agree with nchunksperloop; microsoft/msccl's loader refuses a file
  // where they do not ('Inconsistency between i_chunks/o_chunks ... and nchunksperloop'), so
  // under that runtime it is a `runtime` violation too.
  for (const XGpu& g : gpus_) {
    int want[2] = {in_size, out_size};
    for (int b = 0; b < 2; ++b) {
      if (g.chunks[b] <= 0 || g.chunks[b] == want[b]) continue;
      std::string msg = fmt::format(
          "gpu {}: {}_chunks={} but {} with nchunksperloop={} on {} gpus "
          "has {} {} chunks",
          g.id, kBufName[b], g.chunks[b], coll_, cpl, p, want[b], b == 0 ? "input" : "output");
      attr_violation(g.line, g.col, msg, {static_cast<NodeId>(g.id)});
      if (lim_.checks_sizes && !op_form_)
        rt_violation(g.line, g.col,
                     msg + " ('Inconsistency between i_chunks/o_chunks ... and nchunksperloop')",
                     {static_cast<NodeId>(g.id)});
    }
  }

  Trace& t = out.trace;
  t.model_name = name_;
  t.collective = coll;
  t.root = static_cast<NodeId>(root);
  t.op_class = OperatorClass::Commutative;
  t.nodup_claimed = false;
  t.topology = Topology::parse(fmt::format("complete:{}", p));
  t.port = PortModel::All;
  // One more element per rank than the input has: leaf(r, in_size) is rank r's uninitialized
  // memory, so a chunk read before it is written is visible (and never derivable).
  t.domain = make_domain(DomainKind::Exact, static_cast<std::uint32_t>(p),
                         static_cast<std::uint32_t>(in_size + 1), 1);
  Domain& d = *t.domain;
  auto garbage = [&](int r) {
    return d.leaf(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(in_size));
  };

  // Physical memory: input and output of the user's size, scratch as declared. In-place, one
  // buffer aliases into the other the way msccl-tools (and the runtime's callers) lay it out.
  std::vector<std::array<std::vector<Item>, 3>> mem(p);
  for (int r = 0; r < p; ++r) {
    mem[r][In].assign(in_size, 0);
    for (int k = 0; k < in_size; ++k)
      mem[r][In][k] = d.leaf(static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(k));
    mem[r][Out].assign(out_size, garbage(r));
    mem[r][Scr].assign(static_cast<std::size_t>(gpus_[r].chunks[Scr]), garbage(r));
    if (inplace_ && coll == Collective::Allgather)
      for (int k = 0; k < c; ++k) mem[r][Out][r * c + k] = mem[r][In][k];
    t.initial_input.push_back({});
    for (int k = 0; k < in_size; ++k) t.initial_input.back().push_back(mem[r][In][k]);
  }
  // (buf, off) of gpu r -> physical (buf, off), or nullopt past the end.
  auto resolve = [&](int r, int buf, int off) -> std::optional<std::pair<int, int>> {
    if (inplace_) {
      if (coll == Collective::Allgather && buf == In) return std::make_pair(int(Out), off + r * c);
      if ((coll == Collective::Allreduce || coll == Collective::Alltoall ||
           coll == Collective::Broadcast || coll == Collective::Reduce) &&
          buf == Out)
        return std::make_pair(int(In), off);
      if (coll == Collective::ReduceScatter && buf == Out)
        return std::make_pair(int(In), off + r * c);
    }
    return std::make_pair(buf, off);
  };

  // Global threadblock numbering.
  std::vector<std::pair<int, int>> tbs;  // (gpu, tb id)
  std::vector<std::vector<std::uint32_t>> gidx(p);
  for (int r = 0; r < p; ++r)
    for (std::size_t k = 0; k < gpus_[r].tbs.size(); ++k) {
      gidx[r].push_back(static_cast<std::uint32_t>(tbs.size()));
      tbs.emplace_back(r, static_cast<int>(k));
    }
  const std::size_t T = tbs.size();
  std::vector<std::size_t> pc(T, 0);
  std::vector<std::uint32_t> level(T, 0);
  std::vector<std::vector<std::uint32_t>> vc(T, std::vector<std::uint32_t>(T, 0));
  std::vector<int> signalled(T, -1);
  std::vector<std::vector<Signal>> signals(T);
  std::map<std::tuple<int, int, int>, std::deque<Msg>> queues;  // (sender, receiver, channel)
  std::unordered_map<std::uint64_t, std::vector<LastAccess>> log;
  std::set<std::pair<std::uint64_t, std::uint64_t>> races_seen;

  auto tb_name = [&](std::uint32_t g) {
    return fmt::format("gpu {} tb {}", tbs[g].first, tbs[g].second);
  };
  auto access = [&](std::uint32_t g, int r, int pbuf, int poff, bool write, const XStep& st) {
    std::uint64_t key = (static_cast<std::uint64_t>(r) << 40) |
                        (static_cast<std::uint64_t>(pbuf) << 32) | static_cast<std::uint32_t>(poff);
    auto& list = log[key];
    std::size_t mine = list.size();
    for (std::size_t k = 0; k < list.size(); ++k) {
      const LastAccess& a = list[k];
      if (a.tb == g) {
        mine = k;
        continue;
      }
      // Unordered: a's access does not happen before this one. Two reads never race.
      bool by_write = a.write_count > vc[g][a.tb];
      bool by_read = write && a.read_count > vc[g][a.tb];
      if (!by_write && !by_read) continue;
      auto pair_key = std::make_pair(key, (static_cast<std::uint64_t>(a.tb) << 32) | g);
      if (!races_seen.insert(pair_key).second) continue;
      Counterexample ce;
      ce.nodes = {static_cast<NodeId>(r)};
      ce.message = fmt::format(
          "{}: gpu {} {}[{}]: {} by {} (line {}) and {} by {} (line {}) are not ordered by any "
          "dependency or message",
          where(st.line, st.col), r, kBufName[pbuf], poff, by_write ? "written" : "read",
          tb_name(a.tb), by_write ? a.write_line : a.read_line, write ? "written" : "read",
          tb_name(g), st.line);
      add_violation(race_, std::move(ce));
    }
    if (mine == list.size()) list.push_back({g});
    LastAccess& me = list[mine];
    (write ? me.write_count : me.read_count) = vc[g][g];
    (write ? me.write_line : me.read_line) = st.line;
  };
  // Reads cnt chunks; out-of-bounds chunks read as uninitialized memory.
  auto read = [&](std::uint32_t g, int r, int buf, int off, int cnt, const XStep& st) {
    std::vector<Item> v;
    for (int k = 0; k < cnt; ++k) {
      auto loc = resolve(r, buf, off + k);
      if (!loc || loc->second < 0 || loc->second >= static_cast<int>(mem[r][loc->first].size())) {
        v.push_back(garbage(r));
        continue;
      }
      access(g, r, loc->first, loc->second, false, st);
      v.push_back(mem[r][loc->first][loc->second]);
    }
    return v;
  };
  auto write = [&](std::uint32_t g, int r, int buf, int off, const std::vector<Item>& v,
                   const XStep& st) {
    for (std::size_t k = 0; k < v.size(); ++k) {
      auto loc = resolve(r, buf, off + static_cast<int>(k));
      if (!loc || loc->second < 0 || loc->second >= static_cast<int>(mem[r][loc->first].size()))
        continue;
      access(g, r, loc->first, loc->second, true, st);
      mem[r][loc->first][loc->second] = v[k];
    }
  };
  auto bounds_ok = [&](int r, const XTb& tb, std::size_t k, const XStep& st, int buf, int off,
                       const char* which) {
    int decl = gpus_[r].chunks[buf];
    auto last = resolve(r, buf, off + st.cnt - 1);
    int phys = last ? static_cast<int>(mem[r][last->first].size()) : 0;
    bool ok = off >= 0 && off + st.cnt <= decl && last && last->second < phys;
    if (ok) return true;
    Counterexample ce;
    ce.nodes = {static_cast<NodeId>(r)};
    std::string why = off < 0               ? "a negative offset"
                      : off + st.cnt > decl ? fmt::format("{}_chunks is {}", kBufName[buf], decl)
                                            : fmt::format("the {} buffer of {} has {} chunks",
                                                          kBufName[last->first], coll_, phys);
    ce.message = fmt::format("{}: gpu {} tb {} step {} ({}): {} {}[{}..{}] is out of bounds: {}",
                             where(st.line, st.col), r, tb.id, k, st.info->name, which,
                             kBufName[buf], off, off + st.cnt - 1, why);
    add_violation(bounds_, std::move(ce));
    return false;
  };
  // Static bounds, once per step.
  for (int r = 0; r < p; ++r)
    for (const XTb& tb : gpus_[r].tbs)
      for (std::size_t k = 0; k < tb.steps.size(); ++k) {
        tick_([&] { return fmt::format("judging {} (gpu {} tb {} step {})", src_, r, tb.id, k); });
        const XStep& st = tb.steps[k];
        bool src = st.info->reads_src, dst = st.info->writes_dst || st.info->op == Op::RE;
        if (src) bounds_ok(r, tb, k, st, st.srcbuf, st.srcoff, "source");
        if (dst) bounds_ok(r, tb, k, st, st.dstbuf, st.dstoff, "destination");
      }

  // The replay: run every threadblock as far as it can go until none can move.
  bool progress = true;
  while (progress) {
    progress = false;
    for (std::uint32_t g = 0; g < T; ++g) {
      const auto r = tbs[g].first, id = tbs[g].second;  // not a structured binding: clang 14
      const XTb& tb = gpus_[r].tbs[id];                 // cannot capture one in a lambda
      while (pc[g] < tb.steps.size()) {
        tick_(
            [&] { return fmt::format("replaying {} (gpu {} tb {} step {})", src_, r, id, pc[g]); });
        const XStep& st = tb.steps[pc[g]];
        const Signal* sig = nullptr;
        if (st.depid >= 0) {
          if (st.depid >= static_cast<int>(gpus_[r].tbs.size())) break;
          std::uint32_t dg = gidx[r][st.depid];
          if (signalled[dg] < st.deps) break;
          for (const Signal& s : signals[dg])
            if (s.index >= st.deps) {
              sig = &s;
              break;
            }
        }
        std::deque<Msg>* q = nullptr;
        if (st.info->recv) {
          q = &queues[{tb.recv, r, tb.chan}];
          if (q->empty()) break;
        }
        // Bounded buffering: a send waits for a free slot of its connection.
        if (st.info->send && opts_.slots > 0 &&
            queues[{r, tb.send, tb.chan}].size() >= static_cast<std::size_t>(opts_.slots))
          break;
        // The step runs.
        progress = true;
        auto& my = vc[g];
        ++my[g];
        std::uint32_t start = level[g];
        if (sig) {
          for (std::size_t k = 0; k < T; ++k) my[k] = std::max(my[k], sig->vc[k]);
          start = std::max(start, sig->level);
        }
        std::vector<Item> got;
        if (q) {
          Msg m = std::move(q->front());
          q->pop_front();
          for (std::size_t k = 0; k < T; ++k) my[k] = std::max(my[k], m.vc[k]);
          start = std::max(start, m.step);
          if (m.cnt != st.cnt)
            attr_violation(st.line, st.col,
                           fmt::format("gpu {} tb {} step {} receives cnt={} from gpu {} on "
                                       "channel {}, but the matching send (line {}) has cnt={}",
                                       r, id, pc[g], st.cnt, tb.recv, tb.chan, m.line, m.cnt),
                           {static_cast<NodeId>(r), static_cast<NodeId>(tb.recv)});
          got = std::move(m.items);
          got.resize(static_cast<std::size_t>(st.cnt), garbage(r));
        }
        auto combine = [&](const std::vector<Item>& a, const std::vector<Item>& b) {
          std::vector<Item> v(a.size());
          for (std::size_t k = 0; k < a.size(); ++k) v[k] = d.combine(a[k], b[k]);
          return v;
        };
        std::vector<Item> sent;
        switch (st.info->op) {
          case Op::S:
            sent = read(g, r, st.srcbuf, st.srcoff, st.cnt, st);
            break;
          case Op::R:
            write(g, r, st.dstbuf, st.dstoff, got, st);
            break;
          case Op::RCS:
            write(g, r, st.dstbuf, st.dstoff, got, st);
            sent = got;
            break;
          case Op::RRS:
            sent = combine(read(g, r, st.srcbuf, st.srcoff, st.cnt, st), got);
            break;
          case Op::RRC:
            write(g, r, st.dstbuf, st.dstoff,
                  combine(read(g, r, st.srcbuf, st.srcoff, st.cnt, st), got), st);
            break;
          case Op::RRCS:
            sent = combine(read(g, r, st.srcbuf, st.srcoff, st.cnt, st), got);
            write(g, r, st.dstbuf, st.dstoff, sent, st);
            break;
          case Op::CPY:
            write(g, r, st.dstbuf, st.dstoff, read(g, r, st.srcbuf, st.srcoff, st.cnt, st), st);
            break;
          case Op::RE: {
            auto dst = read(g, r, st.dstbuf, st.dstoff, st.cnt, st);
            write(g, r, st.dstbuf, st.dstoff,
                  combine(dst, read(g, r, st.srcbuf, st.srcoff, st.cnt, st)), st);
            break;
          }
          case Op::NOP:
            break;
        }
        if (st.info->send) {
          Transfer x;
          x.step = start + 1;
          x.src = static_cast<NodeId>(r);
          x.dst = static_cast<NodeId>(tb.send);
          x.payload_begin = static_cast<std::uint32_t>(t.payload.size());
          x.payload_len = static_cast<std::uint16_t>(sent.size());
          x.line = static_cast<std::uint16_t>(std::min(st.line, 65535));
          t.payload.insert(t.payload.end(), sent.begin(), sent.end());
          auto xi = static_cast<std::uint32_t>(t.transfers.size());
          t.transfers.push_back(x);
          queues[{r, tb.send, tb.chan}].push_back({xi, sent, st.cnt, my, x.step, st.line});
          start = x.step;
        }
        level[g] = start;
        if (st.hasdep && st.info->op != Op::NOP) {
          signalled[g] = static_cast<int>(pc[g]);
          signals[g].push_back({signalled[g], my, start});
        }
        ++pc[g];
      }
    }
  }

  // Deadlock: the threadblocks left waiting, and the chain of waits from the first of them.
  std::vector<std::uint32_t> stuck;
  for (std::uint32_t g = 0; g < T; ++g)
    if (pc[g] < gpus_[tbs[g].first].tbs[tbs[g].second].steps.size()) stuck.push_back(g);
  if (!stuck.empty()) {
    auto waits_for = [&](std::uint32_t g, std::string& why) -> std::optional<std::uint32_t> {
      auto [r, id] = tbs[g];
      const XTb& tb = gpus_[r].tbs[id];
      const XStep& st = tb.steps[pc[g]];
      std::string at = fmt::format("{} step {} (line {})", tb_name(g), pc[g], st.line);
      if (st.depid >= 0 && (st.depid >= static_cast<int>(gpus_[r].tbs.size()) ||
                            signalled[gidx[r][st.depid]] < st.deps)) {
        if (st.depid >= static_cast<int>(gpus_[r].tbs.size())) {
          why =
              at + " waits for threadblock " + std::to_string(st.depid) + ", which does not exist";
          return std::nullopt;
        }
        why = fmt::format("{} waits for step {} of tb {}", at, st.deps, st.depid);
        return gidx[r][st.depid];
      }
      if (st.info->recv && queues[{tb.recv, r, tb.chan}].empty()) {
        why = fmt::format("{} waits for a receive from gpu {} on channel {}", at, tb.recv, tb.chan);
        for (std::uint32_t h : gidx[tb.recv]) {
          const XTb& o = gpus_[tb.recv].tbs[tbs[h].second];
          if (o.send == r && o.chan == tb.chan) return h;
        }
        why += fmt::format(" (no threadblock of gpu {} sends to gpu {} on channel {})", tb.recv, r,
                           tb.chan);
        return std::nullopt;
      }
      why = fmt::format(
          "{} waits to send to gpu {} on channel {}, whose {} slots (--msccl-slots) hold sends "
          "not yet received",
          at, tb.send, tb.chan, opts_.slots);
      for (std::uint32_t h : gidx[tb.send]) {
        const XTb& o = gpus_[tb.send].tbs[tbs[h].second];
        if (o.recv == r && o.chan == tb.chan) return h;
      }
      why += fmt::format(" (no threadblock of gpu {} receives from gpu {} on channel {})", tb.send,
                         r, tb.chan);
      return std::nullopt;
    };
    RunFailure& f = t.failure;
    f.kind = RunFailure::Kind::Deadlock;
    std::vector<std::uint32_t> chain{stuck.front()};
    std::vector<std::string> whys;
    bool closed = false;
    for (;;) {
      std::string why;
      auto next = waits_for(chain.back(), why);
      whys.push_back(why);
      if (!next) break;
      auto it = std::find(chain.begin(), chain.end(), *next);
      if (it != chain.end()) {
        auto cut = it - chain.begin();
        chain.erase(chain.begin(), chain.begin() + cut);
        whys.erase(whys.begin(), whys.begin() + cut);
        closed = true;
        chain.push_back(*next);
        break;
      }
      chain.push_back(*next);
      const XTb& ntb = gpus_[tbs[*next].first].tbs[tbs[*next].second];
      if (pc[*next] >= ntb.steps.size()) {
        whys.push_back(tb_name(*next) + " has finished");
        break;
      }
    }
    std::string msg;
    for (auto& w : whys) msg += (msg.empty() ? "" : "; ") + w;
    f.message = fmt::format("{}: deadlock: {} threadblocks wait forever; {}{}", src_, stuck.size(),
                            closed ? "the cycle: " : "the chain: ", msg);
    for (auto g : chain) f.waiting_cycle.push_back(static_cast<NodeId>(tbs[g].first));
    f.cycle_closed = closed;
    for (auto g : stuck) f.waiting.push_back(static_cast<NodeId>(tbs[g].first));
    std::sort(f.waiting.begin(), f.waiting.end());
    f.waiting.erase(std::unique(f.waiting.begin(), f.waiting.end()), f.waiting.end());
  }
  for (auto& [key, q] : queues)
    for (const Msg& m : q) t.unreceived.push_back(m.transfer);
  std::sort(t.unreceived.begin(), t.unreceived.end());

  // The output buffer as the runtime defines it, and what the collective asks of it.
  std::vector<Buffer> expected(p);
  auto sum_over_ranks = [&](int elem) {
    Item acc = 0;
    for (int j = 0; j < p; ++j)
      acc = j == 0 ? d.leaf(0, static_cast<std::uint32_t>(elem))
                   : d.combine(acc, d.leaf(static_cast<std::uint32_t>(j),
                                           static_cast<std::uint32_t>(elem)));
    return acc;
  };
  std::string what = "output";
  for (int r = 0; r < p; ++r) {
    Buffer fin;
    auto phys = [&](int buf, int off) {
      auto loc = resolve(r, buf, off);
      return mem[r][loc->first][loc->second];
    };
    switch (coll) {
      case Collective::Allgather:
        for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
        for (int j = 0; j < p; ++j)
          for (int k = 0; k < c; ++k)
            expected[r].push_back(
                d.leaf(static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(k)));
        break;
      case Collective::Allreduce:
        for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
        for (int k = 0; k < c; ++k) expected[r].push_back(sum_over_ranks(k));
        break;
      case Collective::ReduceScatter:
        for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
        for (int k = 0; k < c; ++k) expected[r].push_back(sum_over_ranks(r * c + k));
        break;
      case Collective::Broadcast:
        for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
        for (int k = 0; k < c; ++k)
          expected[r].push_back(
              d.leaf(static_cast<std::uint32_t>(root), static_cast<std::uint32_t>(k)));
        break;
      case Collective::Reduce:  // only the root's output is defined (NCCL: recvbuff is
                                // used only at the root), so only the root's is kept
        if (r == root) {
          for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
          for (int k = 0; k < c; ++k) expected[r].push_back(sum_over_ranks(k));
        }
        break;
      case Collective::Gather:  // custom: nothing to compare with
        for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
        expected[r] = fin;
        break;
      default:  // alltoall
        for (int k = 0; k < out_size; ++k) fin.push_back(phys(Out, k));
        for (int j = 0; j < p; ++j)
          for (int k = 0; k < c; ++k)
            expected[r].push_back(
                d.leaf(static_cast<std::uint32_t>(j), static_cast<std::uint32_t>(r * c + k)));
        break;
    }
    t.final_output.push_back(std::move(fin));
  }
  t.compute_stats();
  out.postcondition = import_detail::positional_postcondition(t, expected, what);
  t.file_expected = import_detail::file_expected(
      expected, coll == Collective::Reduce ? std::optional<NodeId>(root) : std::nullopt);
  out.postcondition->note = fmt::format(
      "positional, as the runtime defines the {} output buffer ({} chunks per gpu{}); x{{r}}.{} "
      "stands for gpu r's uninitialized memory",
      coll_, out_size, inplace_ ? ", in place" : "", in_size);
  if (coll == Collective::Broadcast)
    out.postcondition->note += fmt::format(
        "; the root is gpu {}, {} (the root is the call's argument)", root,
        opts_.root             ? "as -s says"
        : root_candidates == 1 ? "the gpu that receives nothing"
                               : "assumed: no single gpu receives nothing, give the root with -s");
  if (coll == Collective::Reduce)
    out.postcondition->note += fmt::format(
        "; the root is gpu {}, {} (the root is the call's argument); the other gpus' outputs "
        "are not judged",
        root,
        opts_.root             ? "as -s says"
        : root_candidates == 1 ? "the gpu that sends nothing"
                               : "assumed: no single gpu sends nothing, give the root with -s");
  if (custom) {
    out.postcondition = not_checked("postcondition",
                                    "coll=\"custom\" defines no output: the replay ran, the "
                                    "result is not judged");
    for (const char* name : {"final-buffers", "dataflow", "nodup"})
      custom_checks_.push_back(not_checked(name, "coll=\"custom\" defines no output"));
  }
  if (nondep_signal_ > 0)
    attributes_.note += std::string(attributes_.note.empty() ? "" : "; ") +
                        fmt::format(
                            "{} dependencies name a step that does not signal (hasdep=0 "
                            "or a nop): the runtime's wait ends at the threadblock's "
                            "next signalling step, and so does the replay's",
                            nondep_signal_);
  if (op_form_)
    attributes_.note += std::string(attributes_.note.empty() ? "" : "; ") +
                        "the file uses msccl-tools' <op> form: msccl-executor-nccl and "
                        "microsoft/msccl read only <step> elements";
  if (race_.verdict == Verdict::Fail)
    race_.note = "the values collv replayed are those of one interleaving of the unordered steps";
  out.congestion_note =
      "MSCCL channels run in parallel: several transfers may share a pair of gpus in a step "
      "(per-link bandwidth is not modelled)";
}

}  // namespace collv::msccl_xml
