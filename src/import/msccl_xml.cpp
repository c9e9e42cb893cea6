// MSCCL-XML reader: replays the threadblocks of every GPU as the MSCCL runtime runs them and
// records the result as a Trace (docs/formats.md, "MSCCL-XML").
#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "import/import.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/memory.hpp"
#include "util/text.hpp"

namespace collv {

const char* msccl_runtime_name(MscclRuntime r) {
  return r == MscclRuntime::Msccl ? "msccl" : "msccl-executor-nccl";
}

namespace {

// The loading limits of the two runtimes (docs/formats.md cites each constant's source).
struct RuntimeLimits {
  const char* name;
  int max_steps;          // MSCCL_MAX_NUM_STEPS: 64 (executor makefile default), 256 (msccl.h)
  int max_count;          // MSCCL_MAX_COUNT: cnt must be below it
  int max_tbs_per_chan;   // MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL: send (recv) peers per channel
  int max_tbs;            // MSCCL_MAX_NUM_THREAD_BLOCKS: threadblock ids below it
  int max_nodes;          // MAX_NODES of the XML parser: nodes loaded for one rank
  bool needs_size_attrs;  // outofplace, minBytes, maxBytes required on <algo>
  bool checks_sizes;      // i_chunks/o_chunks must agree with nchunksperloop (msccl's topo.cc)
};
constexpr RuntimeLimits kExecutorNccl{
    "msccl-executor-nccl", 64, 72, 32, 32 * 32, 4096, true, false};
constexpr RuntimeLimits kMscclRuntime{"msccl", 256, 72, 32, 108 * 2, 1 << 12, false, true};

using import_detail::add_violation;
using import_detail::make_check;

enum class Op { S, R, RCS, RRS, RRC, RRCS, CPY, RE, NOP };

struct OpInfo {
  const char* name;
  Op op;
  bool recv, send, reads_src, writes_dst;
};
constexpr OpInfo kOps[] = {
    {"s", Op::S, false, true, true, false},       {"r", Op::R, true, false, false, true},
    {"rcs", Op::RCS, true, true, false, true},    {"rrs", Op::RRS, true, true, true, false},
    {"rrc", Op::RRC, true, false, true, true},    {"rrcs", Op::RRCS, true, true, true, true},
    {"cpy", Op::CPY, false, false, true, true},   {"re", Op::RE, false, false, true, true},
    {"nop", Op::NOP, false, false, false, false},
};

enum Buf { In = 0, Out = 1, Scr = 2 };

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
const char* kBufName[] = {"i", "o", "s"};

struct XStep {
  const OpInfo* info = nullptr;
  int srcbuf = In, srcoff = 0, dstbuf = Out, dstoff = 0, cnt = 1;
  int depid = -1, deps = -1, hasdep = 0;
  int s = 0;  // the attribute as written
  int line = 0, col = 0;
};

struct XTb {
  int id = 0, send = -1, recv = -1, chan = 0;
  int line = 0, col = 0;
  std::vector<XStep> steps;
};

struct XGpu {
  int id = 0;
  int chunks[3] = {0, 0, 0};  // declared i_chunks, o_chunks, s_chunks
  int line = 0, col = 0;
  std::vector<XTb> tbs;
};

class Reader {
 public:
  Reader(const std::string& text, const std::string& source, const MscclOptions& o)
      : text_(text),
        src_(source),
        opts_(o),
        lim_(o.runtime == MscclRuntime::Msccl ? kMscclRuntime : kExecutorNccl) {
    line_starts_.push_back(0);
    for (std::size_t k = 0; k < text.size(); ++k)
      if (text[k] == '\n') line_starts_.push_back(k + 1);
  }

  ImportedSchedule run();

