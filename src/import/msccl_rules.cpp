// The MSCCL-XML file held to the runtimes' loaders before any replay: NCCL's XML syntax, the
// loading limits (`runtime`), and the connections, step numbers and dependencies the runtime
// reads (`attributes`). msccl_reader.hpp has the Reader.
#include <map>
#include <utility>

#include <fmt/format.h>

#include "import/msccl_reader.hpp"

namespace collv::msccl_xml {

namespace {

// The operands whose offset the runtimes' loader checks against the declared chunks, per
// instruction (mscclGetAlgoFromXmlFile's checkSrc / checkDst): a send's source, a receive's
// destination, both for rrcs, cpy and re, neither for rrc.
bool loader_checks(Op op, bool src) {
  switch (op) {
    case Op::S:
    case Op::RRS:
      return src;
    case Op::R:
    case Op::RCS:
      return !src;
    case Op::RRCS:
    case Op::CPY:
    case Op::RE:
      return true;
    default:
      return false;
  }
}

}  // namespace

// msccl-executor-nccl and microsoft/msccl read the file with NCCL's hand-written XML reader
// (mscclXmlGetNode / xmlGetNode): between elements it skips only spaces and line ends; a tag is
// `<name`, then attributes each after a space, `key="value"`, then `>` or `/>`; `<!-- -->` is
// skipped. pugixml accepts more (a prolog, single quotes, tabs, line breaks inside a tag); the
// runtime does not, so the raw text is held to the runtime's reader. The first refusal ends it,
// as it ends the runtime's parse.
void Reader::raw_syntax() {
  const std::string& t = text_;
  const std::size_t n = t.size();
  std::size_t k = 0;
  auto refuse = [&](std::size_t i, const std::string& msg) {
    auto [l, c] = pos(static_cast<std::ptrdiff_t>(std::min(i, n == 0 ? 0 : n - 1)));
    rt_violation(l, c, msg + " (NCCL's XML reader, mscclXmlGetNode, accepts no more)");
  };
  auto show = [](char c) {
    if (c == '\t') return std::string("a tab");
    if (c == '\'') return std::string("a single quote");
    return fmt::format("'{}'", c);
  };
  auto is_end = [](char c) { return c == ' ' || c == '>' || c == '/' || c == '\n' || c == '\r'; };
  if (n >= 3 && static_cast<unsigned char>(t[0]) == 0xEF)
    return refuse(0, "a byte-order mark before the first element");
  while (k < n) {
    char c = t[k];
    if (c == ' ' || c == '\n' || c == '\r') {
      ++k;
      continue;
    }
    if (c != '<')
      return refuse(k, "between elements only spaces and line ends may stand, not " + show(c));
    ++k;
    if (t.compare(k, 3, "!--") == 0) {
      std::size_t e = t.find("-->", k + 3);
      if (e == std::string::npos) return;  // not well-formed: pugixml says where
      k = e + 3;
      continue;
    }
    if (k < n && t[k] == '?')
      return refuse(k - 1, "an XML prolog or processing instruction '<?' ('expected >, got ?')");
    if (k < n && t[k] == '/') {  // a closing tag: the name, then '>' at once
      ++k;
      while (k < n && !is_end(t[k])) ++k;
      if (k >= n) return;
      if (t[k] != '>') return refuse(k, "a closing tag must end with '>' right after its name");
      ++k;
      continue;
    }
    while (k < n && !is_end(t[k]) && t[k] != '=') {
      if (t[k] == '\t') return refuse(k, "a tab inside a tag (it is read as part of a name)");
      ++k;
    }
    if (k >= n) return;
    if (t[k] == '\n' || t[k] == '\r') return refuse(k, "a line break inside a tag");
    char last = t[k++];
    while (last == ' ') {
      // An attribute: key="value", or nothing more (doubled spaces are read as empty keys).
      while (k < n && !is_end(t[k]) && t[k] != '=') {
        if (t[k] == '\t') return refuse(k, "a tab inside a tag (it is read as part of a name)");
        ++k;
      }
      if (k >= n) return;
      if (t[k] == '=') {
        ++k;
        if (k >= n) return;
        if (t[k] != '"')
          return refuse(k, fmt::format("an attribute value must open with a double quote, not {}",
                                       show(t[k])));
        std::size_t e = t.find('"', k + 1);
        if (e == std::string::npos) return;
        k = e + 1;
        if (k >= n) return;
        last = t[k++];
      } else {
        last = t[k++];
      }
      if (last == '\n' || last == '\r') return refuse(k - 1, "a line break inside a tag");
      if (last == '\t') return refuse(k - 1, "a tab inside a tag (it is read as part of a name)");
    }
    if (last == '/') {
      while (k < n && !is_end(t[k])) ++k;
      if (k >= n) return;
      last = t[k++];
    }
    if (last != '>')
      return refuse(k - 1, fmt::format("expected '>' to end the tag, got {}", show(last)));
  }
}

// Checks of the file as the runtime reads it, before any replay.
void Reader::static_checks() {
  for (const XGpu& gpu : gpus_) {
    std::map<std::pair<int, int>, int> send_conn, recv_conn;
    for (const XTb& tb : gpu.tbs) {
      if (tb.send >= 0) {
        auto [it, fresh] = send_conn.emplace(std::make_pair(tb.send, tb.chan), tb.id);
        if (!fresh)
          attr_violation(tb.line, tb.col,
                         fmt::format("gpu {}: threadblocks {} and {} both send to gpu {} on "
                                     "channel {}: they would share one connection",
                                     gpu.id, it->second, tb.id, tb.send, tb.chan),
                         {static_cast<NodeId>(gpu.id)});
      }
      if (tb.recv >= 0) {
        auto [it, fresh] = recv_conn.emplace(std::make_pair(tb.recv, tb.chan), tb.id);
        if (!fresh)
          attr_violation(tb.line, tb.col,
                         fmt::format("gpu {}: threadblocks {} and {} both receive from gpu {} on "
                                     "channel {}: they would share one connection",
                                     gpu.id, it->second, tb.id, tb.recv, tb.chan),
                         {static_cast<NodeId>(gpu.id)});
      }
      bool pending_nop_dep = false;
      for (std::size_t k = 0; k < tb.steps.size(); ++k) {
        const XStep& st = tb.steps[k];
        if (st.s != static_cast<int>(k))
          attr_violation(st.line, st.col,
                         fmt::format("gpu {} tb {}: step s={} is step {} of its threadblock: the "
                                     "runtime numbers steps by their order in the file, so "
                                     "dependencies on it are misread",
                                     gpu.id, tb.id, st.s, k),
                         {static_cast<NodeId>(gpu.id)});
        if (st.info->op == Op::NOP) {
          pending_nop_dep = pending_nop_dep || st.depid >= 0;
        } else {
          if (pending_nop_dep && st.depid < 0)
            rt_violation(st.line, st.col,
                         fmt::format("gpu {} tb {} step {}: it follows nop steps that carry "
                                     "dependencies but has no depid itself: the runtime "
                                     "ignores the XML (\"the last reduction must be a part of "
                                     "the first immediate instruction\")",
                                     gpu.id, tb.id, k),
                         {static_cast<NodeId>(gpu.id)});
          pending_nop_dep = false;
        }
        if (st.depid < 0) continue;
        if (st.depid >= static_cast<int>(gpu.tbs.size())) {
          attr_violation(st.line, st.col,
                         fmt::format("gpu {} tb {} step {} depends on threadblock {}, which gpu "
                                     "{} does not have",
                                     gpu.id, tb.id, k, st.depid, gpu.id),
                         {static_cast<NodeId>(gpu.id)});
          continue;
        }
        const XTb& dep = gpu.tbs[st.depid];
        if (st.deps >= static_cast<int>(dep.steps.size())) {
          attr_violation(st.line, st.col,
                         fmt::format("gpu {} tb {} step {} depends on step {} of threadblock {}, "
                                     "which has {} steps",
                                     gpu.id, tb.id, k, st.deps, st.depid, dep.steps.size()),
                         {static_cast<NodeId>(gpu.id)});
          continue;
        }
        // A step that does not signal: the runtime's wait is for the threadblock's flag to
        // reach the step (flags only grow, msccl_kernel.cu), so it is the next signalling step
        // that releases it; the replay does the same, and a wait no step ever ends is a deadlock.
        const XStep& target = dep.steps[st.deps];
        if (!target.hasdep || target.info->op == Op::NOP) ++nondep_signal_;
      }
    }
  }
}

// The runtime's loading limits for a <step> file, as mscclGetAlgoFromXmlFile applies them to
// each rank's part of the file.
void Reader::runtime_rules() {
  for (const XGpu& gpu : gpus_) {
    const auto r = static_cast<NodeId>(gpu.id);
    // Nodes the parser loads for this rank: <algo>, every <gpu>, and this gpu's <tb> and <step>
    // elements; it refuses when the array of MAX_NODES is full and another node is read.
    std::size_t nodes = 1 + gpus_.size();
    for (std::size_t b = 0; b < gpu.tbs.size(); ++b)
      if (tb_real_[gpu.id][b]) nodes += 1 + gpu.tbs[b].steps.size();
    if (nodes >= static_cast<std::size_t>(lim_.max_nodes))
      rt_violation(gpu.line, gpu.col,
                   fmt::format("rank {} loads {} XML nodes (<algo>, {} <gpu>, its <tb> and "
                               "<step> elements); its XML parser holds MAX_NODES = {} ('XML "
                               "parser is limited to ... nodes')",
                               gpu.id, nodes, gpus_.size(), lim_.max_nodes),
                   {r});
    if (static_cast<int>(gpu.tbs.size()) > lim_.max_tbs)
      rt_violation(gpu.line, gpu.col,
                   fmt::format("gpu {} has threadblock ids up to {}; MSCCL_MAX_NUM_THREAD_BLOCKS "
                               "is {}",
                               gpu.id, gpu.tbs.size() - 1, lim_.max_tbs),
                   {r});
    // Per channel, in the file's order, the send (receive) peers counted so far: a threadblock
    // with a send (receive) step when 32 are counted is refused ('too many sends per channel').
    std::map<int, int> nsend, nrecv;
    for (int id : file_order_[gpu.id]) {
      const XTb& tb = gpu.tbs[id];
      bool sends = false, recvs = false;
      for (const XStep& st : tb.steps) {
        sends = sends || st.info->send;
        recvs = recvs || st.info->recv;
      }
      for (int dir = 0; dir < 2; ++dir) {
        int& count = (dir == 0 ? nsend : nrecv)[tb.chan];
        bool uses = dir == 0 ? sends : recvs;
        if (uses && count == lim_.max_tbs_per_chan)
          rt_violation(
              tb.line, tb.col,
              fmt::format("gpu {} tb {}: more than {} threadblocks with a {} peer on "
                          "channel {} (MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL = {}: "
                          "'too many {}s per channel')",
                          gpu.id, tb.id, lim_.max_tbs_per_chan, dir == 0 ? "send" : "receive",
                          tb.chan, lim_.max_tbs_per_chan, dir == 0 ? "send" : "recv"),
              {r});
        if ((dir == 0 ? tb.send : tb.recv) >= 0) ++count;
      }
      // Steps: the step number s must be below MSCCL_MAX_NUM_STEPS, and the threadblock's
      // instructions fill an array of that many.
      bool steps_reported = false;
      for (std::size_t k = 0; k < tb.steps.size(); ++k) {
        const XStep& st = tb.steps[k];
        if (!steps_reported &&
            (st.s >= lim_.max_steps || k >= static_cast<std::size_t>(lim_.max_steps))) {
          steps_reported = true;
          rt_violation(st.line, st.col,
                       fmt::format("gpu {} tb {} has {} steps; MSCCL_MAX_NUM_STEPS is {} in {} "
                                   "('too many steps are requested')",
                                   gpu.id, tb.id, tb.steps.size(), lim_.max_steps, lim_.name),
                       {r});
        }
        // The loader's bounds: the operands it checks for this instruction start within the
        // buffer the gpu declares (-1 allowed), whatever the replay makes of them (`bounds`).
        for (int side = 0; side < 2 && st.info->op != Op::NOP; ++side) {
          bool src = side == 0;
          if (!loader_checks(st.info->op, src)) continue;
          int buf = src ? st.srcbuf : st.dstbuf, off = src ? st.srcoff : st.dstoff;
          if (off >= -1 && off < gpu.chunks[buf]) continue;
          static const char* kWhich[] = {"input", "output", "scratch"};
          rt_violation(st.line, st.col,
                       fmt::format("gpu {} tb {} step {}: {}off={} in buffer {}, which gpu {} "
                                   "declares with {}_chunks={}: the loader refuses it ('Incorrect "
                                   "offset set for {} buffer', mscclCheckBufferBounds)",
                                   gpu.id, tb.id, k, src ? "src" : "dst", off, kBufName[buf],
                                   gpu.id, kBufName[buf], gpu.chunks[buf], kWhich[buf]),
                       {r});
        }
        if (st.info->op != Op::NOP && st.cnt >= lim_.max_count)
          rt_violation(st.line, st.col,
                       fmt::format("gpu {} tb {} step {}: cnt={}; MSCCL_MAX_COUNT is {} and cnt "
                                   "must be below it ('count (%d) must be positive and less "
                                   "than %d')",
                                   gpu.id, tb.id, k, st.cnt, lim_.max_count),
                       {r});
      }
    }
  }
}

}  // namespace collv::msccl_xml
