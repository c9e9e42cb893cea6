// MSCCL-XML reader: replays the threadblocks of every GPU as the MSCCL runtime runs them and
// records the result as a Trace (docs/formats.md, "MSCCL-XML"). This file reads the XML into
// the Reader's view of the file and runs the reader (msccl_reader.hpp lists its parts).
#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "import/msccl_reader.hpp"

namespace collv {

const char* msccl_runtime_name(MscclRuntime r) {
  return r == MscclRuntime::Msccl ? "msccl" : "msccl-executor-nccl";
}

namespace msccl_xml {

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

}  // namespace msccl_xml

ImportedSchedule import_msccl_xml(const std::string& text, const std::string& source,
                                  const MscclOptions& msccl) {
  if (msccl.slots < -1 || msccl.slots > 1000000)
    throw UsageError(fmt::format("--msccl-slots {}: 0 (unbounded) to 1000000", msccl.slots));
  return msccl_xml::Reader(text, source, msccl).run();
}

}  // namespace collv