 private:
  // Position of a pugixml node as line:col (1-based).
  std::pair<int, int> pos(std::ptrdiff_t offset) const {
    if (offset < 0) return {0, 0};
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(),
                               static_cast<std::size_t>(offset));
    std::size_t line = static_cast<std::size_t>(it - line_starts_.begin());
    return {static_cast<int>(line), static_cast<int>(offset - line_starts_[line - 1] + 1)};
  }
  std::string where(const pugi::xml_node& n) const {
    auto [l, c] = pos(n.offset_debug());
    return fmt::format("{}:{}:{}", src_, l, c);
  }
  std::string where(int line, int col) const { return fmt::format("{}:{}:{}", src_, line, col); }
  // Input quoted in a message: printable, cut to kMaxQuotedBytes (util/json_read.hpp).
  static std::string shown(std::string_view s) { return printable(s, kMaxQuotedBytes); }
  [[noreturn]] void fail(const pugi::xml_node& n, const std::string& msg) const {
    throw UsageError(where(n) + ": error: " + msg);
  }
  static bool parse_int(const char* s, long long& out) {
    if (!s || !*s) return false;
    const char* p = s;
    if (*p == '-') ++p;
    if (!*p) return false;
    long long v = 0;
    for (; *p; ++p) {
      if (*p < '0' || *p > '9') return false;
      v = v * 10 + (*p - '0');
      if (v > 1000000000) return false;
    }
    out = s[0] == '-' ? -v : v;
    return true;
  }
  int get_int(const pugi::xml_node& n, const char* name, std::optional<int> dflt = std::nullopt) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a) {
      if (dflt) return *dflt;
      fail(n, fmt::format("<{}> lacks attribute '{}', which the MSCCL runtime requires (it would "
                          "reject the file)",
                          n.name(), name));
    }
    long long v = 0;
    if (!parse_int(a.value(), v))
      fail(n, fmt::format("<{}> attribute {}=\"{}\" is not an integer", shown(n.name()), name,
                          shown(a.value())));
    return static_cast<int>(v);
  }
  std::string get_str(const pugi::xml_node& n, const char* name) {
    pugi::xml_attribute a = n.attribute(name);
    if (!a)
      fail(n, fmt::format("<{}> lacks attribute '{}', which the MSCCL runtime requires (it would "
                          "reject the file)",
                          n.name(), name));
    return a.value();
  }
  int get_buf(const pugi::xml_node& n, const char* name) {
    std::string b = get_str(n, name);
    if (b == "i") return In;
    if (b == "o") return Out;
    if (b == "s") return Scr;
    fail(n, fmt::format("<{}> attribute {}=\"{}\": a buffer is i, o or s", shown(n.name()), name,
                        shown(b)));
  }
  // The operands of an <op>. Each is written as an attribute pair (srcbuf/srcoff,
  // dstbuf/dstoff) or a child element (<src buf off/>, <dst buf off/>); an operand written
  // neither way is msccl-tools' one chunk (buf, off), which stands for both operands (the source
  // of a send, the destination otherwise: its instructions keep both on that chunk). A local
  // cpy or re reads another chunk than it writes, and msccl-tools' form drops that source, so
  // one without an explicit source is refused rather than read as a copy onto itself.
  void op_operands(const pugi::xml_node& sn, XStep& st) {
    pugi::xml_node child[2];
    for (pugi::xml_node c : sn.children()) {
      if (c.type() != pugi::node_element) continue;
      std::string cn = c.name();
      int k = cn == "src" ? 0 : cn == "dst" ? 1 : -1;
      if (k < 0)
        fail(c, fmt::format("unexpected element <{}> in <op> (it has <src> and <dst>)", shown(cn)));
      if (child[k]) fail(c, fmt::format("a second <{}> in one <op>", cn));
      child[k] = c;
    }
    const char* attr_buf[2] = {"srcbuf", "dstbuf"};
    const char* attr_off[2] = {"srcoff", "dstoff"};
    int* buf[2] = {&st.srcbuf, &st.dstbuf};
    int* off[2] = {&st.srcoff, &st.dstoff};
    for (int k = 0; k < 2; ++k) {
      bool attr = sn.attribute(attr_buf[k]) || sn.attribute(attr_off[k]);
      if (attr && child[k])
        fail(sn, fmt::format("<op> gives its {} twice ({}/{} and a <{}> element)",
                             k ? "destination" : "source", attr_buf[k], attr_off[k],
                             k ? "dst" : "src"));
      if (attr) {
        *buf[k] = get_buf(sn, attr_buf[k]);
        *off[k] = get_int(sn, attr_off[k]);
      } else if (child[k]) {
        *buf[k] = get_buf(child[k], "buf");
        *off[k] = get_int(child[k], "off");
      } else if (k == 0 && (st.info->op == Op::CPY || st.info->op == Op::RE)) {
        fail(sn, fmt::format("<op type=\"{}\"> without its source: msccl-tools' <op> form writes "
                             "only the destination (buf, off) of a local {}, so the file does not "
                             "say what it reads; give srcbuf and srcoff (or a <src buf off/> "
                             "element), or write the <step> form (ir_to_xml old_format=True)",
                             st.info->name, st.info->op == Op::CPY ? "copy" : "reduce"));
      } else {
        *buf[k] = get_buf(sn, "buf");
        *off[k] = get_int(sn, "off");
      }
    }
  }
  void attr_violation(int line, int col, const std::string& msg, std::vector<NodeId> nodes = {}) {
    Counterexample c;
    c.nodes = std::move(nodes);
    c.message = where(line, col) + ": " + msg;
    add_violation(attributes_, std::move(c));
  }
  // A rule of the runtime's loader: the file would not load (`runtime`).
  void rt_violation(int line, int col, const std::string& msg, std::vector<NodeId> nodes = {}) {
    Counterexample c;
    c.nodes = std::move(nodes);
    c.message = where(line, col) + ": " + lim_.name + " refuses the file: " + msg;
    add_violation(runtime_, std::move(c));
  }

  void raw_syntax();
  void parse(const pugi::xml_node& algo);
  void static_checks();
  void runtime_rules();
  void replay(ImportedSchedule& out);

  const std::string& text_;
  std::string src_;
  DeadlineTick tick_;  // --timeout, checked in the loops over steps
  MscclOptions opts_;
  RuntimeLimits lim_;
  std::vector<std::size_t> line_starts_;

  // <algo>
  std::string name_, coll_, proto_;
  bool slots_by_proto_ = false;
  int ngpus_ = 0, nchannels_ = 0, nchunksperloop_ = 0, inplace_ = 0;
  bool op_form_ = false;
  int algo_line_ = 0, algo_col_ = 0;
  std::vector<XGpu> gpus_;
  std::vector<std::vector<char>> tb_real_;    // per gpu, per id: written in the file
  std::vector<std::vector<int>> file_order_;  // per gpu: threadblock ids in the file's order
  int nondep_signal_ = 0;  // dependencies on steps that do not signal (the runtime waits on)
  CheckResult runtime_ = make_check("runtime");
  std::vector<CheckResult> custom_checks_;
  CheckResult attributes_ = make_check("attributes");
  CheckResult bounds_ = make_check("bounds");
  CheckResult race_ = make_check("race");
};

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

