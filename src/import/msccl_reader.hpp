// The MSCCL-XML reader's parts (internal to src/import): the file as read (XGpu, XTb, XStep),
// the runtimes' loading limits, and the Reader, whose work is in three files: msccl_xml.cpp
// reads the XML and runs the reader, msccl_rules.cpp holds the file to the runtime's loader
// (the `runtime` and `attributes` checks before any replay), msccl_replay.cpp replays the
// threadblocks into a Trace (`bounds`, `race`, the deadlock, the positional postcondition).
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "import/import.hpp"
#include "util/deadline.hpp"
#include "util/error.hpp"
#include "util/text.hpp"

namespace collv::msccl_xml {

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
inline const char* kBufName[] = {"i", "o", "s"};

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

}  // namespace collv::msccl_xml