void Reader::parse(const pugi::xml_node& algo) {
  name_ = algo.attribute("name") ? algo.attribute("name").value() : "msccl";
  std::tie(algo_line_, algo_col_) = pos(algo.offset_debug());
  ngpus_ = get_int(algo, "ngpus");
  coll_ = get_str(algo, "coll");
  inplace_ = get_int(algo, "inplace");
  nchannels_ = get_int(algo, "nchannels");
  // The <op> form has no nchunksperloop (its sizes are the gpus' i_chunks and o_chunks); the
  // runtimes need it, which the runtime check says for a <step> file (-1: not written).
  nchunksperloop_ = get_int(algo, "nchunksperloop", -1);
  if (algo.attribute("proto")) {
    proto_ = algo.attribute("proto").value();
    if (proto_ != "Simple" && proto_ != "LL" && proto_ != "LL128")
      fail(algo, "<algo> proto=\"" + shown(proto_) + "\": the runtime knows Simple, LL and LL128");
  }
  if (ngpus_ < 1 || ngpus_ > 4096)
    fail(algo, fmt::format("<algo> ngpus={} is out of range", ngpus_));
  if (inplace_ != 0 && inplace_ != 1) fail(algo, "<algo> inplace must be 0 or 1");
  if (nchannels_ < 1 || nchannels_ > 32)
    fail(algo, fmt::format("<algo> nchannels={}: the runtime allows 1 to 32", nchannels_));
  if (nchunksperloop_ == 0 || nchunksperloop_ < -1)
    fail(algo, fmt::format("<algo> nchunksperloop={} must be positive", nchunksperloop_));
  // The collectives the runtimes load (mscclGetAlgoFromXmlFile; microsoft/msccl's
  // mscclGetAlgoFromXMLFile), and the ones collv replays.
  static const std::set<std::string> executor_colls = {
      "reduce", "broadcast", "allreduce", "reducescatter", "allgather", "send",
      "recv",   "gather",    "scatter",   "alltoall",      "alltoallv"};
  static const std::set<std::string> msccl_colls = {
      "allreduce", "allgather", "reduce", "broadcast", "alltoall", "reduce_scatter", "custom"};
  const auto& known = opts_.runtime == MscclRuntime::Msccl ? msccl_colls : executor_colls;
  if (!known.count(coll_)) {
    std::string list;
    for (const auto& c : known) list += (list.empty() ? "" : ", ") + c;
    rt_violation(algo_line_, algo_col_,
                 fmt::format("coll=\"{}\" is no collective it knows ({}; 'unsupported "
                             "collective')",
                             shown(coll_), list));
  }
  if (coll_ == "reducescatter") coll_ = "reduce_scatter";
  if (coll_ != "allgather" && coll_ != "allreduce" && coll_ != "reduce_scatter" &&
      coll_ != "alltoall" && coll_ != "broadcast" && coll_ != "reduce" && coll_ != "custom")
    fail(algo, "<algo> coll=\"" + coll_ +
                   "\": collv replays allgather, allreduce, reducescatter (reduce_scatter), "
                   "alltoall, broadcast, reduce and custom");
  // Slots by protocol (prims_simple.h: a send is SlicePerChunk = 2 slices of StepPerSlice = 2
  // FIFO steps, empty slices posted too, so 4 of the NCCL_STEPS = 8; LL/LL128: one step).
  if (opts_.slots < 0) {
    opts_.slots = proto_ == "LL" || proto_ == "LL128" ? 8 : 2;
    slots_by_proto_ = true;
  }
  if (proto_.empty())
    rt_violation(algo_line_, algo_col_,
                 "<algo> has no proto (both runtimes read it: 'Attribute proto of node algo not "
                 "found')");
  if (lim_.needs_size_attrs) {
    for (const char* a : {"outofplace", "minBytes", "maxBytes"})
      if (!algo.attribute(a))
        rt_violation(algo_line_, algo_col_,
                     fmt::format("<algo> has no {} (mscclGetAlgoMetaFromXmlFile reads it: "
                                 "'Attribute {} of node algo not found')",
                                 a, a));
  }
  long long minb = 0, maxb = 0;
  bool has_min = algo.attribute("minBytes") && parse_int(algo.attribute("minBytes").value(), minb);
  bool has_max = algo.attribute("maxBytes") && parse_int(algo.attribute("maxBytes").value(), maxb);
  if ((has_min && minb < 0) || (has_max && maxb < 0) ||
      (has_min && has_max && minb > maxb && maxb != 0))
    rt_violation(algo_line_, algo_col_,
                 fmt::format("<algo> minBytes={} maxBytes={}: sizes must be non-negative and "
                             "minBytes at most maxBytes",
                             minb, maxb));

  gpus_.assign(static_cast<std::size_t>(ngpus_), XGpu{});
  tb_real_.assign(static_cast<std::size_t>(ngpus_), {});
  file_order_.assign(static_cast<std::size_t>(ngpus_), {});
  std::vector<bool> seen(static_cast<std::size_t>(ngpus_), false);
  bool any_step = false;
  for (pugi::xml_node g : algo.children()) {
    if (g.type() != pugi::node_element) continue;
    if (std::string(g.name()) != "gpu")
      fail(g, fmt::format("unexpected element <{}> in <algo>", shown(g.name())));
    int id = get_int(g, "id");
    if (id < 0 || id >= ngpus_) fail(g, fmt::format("<gpu id={}>: ngpus is {}", id, ngpus_));
    if (seen[id]) fail(g, fmt::format("<gpu id={}> appears twice", id));
    seen[id] = true;
    XGpu& gpu = gpus_[id];
    gpu.id = id;
    std::tie(gpu.line, gpu.col) = pos(g.offset_debug());
    gpu.chunks[In] = get_int(g, "i_chunks");
    gpu.chunks[Out] = get_int(g, "o_chunks");
    gpu.chunks[Scr] = get_int(g, "s_chunks");
    for (int b = 0; b < 3; ++b)
      if (gpu.chunks[b] < 0 || gpu.chunks[b] > 1000000)
        fail(g, fmt::format("<gpu> {}_chunks={} is out of range", kBufName[b], gpu.chunks[b]));
    for (pugi::xml_node tbn : g.children()) {
      if (tbn.type() != pugi::node_element) continue;
      if (std::string(tbn.name()) != "tb")
        fail(tbn, fmt::format("unexpected element <{}> in <gpu>", shown(tbn.name())));
      XTb tb;
      std::tie(tb.line, tb.col) = pos(tbn.offset_debug());
      tb.id = get_int(tbn, "id");
      tb.send = get_int(tbn, "send");
      tb.recv = get_int(tbn, "recv");
      tb.chan = get_int(tbn, "chan");
      if (tb.send < -1 || tb.send >= ngpus_ || tb.recv < -1 || tb.recv >= ngpus_)
        fail(tbn, fmt::format("<tb id={}>: peers send={} recv={} must be -1 or a gpu id below {}",
                              tb.id, tb.send, tb.recv, ngpus_));
      if (tb.send == id || tb.recv == id)
        fail(tbn, fmt::format("<tb id={}> on gpu {} names its own gpu as a peer", tb.id, id));
      if (tb.chan < 0 || tb.chan >= nchannels_)
        fail(tbn, fmt::format("<tb id={}> chan={}: <algo> declares nchannels={}", tb.id, tb.chan,
                              nchannels_));
      bool has_step = false, has_op = false;
      for (pugi::xml_node sn : tbn.children()) {
        tick_([&] { return "reading " + where(sn); });
        if (sn.type() != pugi::node_element) continue;
        std::string en = sn.name();
        if (en != "step" && en != "op")
          fail(sn, fmt::format("unexpected element <{}> in <tb>", shown(en)));
        (en == "step" ? has_step : has_op) = true;
        if (has_step && has_op) fail(sn, "a <tb> mixes <step> and <op> elements");
        XStep st;
        std::tie(st.line, st.col) = pos(sn.offset_debug());
        std::string type = get_str(sn, "type");
        for (const auto& oi : kOps)
          if (type == oi.name) st.info = &oi;
        if (!st.info)
          fail(sn, "<" + en + "> type=\"" + shown(type) +
                       "\": the runtime knows s, r, rcs, rrs, rrc, rrcs, cpy, re and nop");
        if (en == "step") {
          st.s = get_int(sn, "s");
          st.srcbuf = get_buf(sn, "srcbuf");
          st.srcoff = get_int(sn, "srcoff");
          st.dstbuf = get_buf(sn, "dstbuf");
          st.dstoff = get_int(sn, "dstoff");
          st.cnt = get_int(sn, "cnt");
          st.depid = get_int(sn, "depid");
          st.deps = get_int(sn, "deps");
          st.hasdep = get_int(sn, "hasdep");
        } else {
          op_form_ = true;
          st.s = get_int(sn, "step");
          if (st.info->op != Op::NOP) op_operands(sn, st);
          st.cnt = get_int(sn, "cnt", 1);
          st.depid = get_int(sn, "depid", -1);
          st.deps = get_int(sn, "deps", -1);
          st.hasdep = get_int(sn, "hasdep", 0);
        }
        if (st.hasdep != 0 && st.hasdep != 1)
          fail(sn, fmt::format("hasdep={}: the runtime accepts 0 or 1", st.hasdep));
        if (st.s < 0 || st.s > 1000000)
          fail(sn, fmt::format("step {} is out of range (the runtimes allow 0 to {})", st.s,
                               lim_.max_steps - 1));
        if (st.info->op != Op::NOP && (st.cnt < 1 || st.cnt > 4096))
          fail(sn, fmt::format("cnt={} must be 1 to 4096 (the runtimes: below {})", st.cnt,
                               lim_.max_count));
        if (st.depid < -1 || (st.depid >= 0 && st.deps < 0))
          fail(sn, fmt::format("depid={} deps={}: a dependency names a threadblock and a step",
                               st.depid, st.deps));
        if (st.info->send && tb.send < 0)
          fail(sn, fmt::format("a '{}' step in threadblock {} of gpu {}, which has no send peer "
                               "(send=-1): the runtime rejects it",
                               type, tb.id, id));
        if (st.info->recv && tb.recv < 0)
          fail(sn, fmt::format("a '{}' step in threadblock {} of gpu {}, which has no receive "
                               "peer (recv=-1): the runtime rejects it",
                               type, tb.id, id));
        if (st.info->op == Op::NOP) st.cnt = 0;
        tb.steps.push_back(st);
        any_step = true;
      }
      gpu.tbs.push_back(std::move(tb));
    }
    // Threadblock ids index the runtime's arrays: 0..n-1, each once. A gap is the runtime's
    // refusal ('thread block %d is missing'); the replay keeps an empty threadblock in it.
    int max_id = -1;
    for (auto& tb : gpu.tbs) {
      if (tb.id < 0 || tb.id >= 4096)
        throw UsageError(where(tb.line, tb.col) +
                         fmt::format(": error: <tb id={}> on gpu {}: threadblock ids are 0 to "
                                     "{} (the runtime: below {})",
                                     tb.id, id, 4095, lim_.max_tbs));
      max_id = std::max(max_id, tb.id);
    }
    std::vector<XTb> sorted(static_cast<std::size_t>(max_id + 1));
    std::vector<char> real(sorted.size(), 0);
    for (auto& tb : gpu.tbs) {
      if (real[tb.id])
        throw UsageError(where(tb.line, tb.col) +
                         fmt::format(": error: <tb id={}> on gpu {} appears twice ('duplicate "
                                     "thread block id')",
                                     tb.id, id));
      real[tb.id] = 1;
      sorted[tb.id] = tb;
    }
    for (std::size_t b = 0; b < real.size(); ++b)
      if (!real[b]) {
        sorted[b].id = static_cast<int>(b);
        std::tie(sorted[b].line, sorted[b].col) = pos(g.offset_debug());
        rt_violation(gpu.line, gpu.col,
                     fmt::format("gpu {} has threadblock {} but no threadblock {} (ids must be "
                                 "0..n-1: 'thread block {} is missing')",
                                 id, max_id, b, b + 1));
      }
    file_order_[id].clear();
    for (auto& tb : gpu.tbs) file_order_[id].push_back(tb.id);
    tb_real_[id] = std::move(real);
    gpu.tbs = std::move(sorted);
  }
  for (int g = 0; g < ngpus_; ++g)
    if (!seen[g]) fail(algo, fmt::format("<algo ngpus={}> has no <gpu id={}>", ngpus_, g));
  if (!any_step) fail(algo, "the algorithm has no <step> or <op>: the runtime would do nothing");
  if (nchunksperloop_ < 0) {
    if (!op_form_)
      rt_violation(algo_line_, algo_col_,
                   "<algo> has no nchunksperloop ('Attribute nchunksperloop of node algo not "
                   "found')");
    // The sizes the gpus declare: the largest buffer, in the collective's chunks per loop.
    int cpl = 0;
    for (const XGpu& gpu : gpus_) {
      int i = gpu.chunks[In], o = gpu.chunks[Out];
      if (coll_ == "allgather")
        cpl = std::max({cpl, o, i * ngpus_});
      else if (coll_ == "reduce_scatter")
        cpl = std::max({cpl, i, o * ngpus_});
      else
        cpl = std::max({cpl, i, o});
    }
    if (cpl < 1)
      fail(algo,
           "<algo> has no nchunksperloop and no <gpu> declares i_chunks or o_chunks: the "
           "buffers' sizes are unknown");
    nchunksperloop_ = cpl;
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

ImportedSchedule Reader::run() {
  pugi::xml_document doc;
  pugi::xml_parse_result res =
      doc.load_buffer(text_.data(), text_.size(), pugi::parse_default | pugi::parse_declaration);
  if (!res) {
    auto [l, c] = pos(res.offset);
    throw UsageError(
        fmt::format("{}:{}:{}: error: not well-formed XML: {}", src_, l, c, res.description()));
  }
  pugi::xml_node algo = doc.document_element();
  if (std::string(algo.name()) != "algo")
    fail(algo, fmt::format("the root element is <{}>; an MSCCL algorithm is an <algo>",
                           shown(algo.name())));
  parse(algo);
  static_checks();
  if (op_form_) {
    // The runtimes load only <step> elements: their loading rules are about <step> files.
    runtime_ = not_checked(
        "runtime",
        fmt::format("the file uses msccl-tools' <op> form, which no MSCCL runtime loads "
                    "(msccl-executor-nccl and microsoft/msccl read only <step>); not applied: "
                    "the XML syntax of NCCL's reader, nchunksperloop, proto, outofplace, "
                    "minBytes, maxBytes, coll names, MSCCL_MAX_NUM_STEPS, MSCCL_MAX_COUNT, "
                    "MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL, MAX_NODES, the loader's offset "
                    "bounds, the chain of nop dependencies"));
  } else {
    raw_syntax();
    runtime_rules();
    runtime_.note = fmt::format("held to {}'s loading rules (--msccl-runtime)", lim_.name);
  }
  ImportedSchedule out;
  out.format = ScheduleFormat::MscclXml;
  out.trace.model_file = src_;
  replay(out);
  if (opts_.slots > 0)
    attributes_.note += std::string(attributes_.note.empty() ? "" : "; ") +
                        fmt::format(
                            "sends block when a connection holds {} unreceived sends "
                            "({})",
                            opts_.slots,
                            slots_by_proto_ ? "proto=\"" + (proto_.empty() ? "Simple" : proto_) +
                                                  "\"; --msccl-slots sets another bound"
                                            : "--msccl-slots");
  out.checks = {runtime_, attributes_, bounds_, race_};
  for (auto& c : custom_checks_) out.checks.push_back(c);
  return out;
}

}  // namespace

ImportedSchedule import_msccl_xml(const std::string& text, const std::string& source,
                                  const MscclOptions& msccl) {
  if (msccl.slots < -1 || msccl.slots > 1000000)
    throw UsageError(fmt::format("--msccl-slots {}: 0 (unbounded) to 1000000", msccl.slots));
  return Reader(text, source, msccl).run();
}

}  // namespace collv
